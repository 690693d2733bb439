"""The Fashion-MNIST training steps from Python (issue 15): tandem's module against PyTorch 1.13's.

The same step as bench/bench_train.cpp (and its libtorch peer): random data of
Fashion-MNIST shape, batch 128, four batches cycled; mlp 784-256-128-10 with SGD (lr 0.05, momentum 0.9), cnn
conv32-pool-conv64-pool-fc128-fc10 with Adam (lr 1e-3); zero_grad (each library's
default, as in the C++ harness: tandem sets gradients to none, PyTorch 1.13 zeroes them),
forward, cross-entropy, backward, optimizer step. The models are written in Python
(nn.Sequential of the built-in layers, PyTorch's default initialisation in both libraries).
Modes: "eager" for both libraries; "step" (tandem only) compiles the whole step function
with tandem.compile (its first call runs eagerly, the second captures).

    /usr/bin/python3 bench/bench_python_train.py tandem|torch [--rounds R] [--seconds S]

prints `train/MODEL_MODE<TAB>rate<TAB>samples/s` lines: the median over R rounds of S seconds each, after
a warm-up of 10 steps. `loss.item()` is read once per step, as the C++ harness does.
"""
import argparse
import statistics
import time

BATCH = 128
BATCHES = 4  # distinct random batches, cycled (as bench/train_harness.h)


def build(t, model):
    nn = t.nn
    if model == "mlp":
        net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                            nn.Linear(128, 10))
        opt = t.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    else:
        net = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                            nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
        opt = t.optim.Adam(net.parameters(), lr=1e-3)
    return net, opt


def measure(t, model, mode, rounds, seconds):
    t.manual_seed(0)
    net, opt = build(t, model)
    data = [(t.randn(BATCH, 1, 28, 28), t.randint(0, 10, (BATCH,))) for _ in range(BATCHES)]
    F = t.nn.functional

    def step(xb, yb):
        opt.zero_grad()  # each library's default, as the C++ harness calls it
        loss = F.cross_entropy(net(xb), yb)
        loss.backward()
        opt.step()
        return loss.detach()

    fn = t.compile(step) if mode == "step" else step
    for k in range(10):
        fn(*data[k % BATCHES]).item()
    rates = []
    for _ in range(rounds):
        steps, t0 = 0, time.perf_counter()
        while True:
            fn(*data[steps % BATCHES]).item()
            steps += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= seconds:
                break
        rates.append(steps * BATCH / elapsed)
    if mode == "step" and fn.compiled.compiled_calls == 0:
        raise SystemExit("bench_python_train: the compiled step never ran compiled")
    return statistics.median(rates)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lib", choices=["tandem", "torch"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.0)
    a = ap.parse_args()
    if a.lib == "torch":
        import torch as t
    else:
        import tandem as t
    t.set_num_threads(2)
    modes = ["eager", "step"] if a.lib == "tandem" else ["eager"]
    for model in ("mlp", "cnn"):
        for mode in modes:
            rate = measure(t, model, mode, a.rounds, a.seconds)
            print(f"train/{model}_{mode}\t{rate:.1f}\tsamples/s", flush=True)


if __name__ == "__main__":
    main()
