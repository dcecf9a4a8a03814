"""The Python door against eager torch on the CPU: a training step (forward, backward, AdamW) of a
model through thunder_viz.jit and the same step of the module itself, taking turns repeat by repeat;
the first call (recording and building the pipeline) against one eager step; the process's resident
memory over many steps (the call history is bounded, so it stays flat); the minor page faults of a
steady step on each side; with --profile, where a step's time goes on each side.

    PYTHONPATH=build/python /usr/bin/python3 tests/bench/bench_python_door.py [--model nanogpt|mlp]
        [--steps 20] [--repeats 7] [--memory-steps 10000] [--threads 1] [--profile STEPS]
        (models: nanogpt, mlp, tiny, resnet18)

Prints one table (markdown) and exits 0; bad arguments exit 2."""
import argparse
import collections
import copy
import os
import resource
import statistics
import sys
import time

import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))

import thunder_viz as tv  # noqa: E402


def nanogpt():
    from nanogpt import GPT, GPTConfig
    model = GPT(GPTConfig(block_size=64, vocab_size=256, n_layer=4, n_head=4, n_embd=128, dropout=0.0))
    idx = torch.randint(0, 256, (8, 64))
    targets = torch.randint(0, 256, (8, 64))
    return model, (idx, targets), lambda out: out[1]


def mlp():
    model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(256, 256), torch.nn.GELU())])
    x = torch.randn(64, 256)
    return model, (x,), lambda out: out.square().mean()


def tiny():
    """Eight small layers: a step bound by the per-call and per-op overheads."""
    model = torch.nn.Sequential(*[m for _ in range(8) for m in (torch.nn.Linear(64, 64), torch.nn.Tanh())])
    return model, (torch.randn(16, 64),), lambda out: out.square().mean()


def resnet18():
    """torchvision's resnet18 (convolutions, batch norms with running statistics, pooling), 64x64 images."""
    import torchvision
    model = torchvision.models.resnet18(num_classes=10)
    return model, (torch.randn(4, 3, 64, 64),), lambda out: out.square().mean()


MODELS = {"nanogpt": nanogpt, "mlp": mlp, "tiny": tiny, "resnet18": resnet18}


def step(model, opt, args, loss_of):
    opt.zero_grad(set_to_none=True)
    loss = loss_of(model(*args))
    loss.backward()
    opt.step()
    return loss


