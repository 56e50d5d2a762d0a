"""The safetensors format written with the standard library and torch only (Debian's torch 1.13 has
no `safetensors` package): safetensors.torch.save_file's layout, used by the golden scripts."""
import json
import struct

import torch

DTYPES = {torch.float32: "F32", torch.int64: "I64", torch.bfloat16: "BF16", torch.float16: "F16"}


def save_safetensors(tensors, path, metadata=None):
    """8-byte little-endian header length, the JSON header padded with spaces so the data starts at a
    multiple of 8, then each tensor's bytes, little-endian, in header order."""
    header, offset, blobs = ({"__metadata__": metadata} if metadata else {}), 0, []
    for name, t in tensors.items():
        t = t.detach().contiguous()
        # numpy has no bfloat16: the 16-bit types are written as their bit patterns (the same bytes)
        a = t.view(torch.int16).numpy() if t.dtype in (torch.bfloat16, torch.float16) else t.numpy()
        data = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
