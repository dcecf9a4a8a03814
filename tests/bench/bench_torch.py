"""PyTorch's side of the GPU benchmarks: the same measures as tv_bench_step / tv_bench_ddp, with
PyTorch eager in Python, torch.nn.parallel.DistributedDataParallel, FSDP (fully_shard) and
torch.distributed.all_reduce.
Prints one JSON line per measure. Not a test; run by tests/bench/run_gpu_benchmarks.sh.

The model is the engine's built-in `gpt` (engine/jit/zoo.cpp, engine/replay/eager.cpp): token and
position embeddings, pre-norm blocks (causal attention, gelu MLP), ln_f, lm_head without bias,
cross-entropy; a step is forward + backward of sum(logits * cotangent) + loss, as the engine's
replay and eager reference do. Attention is F.scaled_dot_product_attention(is_causal=True), as
nanoGPT writes it and as the engine's trace calls it (matmul + masked softmax before PyTorch 2.0).

step --turns IN:OUT:first|second takes turns with another process repeat by repeat (the protocol
of tests/bench/turns.h), so that run_gpu_benchmarks.sh times each PyTorch repeat next to an engine
repeat; the JSON line then lists every repeat (pytorch_repeats_ms).

Usage: python3 bench_torch.py step --layers 32 --d-model 64 [--heads 4 --seq 16 --batch 2 --vocab 128] [--profile N]
                                 [--kineto FILE.json] [--turns IN:OUT:second]
       python3 bench_torch.py ddp --world 2 --layers 12 ... [--bucket-mb 25]
       python3 bench_torch.py fsdp --world 1 --layers 12 ...
       python3 bench_torch.py allreduce --world 2
"""
import argparse
import json
import math
import os
import select
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

STEP_SCOPE = "tv_bench step"  # the user scope around a profiled step (tests/bench/kineto.h's kKinetoStepScope)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.attn = nn.Module()
        self.attn.c_attn = nn.Linear(d, 3 * d)
        self.attn.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(d, 4 * d)
        self.mlp.c_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(d, 2)
        q, k, v = (t.view(B, T, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            y = att.masked_fill(future, float("-inf")).softmax(-1) @ v
        x = x + self.attn.c_proj(y.transpose(1, 2).contiguous().view(B, T, d))
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, layers, d, heads, seq, vocab):
        super().__init__()
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(vocab, d)
        self.transformer.wpe = nn.Embedding(seq, d)
        self.transformer.h = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.transformer.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx, targets):
        x = self.transformer.wte(idx) + self.transformer.wpe.weight
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return logits, F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def make(args, device, seed=0):
    torch.manual_seed(seed)
    model = GPT(args.layers, args.d_model, args.heads, args.seq, args.vocab).to(device)
    idx = torch.randint(args.vocab, (args.batch, args.seq), device=device)
    targets = torch.randint(args.vocab, (args.batch, args.seq), device=device)
    cot = torch.randn(args.batch, args.seq, args.vocab, device=device)
    return model, idx, targets, cot


def step(model, idx, targets, cot):
    for p in model.parameters():
        p.grad = None
    logits, loss = model(idx, targets)
    ((logits * cot).sum() + loss).backward()


def print_profile(fn, device, rows, show=True, kineto=None):
    """Runs fn once under torch.profiler, inside the user scope timeline.py keeps to, after a
    warm-up that takes the profiler's start on each thread that records (a forward op here, a
    backward op on autograd's device thread; tests/bench/kineto.h does the same for the engine);
    prints its `rows` costliest ops (device time) to stderr and, with `kineto`, saves the timeline
    there as a Chrome trace (tests/bench/timeline.py)."""
    from torch.profiler import ProfilerActivity, profile, record_function
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        (torch.zeros(1, device=device, requires_grad=True) * 2).sum().backward()
        with record_function(STEP_SCOPE):
            fn()
    if show and rows:
        key = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
        print(prof.key_averages().table(sort_by=key, row_limit=rows), file=sys.stderr)
    if show and kineto:
        prof.export_chrome_trace(kineto)
        print("kineto trace of one step: " + kineto, file=sys.stderr)


class Turns:
    """Taking turns with another process, repeat by repeat (tests/bench/turns.h has the protocol)."""

    def __init__(self, spec):
        self.on = bool(spec)
        if not self.on:
            return
        parts = spec.split(":")
        if len(parts) != 3 or parts[2] not in ("first", "second"):
            fail(f"--turns {spec}: give IN:OUT:first or IN:OUT:second (two FIFOs)")
        try:  # read-write opens do not block on a FIFO whose other end is not open yet
            self.fd_in, self.fd_out = os.open(parts[0], os.O_RDWR), os.open(parts[1], os.O_RDWR)
        except OSError as e:
            fail(f"--turns: cannot open {e.filename}: {e.strerror}")
        self.first = parts[2] == "first"

    def ready(self):
        if self.on and not self.first:
            os.write(self.fd_out, b"t")

    def before_repeat(self):
        if self.on:
            if not select.select([self.fd_in], [], [], 600)[0]:
                raise RuntimeError("--turns: the other process posted no turn in 10 minutes (did it fail?)")
            os.read(self.fd_in, 1)

    def after_repeat(self):
        if self.on:
            os.write(self.fd_out, b"t")

    def done(self):
        if self.on and self.first:
            self.before_repeat()


def fail(message):
    print("error: " + message, file=sys.stderr)
    sys.exit(2)  # bad input, as argparse's own errors


