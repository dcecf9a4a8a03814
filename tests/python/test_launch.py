"""One rank per process under torch.distributed (gloo over 127.0.0.1): torchrun and plain environment
variables, every rank's checks in rank 0's capture, gradients checked against the mean eager gradient."""
import json
import os
import signal
import socket
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORKER = os.path.join(os.path.dirname(__file__), "launch_worker.py")
SEED = os.path.join(ROOT, "samples", "python", "seed_torchrun.py")
PYTHON = sys.executable  # the interpreter running the tests, the one with torch
# torch 1.13's torchrun on Python 3.11 fails with its default --redirects 0 (Std.from_str("0") gives None:
# a zero IntFlag member is not iterated there); stdout to a log and the console works on every version.
TORCHRUN_STREAMS = ("--redirects", "1", "--tee", "1")
DEADLINE = 180
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env():
    return {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS}


def run_all(procs):
    """Waits for every process under one deadline (the whole group is killed past it)."""
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            for q in procs:
                if q.poll() is None:
                    os.killpg(q.pid, signal.SIGKILL)
            out, _ = p.communicate()
            pytest.fail(f"a rank did not finish within {DEADLINE} s:\n{out}")
        outs.append((p.returncode, out))
    return outs


def torchrun(script, world, *args):
    cmd = [PYTHON, "-m", "torch.distributed.run", *TORCHRUN_STREAMS, "--nproc_per_node", str(world),
           "--master_addr", "127.0.0.1", "--master_port", str(free_port()), script, *args]
    p = subprocess.Popen(cmd, env=base_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    return run_all([p])[0]


def env_launch(script, world, *args):
    port = free_port()
    procs = []
    for rank in range(world):
        env = base_env()
        env.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))
        procs.append(subprocess.Popen([PYTHON, script, *args], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, start_new_session=True))
    return run_all(procs)


def assert_merged(path, world, order):
    with open(path) as f:
        doc = json.load(f)
    pipelines = doc["pipelines"]
    assert len(pipelines) == 1, [p["spec"] for p in pipelines]
    p = pipelines[0]
    assert p["spec"]["order"] == order and p["spec"]["world_size"] == world
    ranks = p["replay"]["ranks"]
    assert [r["rank"] for r in ranks] == list(range(world))
    for r in ranks:
        assert r["error"] == "" and r["outputs"] and r["gradients"], r
        assert all(c["pass"] for c in r["outputs"] + r["gradients"]), r
    assert p["outcome"]["kind"] == "passed", p["outcome"]
    runs = p["stages"]["backward"][-1]["lines"]
    backward = "\n".join(doc["lines"][runs[r] + i] for r in range(0, len(runs), 2) for i in range(runs[r + 1]))
    assert "all_reduce" in backward or "reduce_scatter" in backward


def test_seed_script_under_torchrun(tmp_path):
    out = tmp_path / "seed.tvz.json"
    rc, text = torchrun(SEED, 2, str(out))
    assert rc == 0, text
    assert "gradients checked against the mean eager gradient: True, failed: none" in text
    assert_merged(out, 2, ["jit", "ddp"])
    assert sorted(os.listdir(tmp_path)) == ["seed.tvz.json"]  # rank 1 wrote nothing


@pytest.mark.parametrize("world,order", [(4, "ddp,jit"), (2, "jit,fsdp")])
def test_torchrun(tmp_path, world, order):
    out = tmp_path / "merged.tvz.json"
    rc, text = torchrun(WORKER, world, order, str(out), "mlp")
    assert rc == 0, text
    assert text.count("gradients checked True, passed True") == world, text
    assert_merged(out, world, order.split(","))


def nccl_skip_reason():
    import torch
    import thunder_viz as tv
    if not torch.cuda.is_available():
        return "no CUDA GPU here (runs on the GPU machines: tests/gpu/run_gpu_tests.sh)"
    if not tv._C.nccl_available():
        return "the engine was built without NCCL (/usr/local/cuda has none)"
    return None


@pytest.mark.parametrize("order", ["jit,ddp", "ddp,jit", "jit,fsdp", "fsdp,jit"])
def test_torchrun_on_gpus_over_nccl(tmp_path, order):
    """torchrun with one rank per GPU (two where there are two), torch.distributed over NCCL: the
    engine's collectives run on NCCL and every rank's gradients are the mean eager gradient."""
    if why := nccl_skip_reason():
        pytest.skip(why)
    import torch
    world = min(2, torch.cuda.device_count())
    out = tmp_path / "merged.tvz.json"
    rc, text = torchrun(WORKER, world, order, str(out), "mlp", "cuda")
    assert rc == 0, text
    assert text.count("gradients checked True, passed True, gradients on cuda") == world, text
    assert_merged(out, world, order.split(","))


@pytest.mark.parametrize("world", [2, 4])
def test_plain_environment_variables(tmp_path, world):
    out = tmp_path / "rank{rank}.tvz.json"
    results = env_launch(WORKER, world, "jit,ddp", str(out), "mlp")
    for rc, text in results:
        assert rc == 0, text
    assert_merged(tmp_path / "rank0.tvz.json", world, ["jit", "ddp"])
    # Asked with {rank}: every other rank wrote its own capture, with its own checks only.
    for rank in range(1, world):
        with open(tmp_path / f"rank{rank}.tvz.json") as f:
            ranks = json.load(f)["pipelines"][0]["replay"]["ranks"]
        assert [r["rank"] for r in ranks] == [rank]


def test_a_rank_that_never_joins_is_named_within_the_timeout():
    results = env_launch(os.path.join(os.path.dirname(__file__), "launch_absent_rank.py"), 2)
    rc, text = results[0]
    assert rc == 3, text
    assert "rank(s) 1 of 2 never joined within 5000 ms" in text, text


MISMATCH = os.path.join(os.path.dirname(__file__), "launch_mismatch.py")


@pytest.mark.parametrize("case,order,says", [
    ("shapes", "jit,ddp", "the ranks hold different parameters or buffers of Linear: 'weight' is float32["),
    ("branch", "jit,ddp", "the ranks recorded different programs for Branches: collective 1 is"),
    ("branch", "fsdp,jit", "the ranks recorded different programs for Branches"),
    ("no-group", "jit,fsdp", "WORLD_SIZE=2 says this process is one of 2 ranks"),
])
def test_ranks_that_disagree_are_refused_naming_what_differs(case, order, says):
    for rc, text in env_launch(MISMATCH, 2, case, order):
        assert rc == 3 and says in text, text


@pytest.mark.parametrize("order", ["jit,ddp", "fsdp,jit"])
def test_ranks_that_initialise_their_own_weights_start_from_rank_0s(order):
    for rc, text in env_launch(MISMATCH, 2, "seeds", order):
        assert rc == 0 and "ran" in text, text
