#!/usr/bin/python3
"""A small CNN (Conv2d-BatchNorm-ReLU-MaxPool-Linear) trained on synthetic 12x12 images of four
stripe patterns, written as a PyTorch user writes it: the only GT-specific line is the import.
Run it through GT, or with --torch through PyTorch itself, unchanged:

  PYTHONPATH=build/python /usr/bin/python3 examples/python/train_cnn.py [--epochs N] [--torch]

Prints the loss per epoch and, last, "loss fell F%, accuracy A" (exit status 0 when the loss
fell by at least half and A >= 0.9).
"""
import argparse
import os
import sys
import tempfile

import numpy as np

if "--torch" in sys.argv:
    import torch
else:
    import gt as torch  # the names below are PyTorch's

nn = torch.nn
F = torch.nn.functional
from_data = torch.utils.data


def stripes(n, seed):
    """n noisy images [n, 1, 12, 12] of four classes: horizontal, vertical, diagonal and
    anti-diagonal stripes at a random phase."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, n)
    i, j = np.meshgrid(np.arange(12), np.arange(12), indexing="ij")
    coord = [i, j, i + j, i - j]
    phase = rng.integers(0, 3, n)
    images = np.stack([((coord[c] + p) % 3 == 0) for c, p in zip(labels, phase)]).astype(np.float32)
    images += rng.normal(0, 0.3, images.shape).astype(np.float32)
    return torch.from_numpy(images[:, None]), torch.from_numpy(labels.astype(np.int64))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(8 * 6 * 6, 4))

    def forward(self, x):
        return self.classifier(self.features(x))


def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        logits = model(x)
        loss = F.cross_entropy(logits, y).item()
        accuracy = (logits.argmax(1) == y).float().mean().item()
    model.train()
    return loss, accuracy


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--torch", action="store_true", help="run on PyTorch instead of GT")
    args = ap.parse_args()

    torch.manual_seed(0)
    x_train, y_train = stripes(512, seed=1)
    x_test, y_test = stripes(256, seed=2)
    loader = from_data.DataLoader(from_data.TensorDataset(x_train, y_train), batch_size=32,
                                  shuffle=True)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    first_loss, _ = evaluate(model, x_test, y_test)
    print(f"before training: test loss {first_loss:.4f}")
    for epoch in range(args.epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
        test_loss, accuracy = evaluate(model, x_test, y_test)
        print(f"epoch {epoch + 1}: train loss {loss.item():.4f} test loss {test_loss:.4f} "
              f"accuracy {accuracy:.3f}")

    # Save and restore the weights (running statistics included), as a PyTorch user would.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cnn.pt")
        torch.save(model.state_dict(), path)
        restored = Net()
        restored.load_state_dict(torch.load(path))
    same_loss, same_accuracy = evaluate(restored, x_test, y_test)
    assert abs(same_loss - test_loss) < 1e-4 and same_accuracy == accuracy, "restore changed the model"

    fell = 1 - test_loss / first_loss
    print(f"loss fell {100 * fell:.1f}%, accuracy {accuracy:.3f}")
    return 0 if fell >= 0.5 and accuracy >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())
