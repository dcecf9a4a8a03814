"""The Python door against eager torch on the CPU: a training step (forward, backward, AdamW) of a
model through thunder_viz.jit and the same step of the module itself, each side in a process of its
own (as a user trains one model in a process; `--processes one` runs both here), taking turns repeat
by repeat; the first call (recording and building the pipeline) against one eager step; the process's resident
memory over many steps (the call history is bounded, so it stays flat); the minor page faults of a
steady step on each side; with --profile, where a step's time goes on each side; with --parts, the
step's parts on each side and on a third that calls the jitted module's cached engine entry itself,
without the door's Python around it.

    PYTHONPATH=build/python /usr/bin/python3 tests/bench/bench_python_door.py [--model nanogpt|mlp]
        [--steps 20] [--repeats 7] [--memory-steps 10000] [--threads 1] [--processes two|one]
        [--keywords] [--profile STEPS] [--parts BLOCKS] [--run jit|eager]
        (models: nanogpt, mlp, tiny, resnet18, transformer, llama, mobilenet_v2)

Prints one table (markdown) and exits 0; bad arguments exit 2."""
import argparse
import collections
import inspect
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import torch
from torch.utils import _pytree as pytree

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


def transformer():
    """torch.nn.TransformerEncoder as published (multi-head attention, layer norms, dropout 0)."""
    layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    return model, (torch.randn(8, 32, 128),), lambda out: out.square().mean()


def llama():
    """Four llama decoder layers as published (rotary embeddings, grouped key/value heads, RMSNorm)."""
    from blocks import LlamaDecoderLayer
    model = torch.nn.Sequential(*[LlamaDecoderLayer(hidden_size=128) for _ in range(4)])
    return model, (torch.randn(8, 32, 128),), lambda out: out.square().mean()


def mobilenet_v2():
    """torchvision's mobilenet_v2 (depthwise convolutions, ReLU6 in place), 64x64 images."""
    import torchvision
    model = torchvision.models.mobilenet_v2(num_classes=10)
    return model, (torch.randn(4, 3, 64, 64),), lambda out: out.square().mean()


MODELS = {"nanogpt": nanogpt, "mlp": mlp, "tiny": tiny, "resnet18": resnet18, "transformer": transformer,
          "llama": llama, "mobilenet_v2": mobilenet_v2}


def step(model, opt, args, loss_of, kwargs={}):
    opt.zero_grad(set_to_none=True)
    loss = loss_of(model(*args, **kwargs))
    loss.backward()
    opt.step()
    return loss