def step_ms(fn, steps, repeats, sync, label=None, turns=None):
    """The mean milliseconds of `steps` calls, `repeats` times (each between the turns when they are on)."""
    times = []
    for _ in range(repeats):
        if turns:
            turns.before_repeat()
        sync()
        start = time.perf_counter()
        for _ in range(steps):
            fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3 / steps)
        if turns:
            turns.after_repeat()
    if label:
        print(label + " ms per step, by repeat: " + " ".join(f"{t:.3f}" for t in times), file=sys.stderr)
    return times


def median_step_ms(fn, steps, repeats, sync, label=None):
    return statistics.median(step_ms(fn, steps, repeats, sync, label))


def warm_up(fn, sync, steps, seconds):
    """At least `steps` calls and `seconds` of them, as tv_bench_step warms up the engine."""
    start, done = time.perf_counter(), 0
    while done < steps or time.perf_counter() - start < seconds:
        fn()
        sync()
        done += 1


def config(args):
    return {"layers": args.layers, "d_model": args.d_model, "heads": args.heads, "seq": args.seq,
            "batch": args.batch, "vocab": args.vocab}


def eager_step(args):
    turns = Turns(args.turns)
    if args.cpu is not None:
        try:
            os.sched_setaffinity(0, {args.cpu})
        except OSError as e:
            fail(f"--cpu {args.cpu}: cannot pin the process there ({e}); give one of the CPUs nproc counts")
    print(f"CPUs the process may run on: {sorted(os.sched_getaffinity(0))}", file=sys.stderr)
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    model, idx, targets, cot = make(args, device)
    warm_up(lambda: step(model, idx, targets, cot), sync, 3, args.warmup_seconds)
    # Before the timing: with --turns, nothing of this process runs after its last repeat.
    if args.profile or args.kineto:
        print_profile(lambda: (step(model, idx, targets, cot), sync()), device, args.profile, kineto=args.kineto)
    turns.ready()
    times = step_ms(lambda: step(model, idx, targets, cot), args.steps, args.repeats, sync, "pytorch eager", turns)
    turns.done()
    print(json.dumps({"bench": "step", "params": config(args), "device": args.device,
                      "pytorch_eager_ms": statistics.median(times), "pytorch_repeats_ms": times, "turns": turns.on}),
          flush=True)


def fully_sharded(model):
    """torch's FSDP as its documentation applies it to a transformer: each block a unit, then the root
    (fully_shard, FSDP2; each parameter sharded on dim 0 and resharded after the forward, ZeRO-3), or
    FullyShardedDataParallel with the same units where this torch has no fully_shard."""
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        fully_shard = None
    if fully_shard is not None:
        for block in model.transformer.h:
            fully_shard(block)
        return fully_shard(model)
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    return FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}), device_id=torch.cuda.current_device(),
                use_orig_params=True)


def ddp_worker(rank, args, results):
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=args.world)
    device = torch.device("cuda", rank)
    if args.mode in ("ddp", "fsdp"):
        model, idx, targets, cot = make(args, device, seed=rank)
        if args.mode == "ddp":
            wrapped = nn.parallel.DistributedDataParallel(model, device_ids=[rank], bucket_cap_mb=args.bucket_mb)
        else:
            wrapped = fully_sharded(model)
        sync = lambda: (torch.cuda.synchronize(), dist.barrier())  # noqa: E731
        for _ in range(3):
            step(wrapped, idx, targets, cot)
        ms = median_step_ms(lambda: step(wrapped, idx, targets, cot), args.steps, args.repeats, sync)
        if rank == 0:
            results.put({"bench": args.mode + "_step", "world": args.world,
                         "bucket_mb": args.bucket_mb if args.mode == "ddp" else 0, "params": config(args),
                         "torch_" + args.mode + "_ms": ms})
        if args.profile or args.kineto:  # every rank steps (the collectives need all); rank 0 profiles
            print_profile(lambda: (step(wrapped, idx, targets, cot), sync()), device, args.profile, rank == 0,
                          kineto=args.kineto)
    else:
        size = 1 << 20
        while size <= 1 << 30:
            t = torch.ones(size // 4, device=device)
            for _ in range(3):
                dist.all_reduce(t)
            times = []
            for _ in range(args.iterations):
                torch.cuda.synchronize()
                dist.barrier()
                start = time.perf_counter()
                dist.all_reduce(t)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - start)
            s = statistics.median(times)
            if rank == 0:
                results.put({"bench": "all_reduce", "world": args.world, "bytes": size, "torch_us": s * 1e6,
                             "torch_busbw_gbs": size * 2 * (args.world - 1) / args.world / s / 1e9})
            size <<= 2
    dist.destroy_process_group()


def distributed(args):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=ddp_worker, args=(r, args, results)) for r in range(args.world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    while not results.empty():
        print(json.dumps(results.get()), flush=True)
    if any(p.exitcode != 0 for p in procs):
        raise SystemExit("a rank failed: exit codes " + str([p.exitcode for p in procs]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["step", "ddp", "fsdp", "allreduce"])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=128)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cpu", type=int, help="step: pin the process to this CPU first (as tv_bench_step --cpu)")
    ap.add_argument("--turns", metavar="IN:OUT:first|second", default="",
                    help="step: take turns with another process repeat by repeat (tests/bench/turns.h)")
    ap.add_argument("--warmup-seconds", type=float, default=5,
                    help="step: warm up for at least this long before timing (as tv_bench_step)")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--bucket-mb", type=float, default=25)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="step, ddp: after the timing, print the N costliest ops of one step (torch.profiler) to stderr")
    ap.add_argument("--kineto", metavar="FILE.json",
                    help="step, ddp: save one step's timeline (torch.profiler, rank 0) as a Chrome trace")
    args = ap.parse_args()
    if args.mode == "step":
        eager_step(args)
    else:
        distributed(args)


if __name__ == "__main__":
    main()
