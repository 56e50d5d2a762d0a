#!/usr/bin/python3
"""Golden values for ddp4j's Adam / AdamW, learning-rate schedulers, clip_grad_norm_ and module
printing, made with PyTorch.

Writes java/src/test/resources/golden/{adam,lr_schedulers,one_cycle_lr,param_groups,clip_grad_norm,module_repr}.json in the
format of linear_loss_golden.py (tensors as {"shape", "data"}; plain numbers, lists of numbers and
strings as they are). Seeds are fixed, so a rerun reproduces the same files.

Run with Debian's python3-torch: /usr/bin/python3 scripts/golden/optim_golden.py
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from linear_loss_golden import write  # noqa: E402  (same file format)

STEPS = 5

# name -> (optimizer class, keyword arguments); defaults where a variant names none.
ADAM_VARIANTS = {
    "adam": (torch.optim.Adam, {}),
    "adam_wd_amsgrad": (torch.optim.Adam, {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    "adam_betas_eps": (torch.optim.Adam, {"lr": 0.02, "betas": (0.8, 0.99), "eps": 1e-6}),
    "adamw": (torch.optim.AdamW, {}),
    "adamw_amsgrad": (torch.optim.AdamW, {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True}),
}


def adam_golden():
    """A Linear(4, 3) regression, a different batch each step (so the second moment rises and
    falls and amsgrad's maximum matters): parameters after each step and the final state."""
    g = torch.Generator().manual_seed(11)
    w0 = torch.randn(3, 4, generator=g) * 0.5
    b0 = torch.randn(3, generator=g) * 0.5
    xs = torch.randn(STEPS, 6, 4, generator=g)
    ys = torch.randn(STEPS, 6, 3, generator=g)
    for t in range(STEPS):
        xs[t] *= 3.0 if t % 2 == 0 else 0.3
    out = {"steps": STEPS, "w0": w0, "b0": b0, "xs": xs, "ys": ys}
    for name, (cls, kwargs) in ADAM_VARIANTS.items():
        model = nn.Linear(4, 3)
        with torch.no_grad():
            model.weight.copy_(w0)
            model.bias.copy_(b0)
        opt = cls(model.parameters(), **kwargs)
        group = opt.param_groups[0]
        out[f"{name}.optimizer"] = cls.__name__
        out[f"{name}.lr"] = group["lr"]
        out[f"{name}.beta1"] = group["betas"][0]
        out[f"{name}.beta2"] = group["betas"][1]
        out[f"{name}.eps"] = group["eps"]
        out[f"{name}.weight_decay"] = group["weight_decay"]
        out[f"{name}.amsgrad"] = 1 if group["amsgrad"] else 0
        ws, bs = [], []
        for t in range(STEPS):
            opt.zero_grad()
            F.mse_loss(model(xs[t]), ys[t]).backward()
            opt.step()
            ws.append(model.weight.detach().clone())
            bs.append(model.bias.detach().clone())
        out[f"{name}.weights"] = torch.stack(ws)
        out[f"{name}.biases"] = torch.stack(bs)
        state = opt.state[model.weight]
        out[f"{name}.weight.exp_avg"] = state["exp_avg"]
        out[f"{name}.weight.exp_avg_sq"] = state["exp_avg_sq"]
        if group["amsgrad"]:
            out[f"{name}.weight.max_exp_avg_sq"] = state["max_exp_avg_sq"]
        out[f"{name}.weight.step"] = float(state["step"])
    write("adam", out)


# name -> (scheduler factory, steps); the optimizer is SGD with lr 0.1.
SCHEDULERS = {
    "step_lr": (lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5), 10),
    "step_lr_default_gamma": (lambda o: torch.optim.lr_scheduler.StepLR(o, 2), 7),
    "multi_step_lr": (lambda o: torch.optim.lr_scheduler.MultiStepLR(o, milestones=[5, 2, 8, 5], gamma=0.3), 10),
    "cosine": (lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10), 10),
    "cosine_eta_min_periodic": (lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4, eta_min=0.001), 17),
    "linear_lr_default": (lambda o: torch.optim.lr_scheduler.LinearLR(o), 8),
    "linear_lr": (lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=4), 7),
}


def scheduler_golden():
    """get_last_lr() after construction and after each step (one epoch each), and state_dict()."""
    out = {"base_lr": 0.1}
    for name, (make, steps) in SCHEDULERS.items():
        p = nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([p], lr=0.1)
        sched = make(opt)
        lrs = [sched.get_last_lr()[0]]
        for _ in range(steps):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr()[0])
        out[f"{name}.lrs"] = lrs
        out[f"{name}.last_epoch"] = sched.state_dict()["last_epoch"]
        out[f"{name}.optimizer_lr"] = opt.param_groups[0]["lr"]
    write("lr_schedulers", out)


