"""The indexing ops recorded natively by thunder_viz.jit (gather, take_along_dim, scatter_add, scatter,
index_select, index_add, index_put, topk, max/min along a dim, argmax/argmin) and F.interpolate (nearest
and linear modes), each against eager torch: outputs and gradients, and the op's ltorch symbol in the
trace instead of an ATen fallback."""
import os
import sys

import pytest
import torch

import thunder_viz as tv

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from harness import check_against_eager  # noqa: E402


class Indexing(torch.nn.Module):
    """A weight [5, 6] read and written through `op(m, weight, x)`, after a linear layer on x, so both
    get gradients through the op; the indices are buffers (`m.gather_at`, `m.rows_at`, `m.columns_at`,
    `m.mask`)."""

    def __init__(self, op):
        super().__init__()
        self.op = op
        self.weight = torch.nn.Parameter(torch.randn(5, 6))
        self.proj = torch.nn.Linear(6, 6)
        self.register_buffer("gather_at", torch.tensor([[0, 2, 1, 5, 3, 4], [5, 5, 0, 1, 2, 3], [1, 0, 4, 4, 2, 2]]))
        self.register_buffer("scatter_at", torch.tensor([[3, 1, 0, 2, 4, 1]]))
        self.register_buffer("rows_at", torch.tensor([4, 0, 2, 2]))
        self.register_buffer("columns_at", torch.tensor([5, 1, 1]))
        self.register_buffer("mask", torch.tensor([True, False, True, False, False]))

    def forward(self, x):
        return self.op(self, self.weight, self.proj(x))


def _checked(op, symbol, x):
    torch.manual_seed(0)
    tm = check_against_eager(Indexing(op), x)
    text = str(tv.last_traces(tm)[0])
    assert symbol in text, text
    assert "torch.ops.aten." not in text, text
    return tm


