import copy
import os
import sys

import pytest
import torch

import thunder_viz as tv

sys.path.insert(0, os.path.dirname(__file__))
from models import Block, mlp  # noqa: E402


def rel_close(got, want, tol=1e-5):
    scale = max(float(want.abs().max()), 1e-30)
    return float((got - want).abs().max()) / scale <= tol


def check_against_eager(model, x):
    ref = copy.deepcopy(model)
    tm = tv.jit(model)
    out = tm(x)
    want = ref(x)
    assert rel_close(out.detach(), want.detach())
    out.sum().backward()
    want.sum().backward()
    for (n, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        assert p.grad is not None, n
        assert rel_close(p.grad, q.grad), n
    return tm


def test_mlp_matches_eager():
    torch.manual_seed(0)
    tm = check_against_eager(mlp(), torch.randn(2, 64))
    fwd = tv.last_traces(tm)
    assert [s for s in fwd][0].provenance is None
    assert tv.last_backward_traces(tm)
    assert "ltorch.linear" in str(fwd[0])
    assert "test_jit.py" in str(fwd[0])  # the user's file:line headers
    assert len(tv.last_prologue_traces(tm)) >= 1


def test_backward_statements_name_the_forward_statement_they_came_from():
    torch.manual_seed(0)
    tm = check_against_eager(mlp(), torch.randn(2, 64))
    def every(symbols):  # every level: gelu's pieces sit in a fusion region
        for b in symbols:
            yield b
            yield from every(b["subsymbols"])

    forward = {b["gradient_of"]: b for b in every(tv.last_traces(tm)[-1].bound_symbols) if b["gradient_of"]}
    backward = [b for b in every(tv.last_backward_traces(tm)[-1].bound_symbols) if b["gradient_of"]]
    assert backward, "no backward statement carries its forward statement"
    for b in backward:
        assert b["gradient_of"] in forward, b["statement"]
    # The second linear's rule made the matmuls of its two gradients.
    fc2 = [k for k, b in forward.items() if b["name"] == "ltorch.linear"][-1]
    assert "ltorch.matmul" in [b["name"] for b in backward if b["gradient_of"] == fc2]


class _TwoLines(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        h = torch.tanh(x) * 2.0
        return self.fc(h)


def test_statements_name_the_user_line_they_came_from():
    torch.manual_seed(0)
    tm = check_against_eager(_TwoLines(), torch.randn(2, 8))
    first = _TwoLines.forward.__code__.co_firstlineno

    def line_of(b):  # "file:line: \t<code>"
        file, line = b["source"].rsplit(": \t", 1)[0].rsplit(":", 1)
        return os.path.basename(file), int(line)

    def every(symbols):
        for b in symbols:
            yield b
            yield from every(b["subsymbols"])

    lines = {}
    for b in every(tv.last_traces(tm)[-1].bound_symbols):
        if b["name"].startswith("ltorch."):
            lines.setdefault(b["name"], set()).add(line_of(b))
    assert lines["ltorch.tanh"] == {("test_jit.py", first + 1)}, lines
    assert lines["ltorch.mul"] == {("test_jit.py", first + 1)}, lines
    assert lines["ltorch.linear"] == {("test_jit.py", first + 2)}, lines


def test_transformer_block_matches_eager():
    torch.manual_seed(0)
    check_against_eager(Block(), torch.randn(2, 8, 32))


def test_parameters_are_shared_not_copied():
    torch.manual_seed(0)
    model = mlp(8, 16)
    tm = tv.jit(model)
    x = torch.randn(2, 8)
    before = tm(x).detach()
    with torch.no_grad():
        model[0].bias.add_(1.0)
    after = tm(x).detach()
    assert not torch.allclose(before, after)
    assert torch.allclose(after, model(x).detach(), rtol=1e-5, atol=1e-6)


def test_mlp_is_canonically_equal_to_builtin_mlp():
    torch.manual_seed(0)
    tm = tv.jit(mlp(64, 256))
    tm(torch.randn(2, 64))
    ours = tv.last_traces(tm)[0]
    cap = tv.run_model("mlp", replay=False)
    builtin = cap.stages(0)["forward"][0].trace
    assert ours.canonically_equal(builtin), ours.diff(builtin)[1]
    ours_final = tv.last_traces(tm)[-1]
    assert ours_final.canonically_equal(cap.stages(0)["forward"][-1].trace)


def test_shape_change_reacquires():
    torch.manual_seed(0)
    tm = tv.jit(mlp(8, 16))
    tm(torch.randn(2, 8))
    tm(torch.randn(2, 8))
    assert (tv.cache_hits(tm), tv.cache_misses(tm)) == (1, 1)
    tm(torch.randn(5, 8))
    assert tv.cache_misses(tm) == 2
    h = tv.history(tm)
    assert [r.hit for r in h] == [False, True, False]
    assert "f32[5, 8]" in str(tv.last_traces(tm)[0])


def test_changed_python_attribute_reacquires():
    class Scaled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)
            self.scale = 2.0

        def forward(self, x):
            return self.fc(x) * self.scale

    m = Scaled()
    tm = tv.jit(m)
    x = torch.randn(3, 4)
    assert torch.allclose(tm(x), m(x), atol=1e-6)
    m.scale = 3.0  # read by forward as a constant: the old trace would be wrong now
    assert torch.allclose(tm(x), m(x), atol=1e-6)
    assert (tv.cache_hits(tm), tv.cache_misses(tm)) == (0, 2)
    tm(x)
    assert tv.cache_hits(tm) == 1


def test_shape_dependent_control_flow_is_rerecorded():
    class Branchy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x):
            if x.shape[0] > 2:
                return torch.relu(self.fc(x))
            return torch.tanh(self.fc(x))

    tm = tv.jit(Branchy())
    small, big = torch.randn(2, 4), torch.randn(3, 4)
    assert torch.allclose(tm(small), tm.module(small), atol=1e-6)
    assert "ltorch.tanh" in str(tv.last_traces(tm)[0])
    assert torch.allclose(tm(big), tm.module(big), atol=1e-6)
    assert "ltorch.relu" in str(tv.last_traces(tm)[0])


