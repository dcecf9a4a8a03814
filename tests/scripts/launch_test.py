#!/usr/bin/python3
"""thunder-viz --launch env end to end: one rank per process on gloo over 127.0.0.1.

    launch_test.py THUNDER_VIZ SOURCE_DIR [--worlds 2,4] [--skip-rules]

For each world size: the same compare run as a World of threads and as one process per rank, started
through plain environment variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), through
SLURM's variables and through `python3 -m torch.distributed.run --no_python`; rank 0's merged capture
must equal the threads' (outcomes, verdicts, traces and numbers; timings left out), and the other ranks
write nothing. Then `run` and `rules` the same way on 2 processes, and the faults: a missing variable,
a port in use, mismatched WORLD_SIZE (exit 2, naming it), a rank that never joins and a rank killed
mid-run (the others name it within the timeout, exit 1). Every process runs under a deadline.
"""
import argparse
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PYTHON = "/usr/bin/python3"
# torch 1.13's torchrun on Python 3.11 fails with its default --redirects 0 (Std.from_str("0") gives None:
# a zero IntFlag member is not iterated there); stdout to a log and the console works on every version.
TORCHRUN_STREAMS = ("--redirects", "1", "--tee", "1")
DEADLINE = 240  # seconds any one launch may take before the test fails (and kills it)
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID", "SLURM_NTASKS",
               "SLURM_LOCALID", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT")

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env():
    return {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS}


def torchrun_env(rank, world, port):
    env = clean_env()
    env.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port))
    return env


def slurm_env(rank, world, port):
    env = clean_env()
    env.update(SLURM_PROCID=str(rank), SLURM_NTASKS=str(world), SLURM_LOCALID=str(rank), MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port))
    return env


def start_ranks(cmd, world, make_env, ranks=None):
    """One process per rank; returns [(rank, Popen)]."""
    procs = []
    for rank in (range(world) if ranks is None else ranks):
        procs.append((rank, subprocess.Popen(cmd, env=make_env(rank), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                             text=True, start_new_session=True)))
    return procs


def finish(procs, deadline=DEADLINE):
    """Waits for every process (killing all at the deadline); returns {rank: (rc, out, err, seconds)}."""
    t0 = time.time()
    results = {}
    for rank, p in procs:
        try:
            out, err = p.communicate(timeout=max(1, deadline - (time.time() - t0)))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            err += f"\n[killed by the test after {deadline} s]"
        results[rank] = (p.returncode, out, err, time.time() - t0)
    return results


def show(results):
    for rank, (rc, out, err, _) in sorted(results.items()):
        print(f"--- rank {rank}: exit {rc}\n{out[-3000:]}\n{err[-3000:]}")


TOOK = re.compile(r" \(took [0-9.]+ milliseconds\)")
TIMING_KEYS = {"milliseconds", "timings", "microseconds", "start_microseconds", "step_ms", "graph_ms"}


def normalized(node):
    """The capture without what differs between runs of the same work: timings."""
    if isinstance(node, dict):
        return {k: normalized(v) for k, v in node.items() if k not in TIMING_KEYS and k != "tool_version"}
    if isinstance(node, list):
        return [normalized(v) for v in node]
    if isinstance(node, str):
        return TOOK.sub("", node)
    return node