def timed(fn, n):
    """(milliseconds per call, minor page faults per call) of fn over n calls."""
    flt = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.perf_counter()
    for _ in range(n):
        fn()
    ms = (time.perf_counter() - start) / n * 1e3
    return ms, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - flt) / n


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Side:
    """One side of the comparison: the model (seeded, so both sides start from the same weights),
    its optimizer, and what the table asks of it. `jit` puts the model through thunder_viz.jit."""

    def __init__(self, model_name, jit, keywords=False):
        torch.manual_seed(0)
        model, self.args, self.loss_of = MODELS[model_name]()
        if keywords:  # the same call with each argument by its name (forward's own)
            names = list(inspect.signature(model.forward).parameters)
            self.args, self.kwargs = (), dict(zip(names, self.args))
        else:
            self.kwargs = {}
        self.jit = jit
        self.opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        start = time.perf_counter()
        self.model = tv.jit(model) if jit else model
        self.step()
        self.first_ms = (time.perf_counter() - start) * 1e3
        for _ in range(3):
            self.step()

    def step(self):
        return step(self.model, self.opt, self.args, self.loss_of, self.kwargs)

    def first(self):
        return self.first_ms

    def repeat(self, steps):
        return timed(self.step, steps)

    def memory(self, steps):
        """Resident MiB before and after each quarter of `steps` steps (a zero-rate SGD keeps the
        weights), and the jitted module's history length."""
        sgd = torch.optim.SGD(self.model.parameters(), lr=0.0)
        before, marks = rss_mib(), []
        for i in range(steps):
            step(self.model, sgd, self.args, self.loss_of, self.kwargs)
            if (i + 1) % max(1, steps // 4) == 0:
                marks.append(rss_mib())
        return before, marks, len(tv.history(self.model)) if self.jit else 0

    def profile(self, steps):
        """Milliseconds per step by operation, and the profiled step's milliseconds. The jitted side
        counts the engine's bound symbols (its own per-symbol timing, by trace and symbol name; the
        rest of the step is the door, autograd's node, the loss and the optimizer), eager its ATen
        operators (torch.profiler, self time, whose own cost inflates eager's figures somewhat)."""
        rows = collections.Counter()
        start = time.perf_counter()
        if self.jit:
            self.model.timing = True
            for _ in range(steps):
                self.step()
                for trace, _, symbol, _, micros, *_ in tv.history(self.model)[-1].timings:
                    rows[f"{trace} {symbol}"] += micros / 1e3 / steps
            self.model.timing = False
        else:
            from torch.profiler import ProfilerActivity, profile as torch_profile
            with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
                for _ in range(steps):
                    self.step()
            rows.update({e.key: e.self_cpu_time_total / 1e3 / steps for e in prof.key_averages()})
        return dict(rows), (time.perf_counter() - start) / steps * 1e3


class Process:
    """A Side in a process of its own, driven by JSON lines over its stdin and stdout: each side
    then has its own allocator, as a user's training process has, and the two still take turns."""

    def __init__(self, model_name, jit, threads, keywords):
        cmd = [sys.executable, os.path.abspath(__file__), "--serve", "jit" if jit else "eager",
               "--model", model_name, "--threads", str(threads)] + (["--keywords"] if keywords else [])
        self.child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def _ask(self, method, *args):
        self.child.stdin.write(json.dumps([method, *args]) + "\n")
        self.child.stdin.flush()
        line = self.child.stdout.readline()
        if not line:
            sys.exit(f"error: the {method} request's process ended (exit {self.child.wait()}); its error is above")
        return json.loads(line)

    def __getattr__(self, method):
        return lambda *args: self._ask(method, *args)

    def close(self):
        self.child.stdin.close()
        self.child.wait()


def serve(side):
    """The child's loop: one JSON request a line ([method, args...]), one JSON answer a line."""
    out = sys.stdout
    sys.stdout = sys.stderr  # anything else the model prints stays out of the answers
    for line in sys.stdin:
        method, *args = json.loads(line)
        out.write(json.dumps(getattr(side, method)(*args)) + "\n")
        out.flush()


def print_profile(ours, theirs, steps, rows=18):
    (mine, my_total), (other, other_total) = ours, theirs
    print(f"\nwhere a step goes, ms per step over {steps} steps (the engine's per-symbol timing on; "
          "torch.profiler on eager)\n")
    print("| thunder_viz.jit: trace, symbol | ms | eager: ATen operator (self) | ms |")
    print("| --- | --- | --- | --- |")
    a = collections.Counter(mine).most_common(rows)
    b = collections.Counter(other).most_common(rows)
    for i in range(max(len(a), len(b))):
        left = (a[i][0], f"{a[i][1]:.3f}") if i < len(a) else ("", "")
        right = (b[i][0], f"{b[i][1]:.3f}") if i < len(b) else ("", "")
        print(f"| {left[0]} | {left[1]} | {right[0]} | {right[1]} |")
    print(f"| all bound symbols | {sum(mine.values()):.3f} | all operators | {sum(other.values()):.3f} |")
    print(f"| the step | {my_total:.3f} | the step (profiled) | {other_total:.3f} |")

PARTS = ("zero_grad", "forward call", "loss", "backward", "optimizer step")


def entry_called_directly(side):
    """forward(*args) through the steady call's cached entry alone (the engine's autograd node, as
    the door calls it), or the reason it cannot stand for the door's call: only a program whose
    outputs the door hands back as the engine made them qualifies (the list below follows the
    door's forward; the outputs of one call of each are compared, so that a step the door gains
    and the list lacks is said rather than timed)."""
    jitted = side.model
    steady = jitted._steady
    if steady is None:
        return None, "the last call left no steady guard"
    entry, program = steady[2]
    needs = [name for name in ("captured", "uses_seed", "recomputations", "detached_outputs", "rebased_inputs",
                               "returned_inputs", "input_views", "side_effects") if getattr(program, name)]
    needs += ["output_memory (outputs sharing memory)"] if len(program.output_memory) > 1 else []
    needs += ["timing"] if jitted.timing else []
    needs += ["ddp or fsdp in the order"] if jitted._distributes else []
    if needs:
        return None, "the program's call needs the door's own work: " + ", ".join(needs)
    from thunder_viz.recorder import rebuild_output
    params, pick = jitted._param_list, steady[3]

    def call(*args, **kwargs):
        outs = list(entry.apply(pick(args, kwargs), params))
        del outs[program.user_outputs:]
        return rebuild_output(program, outs)
    # (with grad, as the steps call it: under no_grad the jitted module would record another entry)
    door, direct = (pytree.tree_flatten(f(*side.args, **side.kwargs))[0] for f in (jitted, call))
    if len(door) != len(direct) or not all(torch.equal(a, b) for a, b in zip(door, direct)):
        return None, "the entry called directly does not give the door's outputs"
    return call, None


def parts_bench(model_name, blocks, steps, keywords):
    """Microseconds of each part of a step, median over `blocks` blocks of `steps` steps, the three
    sides in one process taking turns block by block (the order rotating, so that no side always
    follows the same one)."""
    sides = {"thunder_viz.jit": Side(model_name, True, keywords), "entry called directly": Side(model_name, True, keywords),
             "eager torch": Side(model_name, False, keywords)}
    direct = sides["entry called directly"]
    call, why = entry_called_directly(direct)
    if call is None:
        print(f"\n(--parts: {why})")
        return
    direct.model = call
    times = {name: {part: [] for part in PARTS} for name in sides}
    names = list(sides)
    for block in range(blocks):
        for name in names[block % 3:] + names[:block % 3]:
            side, total = sides[name], dict.fromkeys(PARTS, 0.0)
            for _ in range(steps):
                t0 = time.perf_counter()
                side.opt.zero_grad(set_to_none=True)
                t1 = time.perf_counter()
                out = side.model(*side.args, **side.kwargs)
                t2 = time.perf_counter()
                loss = side.loss_of(out)
                t3 = time.perf_counter()
                loss.backward()
                t4 = time.perf_counter()
                side.opt.step()
                t5 = time.perf_counter()
                for part, seconds in zip(PARTS, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
                    total[part] += seconds
            for part in PARTS:
                times[name][part].append(total[part] / steps * 1e6)
    med = {name: {part: statistics.median(v) for part, v in parts.items()} for name, parts in times.items()}
    print(f"\nthe step's parts, us (median of {blocks} blocks of {steps} steps, the sides taking turns in one process)\n")
    print("| part | " + " | ".join(names) + " |")
    print("| --- | --- | --- | --- |")
    for part in PARTS:
        print(f"| {part} | " + " | ".join(f"{med[n][part]:.1f}" for n in names) + " |")
    whole = {n: sum(med[n].values()) for n in names}
    print("| the step (sum of the parts) | " + " | ".join(f"{whole[n]:.1f}" for n in names) + " |")
    print(f"\nthe door's Python: {med[names[0]]['forward call'] - med[names[1]]['forward call']:+.1f} us in the forward call, "
          f"{whole[names[0]] - whole[names[1]]:+.1f} us a step; the entry called directly / eager: "
          f"{whole[names[1]] / whole[names[2]]:.3f}, the jitted module / eager: {whole[names[0]] / whole[names[2]]:.3f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="nanogpt", choices=sorted(MODELS))
    p.add_argument("--steps", type=int, default=20, help="steps per repeat")
    p.add_argument("--repeats", type=int, default=7, help="repeats per side, taking turns")
    p.add_argument("--memory-steps", type=int, default=10000, help="steps of the memory run (0: none)")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--processes", default="two", choices=["one", "two"],
                   help="two: each side in a process of its own (as a user runs one model); "
                        "one: both sides in this process, sharing its allocator")
    p.add_argument("--profile", type=int, default=0, metavar="STEPS",
                   help="after the table, profile STEPS steps of each side: where a step's time goes (0: none)")
    p.add_argument("--parts", type=int, default=0, metavar="BLOCKS",
                   help="after the table, the step's parts on each side and with the cached engine entry called "
                        "directly, BLOCKS blocks of --steps steps each (0: none)")
    p.add_argument("--keywords", action="store_true", help="call the model with its arguments by name")
    p.add_argument("--run", choices=["jit", "eager"],
                   help="only make one side and run --steps steady steps of it, for a profiler around the process "
                        "(callgrind: the difference of two step counts is the steps' own)")
    p.add_argument("--serve", choices=["jit", "eager"], help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.steps < 1 or a.repeats < 1 or a.memory_steps < 0 or a.threads < 1 or a.profile < 0 or a.parts < 0:
        p.error("--steps, --repeats and --threads must be at least 1, --memory-steps, --profile and --parts at least 0")
    torch.set_num_threads(a.threads)
    if a.serve:
        return serve(Side(a.model, a.serve == "jit", a.keywords))
    if a.run:
        Side(a.model, a.run == "jit", a.keywords).repeat(a.steps)
        return

    if a.processes == "two":
        eager, ours = Process(a.model, False, a.threads, a.keywords), Process(a.model, True, a.threads, a.keywords)
    else:
        eager, ours = Side(a.model, False, a.keywords), Side(a.model, True, a.keywords)
    engine_ms, eager_ms, engine_faults, eager_faults = [], [], [], []
    for _ in range(a.repeats):
        ms, faults = ours.repeat(a.steps)
        engine_ms.append(ms), engine_faults.append(faults)
        ms, faults = eager.repeat(a.steps)
        eager_ms.append(ms), eager_faults.append(faults)
    ratios = [e / t for e, t in zip(engine_ms, eager_ms)]
    first, eager_first = ours.first(), eager.first()

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
        before, marks, history = ours.memory(a.memory_steps)
        rows.append((f"resident memory over {a.memory_steps} steps (MiB, after each quarter)",
                     f"{before:.0f} -> " + " ".join(f"{m:.0f}" for m in marks), "",
                     f"{marks[-1] - before:+.0f} MiB; history holds {history} calls"))
    print(f"model {a.model}, torch {torch.__version__}, {a.threads} thread(s), {a.steps} steps x "
          f"{a.repeats} repeats, {a.processes} process(es){', arguments by name' if a.keywords else ''}\n")
    print("| measure | thunder_viz.jit | eager torch | ratio |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if a.profile:
        print_profile(ours.profile(a.profile), eager.profile(a.profile), a.profile)
    if a.processes == "two":
        ours.close(), eager.close()
    if a.parts:
        parts_bench(a.model, a.parts, a.steps, a.keywords)


if __name__ == "__main__":
    main()
