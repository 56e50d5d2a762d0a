#!/usr/bin/python3
"""Reads a safetensors file with nothing but struct, json and numpy, checking it as the
safetensors library's own loader does (header length within the file, a JSON object, known
dtypes, shapes that match data_offsets, offsets that tile the data with no overlap, gap or
trailing byte) plus ddp4j's promise that the data starts 8-byte aligned. Prints one JSON object:
{"metadata": {...}, "tensors": [{"name", "dtype", "shape", "sha256" (of the little-endian bytes),
"crc32" (zlib's, of the same bytes, as 8 hex digits), "head" (the first values)}, ...]} in data order. Exits 1 with a message on any violation.

Usage: /usr/bin/python3 read_safetensors.py FILE
"""
import hashlib
import json
import struct
import sys
import zlib

import numpy as np

# numpy has no bfloat16: BF16 is read as its bit patterns ("<u2"), and its head values are widened to float32.
DTYPES = {"F32": np.dtype("<f4"), "I64": np.dtype("<i8"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"),
          "F64": np.dtype("<f8"),
          "I32": np.dtype("<i4"), "U8": np.dtype("u1"), "I8": np.dtype("i1")}


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def head(array, dtype):
    """The first three values, as floats for the float types (BF16 widened: its bits are float32's upper half)."""
    first = array.reshape(-1)[:3]
    if dtype == "BF16":
        return (first.astype(np.uint32) << 16).view(np.float32)
    return first


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        fail("file shorter than 8 bytes")
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        fail("header length %d beyond the file (%d bytes)" % (n, len(data)))
    if (8 + n) % 8 != 0:
        fail("data does not start 8-byte aligned (header length %d)" % n)
    header_text = data[8:8 + n].decode("utf-8")
    header, json_end = json.JSONDecoder().raw_decode(header_text)
    if header_text[json_end:].strip(" "):
        fail("the header is followed by something other than space padding")
    if not isinstance(header, dict):
        fail("header is not a JSON object")
    metadata = header.pop("__metadata__", {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        fail("__metadata__ must map strings to strings")
    body = data[8 + n:]
    entries = sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"]))
    expected = 0
    out = []
    for name, info in entries:
        if set(info) != {"dtype", "shape", "data_offsets"}:
            fail("tensor %s: fields %s" % (name, sorted(info)))
        dtype = DTYPES.get(info["dtype"])
        if dtype is None:
            fail("tensor %s: unknown dtype %s" % (name, info["dtype"]))
        begin, end = info["data_offsets"]
        if begin != expected:
            fail("tensor %s: begins at %d, expected %d (overlap or gap)" % (name, begin, expected))
        numel = int(np.prod(info["shape"], dtype=np.int64)) if info["shape"] else 1
        if end - begin != numel * dtype.itemsize:
            fail("tensor %s: shape %s does not match data_offsets %s" % (name, info["shape"], info["data_offsets"]))
        if end > len(body):
            fail("tensor %s: data_offsets beyond the file" % name)
        array = np.frombuffer(body[begin:end], dtype=dtype).reshape(info["shape"])
        expected = end
        out.append({"name": name, "dtype": info["dtype"], "shape": list(array.shape),
                    "sha256": hashlib.sha256(array.astype(dtype).tobytes()).hexdigest(),
                    "crc32": "%08x" % zlib.crc32(body[begin:end]),
                    "head": [v.item() for v in head(array, info["dtype"])]})
    if expected != len(body):
        fail("data ends at %d but the file holds %d data bytes" % (expected, len(body)))
    return {"metadata": metadata, "tensors": out}


if __name__ == "__main__":
    print(json.dumps(read(sys.argv[1])))
