package org.ddp4j.amp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Path;
import java.util.Map;
import java.util.function.Function;
import org.ddp4j.examples.ConvNet;
import org.ddp4j.nn.Module;
import org.ddp4j.nn.functional.Functional;
import org.ddp4j.serialization.SafeTensors;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Device;
import org.ddp4j.tensor.Generator;
import org.ddp4j.tensor.Tensor;
import org.ddp4j.tensor.Tensors;
import org.ddp4j.vision.models.BasicBlock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Autocast's forward and backward (output, loss, input gradient, every parameter gradient) of the
 * ConvNet and a ResNet BasicBlock against scripts/golden/autocast_golden.py (PyTorch 1.13), on both
 * CPU kernels (vdpbf16ps where the CPU has AVX512-BF16, else skipped with the reason; the widening
 * kernel always):
 *
 * <ul>
 *   <li>against PyTorch's own {@code torch.autocast("cpu", torch.bfloat16)}: output and loss with
 *       the bfloat16 tolerance of PyTorch's tests ({@code torch.testing}: rtol 1.6e-2) and an atol
 *       of 1.6e-2 of the tensor's largest magnitude (PyTorch's outputs are bf16-rounded, ours are
 *       not); gradients within twice PyTorch's autocast distance from the float32 ones
 *       (see {@link #gradient});
 *   <li>against an exact emulation of ddp4j's arithmetic (rounded operands, float32 sums, float32
 *       outputs) for bfloat16 and float16 (PyTorch 1.13 has no float16 CPU autocast), where only
 *       the order of float32 sums differs: rtol 1e-3, atol 1e-3 of the largest magnitude (a sum
 *       order difference can flip a later operand's rounding by one bf16/fp16 step).
 * </ul>
 */
class AutocastGoldenTest {
    private static Map<String, Tensor> golden;

    @AfterEach
    void restoreKernel() {
        AmpNativesAccess.reset();
    }

    private static synchronized Map<String, Tensor> golden() throws Exception {
        if (golden == null) {
            golden = SafeTensors.loadFile(Path.of(AutocastGoldenTest.class.getResource("/golden/autocast.safetensors").toURI()));
        }
        return golden;
    }

    /** One forward and backward under autocast; compares it to the golden mode with its tolerances. */
    private static void check(String prefix, Module model, Tensor x, Function<Tensor, Tensor> lossOf, DType dtype,
            String mode, double rtol, double relAtol) throws Exception {
        Map<String, Tensor> g = golden();
        try (var scope = Tensors.scope()) {
            Map<String, Tensor> params = model.namedParameters();
            for (Map.Entry<String, Tensor> p : params.entrySet()) {
                p.getValue().copyFrom(g.get(prefix + ".param." + p.getKey()));
            }
            model.train();
            Tensor xl = x.detach().requiresGrad(true);
            Tensor out;
            try (var ac = Autocast.enable(Device.CPU, dtype)) {
                out = model.forward(xl);
            }
            assertEquals(DType.FLOAT32, out.dtype(), "autocast's conv/linear outputs are float32");
            Tensor loss = lossOf.apply(out);
            loss.backward();  // outside the scope: the nodes use the mode recorded at forward time
            String m = prefix + "." + mode + ".";
            close(g.get(m + "out"), out, rtol, relAtol, m + "out");
            if (g.containsKey(m + "loss")) {
                close(g.get(m + "loss"), loss.reshape(1), rtol, relAtol, m + "loss");
            }
            boolean torch = mode.equals("torch_bf16");
            gradient(prefix, mode, "grad_x", xl.grad(), torch, rtol, relAtol);
            for (Map.Entry<String, Tensor> p : params.entrySet()) {
                assertEquals(DType.FLOAT32, p.getValue().dtype(), "parameters stay float32");
                gradient(prefix, mode, "grad." + p.getKey(), p.getValue().grad(), torch, rtol, relAtol);
            }
        }
    }

    /**
     * Against the emulation: elementwise. Against PyTorch's autocast, whose gradients run batch norm
     * and the conv backward in bf16 too and so lie 5-13% (relative L2) from float32 in the early
     * layers here: ours must lie within twice PyTorch's autocast distance from the float32 gradient
     * (L2; twice, because sums over ReLU masks, such as a batch norm's bias gradient, jump by whole
     * gradient values where a rounding flips an activation's sign, in either run; plus 1e-5 per
     * element of slack for gradients that are pure rounding noise, such as a conv bias before batch
     * norm).
     */
    private static void gradient(String prefix, String mode, String name, Tensor actual, boolean torch, double rtol,
            double relAtol) throws Exception {
        Map<String, Tensor> g = golden();
        String what = prefix + "." + mode + "." + name;
        if (!torch) {
            close(g.get(what), actual, rtol, relAtol, what);
            return;
        }
        float[] ours = actual.toFloatArray(), theirs = g.get(what).toFloatArray();
        float[] fp32 = g.get(prefix + ".fp32." + name).toFloatArray();
        double dOurs = l2(ours, fp32), dTorch = l2(theirs, fp32), slack = 1e-5 * Math.sqrt(fp32.length);
        if (!(dOurs <= 2 * dTorch + slack)) {
            fail(what + ": |ours - fp32| = " + dOurs + " > 2 |torch autocast - fp32| = 2 * " + dTorch + " + " + slack
                    + " (kernel " + Autocast.cpuKernel() + ")");
        }
    }

    private static double l2(float[] a, float[] b) {
        assertEquals(b.length, a.length);
        double s = 0;
        for (int i = 0; i < a.length; i++) {
            double d = (double) a[i] - b[i];
            s += d * d;
        }
        return Math.sqrt(s);
    }

    static void close(Tensor expected, Tensor actual, double rtol, double relAtol, String what) {
        float[] e = expected.toFloatArray(), a = actual.toFloatArray();
        assertEquals(e.length, a.length, what + ": element count");
        double scale = 0;
        for (float v : e) {
            scale = Math.max(scale, Math.abs(v));
        }
        double atol = Math.max(1e-5, relAtol * scale);
        for (int i = 0; i < e.length; i++) {
            double d = Math.abs((double) a[i] - e[i]);
            if (!(d <= atol + rtol * Math.abs(e[i]))) {
                fail(what + "[" + i + "]: " + a[i] + " vs golden " + e[i] + " (|diff| " + d + " > atol " + atol
                        + " + rtol " + rtol + " * |golden|; kernel " + Autocast.cpuKernel() + ")");
            }
        }
    }

    private static void onKernel(String kernel) {
        if (kernel.equals("avx512bf16")) {
            Assumptions.assumeTrue(AmpNativesAccess.cpuHasBf16(),
                    "this CPU has no AVX512-BF16 (avx512_bf16): the vdpbf16ps kernel cannot run; the widen kernel is tested");
        }
        AmpNativesAccess.force(kernel);
        assertEquals(kernel, Autocast.cpuKernel().settingValue());
    }

    private static void convNet(String mode, DType dtype, double rtol, double relAtol) throws Exception {
        Map<String, Tensor> g = golden();
        Tensor y = g.get("convnet.y");
        try (ConvNet net = new ConvNet(10, new Generator(0))) {
            check("convnet", net, g.get("convnet.x"), out -> Functional.crossEntropy(out, y), dtype, mode, rtol, relAtol);
        }
    }

    private static void block(String mode, DType dtype, double rtol, double relAtol) throws Exception {
        Map<String, Tensor> g = golden();
        Tensor gy = g.get("block.gy");
        try (BasicBlock b = new BasicBlock(8, 8, 1, null, new Generator(0))) {
            check("block", b, g.get("block.x"), out -> out.mul(gy).sum(), dtype, mode, rtol, relAtol);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"avx512bf16", "widen"})
    void convNetMatchesTorchAutocastBf16(String kernel) throws Exception {
        onKernel(kernel);
        convNet("torch_bf16", DType.BFLOAT16, 1.6e-2, 1.6e-2);
    }

    @ParameterizedTest
    @ValueSource(strings = {"avx512bf16", "widen"})
    void basicBlockMatchesTorchAutocastBf16(String kernel) throws Exception {
        onKernel(kernel);
        block("torch_bf16", DType.BFLOAT16, 1.6e-2, 1.6e-2);
    }

    @ParameterizedTest
    @ValueSource(strings = {"avx512bf16", "widen"})
    void convNetMatchesRoundedOperandArithmeticBf16(String kernel) throws Exception {
        onKernel(kernel);
        convNet("emul_bf16", DType.BFLOAT16, 1e-3, 1e-3);
    }

    @ParameterizedTest
    @ValueSource(strings = {"avx512bf16", "widen"})
    void basicBlockMatchesRoundedOperandArithmeticBf16(String kernel) throws Exception {
        onKernel(kernel);
        block("emul_bf16", DType.BFLOAT16, 1e-3, 1e-3);
    }

    @ParameterizedTest
    @ValueSource(strings = {"widen"})
    void float16MatchesRoundedOperandArithmetic(String kernel) throws Exception {
        onKernel(kernel);
        convNet("emul_fp16", DType.FLOAT16, 1e-3, 1e-3);
        block("emul_fp16", DType.FLOAT16, 1e-3, 1e-3);
    }
}