CASES = {
    "gather": ("ltorch.gather", lambda m, w, x: torch.gather(w[:3] * x, 1, m.gather_at)),
    "take_along_dim": ("ltorch.take_along_dim", lambda m, w, x: torch.take_along_dim(w[:3] + x, m.gather_at, dim=1)),
    "scatter_add": ("ltorch.scatter_add", lambda m, w, x: w.scatter_add(1, m.gather_at, x)),
    "scatter_add_": ("ltorch.scatter_add", lambda m, w, x: (w * 1.0).scatter_add_(0, m.scatter_at, x[:1])),
    "scatter": ("ltorch.scatter", lambda m, w, x: torch.scatter(w, 0, m.scatter_at, x[:1])),
    "scatter_value": ("ltorch.scatter", lambda m, w, x: torch.scatter(w * x[0], 1, m.gather_at, 0.25)),
    "index_select": ("ltorch.index_select", lambda m, w, x: torch.index_select(w, 0, m.rows_at) * x[0]),
    "index_select_dim1": ("ltorch.index_select", lambda m, w, x: w.index_select(1, m.columns_at) + x[:, :3].sum()),
    "index_add": ("ltorch.index_add", lambda m, w, x: w.index_add(0, m.rows_at[:3], x, alpha=0.5)),
    "index_put": ("ltorch.index_put", lambda m, w, x: torch.index_put(w, (m.rows_at[:3],), x)),
    "index_put_accumulate": ("ltorch.index_put", lambda m, w, x: w.index_put(
        (m.rows_at[:2, None], m.columns_at), x[:2, :3], accumulate=True)),
    "index_put_negative_": ("ltorch.index_put", lambda m, w, x: (w * 1.0).index_put_(
        (-m.columns_at,), x[:3] * 2, accumulate=True)),
    "index_add_": ("ltorch.index_add", lambda m, w, x: (w + 0.0).index_add_(1, m.columns_at, x[:, :5].t())),
    "topk": ("ltorch.topk", lambda m, w, x: torch.topk(w + x.sum(0), 3, dim=1).values),
    "topk_smallest": ("ltorch.topk", lambda m, w, x: (w * x.mean()).topk(2, dim=0, largest=False)[0]),
    "max_dim": ("ltorch.torch_max", lambda m, w, x: torch.max(w * x.sum(), dim=1).values),
    "min_dim_keepdim": ("ltorch.torch_min", lambda m, w, x: (w - x[0]).min(0, keepdim=True)[0]),
    "min_whole": ("ltorch.amin", lambda m, w, x: w * torch.min(w[:3] + x)),
    "amin": ("ltorch.amin", lambda m, w, x: (w[:3] - x).amin(dim=1, keepdim=True) * w[:3]),
    "argmax": ("ltorch.argmax", lambda m, w, x: w * x.argmax(dim=1).sum()),
    "argmin": ("ltorch.argmin", lambda m, w, x: w + (w + x.sum()).argmin()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_indexing_op_is_native_and_matches_eager(name):
    symbol, op = CASES[name]
    _checked(op, symbol, torch.randn(3, 6))


def test_max_returns_the_named_tuple_torch_returns():
    tm = tv.jit(Indexing(lambda m, w, x: torch.max(w + x.sum(), dim=1)))
    out = tm(torch.randn(3, 6))
    assert type(out).__name__ == "max" and out.indices.dtype == torch.int64
    assert torch.equal(out.values, out[0])


def test_max_of_two_tensors_and_of_a_whole_tensor():
    tm = _checked(lambda m, w, x: torch.max(w[:3], x) + w.max(), "ltorch.maximum", torch.randn(3, 6))
    assert "ltorch.amax" in str(tv.last_traces(tm)[0])


def test_index_put_with_a_mask_falls_back_to_aten():
    tm = check_against_eager(Indexing(lambda m, w, x: torch.index_put(w, (m.mask,), x[:2])), torch.randn(3, 6))
    assert "ltorch.index_put" not in str(tv.last_traces(tm)[0])


class Resampled(torch.nn.Module):
    """A per-channel scale, then F.interpolate with the given arguments."""

    def __init__(self, channels, **how):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.randn(channels))
        self.how = how

    def forward(self, x):
        shape = [1, -1] + [1] * (x.dim() - 2)
        return torch.nn.functional.interpolate(x * self.scale.reshape(shape), **self.how)


INTERPOLATIONS = {
    "nearest_size": ((2, 3, 5, 4), dict(size=(7, 9))),
    "nearest_scale_factor": ((2, 3, 5, 4), dict(scale_factor=1.5)),
    "nearest_1d_down": ((2, 3, 9), dict(size=4)),
    "bilinear_scale_factor": ((2, 3, 5, 4), dict(scale_factor=2, mode="bilinear")),
    "bilinear_size_align_corners": ((2, 3, 5, 4), dict(size=(8, 3), mode="bilinear", align_corners=True)),
    "linear_down": ((2, 3, 9), dict(scale_factor=0.6, mode="linear")),
    "linear_align_corners": ((2, 3, 6), dict(size=11, mode="linear", align_corners=True)),
    "trilinear": ((1, 2, 3, 4, 3), dict(scale_factor=(2, 1.5, 1), mode="trilinear")),
}


@pytest.mark.parametrize("name", sorted(INTERPOLATIONS))
def test_interpolate_is_native_and_matches_eager(name):
    shape, how = INTERPOLATIONS[name]
    torch.manual_seed(0)
    x = torch.randn(*shape, requires_grad=True)
    tm = check_against_eager(Resampled(shape[1], **how), x)
    text = str(tv.last_traces(tm)[0])
    assert "ltorch.interpolate" in text and "torch.ops.aten." not in text, text


def test_interpolate_modes_it_does_not_decompose_fall_back_to_aten():
    tm = check_against_eager(Resampled(3, scale_factor=2, mode="bicubic"), torch.randn(2, 3, 4, 4))
    assert "ltorch.interpolate" not in str(tv.last_traces(tm)[0])


def test_interpolate_without_grad_matches_eager():
    model = Resampled(3, scale_factor=1.5, mode="bilinear", align_corners=False)
    x = torch.randn(2, 3, 5, 4)
    with torch.no_grad():
        torch.testing.assert_close(tv.jit(model)(x), model(x))


def test_select_below_a_torch_function_is_a_slice_and_a_reshape():
    """aten.select (x.select(d, i), and torch 2's multi_head_attention_forward taking q, k, v from
    the packed projection) is recorded as indexing is, not as an ATen fallback."""
    class Selecting(torch.nn.Module):
        def forward(self, x):
            return x.select(1, -2) * 2 + torch.select(x, 0, 1).sum()

    x = torch.randn(3, 4, requires_grad=True)
    tm = tv.jit(Selecting())
    y = tm(x)
    (g,) = torch.autograd.grad(y.sum(), x)
    want_x = x.detach().clone().requires_grad_()
    want = Selecting()(want_x)
    want.sum().backward()
    torch.testing.assert_close(y, want)
    torch.testing.assert_close(g, want_x.grad)
    program = str(tv.last_traces(tm)[0])
    assert "torch.ops.aten" not in program and program.count("prims.slice") == 2, program
