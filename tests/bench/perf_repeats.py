"""Compares where the host's time went in a step benchmark's fastest and slowest repeats: perf
samples (`perf record -k CLOCK_MONOTONIC`, then `perf script -F tid,time,ip,sym,dso`) placed in
the repeats by the spans tv_bench_step prints on stderr ("engine repeats, steady clock seconds").
Prints each repeat's time and samples, then milliseconds per step by library and by symbol for the
fastest and the slowest third of the repeats, the largest differences first. A slow repeat that is
slower everywhere in proportion points at the machine; one that grows in one place, at that place.

Usage: /usr/bin/python3 perf_repeats.py BENCH.err PERF_SCRIPT.txt [--top 30]
"""
import argparse
import collections
import re
import sys

SAMPLE = re.compile(r"^\s*\d+\s+([\d.]+):\s+\S+\s+(.*?)\s+\((.*)\)\s*$")


def fail(message):
    print("error: " + message, file=sys.stderr)
    sys.exit(2)


def repeats_of(path):
    ms = spans = None
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("engine ms per step, by repeat:"):
                    ms = [float(x) for x in line.split(":", 1)[1].split()]
                elif line.startswith("engine repeats, steady clock seconds:"):
                    spans = [tuple(map(float, s.split("-"))) for s in line.split(":", 1)[1].split()]
    except OSError as e:
        fail(f"{path}: {e}")
    if not ms or not spans or len(ms) != len(spans):
        fail(f"{path}: no engine repeats with their spans (give tv_bench_step's stderr)")
    return ms, spans


def samples_by_repeat(path, spans):
    by_repeat = [[] for _ in spans]
    try:
        with open(path) as f:
            for line in f:
                m = SAMPLE.match(line)
                if not m:
                    continue
                t = float(m.group(1))
                for i, (start, end) in enumerate(spans):
                    if start <= t <= end:
                        by_repeat[i].append((m.group(3).rsplit("/", 1)[-1], m.group(2)))
                        break
    except OSError as e:
        fail(f"{path}: {e}")
    return by_repeat


def ms_per_step(repeats, samples, ms, key):
    """Milliseconds per step by `key` of a sample, over `repeats` (their mean step time, shared in
    proportion to the samples)."""
    counts = collections.Counter(key(s) for r in repeats for s in samples[r])
    total = sum(counts.values()) or 1
    step = sum(ms[r] for r in repeats) / len(repeats)
    return {k: n / total * step for k, n in counts.items()}, step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench_err")
    ap.add_argument("perf_script")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    ms, spans = repeats_of(args.bench_err)
    samples = samples_by_repeat(args.perf_script, spans)
    if not any(samples):
        fail(f"{args.perf_script}: no samples inside the repeats (record with -k CLOCK_MONOTONIC)")
    for i, (m, s) in enumerate(zip(ms, samples)):
        print(f"repeat {i}: {m:.2f} ms per step, {len(s)} samples")
    order = sorted(range(len(ms)), key=lambda i: ms[i])
    third = max(1, len(ms) // 3)
    fast, slow = order[:third], order[-third:]
    for title, key in (("library", lambda s: s[0]), ("symbol", lambda s: f"{s[0]} {s[1][:100]}")):
        a, step_a = ms_per_step(fast, samples, ms, key)
        b, step_b = ms_per_step(slow, samples, ms, key)
        print(f"\nms per step by {title}: fastest {len(fast)} repeats ({step_a:.2f} ms), "
              f"slowest {len(slow)} ({step_b:.2f} ms), difference")
        rows = sorted(set(a) | set(b), key=lambda k: -abs(b.get(k, 0) - a.get(k, 0)))
        for k in rows[:args.top]:
            print(f"  {a.get(k, 0):7.3f} {b.get(k, 0):7.3f} {b.get(k, 0) - a.get(k, 0):+7.3f}  {k}")


if __name__ == "__main__":
    main()
