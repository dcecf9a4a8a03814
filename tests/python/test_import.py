import glob
import os
import re

import pytest
import torch

import thunder_viz as tv


def test_every_fixture_parses(fixtures_dir):
    paths = sorted(glob.glob(os.path.join(fixtures_dir, "*.txt")))
    assert paths
    imp = tv.import_traces(paths)
    assert len(imp.traces) == len(paths)
    assert set(imp.cases) >= {"linear", "mlp", "ddp_jit_then_ddp"}
    lin = imp.cases["linear"]
    assert len(lin["forward"]) == 7 and len(lin["prologue"]) == 2 and len(lin["backward"]) == 1
    for t in imp.traces:
        assert str(t)
        assert t.python()
        for b in t.bound_symbols:
            assert "name" in b and "outputs" in b and "args" in b


def test_fixture_kinds_and_provenance(fixtures_dir):
    imp = tv.import_traces([os.path.join(fixtures_dir, "ddp_jit_then_ddp__bwd__00.txt")])
    bwd = imp.last_backward_traces("ddp_jit_then_ddp")[0]
    names = [b["name"] for b in bwd.bound_symbols]
    assert any("all_reduce" in n for n in names)
    assert bwd.provenance is None or "pass" in bwd.provenance


def test_import_from_string_and_round_trip(fixtures_dir):
    text = open(os.path.join(fixtures_dir, "linear__fwd__00.txt")).read()
    imp = tv.import_traces([text])
    t = imp.traces[0]
    assert tv.parse(str(t)).canonically_equal(t)


def test_bad_printout_names_file_and_position(tmp_path):
    p = tmp_path / "bad__fwd__00.txt"
    p.write_text("def computation(x):\n  t0 = ltorch.linear(x, w, \n")
    with pytest.raises(tv.TraceParseError) as e:
        tv.import_traces([str(p)])
    assert e.value.file == str(p)
    assert e.value.line >= 1 and e.value.column >= 1
    assert f"{p}:{e.value.line}:{e.value.column}:" in str(e.value)


def test_imported_capture_saves_and_loads(fixtures_dir, tmp_path):
    imp = tv.import_traces(sorted(glob.glob(os.path.join(fixtures_dir, "mlp__*.txt"))))
    out = tmp_path / "mlp.tvz.json"
    imp.save(out)
    cap = tv.load(out)
    assert cap.num_pipelines == 1
    assert len(cap.stages(0)["forward"]) == 7


def test_execute_an_imported_forward_and_backward(fixtures_dir):
    # Thunder's final forward and backward of Linear(5, 10, bias=False), run as Thunder runs them.
    fwd = tv.parse(open(os.path.join(fixtures_dir, "linear__fwd__06.txt")).read())
    bwd = tv.parse(open(os.path.join(fixtures_dir, "linear__bwd__00.txt")).read())
    torch.manual_seed(0)
    x, w, g = torch.randn(2, 5), torch.randn(10, 5, requires_grad=True), torch.randn(2, 10)
    data, saved = tv.execute_trace(fwd, [x, w])
    want = torch.nn.functional.linear(x, w)
    assert torch.allclose(data["output"][0], want)
    grads = tv.execute_trace(bwd, [saved, (g,)])
    want.backward(g)
    assert grads[0] is None and torch.allclose(grads[1], w.grad)


def _arguments_of(trace):
    """Random tensors of the shapes a printout's argument comments give (`# x: "cpu f32[2, 5]"`)."""
    shapes = {}
    for m in re.finditer(r'^  # (\w+): "cpu \w+\[([\d, ]*)\]"', str(trace), re.MULTILINE):
        shapes.setdefault(m.group(1), [int(d) for d in m.group(2).split(",") if d.strip()])
    return [torch.randn(*shapes[a]) for a in trace.args]


def test_execute_runs_the_torch_executors_functions_and_names_the_op_it_does_not_know():
    # The final GPT block forward calls the torch executor's own functions (torch_prims_reshape_impl,
    # torch_slice_prim_impl, torch.arange by keyword, ...): the engine runs them.
    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "thunder_cpu", "gpt_block__fwd__06.txt")
    trace = tv.parse(open(path).read())
    result = tv.execute_trace(trace, _arguments_of(trace))
    assert isinstance(result, tuple) and result
    # The llama block's acquired forward calls prims.slice_prim, which the engine does not know.
    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "thunder_cpu", "llama_block__fwd__00.txt")
    trace = tv.parse(open(path).read())
    with pytest.raises(tv.ExecError, match="symbol 'prims.slice_prim' is not executable"):
        tv.execute_trace(trace, _arguments_of(trace))


def test_thunders_program_lines_up_with_ours():
    # Thunder's acquired GPT block (scaled_dot_product_attention, view) beside the engine's recording
    # of the same block written with matmul and softmax.
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    from models import Block

    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "thunder_cpu", "gpt_block__fwd__00.txt")
    thunder_trace = tv.parse(open(path).read())
    tm = tv.jit(Block(64, 4))
    tm(torch.randn(2, 16, 64))
    c = tv.compare_programs(thunder_trace, tv.last_traces(tm)[0], "Thunder", "thunder_viz")
    print(c.summary())
    assert not c.same_program
    kinds = [k for k, _, _ in c.rows]
    assert kinds.count("same") == 15
    changed = [(l.split(" = ")[1].split("(")[0], r.split(" = ")[1].split("(")[0]) for k, l, r in c.rows if k == "changed"]
    assert ("ltorch.view", "ltorch.reshape") in changed
    assert ("ltorch.scaled_dot_product_attention", "ltorch.transpose") in changed
    assert [r.split(" = ")[1].split("(")[0] for k, _, r in c.rows if k == "only right"] == [
        "ltorch.matmul", "ltorch.mul", "ltorch.softmax", "ltorch.matmul"]
    assert tv.programs.op_name("torch_prims_reshape_impl") == "prims.reshape"
    assert tv.programs.op_name("torch.nn.functional.linear") == "ltorch.linear"
    assert tv.programs.op_name("Tensor.expand") == "ltorch.expand"
