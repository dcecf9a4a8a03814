"""attach() on real Lightning Thunder ThunderModules (CPU). Every test here needs Thunder: the
`thunder` fixture (conftest.py) imports it from THUNDER_PATH and skips, saying why, when it is absent.
Each test prints the numbers it measured (run pytest with -s to see them)."""
import json
import os
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from models import Block, ConvNet, mlp  # noqa: E402

# A GPT block jitted by Thunder, compared with eager torch: outputs and every parameter's gradient.
IMPORT_ORDER_SCRIPT = r"""
import copy, json, sys
first, second = sys.argv[1:3]
__import__(first); __import__(second)
import torch, thunder
sys.path.insert(0, sys.argv[3])
from models import Block
torch.manual_seed(0)
model = Block(32, 4)
eager = copy.deepcopy(model)
x = torch.randn(2, 8, 32)
tm = thunder.jit(model)
out = tm(x)
out.sum().backward()
want = eager(x)
want.sum().backward()
grads = {n: (p.grad - q.grad).abs().max().item() for (n, p), (_, q) in zip(model.named_parameters(), eager.named_parameters())}
print(json.dumps({"output": (out - want).abs().max().item(), "grads": grads, "thunder_viz": "thunder_viz" in sys.modules}))
"""


@pytest.mark.parametrize("first,second", [("thunder_viz", "thunder"), ("thunder", "thunder_viz")])
def test_importing_thunder_viz_changes_nothing_in_thunder(thunder_env, first, second):
    r = subprocess.run([sys.executable, "-c", IMPORT_ORDER_SCRIPT, first, second, HERE], env=thunder_env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"import {first} then {second}: max |thunder - eager| output {got['output']:.3g}, "
          f"grads {max(got['grads'].values()):.3g}")
    assert got["thunder_viz"]
    assert got["output"] <= 1e-5
    assert len(got["grads"]) == 12 and max(got["grads"].values()) <= 1e-4


def test_attach_records_every_call_with_thunders_stages(thunder):
    import thunder_viz as tv

    torch.manual_seed(0)
    tm = thunder.jit(mlp(16, 32))
    insp = tv.attach(tm)
    tm(torch.randn(2, 16)).sum().backward()   # miss
    tm(torch.randn(2, 16)).sum().backward()   # hit
    tm(torch.randn(3, 16))                    # new shape: miss
    with torch.no_grad():
        tm(torch.randn(3, 16))                # grad mode is part of the cache key: miss
    assert [c.hit for c in insp.calls] == [False, True, False, False]
    assert [c.thunder_stats["cache_misses"] for c in insp.calls] == [1, 1, 2, 3]
    first = insp.calls[0]
    assert set(first.stages) == {"prologue", "forward", "backward", "epilogue"}
    last = insp.last
    assert len(last.stages["prologue"]) == len(thunder.last_prologue_traces(tm))
    assert len(last.stages["forward"]) == len(thunder.last_traces(tm))
    forward_passes = [s.pass_name for s in first.stages["forward"]]
    print("forward stages:", forward_passes)
    print("Thunder's pass times (ms):", {s.pass_name: s.milliseconds for s in first.stages["forward"]})
    assert forward_passes[0] == "acquisition" and "Grad transform pass" in forward_passes
    assert sum(s.milliseconds for s in first.stages["forward"]) > 0
    # Same traces as Thunder's (imported once, reprinted the way Thunder prints them).
    assert str(insp.calls[-1].final("forward")) == str(thunder.last_traces(tm)[-1])
    assert insp.calls[1].final("forward").canonically_equal(first.final("forward"))


def test_detach_restores_the_module(thunder):
    import thunder_viz as tv

    torch.manual_seed(0)
    tm = thunder.jit(mlp(16, 32))
    hooks = {k: dict(v) for k, v in vars(tm).items() if k.startswith("_forward") and isinstance(v, dict)}
    x = torch.randn(2, 16)
    before = tm(x).detach()
    insp = tv.attach(tm)
    tm(x).sum().backward()
    insp.detach()
    assert {k: dict(v) for k, v in vars(tm).items() if k.startswith("_forward") and isinstance(v, dict)} == hooks
    n = len(insp.calls)
    assert torch.equal(tm(x).detach(), before) and len(insp.calls) == n


def _max_abs(checks):
    return max((c.max_abs for c in checks), default=0.0)