def differences(a, b, path=""):
    """Where two normalized documents differ (floats to 1e-9 relative)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in {'threads' if k in a else 'processes'}")
            else:
                out += differences(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items vs {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}/{i}")]
    if isinstance(a, float) and isinstance(b, (int, float)) or isinstance(b, float) and isinstance(a, (int, float)):
        return [] if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) else [f"{path}: {a!r} vs {b!r}"]
    return [] if a == b else [f"{path}: {str(a)[:200]!r} vs {str(b)[:200]!r}"]


def with_texts(doc):
    """The capture with each stage's text joined from its runs of the line table (/lines), which
    numbers lines in the order first met: a line that differs (a pass's time) renumbers the rest."""
    lines = doc.pop("lines", [])
    for p in doc.get("pipelines", []):
        for stages in p.get("stages", {}).values():
            for s in stages:
                runs = s.pop("lines", None)
                if runs is not None:
                    s["text"] = "\n".join(lines[runs[r] + i] for r in range(0, len(runs), 2) for i in range(runs[r + 1]))
    return doc


def load(path):
    with open(path) as f:
        return normalized(with_texts(json.load(f)))


def same_capture(threads_path, merged_path, what):
    if not check(os.path.isfile(merged_path), f"{what}: rank 0 wrote {os.path.basename(merged_path)}"):
        return
    diffs = differences(load(threads_path), load(merged_path))
    for d in diffs[:20]:
        print("      " + d)
    check(not diffs, f"{what}: the merged capture equals the threads' ({len(diffs)} differences)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("source_dir")
    ap.add_argument("--worlds", default="2,4")
    ap.add_argument("--skip-rules", action="store_true")
    args = ap.parse_args()
    exe = os.path.abspath(args.exe)
    tmp = tempfile.mkdtemp(prefix="tv_launch_")
    model = ["--model", "mlp"]
    compare = [exe, "compare", *model, "--order", "jit,ddp", "--order", "ddp,jit"]

    for world in [int(w) for w in args.worlds.split(",")]:
        threads = os.path.join(tmp, f"threads_w{world}.tvz.json")
        r = subprocess.run([*compare, "--world", str(world), "--out", threads], env=clean_env(), timeout=DEADLINE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(r.returncode == 0, f"compare --world {world} (threads): exit {r.returncode}")

        # Plain environment variables, torchrun's names.
        merged = os.path.join(tmp, f"env_w{world}.tvz.json")
        results = finish(start_ranks([*compare, "--launch", "env", "--timeout", "60", "--out", merged], world,
                                     lambda rank, p=free_port(): torchrun_env(rank, world, p)))
        if not check(all(rc == 0 for rc, *_ in results.values()), f"{world} processes (env): every rank exits 0"):
            show(results)
        check("verdict: equivalent" in results[0][1], f"{world} processes (env): rank 0 prints the verdict")
        check(all(not out.strip() for rank, (_, out, _, _) in results.items() if rank), f"{world} processes (env): "
              "the other ranks print nothing")
        same_capture(threads, merged, f"{world} processes (env)")
        check(os.listdir(tmp).count(os.path.basename(merged)) == 1, f"{world} processes (env): one capture written")

        # SLURM's names.
        merged = os.path.join(tmp, f"slurm_w{world}.tvz.json")
        results = finish(start_ranks([*compare, "--launch", "env", "--out", merged], world,
                                     lambda rank, p=free_port(): slurm_env(rank, world, p)))
        if not check(all(rc == 0 for rc, *_ in results.values()), f"{world} processes (SLURM variables): exit 0"):
            show(results)
        same_capture(threads, merged, f"{world} processes (SLURM variables)")

        # torchrun itself (torch 1.13's torch.distributed.run), the executable run without Python.
        merged = os.path.join(tmp, f"torchrun_w{world}.tvz.json")
        cmd = [PYTHON, "-m", "torch.distributed.run", *TORCHRUN_STREAMS, "--nproc_per_node", str(world),
               "--master_addr", "127.0.0.1", "--master_port", str(free_port()), "--no_python", *compare, "--launch", "env",
               "--out", merged]
        results = finish([(0, subprocess.Popen(cmd, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                               text=True, start_new_session=True))])
        if not check(results[0][0] == 0, f"torchrun --nproc_per_node {world}: exit {results[0][0]}"):
            show(results)
        same_capture(threads, merged, f"torchrun --nproc_per_node {world}")

    # run, and each rank writing its own capture when asked ({rank}).
    run = [exe, "run", *model, "--order", "jit,fsdp"]
    results = finish(start_ranks([*run, "--launch", "env", "--out", os.path.join(tmp, "run_rank{rank}.tvz.json")], 2,
                                 lambda rank, p=free_port(): torchrun_env(rank, 2, p)))
    if not check(all(rc == 0 for rc, *_ in results.values()), "run --order jit,fsdp on 2 processes: exit 0"):
        show(results)
    check("passed" in results[0][1] and "rank 1 grad" in results[0][1], "run on 2 processes: rank 0 reports both ranks")
    check(all(os.path.isfile(os.path.join(tmp, f"run_rank{k}.tvz.json")) for k in range(2)),
          "run --out FILE{rank}: every rank writes its own capture")

    if not args.skip_rules:
        r = subprocess.run([exe, "rules", *model, "--world", "2", "--format", "json"], env=clean_env(),
                           timeout=600, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        results = finish(start_ranks([exe, "rules", *model, "--format", "json", "--launch", "env"], 2,
                                     lambda rank, p=free_port(): torchrun_env(rank, 2, p)), deadline=600)
        if not check(all(rc == r.returncode for rc, *_ in results.values()), "rules on 2 processes: the threads' exit"):
            show(results)
        check(results[0][1] == r.stdout and r.stdout, "rules on 2 processes: the same matrix as 2 threads (every semantics mode)")

    # Faults: bad input names what is wrong (exit 2).
    small = [exe, "compare", "--model", "linear", "--order", "jit,ddp", "--order", "ddp,jit", "--launch", "env",
             "--timeout", "5"]
    env = torchrun_env(0, 2, free_port())
    del env["MASTER_PORT"]
    r = subprocess.run(small, env=env, timeout=60, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(r.returncode == 2 and "MASTER_PORT is not set" in r.stderr, f"missing MASTER_PORT: exit {r.returncode}, "
          f"{r.stderr.strip()[:160]!r}")
    env = clean_env()
    r = subprocess.run(small, env=env, timeout=60, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(r.returncode == 2 and "WORLD_SIZE is not set" in r.stderr, f"no launch variables: exit {r.returncode}")

    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        held.listen(1)
        port = held.getsockname()[1]
        r = subprocess.run(small, env=torchrun_env(0, 2, port), timeout=60, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    check(r.returncode == 2 and f"port {port}" in r.stderr and "in use" in r.stderr,
          f"port in use: exit {r.returncode}, {r.stderr.strip()[:160]!r}")

    port = free_port()
    procs = start_ranks(small, 2, lambda rank: torchrun_env(rank, 2, port) if rank == 0 else
                        {**torchrun_env(rank, 2, port), "WORLD_SIZE": "3"})
    results = finish(procs, deadline=60)
    check(all(rc == 2 for rc, *_ in results.values()) and all("WORLD_SIZE" in err for _, _, err, _ in results.values()),
          "mismatched WORLD_SIZE (2 on rank 0, 3 on rank 1): both exit 2 naming WORLD_SIZE")
    if failures and "mismatched" in failures[-1]:
        show(results)

    # Faults: a rank that never joins, a rank killed mid-run (named by rank within the timeout, exit 1).
    results = finish(start_ranks(small, 2, lambda rank, p=free_port(): torchrun_env(rank, 2, p), ranks=[0]), deadline=60)
    rc, out, err, seconds = results[0]
    check(rc == 1 and "rank(s) 1" in err and "never joined" in err and seconds < 30,
          f"rank 1 never joins: rank 0 exits {rc} after {seconds:.1f} s naming it: {err.strip()[:200]!r}")

    # Every semantics mode: the matrix takes several seconds, so the kill lands inside it (were it
    # to land before the join, rank 0 names rank 1 all the same).
    port = free_port()
    procs = start_ranks([exe, "rules", *model, "--format", "json", "--launch", "env", "--timeout", "5"], 2,
                        lambda rank: torchrun_env(rank, 2, port))
    time.sleep(3)
    os.killpg(procs[1][1].pid, signal.SIGKILL)
    results = finish(procs[:1], deadline=120)
    procs[1][1].communicate()
    rc, out, err, seconds = results[0]
    named = "rank 1" in out + err or "rank(s) 1" in out + err or "Rank(s) 1" in out + err
    check(rc == 1 and named and seconds < 100,
          f"rank 1 killed mid-run: rank 0 exits {rc} after {seconds:.1f} s naming it")
    if failures and "killed" in failures[-1]:
        show(results)

    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
