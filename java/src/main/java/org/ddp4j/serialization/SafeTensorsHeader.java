package org.ddp4j.serialization;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ddp4j.tensor.DType;
import org.ddp4j.tensor.Tensor;

/**
 * The header of a safetensors file: for each tensor its dtype, shape and byte range in the data
 * section, plus the optional string-to-string {@code __metadata__}. Builds the header for a
 * writer and parses and validates one for a reader, as the safetensors library does.
 *
 * <p>ddp4j adds one metadata entry of its own, {@value #CHECKSUMS_KEY}: a JSON object, as a
 * string, from each tensor's name to the CRC-32 (zlib's, as 8 lower-case hex digits) of its bytes
 * in the file. Readers that do not know it see one more metadata string; ddp4j's reader checks
 * it and keeps it out of the metadata it returns.
 */
final class SafeTensorsHeader {
    /** The key of the metadata object in the header. */
    static final String METADATA_KEY = "__metadata__";
    /** The metadata key of ddp4j's per-tensor checksums (see the class comment). */
    static final String CHECKSUMS_KEY = "ddp4j.crc32";
    /** The largest header accepted (the safetensors library's limit, 100 MB). */
    static final long MAX_HEADER_BYTES = 100_000_000L;

    /**
     * Jackson's default limits (strings of 20 MB, names of 50,000 characters) are below what the
     * format allows; the only limit that applies is the header's length, checked before parsing.
     */
    private static final ObjectMapper JSON = new ObjectMapper(JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder()
                    .maxDocumentLength(MAX_HEADER_BYTES)
                    .maxStringLength((int) MAX_HEADER_BYTES)
                    .maxNameLength((int) MAX_HEADER_BYTES)
                    .build())
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build());

    /** One tensor's entry: its bytes are data section [begin, end). */
    record Entry(String name, DType dtype, long[] shape, long begin, long end) {
        long numel() {
            long n = 1;
            for (long s : shape) {
                n *= s;
            }
            return n;
        }
    }

    private final List<Entry> entries;
    private final Map<String, String> metadata;
    private final Map<String, Long> checksums;

    private SafeTensorsHeader(List<Entry> entries, Map<String, String> metadata, Map<String, Long> checksums) {
        this.entries = entries;
        this.metadata = metadata;
        this.checksums = checksums;
    }

    /** The entries in data order. */
    List<Entry> entries() {
        return entries;
    }

    /** The metadata (empty when the file has none), without ddp4j's {@value #CHECKSUMS_KEY}. */
    Map<String, String> metadata() {
        return metadata;
    }

    /** Each tensor's CRC-32 as the file records it; empty for a file written without checksums (PyTorch's). */
    Map<String, Long> checksums() {
        return checksums;
    }

    /** The size of the data section: where the last tensor ends. */
    long dataBytes() {
        return entries.isEmpty() ? 0 : entries.get(entries.size() - 1).end();
    }

    /** safetensors' name of a dtype. */
    static String dtypeName(DType dtype) {
        return switch (dtype) {
            case FLOAT32 -> "F32";
            case INT64 -> "I64";
            case BFLOAT16 -> "BF16";
            case FLOAT16 -> "F16";
            case BOOL -> "BOOL";
        };
    }

    /**
     * The header for writing {@code tensors} in iteration order, back to back.
     *
     * @throws IllegalArgumentException on the reserved name {@code __metadata__}, the reserved
     *     metadata key {@value #CHECKSUMS_KEY} or a null key or value
     */
    static SafeTensorsHeader forTensors(Map<String, Tensor> tensors, Map<String, String> metadata) {
        List<Entry> entries = new ArrayList<>();
        long offset = 0;
        for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
            if (e.getKey() == null || e.getValue() == null) {
                throw new IllegalArgumentException("safetensors: a null tensor name or tensor in the map to save");
            }
            if (e.getKey().equals(METADATA_KEY)) {
                throw new IllegalArgumentException("safetensors: '" + METADATA_KEY + "' is reserved for the metadata and"
                        + " cannot name a tensor; pass metadata as the metadata argument");
            }
            Tensor t = e.getValue();
            long bytes = t.numel() * t.dtype().bytes();
            entries.add(new Entry(e.getKey(), t.dtype(), t.shape(), offset, offset + bytes));
            offset += bytes;
        }
        for (Map.Entry<String, String> m : metadata.entrySet()) {
            if (m.getKey() == null || m.getValue() == null) {
                throw new IllegalArgumentException("safetensors: metadata keys and values must not be null, got "
                        + m.getKey() + "=" + m.getValue());
            }
            if (m.getKey().equals(CHECKSUMS_KEY)) {
                throw new IllegalArgumentException("safetensors: the metadata key '" + CHECKSUMS_KEY + "' is reserved for"
                        + " the checksums ddp4j writes itself; use another key");
            }
        }
        return new SafeTensorsHeader(List.copyOf(entries), Collections.unmodifiableMap(new LinkedHashMap<>(metadata)),
                Map.of());
    }

    /**
     * The 8-byte little-endian length followed by the JSON header, padded with spaces so that the
     * data section starts at a multiple of 8 bytes (as the safetensors library writes it), with
     * {@code checksums} (name to CRC-32, one per entry) under {@value #CHECKSUMS_KEY}. Its length
     * does not depend on the checksums' values (each is 8 hex digits), so a writer can encode it
     * with zeros, write the data, and write it again with the real values in the same bytes.
     *
     * @throws IllegalArgumentException when the header would exceed {@link #MAX_HEADER_BYTES},
     *     which readers refuse
     */
    byte[] encode(Map<String, Long> checksums) {
        ObjectNode root = JSON.createObjectNode();
        if (!metadata.isEmpty() || !entries.isEmpty()) {
            ObjectNode meta = root.putObject(METADATA_KEY);
            metadata.forEach(meta::put);
            if (!entries.isEmpty()) {
                ObjectNode sums = JSON.createObjectNode();
                for (Entry e : entries) {
                    sums.put(e.name(), String.format("%08x", checksums.get(e.name())));
                }
                meta.put(CHECKSUMS_KEY, sums.toString());
            }
        }
        for (Entry e : entries) {
            ObjectNode node = root.putObject(e.name());
            node.put("dtype", dtypeName(e.dtype()));
            ArrayNode shape = node.putArray("shape");
            for (long s : e.shape()) {
                shape.add(s);
            }
            node.putArray("data_offsets").add(e.begin()).add(e.end());
        }
        byte[] json;
        try {
            json = JSON.writeValueAsBytes(root);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot encode a safetensors header", e);
        }
        int padded = (json.length + 7) / 8 * 8;
        if (padded > MAX_HEADER_BYTES) {
            throw new IllegalArgumentException("safetensors: the header would be " + padded + " bytes, which exceeds the"
                    + " safetensors limit of " + MAX_HEADER_BYTES + " bytes (readers refuse it): store less metadata or"
                    + " fewer, shorter tensor names in one file");
        }
        ByteBuffer out = ByteBuffer.allocate(8 + padded).order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(padded).put(json);
        while (out.hasRemaining()) {
            out.put((byte) ' ');
        }
        return out.array();
    }

    /**
     * Parses and validates the JSON header of {@code file}, whose data section holds
     * {@code dataBytes} bytes: every entry names a known dtype, a shape of non-negative sizes and
     * data_offsets whose length is the shape's byte size; sorted by offset, the tensors tile the
     * data section from 0 to its end with no overlap and no gap.
     *
     * @throws SafeTensorsFormatException naming the file, the tensor and the problem
     */
    static SafeTensorsHeader parse(Path file, byte[] json, long dataBytes) throws SafeTensorsFormatException {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (JsonProcessingException e) {
            throw new SafeTensorsFormatException(file + ": the safetensors header is not valid JSON ("
                    + e.getOriginalMessage() + ")", e);
        } catch (java.io.IOException e) {
            throw new SafeTensorsFormatException(file + ": the safetensors header cannot be read: " + e.getMessage(), e);
        }
        if (root == null || !root.isObject()) {
            throw new SafeTensorsFormatException(file + ": the safetensors header is not a JSON object");
        }
        Map<String, String> metadata = new LinkedHashMap<>();
        List<Entry> entries = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> field = it.next();
            if (field.getKey().equals(METADATA_KEY)) {
                readMetadata(file, field.getValue(), metadata);
            } else {
                entries.add(readEntry(file, field.getKey(), field.getValue()));
            }
        }
        entries.sort(Comparator.comparingLong(Entry::begin).thenComparingLong(Entry::end));
        long expected = 0;
        Entry previous = null;
        for (Entry e : entries) {
            if (e.end() > dataBytes) {
                throw new SafeTensorsFormatException(file + ": tensor '" + e.name() + "' has data_offsets [" + e.begin()
                        + ", " + e.end() + "] beyond the end of the data section (" + dataBytes
                        + " bytes): the file is truncated or the offsets are wrong");
            }
            if (e.begin() < expected) {
                throw new SafeTensorsFormatException(file + ": tensor '" + e.name() + "' has data_offsets ["
                        + e.begin() + ", " + e.end() + "] overlapping tensor '" + previous.name() + "' ["
                        + previous.begin() + ", " + previous.end() + "]");
            }
            if (e.begin() > expected) {
                throw new SafeTensorsFormatException(file + ": tensor '" + e.name() + "' begins at data offset "
                        + e.begin() + " but the previous tensor" + (previous == null ? "s end" : " ('" + previous.name()
                        + "') ends") + " at " + expected + ": the data section has a gap");
            }
            expected = e.end();
            previous = e;
        }
        if (expected < dataBytes) {
            throw new SafeTensorsFormatException(file + ": the tensors end at data offset " + expected + " but the data"
                    + " section holds " + dataBytes + " bytes: the file has trailing bytes after the last tensor");
        }
        String sums = metadata.remove(CHECKSUMS_KEY);
        Map<String, Long> checksums = sums == null ? Map.of() : readChecksums(file, sums);
        return new SafeTensorsHeader(List.copyOf(entries), Collections.unmodifiableMap(metadata), checksums);
    }

    /** The value of {@value #CHECKSUMS_KEY}: a JSON object of tensor name to 8 hex digits. */
    private static Map<String, Long> readChecksums(Path file, String text) throws SafeTensorsFormatException {
        String where = file + ": metadata '" + CHECKSUMS_KEY + "'";
        JsonNode node;
        try {
            node = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw new SafeTensorsFormatException(where + " is not valid JSON (" + e.getOriginalMessage() + ")", e);
        }
        if (node == null || !node.isObject()) {
            throw new SafeTensorsFormatException(where + " must be a JSON object of tensor name to CRC-32, got " + text);
        }
        Map<String, Long> out = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> m = it.next();
            String hex = m.getValue().isTextual() ? m.getValue().textValue() : "";
            if (!hex.matches("[0-9a-fA-F]{8}")) {
                throw new SafeTensorsFormatException(where + ": the checksum of tensor '" + m.getKey() + "' must be a CRC-32"
                        + " as 8 hex digits, got " + m.getValue());
            }
            out.put(m.getKey(), Long.parseLong(hex, 16));
        }
        return Collections.unmodifiableMap(out);
    }

    private static void readMetadata(Path file, JsonNode node, Map<String, String> out) throws SafeTensorsFormatException {
        if (!node.isObject()) {
            throw new SafeTensorsFormatException(file + ": " + METADATA_KEY + " must be a JSON object of strings, got " + node);
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> m = it.next();
            if (!m.getValue().isTextual()) {
                throw new SafeTensorsFormatException(file + ": " + METADATA_KEY + " value of '" + m.getKey()
                        + "' must be a string, got " + m.getValue());
            }
            out.put(m.getKey(), m.getValue().textValue());
        }
    }

    private static Entry readEntry(Path file, String name, JsonNode node) throws SafeTensorsFormatException {
        String where = file + ": tensor '" + name + "'";
        if (!node.isObject()) {
            throw new SafeTensorsFormatException(where + ": expected an object with dtype, shape and data_offsets, got " + node);
        }
        JsonNode dtypeNode = node.get("dtype");
        if (dtypeNode == null || !dtypeNode.isTextual()) {
            throw new SafeTensorsFormatException(where + ": missing or non-string \"dtype\"");
        }
        DType dtype = switch (dtypeNode.textValue()) {
            case "F32" -> DType.FLOAT32;
            case "I64" -> DType.INT64;
            case "BF16" -> DType.BFLOAT16;
            case "F16" -> DType.FLOAT16;
            case "BOOL" -> DType.BOOL;
            case "U8", "I8", "F8_E4M3", "F8_E5M2", "I16", "U16", "I32", "U32", "F64", "U64" ->
                throw new SafeTensorsFormatException(where + ": dtype " + dtypeNode.textValue() + " is not supported"
                        + " by ddp4j (only F32, I64, BF16, F16 and BOOL); convert the tensor to one of those before saving it");
            default -> throw new SafeTensorsFormatException(where + ": unknown dtype \"" + dtypeNode.textValue()
                    + "\" (safetensors' dtypes are F32, I64, F16, BF16, ...; ddp4j reads F32, I64, BF16, F16 and BOOL)");
        };
        long[] shape = longs(where, node.get("shape"), "shape", -1);
        long[] offsets = longs(where, node.get("data_offsets"), "data_offsets", 2);
        if (offsets[1] < offsets[0]) {
            throw new SafeTensorsFormatException(where + ": data_offsets " + Arrays.toString(offsets) + " end before they begin");
        }
        long bytes;
        try {
            long numel = 1;
            for (long s : shape) {
                numel = Math.multiplyExact(numel, s);
            }
            bytes = Math.multiplyExact(numel, (long) dtype.bytes());
        } catch (ArithmeticException e) {
            throw new SafeTensorsFormatException(where + ": shape " + Arrays.toString(shape) + " is too large");
        }
        if (bytes != offsets[1] - offsets[0]) {
            throw new SafeTensorsFormatException(where + ": shape " + Arrays.toString(shape) + " of " + dtypeNode.textValue()
                    + " needs " + bytes + " bytes but data_offsets " + Arrays.toString(offsets) + " hold "
                    + (offsets[1] - offsets[0]));
        }
        return new Entry(name, dtype, shape, offsets[0], offsets[1]);
    }

    /** A JSON array of non-negative integers ({@code length} of them, or any number when -1). */
    private static long[] longs(String where, JsonNode node, String what, int length) throws SafeTensorsFormatException {
        if (node == null || !node.isArray() || (length >= 0 && node.size() != length)) {
            throw new SafeTensorsFormatException(where + ": \"" + what + "\" must be an array of "
                    + (length >= 0 ? length + " " : "") + "non-negative integers, got " + node);
        }
        long[] out = new long[node.size()];
        for (int i = 0; i < out.length; i++) {
            JsonNode v = node.get(i);
            if (!v.isIntegralNumber() || !v.canConvertToLong() || v.longValue() < 0) {
                throw new SafeTensorsFormatException(where + ": \"" + what + "\" must be an array of non-negative"
                        + " integers, got " + node);
            }
            out[i] = v.longValue();
        }
        return out;
    }
}
