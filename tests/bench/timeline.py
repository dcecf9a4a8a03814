"""Summarises a Chrome trace of one step (tv_bench_step/tv_bench_ddp --kineto, bench_torch.py
--kineto): per device, the step's span on the GPU, and per stream the kernels, the busy time and
the idle time inside that span; communication (NCCL kernels) and how much of it overlapped
compute; the costliest kernels by name. Two files: the same summary side by side. With --by-op,
also the kernels each ATen call launched (the outermost CPU op around the launch, matched by its
correlation id): where a host-bound step's launches come from. Launches outside any ATen op (the
engine's generated kernels, its direct cuBLASLt calls) count under "(no ATen op)". With --host,
where the busiest thread's host time went: its outermost ATen calls by name (calls, total and mean
microseconds), the CUDA runtime calls made outside any ATen call, and the rest of the span, which is
the caller's own work between calls (the engine's executor, or PyTorch's Python and autograd).

A trace whose step ran inside the user scope "tv_bench step" (the benchmarks' --kineto) is read
inside it: host calls in its span, kernels launched from there; what ran before it (a warm-up op
that takes the profiler's start) is left out. A trace without it is read whole.

Usage: /usr/bin/python3 timeline.py ENGINE.json [TORCH.json] [--top 12] [--by-op] [--host]
"""
import argparse
import bisect
import collections
import json
import sys


def fail(message):
    print("error: " + message, file=sys.stderr)
    sys.exit(2)


