#!/usr/bin/python3
"""Golden checkpoint: the Fashion-MNIST ConvNet's state_dict as PyTorch names and holds it, after
two SGD momentum steps (so the BatchNorm buffers and num_batches_tracked are not their initial
values), written in the safetensors format from Python, and what the model computes with it.

Writes to java/src/test/resources/golden/:
- convnet_state_dict.safetensors: model.state_dict() with metadata {"format": "pt"}, written by
  safetensors.torch.save_file when the safetensors package is installed, else by safetensors_writer.save_safetensors
  (struct + json, the same layout: 8-byte little-endian header length, JSON header padded with
  spaces to 8 bytes, little-endian data in header order);
- convnet_state_dict.json: each tensor's shape and first values (head.<name>), two test images
  (images) and the model's eval-mode logits for them (logits).

Run from anywhere:  /usr/bin/python3 scripts/golden/safetensors_golden.py   (needs python3-torch)
"""
import json
import os

import torch
import torch.nn as nn

from safetensors_writer import save_safetensors

GOLDEN = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "java", "src", "test",
                                       "resources", "golden"))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(1, 16, 5, 1, 2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.layer2 = nn.Sequential(nn.Conv2d(16, 32, 5, 1, 2), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.fc = nn.Linear(7 * 7 * 32, 10)

    def forward(self, x):
        out = self.layer2(self.layer1(x))
        return self.fc(out.reshape(out.size(0), -1))


def values(t):
    t = t.detach().reshape(-1)
    if t.dtype == torch.int64:
        return t.tolist()
    return [float("%.9g" % v) for v in t.tolist()]  # 9 significant digits round-trip a float32


def main():
    torch.manual_seed(11)
    model = ConvNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for _ in range(2):
        images = torch.rand(8, 1, 28, 28)
        labels = torch.randint(0, 10, (8,))
        opt.zero_grad()
        nn.functional.cross_entropy(model(images), labels).backward()
        opt.step()
    model.eval()
    test = torch.rand(2, 1, 28, 28)
    with torch.no_grad():
        logits = model(test)
    state = model.state_dict()
    path = os.path.join(GOLDEN, "convnet_state_dict.safetensors")
    try:
        from safetensors.torch import save_file as official_save_file
        official_save_file(state, path, metadata={"format": "pt"})
    except ImportError:
        save_safetensors(state, path, {"format": "pt"})
    out = {"keys": list(state.keys()),
           "images": {"shape": list(test.shape), "data": values(test)},
           "logits": {"shape": list(logits.shape), "data": values(logits)}}
    for name, t in state.items():
        entry = {"shape": list(t.shape), "data": values(t)[:5]}
        if t.dtype == torch.int64:
            entry["dtype"] = "int64"
        out["head." + name] = entry
    with open(os.path.join(GOLDEN, "convnet_state_dict.json"), "w") as f:
        json.dump(out, f)
    print("wrote", path)


if __name__ == "__main__":
    main()
