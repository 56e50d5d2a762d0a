package org.ddp4j.examples;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.zip.CRC32;
import org.ddp4j.nn.Module;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;

/**
 * A CRC-32 of a module's parameters (names, then bits), printed in the demos' summary line as
 * {@code parameters_crc32=XXXXXXXX}: the ranks of one data-parallel job must end with the same
 * value, and two runs of one job on different transports too. Exact, so rounding never moves the
 * verdict of a test that compares it. Buffers are left out: BatchNorm's running statistics last
 * come from each rank's own final batch (DDP broadcasts rank 0's at the start of a forward, as
 * PyTorch), so they differ between ranks after training.
 */
final class StateDigest {
    private StateDigest() {}

    /** Eight lower-case hex digits of the CRC-32 over {@code module.namedParameters()} in its order. */
    static String of(Module module) {
        CRC32 crc = new CRC32();
        for (Map.Entry<String, Tensor> e : module.namedParameters().entrySet()) {
            crc.update(e.getKey().getBytes(StandardCharsets.UTF_8));
            crc.update(bits(e.getValue()));
        }
        return String.format(Locale.ROOT, "%08x", crc.getValue());
    }

    private static ByteBuffer bits(Tensor t) {
        int n = Math.toIntExact(t.numel());
        ByteBuffer b = ByteBuffer.allocate(n * t.dtype().bytes()).order(ByteOrder.LITTLE_ENDIAN);
        if (t.dtype() == DType.INT64) {
            b.asLongBuffer().put(t.toLongArray());
        } else if (t.dtype() == DType.FLOAT32) {
            b.asFloatBuffer().put(t.toFloatArray());
        } else {
            b.asShortBuffer().put(t.toBitsArray());
        }
        return b;
    }
}
