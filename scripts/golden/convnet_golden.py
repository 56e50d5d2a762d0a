#!/usr/bin/python3
"""Golden values for the whole two-conv network: 3 SGD steps (lr 0.01, momentum 0.9) of the
Fashion-MNIST ConvNet on a fixed batch of 8 random images, computed with PyTorch (Debian's
python3-torch) in float32. Checks that ddp4j's training step is PyTorch's, not only each layer.

Writes java/src/test/resources/golden/convnet_steps.json: the initial state_dict (init.<name>),
the data, the loss of each step (loss0..2), the final parameters and buffers (final.<name>).

Run from anywhere:  /usr/bin/python3 scripts/golden/convnet_golden.py
"""
import json
import os

import torch
import torch.nn as nn

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "java", "src", "test",
                                    "resources", "golden", "convnet_steps.json"))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(1, 16, 5, 1, 2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.layer2 = nn.Sequential(nn.Conv2d(16, 32, 5, 1, 2), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.fc = nn.Linear(7 * 7 * 32, 10)

    def forward(self, x):
        out = self.layer2(self.layer1(x))
        return self.fc(out.reshape(out.size(0), -1))


def entry(t):
    t = t.detach()
    # 9 significant digits round-trip any float32 exactly.
    e = {"shape": list(t.shape), "data": [float("%.9g" % v) for v in t.reshape(-1).tolist()]}
    if t.dtype == torch.int64:
        e["dtype"] = "int64"
        e["data"] = t.reshape(-1).tolist()
    return e


def main():
    torch.manual_seed(11)
    model = ConvNet()
    values = {}
    for name, t in model.state_dict().items():
        values["init." + name] = entry(t)
    x = torch.rand(8, 1, 28, 28)
    y = torch.randint(0, 10, (8,))
    values["images"] = entry(x)
    values["labels"] = entry(y)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    crit = nn.CrossEntropyLoss()
    for step in range(3):
        loss = crit(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        values["loss%d" % step] = loss.item()
    for name, t in model.state_dict().items():
        values["final." + name] = entry(t)
    with open(OUT, "w") as f:
        f.write("{\n" + ",\n".join("  " + json.dumps(k) + ": " + json.dumps(v) for k, v in values.items()) + "\n}\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
