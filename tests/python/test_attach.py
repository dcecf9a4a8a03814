import os
import subprocess
import sys

import pytest
import torch

import thunder_viz as tv

sys.path.insert(0, os.path.dirname(__file__))
from models import mlp  # noqa: E402


def test_attach_save_load_round_trip(tmp_path):
    torch.manual_seed(0)
    tm = tv.jit(mlp(8, 16))
    insp = tv.attach(tm)
    tm(torch.randn(2, 8)).sum().backward()
    tm(torch.randn(3, 8))
    assert len(insp.calls) == 2
    path = insp.save(tmp_path / "run.tvz.json")
    cap = tv.load(path)
    assert cap.num_pipelines == 2
    fwd = cap.stages(0)["forward"]
    assert fwd[-1].trace.canonically_equal(insp.calls[0].final("forward"))
    assert cap.stages(0)["backward"]


def test_compare_equivalent_and_different():
    torch.manual_seed(0)
    m = mlp(8, 16)
    x = torch.randn(2, 8)
    a, b = tv.attach(tv.jit(m)), tv.attach(tv.jit(m))
    a(x)
    b(x)
    assert a.compare(b) == "equivalent"
    c = tv.attach(tv.jit(mlp(8, 16)))
    c(x)
    assert a.compare(c) == "different"  # other weights: numbers differ


def test_show_without_binary_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("DISPLAY", ":12345")  # past the display check: the executable is what is missing
    monkeypatch.delenv("THUNDER_VIZ_BIN", raising=False)
    import thunder_viz.inspector as ins
    monkeypatch.setattr(ins, "__file__", str(tmp_path / "x.py"))
    tm = tv.jit(mlp(8, 16))
    insp = tv.attach(tm)
    tm(torch.randn(2, 8))
    with pytest.raises(FileNotFoundError, match="thunder-viz"):
        insp.show(tmp_path / "c.tvz.json")


def test_attach_real_thunder():
    try:
        import thunder  # noqa: F401
    except Exception as e:  # not installed here
        print(f"skipping the real-Thunder path: import thunder failed ({e})")
        pytest.skip(f"lightning-thunder is not importable: {e}")
    model = torch.nn.Linear(5, 10, bias=False)
    tmodel = thunder.jit(model)
    insp = tv.attach(tmodel)
    out = tmodel(torch.randn(2, 5))
    out.sum().backward()
    assert insp.calls and insp.last_traces()
    assert "linear" in str(insp.last_traces()[0])


def _by_name(checks):
    return {c.name: c for c in checks}


def test_calls_are_checked_against_eager_and_saved_as_replay(tmp_path):
    torch.manual_seed(0)
    model = mlp(8, 16)
    tm = tv.jit(model)
    insp = tv.attach(tm)
    x = torch.randn(4, 8)
    w = torch.randn(4, 8)  # cotangent: not ones, so the gradients depend on what backward received
    (tm(x) * w).sum().backward()
    checks = insp.last.checks
    assert checks["gradients_checked"]
    outs = _by_name(checks["outputs"])
    assert list(outs) == ["output[0]"] and outs["output[0]"].passed and outs["output[0]"].shape == [4, 8]
    grads = _by_name(checks["gradients"])
    assert sorted(grads) == ["grad[0.bias]", "grad[0.weight]", "grad[2.bias]", "grad[2.weight]"]
    for c in grads.values():
        assert c.passed and c.max_rel <= c.tolerance == 1e-5, c
    assert grads["grad[0.weight]"].shape == [16, 8]

    path = insp.save(tmp_path / "checked.tvz.json")
    replay = tv.load(path).replay(0)
    assert replay is not None and len(replay) == 1
    rank, outputs, gradients, error = replay[0]
    assert rank == 0 and error == ""
    assert [c.name for c in outputs] == ["output[0]"] and all(c.passed for c in outputs)
    assert sorted(c.name for c in gradients) == sorted(grads) and all(c.passed for c in gradients)

    # The command line reads the same results (what the GUI's replay panel shows).
    try:
        exe = tv.find_binary()
    except FileNotFoundError:
        return
    report = tmp_path / "report.txt"
    subprocess.run([exe, "report", path, "--text", report], check=True, capture_output=True)
    text = report.read_text()
    for name in ["output[0]"] + sorted(grads):
        line = next(l for l in text.splitlines() if f" {name} " in l)
        assert line.rstrip().endswith("PASS"), line


