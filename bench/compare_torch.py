#!/usr/bin/python3
"""The MLP training step of gt-bench-mlp in PyTorch (CPU, or --device cuda), beside GT's figure.

Same step: 64x784 -> 256 -> 10 (ReLU), cross entropy, SGD(lr=0.01), loss.item() every step.
Uses Debian's python3-torch (apt-get install python3-torch); run with /usr/bin/python3.

  /usr/bin/python3 bench/compare_torch.py [--steps N] [--gt-bench build/bin/gt-bench-mlp]
                                          [--device cuda]

With --gt-bench, runs that program first (GT_ADDRESS or the embedded default) and prints both
medians side by side with the GT / torch ratio.
"""
import argparse
import re
import statistics
import subprocess
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("compare_torch.py: PyTorch is not installed (apt-get install python3-torch)")
    sys.exit(0)


def torch_step_ms(steps, warmup, lr, device):
    torch.manual_seed(1)
    x = torch.randn(64, 784).to(device)
    y = torch.randint(0, 10, (64,)).to(device)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=lr)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--gt-bench", help="path of gt-bench-mlp, to report GT beside torch")
    ap.add_argument("--device", default="cpu", help="cpu, or cuda (GT's workers on that GPU too)")
    a = ap.parse_args()
    if a.device != "cpu" and not torch.cuda.is_available():
        print(f"compare_torch.py: PyTorch {torch.__version__} has no CUDA device")
        sys.exit(1)

    gt_ms = None
    if a.gt_bench:
        out = subprocess.run([a.gt_bench, "--steps", str(a.steps), "--warmup", str(a.warmup),
                              "--lr", str(a.lr)], capture_output=True, text=True, check=False)
        sys.stdout.write(out.stdout)
        m = re.search(r"GT \(client autograd \+ daemons\): median ([0-9.]+) ms", out.stdout)
        if m:
            gt_ms = float(m.group(1))
        else:
            print("compare_torch.py: could not read GT's figure:", out.stderr.strip())

    t_ms = torch_step_ms(a.steps, a.warmup, a.lr, a.device)
    where = (f"CPU ({torch.get_num_threads()} threads)" if a.device == "cpu"
             else torch.cuda.get_device_name(0))
    print(f"PyTorch {torch.__version__} {where}, same step: median {t_ms:.3f} ms/step")
    if gt_ms is not None:
        print(f"GT {gt_ms:.3f} ms/step vs PyTorch {t_ms:.3f} ms/step: GT / torch = {gt_ms / t_ms:.2f}x "
              "(the original GT was 44-75x)")


if __name__ == "__main__":
    main()
