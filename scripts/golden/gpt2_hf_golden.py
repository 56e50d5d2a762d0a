#!/usr/bin/env python3
"""Golden values for ddp4j's GPT-2 from Hugging Face's own GPT2LMHeadModel (transformers 5.x on
torch 2.13: Debian's torch 1.13 has neither). A 2-layer model with random weights (pretrained ones
cannot be downloaded here) is saved with save_pretrained, as the hub serves models, and run on a
fixed batch with dropout off:

  java/src/test/resources/golden/gpt2_tiny/config.json, model.safetensors   (save_pretrained)
  java/src/test/resources/golden/gpt2_tiny_golden.safetensors
      input_ids int64 [2, 16], targets int64 [2, 16] (the next token; -100 where ignored),
      logits float32 [2, 16, V], loss float32 [1] (mean cross entropy over the targets kept),
      grad.<name> for every parameter of named_parameters() (the tied lm_head.weight is
      transformer.wte.weight, listed once; its gradient sums both uses)

Run with the image's wheels (offline):
  python3 -m venv /tmp/hfvenv && /tmp/hfvenv/bin/pip install torch==2.13.0+cpu transformers safetensors
  /tmp/hfvenv/bin/pip uninstall -y torchvision   # the CUDA-built wheel breaks `import transformers`
  /tmp/hfvenv/bin/python scripts/golden/gpt2_hf_golden.py
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from transformers import GPT2Config, GPT2LMHeadModel

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "java", "src", "test", "resources", "golden")
VOCAB, BATCH, T = 384, 2, 16

torch.manual_seed(2024)
config = GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=64, n_layer=2, n_head=4,
                    resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, attn_implementation="eager")
model = GPT2LMHeadModel(config)
# Biases and layer norms start at 0 and 1; give them values so that a swapped or skipped one shows.
with torch.no_grad():
    for name, p in model.named_parameters():
        if name.endswith(".bias") or ".ln_" in name:
            p.add_(0.05 * torch.randn_like(p))
model.save_pretrained(os.path.join(ROOT, "gpt2_tiny"))

g = torch.Generator().manual_seed(7)
tokens = torch.randint(0, VOCAB, (BATCH, T + 1), generator=g)
input_ids, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
targets[0, 3] = -100  # ignored positions, Hugging Face's label
targets[1, 10] = -100

model.train()  # dropout is 0: training mode computes what eval does, and gradients flow
logits = model(input_ids).logits
loss = F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1), ignore_index=-100)
loss.backward()

out = {"input_ids": input_ids, "targets": targets, "logits": logits.detach().contiguous(),
       "loss": loss.detach().reshape(1)}
for name, p in model.named_parameters():
    out["grad." + name] = p.grad.contiguous()
save_file(out, os.path.join(ROOT, "gpt2_tiny_golden.safetensors"))
print("loss", loss.item(), "parameters", sum(p.numel() for p in model.parameters()))