def _replay_and_show(thunder, tmp_path, name, model, shape):
    """Runs one call with a backward on random cotangents; returns (inspector, saved capture path)."""
    import thunder_viz as tv

    tm = thunder.jit(model)
    insp = tv.attach(tm)
    out = tm(torch.randn(*shape))
    (out * torch.randn_like(out)).sum().backward()
    r = insp.last.replay
    print(f"{name}: prologue run by {r.prologue.split(' ')[0] or '-'}; max |engine - thunder| output "
          f"{_max_abs(r.outputs):.3g}, gradients {_max_abs(r.gradients):.3g} ({len(r.gradients)} checked); "
          f"error: {r.error or 'none'}")
    return insp, insp.save(tmp_path / f"{name}.tvz.json")


def _show_and_report(path, names):
    """`thunder-viz show` lists Thunder's pass names; `report` has a PASS line per check in `names`."""
    import thunder_viz as tv

    try:
        exe = tv.find_binary()
    except FileNotFoundError as e:
        print(f"not checking show/report: {e}")
        return
    shown = subprocess.run([exe, "show", path], capture_output=True, text=True, timeout=300)
    assert shown.returncode in (0, 1), shown.stderr
    assert "Transform for execution" in shown.stdout or "Delete Last Used" in shown.stdout, shown.stdout[:2000]
    report = os.path.join(os.path.dirname(path), "report.txt")
    subprocess.run([exe, "report", path, "--text", report], check=True, capture_output=True, timeout=300)
    text = open(report).read()
    for name in names:
        line = next(l for l in text.splitlines() if f" {name} " in l)
        assert line.rstrip().endswith("PASS"), line


def test_replay_of_a_linear_on_the_engine_matches_thunder(thunder, tmp_path):
    import thunder_viz as tv

    torch.manual_seed(0)
    model = torch.nn.Linear(5, 10, bias=False)
    insp, path = _replay_and_show(thunder, tmp_path, "linear", model, (2, 5))
    r = insp.last.replay
    assert r.error == "", r.error
    assert r.outputs and all(c.passed for c in r.outputs), r.outputs
    assert r.gradients_checked and [c.name for c in r.gradients] == ["grad[weight]"]
    assert all(c.passed for c in r.gradients), r.gradients
    rank, outputs, gradients, error = tv.load(path).replay(0)[0]
    assert error == "" and len(gradients) == 1
    _show_and_report(path, [c.name for c in r.outputs + r.gradients])


def test_replay_of_a_gpt_block_on_the_engine_matches_thunder(thunder, tmp_path):
    # Thunder's final traces call its torch executor's own functions (torch_prims_reshape_impl,
    # torch_slice_prim_impl, ...): the engine runs them, forward and backward.
    torch.manual_seed(0)
    insp, path = _replay_and_show(thunder, tmp_path, "gpt_block", Block(32, 4), (2, 8, 32))
    r = insp.last.replay
    assert r.error == "", r.error
    assert r.gradients_checked and len(r.gradients) == 12, [c.name for c in r.gradients]
    assert all(c.passed for c in r.outputs + r.gradients), r.outputs + r.gradients
    _show_and_report(path, [c.name for c in r.outputs + r.gradients])


def test_replay_of_a_convnet_on_the_engine_matches_thunder(thunder, tmp_path):
    # Convolutions, batch norm's copy_ into its running statistics, pooling and their backward kernels
    # (torch_pad_prim_impl, max_pool2d_with_indices_backward, torch.torch.ops.aten.*) run on the engine.
    # The replay starts from the buffers' values before the call: the module's running statistics
    # are written once, by Thunder, and the engine's writes are checked against Thunder's.
    import copy

    torch.manual_seed(0)
    model = ConvNet()
    eager = copy.deepcopy(model)
    x = torch.randn(2, 3, 16, 16)
    tm = thunder.jit(model)
    import thunder_viz as tv

    insp = tv.attach(tm)
    out = tm(x)
    (out * torch.randn_like(out)).sum().backward()
    eager(x)
    r = insp.last.replay
    print(f"convnet: max |engine - thunder| output {_max_abs(r.outputs):.3g}, gradients {_max_abs(r.gradients):.3g} "
          f"({len(r.gradients)} checked); checks {[c.name for c in r.outputs]}; error: {r.error or 'none'}")
    assert r.error == "", r.error
    names = [c.name for c in r.outputs]
    assert any("running_mean" in n for n in names) and any("num_batches_tracked" in n for n in names), names
    assert all(c.passed for c in r.outputs + r.gradients), r.outputs + r.gradients
    assert r.gradients_checked and len(r.gradients) == 8, [c.name for c in r.gradients]
    for (name, b), e in zip(model.named_buffers(), eager.buffers()):
        torch.testing.assert_close(b, e, msg=lambda m: f"{name} was written more than once: {m}")
    path = insp.save(tmp_path / "convnet.tvz.json")
    _show_and_report(path, [c.name for c in r.outputs + r.gradients])


