"""The cost of one steady call of a jitted module, forward only under no_grad: what the cache key,
the CallGuard and the engine's forward add to a call whose work is small.

    PYTHONPATH=build/python /usr/bin/python3 tests/bench/bench_steady_call.py [--layers 16] [--calls 1000] [--repeats 7]

A Sequential of `--layers` Conv2d(2, 2, 1) on a 1 x 2 x 2 x 2 input, one thread; prints the best
repeat's microseconds a call for the jitted module, for eager torch, and for the guard's matches()
alone.
"""
import argparse
import time

import torch

import thunder_viz as tv


def best_of(fn, calls, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=7)
    a = p.parse_args()
    torch.set_num_threads(1)
    model = torch.nn.Sequential(*[torch.nn.Conv2d(2, 2, 1) for _ in range(a.layers)])
    x = torch.randn(1, 2, 2, 2)
    tm = tv.jit(model)
    with torch.no_grad():
        for _ in range(50):
            tm(x)
        guard = tm._steady[0]
        rows = [("jitted call", best_of(lambda: tm(x), a.calls, a.repeats)),
                ("eager call", best_of(lambda: model(x), a.calls, a.repeats)),
                ("CallGuard.matches", best_of(lambda: guard.matches((x,), {}), a.calls * 10, a.repeats))]
    print(f"| {a.layers} x Conv2d(2, 2, 1), forward under no_grad | us a call (best of {a.repeats}) |")
    print("| --- | --- |")
    for name, us in rows:
        print(f"| {name} | {us:.2f} |")
    print(f"(cache misses: {tm.cache_misses})")


if __name__ == "__main__":
    main()