def timed(fn, n, faults=None):
    """Milliseconds per call of fn over n calls; appends the minor page faults per call to `faults`."""
    flt = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.perf_counter()
    for _ in range(n):
        fn()
    ms = (time.perf_counter() - start) / n * 1e3
    if faults is not None:
        faults.append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - flt) / n)
    return ms


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def profile(tm, eager, opt_o, opt_e, args, loss_of, steps, rows=18):
    """Milliseconds per step by operation: the engine's bound symbols (its own per-symbol timing, by
    trace and symbol name; the rest of the step is the door, autograd's bridge, the loss and the
    optimizer) and eager's ATen operators (torch.profiler, self time, whose own cost inflates
    eager's figures somewhat)."""
    ours, total = collections.Counter(), 0.0
    tm.timing = True
    for _ in range(steps):
        start = time.perf_counter()
        step(tm, opt_o, args, loss_of)
        total += time.perf_counter() - start
        for trace, _, symbol, _, micros, *_ in tv.history(tm)[-1].timings:
            ours[f"{trace} {symbol}"] += micros / 1e3
    tm.timing = False
    from torch.profiler import ProfilerActivity, profile as torch_profile
    start = time.perf_counter()
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step(eager, opt_e, args, loss_of)
    eager_total = time.perf_counter() - start
    theirs = collections.Counter({e.key: e.self_cpu_time_total / 1e3 for e in prof.key_averages()})
    print(f"\nwhere a step goes, ms per step over {steps} steps (the engine's per-symbol timing on; "
          "torch.profiler on eager)\n")
    print("| thunder_viz.jit: trace, symbol | ms | eager: ATen operator (self) | ms |")
    print("| --- | --- | --- | --- |")
    a, b = ours.most_common(rows), theirs.most_common(rows)
    for i in range(max(len(a), len(b))):
        left = (a[i][0], f"{a[i][1] / steps:.3f}") if i < len(a) else ("", "")
        right = (b[i][0], f"{b[i][1] / steps:.3f}") if i < len(b) else ("", "")
        print(f"| {left[0]} | {left[1]} | {right[0]} | {right[1]} |")
    inside = sum(ours.values()) / steps
    print(f"| all bound symbols | {inside:.3f} | all operators | {sum(theirs.values()) / steps:.3f} |")
    print(f"| the step | {total / steps * 1e3:.3f} | the step (profiled) | {eager_total / steps * 1e3:.3f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="nanogpt", choices=sorted(MODELS))
    p.add_argument("--steps", type=int, default=20, help="steps per repeat")
    p.add_argument("--repeats", type=int, default=7, help="repeats per side, taking turns")
    p.add_argument("--memory-steps", type=int, default=10000, help="steps of the memory run (0: none)")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--profile", type=int, default=0, metavar="STEPS",
                   help="after the table, profile STEPS steps of each side: where a step's time goes (0: none)")
    a = p.parse_args()
    if a.steps < 1 or a.repeats < 1 or a.memory_steps < 0 or a.threads < 1 or a.profile < 0:
        p.error("--steps, --repeats and --threads must be at least 1, --memory-steps and --profile at least 0")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    eager, args, loss_of = MODELS[a.model]()
    ours = copy.deepcopy(eager)
    opt_e = torch.optim.AdamW(eager.parameters(), lr=1e-4)
    opt_o = torch.optim.AdamW(ours.parameters(), lr=1e-4)

    eager_first = timed(lambda: step(eager, opt_e, args, loss_of), 1)
    start = time.perf_counter()
    tm = tv.jit(ours)
    step(tm, opt_o, args, loss_of)
    first = (time.perf_counter() - start) * 1e3
    for _ in range(3):  # warm both
        step(eager, opt_e, args, loss_of), step(tm, opt_o, args, loss_of)
    engine_ms, eager_ms, engine_faults, eager_faults = [], [], [], []
    for _ in range(a.repeats):
        engine_ms.append(timed(lambda: step(tm, opt_o, args, loss_of), a.steps, engine_faults))
        eager_ms.append(timed(lambda: step(eager, opt_e, args, loss_of), a.steps, eager_faults))
    ratios = [e / t for e, t in zip(engine_ms, eager_ms)]

    rows = [
        ("steady step (median of repeats)", f"{statistics.median(engine_ms):.2f} ms",
         f"{statistics.median(eager_ms):.2f} ms", f"{statistics.median(ratios):.3f}"),
        ("  repeat by repeat", " ".join(f"{x:.1f}" for x in engine_ms), " ".join(f"{x:.1f}" for x in eager_ms),
         f"{min(ratios):.3f}-{max(ratios):.3f}"),
        # a page fault is a first touch of memory the allocator had given back to the system
        ("minor page faults per steady step (median of repeats)", f"{statistics.median(engine_faults):.0f}",
         f"{statistics.median(eager_faults):.0f}", ""),
        ("first call (record, build, step) vs first eager step", f"{first:.1f} ms", f"{eager_first:.1f} ms",
         f"{first / eager_first:.2f}"),
    ]
    if a.memory_steps:
        small = torch.optim.SGD(ours.parameters(), lr=0.0)
        before = rss_mib()
        marks = []
        for i in range(a.memory_steps):
            step(tm, small, args, loss_of)
            if (i + 1) % max(1, a.memory_steps // 4) == 0:
                marks.append(rss_mib())
        rows.append((f"resident memory over {a.memory_steps} steps (MiB, after each quarter)",
                     f"{before:.0f} -> " + " ".join(f"{m:.0f}" for m in marks), "",
                     f"{marks[-1] - before:+.0f} MiB; history holds {len(tv.history(tm))} calls"))
    print(f"model {a.model}, torch {torch.__version__}, {a.threads} thread(s), {a.steps} steps x {a.repeats} repeats\n")
    print("| measure | thunder_viz.jit | eager torch | ratio |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if a.profile:
        profile(tm, eager, opt_o, opt_e, args, loss_of, a.profile)


if __name__ == "__main__":
    main()
