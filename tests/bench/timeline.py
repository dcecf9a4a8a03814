"""Summarises a Chrome trace of one step (tv_bench_step/tv_bench_ddp --kineto, bench_torch.py
--kineto): per device, the step's span on the GPU, and per stream the kernels, the busy time and
the idle time inside that span; communication (NCCL kernels) and how much of it overlapped
compute; the costliest kernels by name. Two files: the same summary side by side.

Usage: /usr/bin/python3 timeline.py ENGINE.json [TORCH.json] [--top 12]
"""
import argparse
import collections
import json
import sys


def fail(message):
    print("error: " + message, file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e} (give a Chrome trace written by --kineto)")
    events = data["traceEvents"] if isinstance(data, dict) else data
    gpu = []
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", metavar="TRACE.json")
    ap.add_argument("--top", type=int, default=12, help="costliest kernels listed per device")
    args = ap.parse_args()
    for path in args.traces:
        print("\n".join(summarise(path, args.top)))


if __name__ == "__main__":
    main()