def test_replay_names_an_op_the_engine_does_not_know(thunder):
    import thunder_viz as tv

    class Loss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(5, 3)

        def forward(self, x, y):
            return torch.nn.functional.smooth_l1_loss(self.lin(x), y)

    torch.manual_seed(0)
    tm = thunder.jit(Loss())
    insp = tv.attach(tm)
    tm(torch.randn(4, 5), torch.randn(4, 3)).backward()
    r = insp.last.replay
    print("smooth_l1_loss replay:", r.error or "ran", "| gradients checked:", r.gradients_checked)
    if r.error:
        assert "smooth_l1_loss" in r.error
    else:
        assert all(c.passed for c in r.outputs + r.gradients)


DIST_SCRIPT = r"""
import os, sys, json
import torch, torch.distributed as dist, thunder, thunder.distributed
import thunder_viz as tv
sys.path.insert(0, sys.argv[1])
from models import mlp
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
transform = getattr(thunder.distributed, sys.argv[3])
on_cpu = {"device": torch.device("cpu")} if sys.argv[3] == "fsdp" else {}  # fsdp's default device is CUDA's
tm = transform(thunder.jit(mlp(16, 32)), **on_cpu)
insp = tv.attach(tm)
torch.manual_seed(1 + rank)
tm(torch.randn(2, 16)).sum().backward()
tm(torch.randn(2, 16)).sum().backward()
call = insp.last
path = insp.save(os.path.join(sys.argv[2], "dist.tvz.json"))  # every rank calls it; rank 0 writes the merged one
print(json.dumps({"rank": rank, "order": call.order, "hits": [c.hit for c in insp.calls],
                  "backward": [s.pass_name for s in call.stages.get("backward", [])],
                  "collectives": [l.split("=")[1].split("(")[0].strip() for l in str(call.final("backward")).splitlines()
                                  if ("all_reduce" in l or "reduce_scatter" in l) and "=" in l and not l.strip().startswith("#")][:3],
                  "replay": call.replay.error, "world": call.world_size, "path": path}))
dist.destroy_process_group()
"""


@pytest.mark.parametrize("transform", ["ddp", "fsdp"])
def test_distributed_on_two_gloo_ranks_records(thunder_env, tmp_path, transform):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(2):
        env = dict(thunder_env, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, "-c", DIST_SCRIPT, HERE, str(tmp_path), transform], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-4000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    for r in results:
        print(f"rank {r['rank']}: order {r['order']}, hits {r['hits']}, collectives {r['collectives']}, "
              f"replay: {r['replay'] or 'ran'}")
        assert r["world"] == 2 and r["order"][0] == "thunder.jit" and f"{transform.upper()}Transform" in r["order"]
        assert r["hits"] == [False, True]
        assert r["collectives"], "the backward trace holds the gradients' all_reduce (ddp) or reduce_scatter (fsdp)"
    import thunder_viz as tv

    assert results[0]["path"] and results[1]["path"] is None and os.listdir(tmp_path) == ["dist.tvz.json"]
    cap = tv.load(results[0]["path"])
    assert cap.num_pipelines == 1 and cap.stages(0)["backward"]
    with open(results[0]["path"]) as f:
        pipeline = json.load(f)["pipelines"][0]
    ranks = pipeline["replay"]["ranks"]
    print("merged capture: ranks", [(r["rank"], r.get("error") or "ran", [(g["name"], g["max_abs"]) for g in r["gradients"]])
                                    for r in ranks], "outcome", pipeline["outcome"]["kind"])
    assert [r["rank"] for r in ranks] == [0, 1], "rank 0's capture holds every rank's replay"
    # The engine replays Thunder's backward with its collectives (over the engine's group beside
    # torch's): each rank's gradients equal what Thunder's DDP or FSDP left in .grad (a shard's, for FSDP).
    for r in ranks:
        assert not r["error"] and len(r["gradients"]) == 4 and all(g["pass"] for g in r["gradients"]), r
    assert pipeline["outcome"]["kind"] == "passed", pipeline["outcome"]


def test_compare_thunders_call_with_ours(thunder):
    import copy

    import thunder_viz as tv

    torch.manual_seed(0)
    model = Block(32, 4)
    ours = tv.attach(tv.jit(copy.deepcopy(model)))
    theirs = tv.attach(thunder.jit(model))
    x = torch.randn(2, 8, 32)
    theirs(x)
    ours(x)
    verdict, details = tv.compare(theirs, ours)
    print(details["program"])
    print("verdict:", verdict, "|", details["why"], "| outputs equal:", details["output[0]"])
    assert verdict == "different" and not details["program"].same_program
    assert sum(1 for k, _, _ in details["program"].rows if k == "same") >= 15
    assert details["output[0]"]  # the same numbers from both programs
