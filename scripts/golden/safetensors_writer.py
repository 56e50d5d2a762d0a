"""The safetensors format written with the standard library and torch only (Debian's torch 1.13 has
no `safetensors` package): safetensors.torch.save_file's layout, used by the golden scripts."""
import json
import struct

import torch

DTYPES = {torch.float32: "F32", torch.int64: "I64"}


def save_safetensors(tensors, path, metadata=None):
    """8-byte little-endian header length, the JSON header padded with spaces so the data starts at a
    multiple of 8, then each tensor's bytes, little-endian, in header order."""
    header, offset, blobs = ({"__metadata__": metadata} if metadata else {}), 0, []
    for name, t in tensors.items():
        a = t.detach().contiguous().numpy()
        data = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
