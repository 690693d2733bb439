"""Python per-op overhead (issue 15): tandem's Python module against PyTorch 1.13's.

Each case is timed in one process per library (so the peer can run at its best: tcmalloc
preloaded, OMP_WAIT_POLICY=PASSIVE, set by bench/run_all.sh): the median over 7
repetitions of the mean wall time of a loop of calls, after a warm-up.

    /usr/bin/python3 bench/bench_python.py tandem|torch   prints `case<TAB>ns<TAB>ns`

Cases:
  add_1elem                  a + b, 1-element float32 tensors, no grad
  add_1elem_requires_grad    the same with requires_grad leaves (records the tape)
  mlp16_step                 tiny MLP 16-16-16-1 (Linear, ReLU), batch 1: zero_grad
                             (set_to_none), forward, MSE loss, backward, SGD step
"""
import statistics
import sys
import time


def timed(fn, number):
    fn()
    runs = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter() - t0) / number * 1e9)
    return statistics.median(runs)


def main():
    lib = sys.argv[1] if len(sys.argv) > 1 else "tandem"
    if lib == "torch":
        import torch as t
        t.set_num_threads(2)
    elif lib == "tandem":
        import tandem as t
        t.set_num_threads(2)
    else:
        sys.exit("usage: bench_python.py tandem|torch")
    nn, optim = t.nn, t.optim
    t.manual_seed(0)
    a, b = t.ones(1), t.ones(1)
    print(f"add_1elem\t{timed(lambda: a + b, 20000):.1f}\tns")
    ga, gb = t.ones(1, requires_grad=True), t.ones(1, requires_grad=True)
    print(f"add_1elem_requires_grad\t{timed(lambda: ga + gb, 20000):.1f}\tns")

    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = optim.SGD(model.parameters(), lr=0.01)
    x, y = t.randn(1, 16), t.randn(1, 1)
    loss_fn = nn.MSELoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    print(f"mlp16_step\t{timed(step, 2000):.1f}\tns")


if __name__ == "__main__":
    main()
