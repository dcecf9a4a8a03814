"""Turns the JSON lines of run_gpu_benchmarks.sh into the Markdown tables of BENCHMARKS.md, pairing each
engine measure with PyTorch's of the same configuration. A step measured by several processes gets the
median of their numbers. Where the engine and PyTorch took turns repeat by repeat (--turns: the
overhead-bound step), a second table gives the ratio of each engine repeat to the PyTorch repeat next to
it: their median, and the lowest and highest.
Usage: bench_tables.py bench.jsonl"""
import json
import statistics
import sys


def key(params):
    return tuple(sorted((k, str(v)) for k, v in params.items()))


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    steps, sharded, reduce, turns = {}, {}, {}, {}
    for r in rows:
        if r["bench"] == "step":
            if r.get("turns"):  # the k-th engine process took turns with the k-th PyTorch process
                side = "engine" if "engine_repeats_ms" in r else "pytorch"
                turns.setdefault(key(r["params"]), {}).setdefault(side, []).append(r[side + "_repeats_ms"])
            measures = steps.setdefault(key(r["params"]), {})
            for name, value in r.items():
                if name.endswith("_ms") and not name.endswith("_repeats_ms"):
                    measures.setdefault(name, []).append(value)
        elif r["bench"] in ("ddp_step", "fsdp_step"):
            sharded.setdefault((r["bench"], r["world"]), {}).update(r)
        elif r["bench"] == "all_reduce":
            reduce.setdefault(r["bytes"], {}).update(r)

    print("| gpt | engine step ms | PyTorch eager (Python) ms | LibTorch eager (C++) ms | engine / PyTorch | engine / LibTorch | engine as CUDA graph ms | graph / PyTorch |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for k, measures in steps.items():
        r = {name: statistics.median(values) for name, values in measures.items()}
        p = dict(k)
        name = f"layers {p.get('layers')}, d_model {p.get('d_model')}, seq {p.get('seq')}, batch {p.get('batch')}, vocab {p.get('vocab')}"
        e, py, lt, g = r.get("engine_ms"), r.get("pytorch_eager_ms"), r.get("libtorch_eager_ms"), r.get("engine_cuda_graph_ms")
        ratio = lambda a, b: f"{a / b:.3f}" if a and b and a > 0 and b > 0 else "n/a"  # noqa: E731
        fmt = lambda v: f"{v:.3f}" if v is not None and v > 0 else "n/a"  # noqa: E731
        processes = max(len(values) for values in measures.values())
        if processes > 1:
            name += f" (median of {processes} processes each)"
        print(f"| {name} | {fmt(e)} | {fmt(py)} | {fmt(lt)} | {ratio(e, py)} | {ratio(e, lt)} | {fmt(g)} | {ratio(g, py)} |")
    if turns:
        print()
        print("| gpt, repeats taking turns | paired repeats | engine / PyTorch, median | lowest | highest |")
        print("| --- | --- | --- | --- | --- |")
        for k, sides in turns.items():
            ratios = [e / t for es, ts in zip(sides.get("engine", []), sides.get("pytorch", []))
                      for e, t in zip(es, ts) if e > 0 and t > 0]
            p = dict(k)
            name = f"layers {p.get('layers')}, d_model {p.get('d_model')}, seq {p.get('seq')}, batch {p.get('batch')}"
            if ratios:
                print(f"| {name} | {len(ratios)} | {statistics.median(ratios):.3f} | {min(ratios):.3f} | {max(ratios):.3f} |")
    if sharded:
        print()
        print("| step | world | bucket MB | engine ms | torch ms (DDP or FSDP) | engine / torch |")
        print("| --- | --- | --- | --- | --- | --- |")
        for (bench, world), r in sorted(sharded.items()):
            kind = bench.split("_")[0]
            e, t = r.get("engine_ms"), r.get(f"torch_{kind}_ms")
            bucket = r.get("bucket_mb") if kind == "ddp" else "-"
            print(f"| {kind.upper()} | {world} | {bucket} | {e:.3f} | {t:.3f} | {e / t:.3f} |" if e and t else f"| {r} |")
    if reduce:
        print()
        print("| all_reduce bytes | engine us | engine busbw GB/s | torch.distributed us | torch busbw GB/s | engine / torch busbw |")
        print("| --- | --- | --- | --- | --- | --- |")
        for b in sorted(reduce):
            r = reduce[b]
            eb, tb = r.get("engine_busbw_gbs"), r.get("torch_busbw_gbs")
            print(f"| {b} | {r.get('engine_us', 0):.1f} | {eb or 0:.1f} | {r.get('torch_us', 0):.1f} | {tb or 0:.1f} | "
                  f"{(eb / tb) if eb and tb else float('nan'):.3f} |")


if __name__ == "__main__":
    main(sys.argv[1])