# name -> (optimizer factory over a Linear's weight and bias, OneCycleLR keyword arguments, steps). Steps equal
# total_steps: the last step is the one past the schedule's end, where PyTorch extrapolates (and ddp4j holds
# the end value).
ONE_CYCLE_CASES = {
    "sgd_defaults": (lambda w, b: torch.optim.SGD([w, b], lr=0.5, momentum=0.9), {"max_lr": 0.1, "total_steps": 20}, 20),
    "sgd_two_groups_linear_three_phase": (
        lambda w, b: torch.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.2}], lr=0.1),
        {"max_lr": [0.4, 0.05], "total_steps": 17, "pct_start": 0.25, "anneal_strategy": "linear", "three_phase": True,
         "div_factor": 10.0, "final_div_factor": 100.0, "base_momentum": 0.8, "max_momentum": 0.9}, 17),
    "adam_betas": (lambda w, b: torch.optim.Adam([w, b], lr=0.001, betas=(0.9, 0.98)), {"max_lr": 0.01, "total_steps": 9}, 9),
    "adamw_no_cycle_momentum": (lambda w, b: torch.optim.AdamW([w, b]),
                                {"max_lr": 0.003, "total_steps": 6, "cycle_momentum": False, "pct_start": 0.5}, 6),
    "one_step": (lambda w, b: torch.optim.SGD([w, b], lr=0.1, momentum=0.5), {"max_lr": 0.2, "total_steps": 1}, 1),
}


def one_cycle_golden():
    """OneCycleLR: each group's lr and momentum (SGD's momentum or Adam's first beta) after construction
    and after each step, with a Linear(4, 3)'s weight and bias taking steps on a fixed loss."""
    torch.manual_seed(0)
    x = torch.randn(5, 4)
    out = {"x": x, "w0": torch.linspace(-1, 1, 12).reshape(3, 4), "b0": torch.tensor([0.1, -0.2, 0.3])}
    for name, (make, kwargs, steps) in ONE_CYCLE_CASES.items():
        lin = nn.Linear(4, 3)
        with torch.no_grad():
            lin.weight.copy_(out["w0"])
            lin.bias.copy_(out["b0"])
        opt = make(lin.weight, lin.bias)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, **kwargs)

        def momenta():
            return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]

        lrs, moms = [sched.get_last_lr()], [momenta()]
        for _ in range(steps):
            opt.zero_grad()
            lin(x).square().mean().backward()
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr())
            moms.append(momenta())
        out[f"{name}.groups"] = len(opt.param_groups)
        out[f"{name}.lrs"] = [v for row in lrs for v in row]
        out[f"{name}.momenta"] = [v for row in moms for v in row]
        out[f"{name}.weight"] = lin.weight.detach()
    write("one_cycle_lr", out)


# name -> (optimizer class, constructor keyword arguments (the per-group defaults), the bias group's own
# options, scheduler factory or None). Group 0 is [weight] with no options of its own, group 1 [bias].
GROUP_CASES = {
    "sgd_momentum": (torch.optim.SGD, {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01},
                     {"lr": 0.2, "weight_decay": 0.0}, None),
    "adam": (torch.optim.Adam, {"lr": 0.01, "weight_decay": 0.1},
             {"lr": 0.05, "weight_decay": 0.0, "betas": (0.8, 0.99)}, None),
    "adamw": (torch.optim.AdamW, {"lr": 0.02},
              {"lr": 0.005, "weight_decay": 0.0, "amsgrad": True}, None),
    "sgd_step_lr": (torch.optim.SGD, {"lr": 0.1, "momentum": 0.5, "weight_decay": 0.05}, {"lr": 0.03, "weight_decay": 0.0},
                    lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5)),
    "adamw_cosine": (torch.optim.AdamW, {"lr": 0.02}, {"lr": 0.004, "weight_decay": 0.0},
                     lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=2, eta_min=0.001)),
}


