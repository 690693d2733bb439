"""Trains the CNN of `tandem train --model cnn` on Fashion-MNIST from Python.

    ./run python examples/train_fashion_mnist.py [--epochs 2] [--compiled | --compiled-step] [--limit N]

The model is written as a Python nn.Module; the data come from the Debian package
dataset-fashion-mnist through the C++ loader (normalised with the training split's
mean and std, as `tandem train` does). --compiled runs the forward pass through
tandem.compile; --compiled-step compiles the whole training step (zero_grad, forward,
loss, backward, optimizer step) into one program, with the same losses as eager. Prints
the mean loss per example and the test accuracy after each epoch.

The Python layers draw the C++ layers' initial values for the same seed and the loader
shuffles as the C++ one does, so this trains exactly what
`tandem train --model cnn --optimizer adam --batch-size 64 --seed 1` trains (same weights,
batches and losses; after one epoch both print loss 0.4084 and test accuracy 87.68%).
"""
import argparse
import time

import tandem
from tandem import nn
from tandem.utils.data import DataLoader

MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST training pixels after /255


class CNN(nn.Module):
    """conv(1->32) relu pool, conv(32->64) relu pool, linear(3136->128) relu, linear(128->10)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(3136, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.pool(self.conv1(x).relu())
        x = self.pool(self.conv2(x).relu())
        return self.fc2(self.fc1(x.flatten(1)).relu())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--compiled", action="store_true", help="run the forward pass through tandem.compile")
    ap.add_argument("--compiled-step", action="store_true",
                    help="compile the whole training step (forward, backward and update) with tandem.compile")
    ap.add_argument("--limit", type=int, default=0, help="train on the first N batches of each epoch only")
    args = ap.parse_args()

    tandem.manual_seed(args.seed)
    model = CNN()
    forward = tandem.compile(model) if args.compiled else model
    opt = tandem.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    train = DataLoader(tandem.datasets.FashionMNIST(train=True), batch_size=args.batch_size, shuffle=True,
                       seed=args.seed)
    test = DataLoader(tandem.datasets.FashionMNIST(train=False), batch_size=1000)

    def train_step(x, y):
        opt.zero_grad()
        loss = loss_fn(forward((x - MEAN) / STD), y)
        loss.backward()
        opt.step()
        return loss.detach()
    step = tandem.compile(train_step) if args.compiled_step else train_step

    for epoch in range(1, args.epochs + 1):
        model.train()
        start, total, n = time.time(), 0.0, 0
        for i, (x, y) in enumerate(train):
            if args.limit and i >= args.limit:
                break
            loss = step(x, y)
            total, n = total + loss.item() * len(y), n + len(y)  # per example, as tandem train
        model.eval()
        correct = 0
        with tandem.no_grad():
            for x, y in test:
                correct += int((model((x - MEAN) / STD).argmax(1) == y).sum())
        print(f"epoch {epoch}: loss {total / max(n, 1):.4f}, test accuracy {correct / 100:.2f}%, "
              f"{time.time() - start:.1f} s")


if __name__ == "__main__":
    main()