def test_unsupported_op_names_function_and_line():
    class Bad(torch.nn.Module):
        def forward(self, x):
            return torch.nonzero(x)  # BAD-LINE

    tm = tv.jit(Bad())
    with pytest.raises(tv.UnsupportedOp) as e:
        tm(torch.randn(3))
    msg = str(e.value)
    assert "nonzero" in msg and "depends on the values" in msg
    assert "test_jit.py:" in msg and "BAD-LINE" in msg


def test_indexing_records_and_a_bool_mask_suggests_alternatives():
    class Indexed(torch.nn.Module):
        def forward(self, x):
            return x[0] * 2 + x[1:, None, ::2].sum() + x[..., [-1]].sum() + x[-1, -1]

    x = torch.randn(5, 4, requires_grad=True)
    tm = tv.jit(Indexed())
    y = tm(x)
    torch.testing.assert_close(y, Indexed()(x))
    (g,) = torch.autograd.grad(y.sum(), x)
    (want,) = torch.autograd.grad(Indexed()(x).sum(), x)
    torch.testing.assert_close(g, want)

    class Gathered(torch.nn.Module):
        def forward(self, x, idx):
            return x[[0, 2]] * 2 + x[idx, 1:].sum()

    idx = torch.tensor([1, 1, 3])
    torch.testing.assert_close(tv.jit(Gathered())(x, idx), Gathered()(x, idx))
    (g,) = torch.autograd.grad(tv.jit(Gathered())(x, idx).sum(), x)
    (want,) = torch.autograd.grad(Gathered()(x, idx).sum(), x)
    torch.testing.assert_close(g, want)

    class Bad(torch.nn.Module):
        def forward(self, x):
            return x[x > 0]

    with pytest.raises(tv.UnsupportedOp) as e:
        tv.jit(Bad())(torch.randn(3, 2))
    assert "bool mask" in str(e.value) and "torch.where" in str(e.value)


def test_recording_leaves_tensor_indexing_as_it_was():
    original = torch.Tensor.__getitem__
    tv.jit(mlp(4, 8))(torch.randn(2, 4))
    with pytest.raises(tv.UnsupportedOp):
        tv.jit(_Indexing())(torch.randn(3, 2))
    assert torch.Tensor.__getitem__ is original  # nothing global stays patched after a call
    assert torch.arange(4)[1:3].tolist() == [1, 2]


def test_illegal_orders_are_refused_at_the_door_with_the_rule():
    with pytest.raises(tv.IllegalOrder) as e:
        tv.ddp(tv.fsdp(tv.jit(mlp(4, 8))))
    assert "one-parameter-distribution" in str(e.value) and "Fix:" in str(e.value)
    with pytest.raises(ValueError, match="unknown transform 'dpp'"):
        tv.jit(mlp(4, 8), transforms=["dpp"])
    assert tv.transform_names()[0] == "jit" and "fsdp" in tv.transform_names()


class _Indexing(torch.nn.Module):
    def forward(self, x):
        return x[x > 0]  # a bool mask: refused


def test_example_inputs_acquire_eagerly():
    tm = tv.jit(mlp(8, 16), example_inputs=(torch.randn(2, 8),))
    assert tv.cache_misses(tm) == 1
    assert tv.last_traces(tm)


def test_no_grad_call_has_no_backward_bridge():
    tm = tv.jit(mlp(8, 16))
    with torch.no_grad():
        out = tm(torch.randn(2, 8))
    assert out.grad_fn is None


def test_a_jitted_block_inside_a_model_jitted_again_is_part_of_the_outer_trace():
    """A block jitted on its own, then the model that holds it: the outer recording runs the block's
    module (its calls are in the outer trace), the block still runs alone, and the outer cache hits
    although the block's own counters change between calls."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    eager = copy.deepcopy(model)
    model[0] = tv.jit(model[0])
    tm = tv.jit(model)
    opt, opt_eager = torch.optim.SGD(tm.parameters(), lr=0.1), torch.optim.SGD(eager.parameters(), lr=0.1)
    for _ in range(4):
        x = torch.randn(3, 4)
        got, want = tm(x), eager(x)
        torch.testing.assert_close(got, want)
        got.square().sum().backward()
        want.square().sum().backward()
        for p, q in zip(tm.parameters(), eager.parameters()):
            torch.testing.assert_close(p.grad, q.grad)
        opt.step(), opt_eager.step(), opt.zero_grad(), opt_eager.zero_grad()
        with torch.no_grad():
            torch.testing.assert_close(model[0](x), eager[0](x))
    assert str(tv.last_traces(tm)[0]).count("ltorch.linear(") == 2
    assert tm.cache_hits == 3