def test_saved_replay_holds_the_calls_timings(tmp_path):
    import json

    torch.manual_seed(0)
    tm = tv.jit(mlp(8, 16))
    insp = tv.attach(tm)
    tm(torch.randn(4, 8)).sum().backward()
    rec = insp.last.record
    kinds = [t[0] for t in rec.timings]
    assert {"forward", "backward"} <= set(kinds) <= {"prologue", "forward", "backward"}
    assert kinds.index("backward") > max(i for i, k in enumerate(kinds) if k == "forward")  # in the order they ran
    assert all(t[4] >= 0 and not t[5] for t in rec.timings)  # microseconds; host clock on the CPU
    assert any(t[2] == "ltorch.linear" for t in rec.timings)

    doc = json.loads(open(insp.save(tmp_path / "timed.tvz.json")).read())
    saved = doc["pipelines"][0]["replay"]["ranks"][0]["timings"]
    assert [(t["trace"], t["index"], t["symbol"]) for t in saved] == [(t[0], t[1], t[2]) for t in rec.timings]


def test_a_call_that_differs_from_eager_fails_its_check(tmp_path):
    # Dropout in training mode: the engine and eager torch draw different masks, so the numbers
    # differ; the check must say so (and the saved replay must carry the failure).
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Dropout(0.5))
    tm = tv.jit(m)
    insp = tv.attach(tm)
    tm(torch.randn(8, 16)).sum().backward()
    out = insp.last.checks["outputs"][0]
    assert not out.passed and out.max_rel > out.tolerance
    grads = _by_name(insp.last.checks["gradients"])
    assert not grads["grad[0.weight]"].passed
    _, outputs, gradients, _ = tv.load(insp.save(tmp_path / "c.tvz.json")).replay(0)[0]
    assert not outputs[0].passed
    m.eval()  # no dropout: engine and eager agree again (a new cache entry)
    tm(torch.randn(8, 16))
    assert insp.last.checks["outputs"][0].passed


def test_the_last_checked_call_with_gradients_is_the_one_saved(tmp_path):
    torch.manual_seed(0)
    tm = tv.jit(mlp(8, 16))
    insp = tv.attach(tm)
    x = torch.randn(2, 8)
    tm(x).sum().backward()
    with torch.no_grad():
        tm(x)  # same pipeline, outputs only
    assert not insp.last.checks["gradients_checked"] and insp.last.checks["gradients"] == []
    _, outputs, gradients, _ = tv.load(insp.save(tmp_path / "c.tvz.json")).replay(0)[0]
    assert len(outputs) == 1 and len(gradients) == 4


def test_check_false_records_no_replay(tmp_path):
    torch.manual_seed(0)
    tm = tv.jit(mlp(8, 16))
    insp = tv.attach(tm, check=False)
    tm(torch.randn(2, 8)).sum().backward()
    assert insp.last.checks is None
    assert tv.load(insp.save(tmp_path / "c.tvz.json")).replay(0) is None


def test_save_with_inputs_stores_weights_inputs_and_eager_numbers(tmp_path):
    """Inspector.save(path, inputs=...) writes PATH.tensors.pt beside the capture: the weights and
    buffers, the inputs, and eager torch's outputs and gradients for the cotangents a replay draws;
    the capture names it, and the model is left as it was."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.Linear(16, 4))
    tm = tv.jit(m)
    insp = tv.attach(tm)
    x = torch.randn(4, 8)
    tm(x).sum().backward()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    path = insp.save(tmp_path / "w.tvz.json", inputs=(x,))
    assert {k: v for k, v in m.state_dict().items()}.keys() == before.keys()
    for k, v in m.state_dict().items():
        assert torch.equal(v, before[k]), k  # eager ran on copies: running statistics untouched
    assert tv.load(path).tensors_file == "w.tvz.json.tensors.pt"
    stored = torch.load(str(path) + ".tensors.pt")
    assert torch.equal(stored["input:0"], x)
    assert torch.equal(stored["parameter:0.weight"], m[0].weight.detach())
    assert torch.equal(stored["buffer:1.running_mean"], m[1].running_mean)
    assert int(stored["cotangent_seed"]) == 1234
    # The stored numbers are eager torch's on those weights: recompute them independently.
    copy = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.Linear(16, 4))
    copy.load_state_dict(before)
    out = copy(x)
    assert torch.allclose(stored["output:0"], out.detach())
    cot = tv._thunder_viz.make_cotangents([out.detach()], 1234)[0]
    grads = torch.autograd.grad(out, list(copy.parameters()), cot)
    for (name, _), g in zip(m.named_parameters(), grads):
        assert torch.allclose(stored["grad:" + name], g, rtol=1e-5, atol=1e-7), name
    assert not os.path.exists(str(path) + ".tensors.pt.partial")
