#!/usr/bin/python3
"""Golden outputs of torchvision's transforms on fixed images, with the random choices given
explicitly (torchvision draws them from torch's global RNG, which ddp4j does not reproduce): the
Java test applies the same choices through the transforms' package-private appliers.

Writes java/src/test/resources/golden/transforms.json:
- image: a float32 [3, 5, 6] image (values in [0, 1)), raw: the same as uint8-valued floats 0..255;
- to_tensor: ToTensor() of the uint8 HWC array (the division by 255 in float32);
- normalize: Normalize(mean, std) of image;
- crop_<i>_<j>_<p>: RandomCrop((4, 3), padding=p)'s output at top-left (i, j) of the padded image
  (torchvision.transforms.functional.pad then crop, as RandomCrop.forward does);
- hflip: RandomHorizontalFlip's flipped image (functional.hflip);
- composed: Compose([RandomCrop((4, 3), padding=1) at (2, 1), RandomHorizontalFlip flipped,
  Normalize(mean, std)]) of image.

Run:  /usr/bin/python3 scripts/golden/transforms_golden.py   (needs python3-torchvision)
"""
import json
import os

import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F

GOLDEN = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "java", "src", "test",
                                       "resources", "golden"))


def entry(t):
    t = t.detach().to(torch.float32).contiguous()
    return {"shape": list(t.shape), "data": [float(v) for v in t.flatten().tolist()]}


def crop(img, i, j, padding, size=(4, 3)):
    padded = F.pad(img, padding, fill=0, padding_mode="constant")
    return F.crop(padded, i, j, size[0], size[1])


def main():
    g = torch.Generator().manual_seed(11)
    raw = torch.randint(0, 256, (3, 5, 6), generator=g, dtype=torch.uint8)
    image = torch.rand(3, 5, 6, generator=g)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    out = {
        "image": entry(image),
        "raw": entry(raw.to(torch.float32)),
        "to_tensor": entry(T.ToTensor()(raw.permute(1, 2, 0).numpy())),
        "mean": mean,
        "std": std,
        "normalize": entry(T.Normalize(mean, std)(image.clone())),
        "hflip": entry(F.hflip(image)),
    }
    for i, j, p in [(0, 0, 0), (1, 3, 0), (0, 0, 2), (3, 4, 2), (5, 5, 2), (2, 1, 1)]:
        out[f"crop_{i}_{j}_{p}"] = entry(crop(image, i, j, p))
    composed = T.Normalize(mean, std)(F.hflip(crop(image, 2, 1, 1)))
    out["composed"] = entry(composed)
    os.makedirs(GOLDEN, exist_ok=True)
    with open(os.path.join(GOLDEN, "transforms.json"), "w") as f:
        json.dump(out, f)
    print("wrote", os.path.join(GOLDEN, "transforms.json"))


if __name__ == "__main__":
    main()