def param_groups_golden():
    """Two parameter groups of a Linear(4, 3) (weight; bias with its own lr and weight_decay):
    parameters after each of 5 steps (a scheduler, where given, stepped after each), each group's
    lr after each step, and state_dict() as PyTorch writes it (param_groups as JSON; each state
    tensor under "<case>.state.<index>.<name>")."""
    g = torch.Generator().manual_seed(13)
    w0 = torch.randn(3, 4, generator=g) * 0.5
    b0 = torch.randn(3, generator=g) * 0.5
    xs = torch.randn(STEPS, 6, 4, generator=g)
    ys = torch.randn(STEPS, 6, 3, generator=g)
    out = {"steps": STEPS, "w0": w0, "b0": b0, "xs": xs, "ys": ys}
    for name, (cls, defaults, bias_options, make_scheduler) in GROUP_CASES.items():
        model = nn.Linear(4, 3)
        with torch.no_grad():
            model.weight.copy_(w0)
            model.bias.copy_(b0)
        opt = cls([{"params": [model.weight]}, dict(bias_options, params=[model.bias])], **defaults)
        sched = make_scheduler(opt) if make_scheduler else None
        out[f"{name}.optimizer"] = cls.__name__
        out[f"{name}.defaults"] = defaults
        out[f"{name}.bias_options"] = {k: list(v) if isinstance(v, tuple) else v for k, v in bias_options.items()}
        ws, bs, lrs = [], [], []
        for t in range(STEPS):
            opt.zero_grad()
            F.mse_loss(model(xs[t]), ys[t]).backward()
            opt.step()
            if sched:
                sched.step()
            ws.append(model.weight.detach().clone())
            bs.append(model.bias.detach().clone())
            lrs.append([group["lr"] for group in opt.param_groups])
        out[f"{name}.weights"] = torch.stack(ws)
        out[f"{name}.biases"] = torch.stack(bs)
        out[f"{name}.lrs"] = lrs
        if sched:
            sd = sched.state_dict()
            out[f"{name}.scheduler.base_lrs"] = sd["base_lrs"]
            out[f"{name}.scheduler.last_lr"] = sd["_last_lr"]
            out[f"{name}.scheduler.last_epoch"] = sd["last_epoch"]
        sd = opt.state_dict()
        out[f"{name}.param_groups"] = [{k: list(v) if isinstance(v, tuple) else v for k, v in group.items()}
                                       for group in sd["param_groups"]]
        out[f"{name}.state_keys"] = {str(i): list(s.keys()) for i, s in sd["state"].items()}
        for i, s in sd["state"].items():
            for key, value in s.items():
                out[f"{name}.state.{i}.{key}"] = value.float() if value.dim() else float(value)
    write("param_groups", out)


def clip_golden():
    """clip_grad_norm_ on three gradients (one parameter without): total norms and clipped grads."""
    g = torch.Generator().manual_seed(12)
    grads = [torch.randn(3, 4, generator=g), torch.randn(5, generator=g) * 2, torch.randn(2, 2, 2, generator=g)]
    out = {}
    for i, gr in enumerate(grads):
        out[f"grad{i}"] = gr
    cases = {"l2_clipped": (1.0, 2.0), "l2_unclipped": (100.0, 2.0), "inf_clipped": (0.5, float("inf")),
             "inf_unclipped": (10.0, float("inf")), "l1_clipped": (2.0, 1.0)}
    for name, (max_norm, norm_type) in cases.items():
        params = [nn.Parameter(torch.zeros_like(gr)) for gr in grads]
        for p, gr in zip(params, grads):
            p.grad = gr.clone()
        extra = nn.Parameter(torch.ones(3))  # no gradient: skipped
        total = torch.nn.utils.clip_grad_norm_(params + [extra], max_norm, norm_type=norm_type)
        out[f"{name}.max_norm"] = max_norm
        out[f"{name}.norm_type"] = -1.0 if norm_type == float("inf") else norm_type  # JSON has no inf
        out[f"{name}.total_norm"] = float(total)
        for i, p in enumerate(params):
            out[f"{name}.grad{i}"] = p.grad
    write("clip_grad_norm", out)


class ConvNet(nn.Module):
    """ddp4j's ConvNet (examples/ConvNet.java), optionally with Dropout before the final Linear."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(1, 16, 5, 1, 2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2))
        self.layer2 = nn.Sequential(nn.Conv2d(16, 32, 5, 1, 2), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2))
        if dropout > 0:
            self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(7 * 7 * 32, 10)


def repr_golden():
    """print(model) strings."""
    mixed = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8, eps=1e-3, momentum=0.2),
                          nn.ReLU(), nn.MaxPool2d(3, 2, 1), nn.Flatten(), nn.Dropout(0.25), nn.Linear(8, 2, bias=False),
                          nn.Sequential())
    write("module_repr", {"convnet": repr(ConvNet()), "convnet_dropout": repr(ConvNet(0.5)), "mixed": repr(mixed)})


if __name__ == "__main__":
    adam_golden()
    scheduler_golden()
    one_cycle_golden()
    param_groups_golden()
    clip_golden()
    repr_golden()
