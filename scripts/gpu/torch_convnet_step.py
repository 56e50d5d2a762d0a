"""ConvNet training step time on a GPU with PyTorch: the counterpart of ddp4j's
org.ddp4j.benchmarks.GpuStepTime, for scripts/gpu-check.sh. The model is the ConvNet of
benchmarks/pytorch/convnet_mnist.py (defined again here so that this file runs on its own), in float32 with TF32 off for matmuls and cuDNN convolutions. Synthetic inputs of the
demo's shape ([B, 1, 28, 28] normal, labels i % 10) on the GPU before timing; CrossEntropyLoss,
SGD lr 0.01 momentum 0.9; each step = forward, zero_grad, backward, step, timed on its own between
two torch.cuda.synchronize() calls after a warm-up; median and best of the timed steps.
Run: python3 scripts/gpu/torch_convnet_step.py [--batch 100,1024] [--warmup 20] [--steps 100] [--device cpu]
Prints per batch: gpu_step batch=B steps=S median_ms=M best_ms=T images_per_s=I last_loss=L
Exits 77 when torch sees no GPU."""
import argparse, statistics, sys, time
import torch, torch.nn as nn


class ConvNet(nn.Module):  # convnet_mnist.py's model, layer for layer
    def __init__(self, num_classes=10):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(1, 16, 5, 1, 2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.layer2 = nn.Sequential(nn.Conv2d(16, 32, 5, 1, 2), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.fc = nn.Linear(7 * 7 * 32, num_classes)

    def forward(self, x):
        out = self.layer2(self.layer1(x))
        return self.fc(out.reshape(out.size(0), -1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--batch', default='100,1024')
    p.add_argument('--warmup', type=int, default=20)
    p.add_argument('--steps', type=int, default=100)
    p.add_argument('--device', default='cuda', help='cuda (cuda:0) or cpu, for comparison')
    a = p.parse_args()
    if a.device.startswith('cuda') and not torch.cuda.is_available():
        print('torch_convnet_step.py: torch sees no GPU (torch %s, built for CUDA %s)' % (torch.__version__, torch.version.cuda))
        sys.exit(77)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device('cuda', 0) if a.device == 'cuda' else torch.device(a.device)
    cuda = dev.type == 'cuda'
    sync = (lambda: torch.cuda.synchronize(dev)) if cuda else (lambda: None)
    print('device %s %s torch %s cudnn %s tf32 off cudnn.benchmark %s' % (dev, torch.cuda.get_device_name(dev) if cuda else '',
          torch.__version__, torch.backends.cudnn.version(), torch.backends.cudnn.benchmark), flush=True)
    for b in [int(s) for s in a.batch.split(',')]:
        torch.manual_seed(0)
        model = ConvNet().to(dev)
        crit = nn.CrossEntropyLoss()
        opt = torch.optim.SGD(model.parameters(), 0.01, momentum=0.9)
        x = torch.randn(b, 1, 28, 28, dtype=torch.float32).to(dev)
        y = (torch.arange(b) % 10).to(dev)
        times = []
        for i in range(-a.warmup, a.steps):
            sync()
            t0 = time.perf_counter()
            loss = crit(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sync()
            if i >= 0:
                times.append(time.perf_counter() - t0)
        med = statistics.median(times) * 1e3
        print('gpu_step batch=%d steps=%d median_ms=%.3f best_ms=%.3f images_per_s=%.0f last_loss=%.4f'
              % (b, a.steps, med, min(times) * 1e3, b / (med / 1e3), loss.item()), flush=True)
        del model, opt, x, y, loss
        if cuda:
            torch.cuda.empty_cache()


if __name__ == '__main__':
    main()