STEP_SCOPE = "tv_bench step"  # kineto.h's kKinetoStepScope, bench_torch.py's STEP_SCOPE
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def read_events(path):
    """The trace's complete ("X") events, within the step's scope where the trace has one."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e} (give a Chrome trace written by --kineto)")
    events = [e for e in (data["traceEvents"] if isinstance(data, dict) else data) if e.get("ph") == "X"]
    scope = next((e for e in events if e.get("cat") == "user_annotation" and e.get("name") == STEP_SCOPE), None)
    return events if scope is None else in_step_scope(events, scope)


def in_step_scope(events, scope):
    """Events of the step: host events inside the scope's span, on any thread (PyTorch runs a CUDA
    backward on a thread of its own), and the GPU events whose launch is among them (by correlation
    id)."""
    start, end = scope["ts"], scope["ts"] + scope.get("dur", 0)
    on_gpu = GPU_CATS + ("gpu_user_annotation",)
    host = [e for e in events if e.get("cat") not in on_gpu and start <= e["ts"] <= end]
    launched = {e.get("args", {}).get("correlation") for e in host if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    gpu = [e for e in events if e.get("cat") in GPU_CATS and e.get("args", {}).get("correlation") in launched]
    return host + gpu


def load(path):
    gpu = []
    for e in read_events(path):
        if e.get("cat") not in GPU_CATS:
            continue
        args = e.get("args", {})
        gpu.append((int(args.get("device", 0)), int(args.get("stream", 0)), float(e["ts"]), float(e.get("dur", 0)),
                    e.get("name", "?"), e["cat"]))
    if not gpu:
        fail(f"{path}: no GPU activity in the trace (recorded on a CPU device?)")
    return gpu


def union(intervals):
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def overlap(a, b):
    """Time of `a` covered by `b` (both lists of intervals)."""
    b = sorted(b)
    merged = []
    for s, e in b:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    total = 0.0
    for s, e in a:
        for ms, me in merged:
            if me <= s:
                continue
            if ms >= e:
                break
            total += min(e, me) - max(s, ms)
    return total


def is_comm(name):
    return name.startswith("nccl") or "nccl" in name.lower()


def summarise(path, top):
    out = []
    by_device = collections.defaultdict(list)
    for ev in load(path):
        by_device[ev[0]].append(ev)
    for device, evs in sorted(by_device.items()):
        start = min(e[2] for e in evs)
        end = max(e[2] + e[3] for e in evs)
        span = end - start
        out.append(f"{path}: device {device}: GPU span {span / 1e3:.2f} ms, {len(evs)} kernels/copies, "
                   f"busy (any stream) {union([(e[2], e[2] + e[3]) for e in evs]) / 1e3:.2f} ms")
        streams = collections.defaultdict(list)
        for e in evs:
            streams[e[1]].append(e)
        for stream, s_evs in sorted(streams.items(), key=lambda kv: -len(kv[1])):
            busy = union([(e[2], e[2] + e[3]) for e in s_evs])
            comm = sum(1 for e in s_evs if is_comm(e[4]))
            kind = "communication" if comm * 2 > len(s_evs) else "compute"
            out.append(f"  stream {stream} ({kind}): {len(s_evs)} kernels, busy {busy / 1e3:.2f} ms, "
                       f"idle in span {(span - busy) / 1e3:.2f} ms")
        comm = [(e[2], e[2] + e[3]) for e in evs if is_comm(e[4])]
        compute = [(e[2], e[2] + e[3]) for e in evs if not is_comm(e[4])]
        if comm:
            c = union(comm)
            hidden = overlap(comm, compute)
            out.append(f"  communication: {len(comm)} kernels, {c / 1e3:.2f} ms, {hidden / 1e3:.2f} ms of it "
                       f"under compute, exposed {(c - hidden) / 1e3:.2f} ms; "
                       f"after the last compute kernel: {max(0.0, max(e for _, e in comm) - max(e for _, e in compute)) / 1e3:.2f} ms")
        names = collections.defaultdict(lambda: [0.0, 0])
        for e in evs:
            names[e[4][:90]][0] += e[3]
            names[e[4][:90]][1] += 1
        for name, (t, n) in sorted(names.items(), key=lambda kv: -kv[1][0])[:top]:
            out.append(f"    {t / 1e3:8.3f} ms  x{n:<5} {name}")
    return out


def outermost_ops(events):
    """Per thread, its outermost ATen calls in time order."""
    outermost = collections.defaultdict(list)
    for e in sorted((e for e in events if e.get("cat") == "cpu_op"), key=lambda e: (e["tid"], e["ts"], -e["dur"])):
        ops = outermost[e["tid"]]
        if not ops or e["ts"] >= ops[-1]["ts"] + ops[-1]["dur"]:
            ops.append(e)
    return outermost


def host_time(path, top):
    """Lines: the busiest thread's span (its first ATen call of the step to its last) split into its
    outermost ATen calls (by name), CUDA runtime calls outside them, and the caller's own time
    between them."""
    events = read_events(path)
    outermost = outermost_ops(events)
    if not outermost:
        fail(f"{path}: no ATen calls in the trace")
    tid, ops = max(outermost.items(), key=lambda kv: len(kv[1]))
    start, end = ops[0]["ts"], max(e["ts"] + e["dur"] for e in ops)
    in_ops = union([(e["ts"], e["ts"] + e["dur"]) for e in ops])
    starts = [e["ts"] for e in ops]
    runtime = collections.defaultdict(lambda: [0.0, 0])
    for e in events:
        if e.get("cat") not in ("cuda_runtime", "cuda_driver") or e["tid"] != tid or not start <= e["ts"] <= end:
            continue
        i = bisect.bisect_right(starts, e["ts"]) - 1
        if i >= 0 and ops[i]["ts"] + ops[i]["dur"] >= e["ts"]:
            continue
        runtime[e["name"]][0] += e["dur"]
        runtime[e["name"]][1] += 1
    outside = sum(t for t, _ in runtime.values())
    span = end - start
    out = [f"{path}: host thread {tid}: span {span / 1e3:.2f} ms; in {len(ops)} ATen calls {in_ops / 1e3:.2f} ms, "
           f"in {sum(n for _, n in runtime.values())} CUDA runtime calls outside them {outside / 1e3:.2f} ms, "
           f"the caller's own work {(span - in_ops - outside) / 1e3:.2f} ms"]
    names = collections.defaultdict(lambda: [0.0, 0])
    for e in ops:
        names[e["name"]][0] += e["dur"]
        names[e["name"]][1] += 1
    for name, (t, n) in sorted(names.items(), key=lambda kv: -kv[1][0])[:top]:
        out.append(f"    {t / 1e3:8.3f} ms  x{n:<5} {t / n:7.1f} us  {name}")
    for name, (t, n) in sorted(runtime.items(), key=lambda kv: -kv[1][0])[:top]:
        out.append(f"    {t / 1e3:8.3f} ms  x{n:<5} {t / n:7.1f} us  {name} (outside ATen calls)")
    return out


def kernels_by_op(path, top):
    """Lines: per outermost ATen op, its calls and the kernels launched inside them; then the
    commonest (op, kernel) pairs."""
    events = read_events(path)
    kernels = {e.get("args", {}).get("correlation"): e for e in events if e.get("cat") in GPU_CATS}
    launches = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    outermost = outermost_ops(events)
    starts = {tid: [e["ts"] for e in ops] for tid, ops in outermost.items()}
    calls = collections.Counter(e["name"] for ops in outermost.values() for e in ops)
    per_op, pairs = collections.Counter(), collections.Counter()
    for launch in launches:
        kernel = kernels.get(launch.get("args", {}).get("correlation"))
        if kernel is None:
            continue
        ops = outermost.get(launch["tid"], [])
        i = bisect.bisect_right(starts.get(launch["tid"], []), launch["ts"]) - 1
        op = ops[i]["name"] if i >= 0 and ops[i]["ts"] + ops[i]["dur"] >= launch["ts"] else "(no ATen op)"
        per_op[op] += 1
        pairs[(op, kernel["name"][:70])] += 1
    out = [f"{path}: kernels by the ATen call that launched them (calls, kernels)"]
    out += [f"  {calls.get(op, 0):6d} {n:6d}  {op}" for op, n in per_op.most_common()]
    out.append("  commonest (op, kernel) pairs:")
    out += [f"  {n:6d}  {op:45s} {kernel}" for (op, kernel), n in pairs.most_common(top)]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", metavar="TRACE.json")
    ap.add_argument("--top", type=int, default=12, help="costliest kernels listed per device")
    ap.add_argument("--by-op", action="store_true", help="also the kernels each ATen call launched")
    ap.add_argument("--host", action="store_true", help="also where the busiest host thread's time went")
    args = ap.parse_args()
    for path in args.traces:
        print("\n".join(summarise(path, args.top)))
    if args.by_op:
        for path in args.traces:
            print("\n".join(kernels_by_op(path, args.top)))
    if args.host:
        for path in args.traces:
            print("\n".join(host_time(path, args.top)))


if __name__ == "__main__":
    main()
