"""var/std, cumsum, roll, repeat, addmm/baddbmm, einsum and F.normalize as users call them, through
thunder_viz.jit against eager torch (outputs, every gradient, SGD steps), each recorded as the
engine's own op rather than as ATen fallbacks."""
import os
import sys

import pytest
import torch

import thunder_viz as tv

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "models"))
from harness import check_against_eager  # noqa: E402


def program_of(tm):
    return str(tv.last_traces(tm)[0])


def fallbacks(program):
    return [line.strip() for line in program.splitlines() if "torch.ops.aten." in line and not line.lstrip().startswith("#")]


class Statistics(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 6)

    def forward(self, x):
        h = self.lin(x)
        whitened = (h - h.mean(1, keepdim=True)) / (h.var(1, keepdim=True) + 1e-5).sqrt()
        spread = torch.std(h, dim=0, unbiased=False) + h.std() + torch.var(h, 1, True, True).sum() + h.var(0, correction=0)
        return whitened * spread + h.cumsum(dim=1) + torch.cumsum(h.exp(), 0)


class Shifts(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)  # [3, 5, 4]
        return (torch.roll(h, shifts=1, dims=1) + h.roll((2, -1), (0, 2)) + torch.roll(h, 7)
                + h.repeat(1, 1, 2)[..., :4] + h[:1].repeat(3, 1, 1) + h.repeat(2, 1, 1, 1).sum(0))


class Products(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(5, 4))
        self.bias = torch.nn.Parameter(torch.randn(4))
        self.q = torch.nn.Linear(4, 8)
        self.k = torch.nn.Linear(4, 8)

    def forward(self, x):  # x: [2, 3, 5]
        flat = torch.addmm(self.bias, x.reshape(6, 5), self.w, beta=0.5, alpha=2.0).reshape(2, 3, 4)
        batched = torch.baddbmm(flat, x, self.w.expand(2, 5, 4)) + flat[0].addmm(x[0], self.w).sum()
        q, k = self.q(batched), self.k(batched)
        scores = torch.einsum("bqd,bkd->bqk", q, k) / 8 ** 0.5
        mixed = torch.einsum("bqk,bkd->bqd", scores.softmax(-1), batched)
        return mixed + torch.einsum("...i,ij->...j", [x, self.w]) + torch.einsum("bij->b", scores)[:, None, None]


class Normalized(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 6)

    def forward(self, x):
        h = self.lin(x)
        zero_row = h * (torch.arange(4) > 0).unsqueeze(1)  # a row of zeros: its gradient is zero, not NaN
        return (torch.nn.functional.normalize(h) + torch.nn.functional.normalize(h, p=1.0, dim=0)
                + torch.nn.functional.normalize(h, p=3) + torch.nn.functional.normalize(h, p=float("inf"))
                + torch.nn.functional.normalize(zero_row, dim=1))


@pytest.mark.parametrize("model, inputs, ops", [
    (Statistics, [(4, 6)], ["ltorch.var", "ltorch.std", "ltorch.cumsum"]),
    (Shifts, [(3, 5, 4)], ["ltorch.roll", "ltorch.repeat"]),
    (Products, [(2, 3, 5)], ["ltorch.addmm", "ltorch.baddbmm", "ltorch.einsum"]),
    (Normalized, [(4, 6)], ["ltorch.normalize"]),
])
def test_recorded_natively_and_equal_to_eager(model, inputs, ops, tmp_path):
    torch.manual_seed(0)
    tm = check_against_eager(model(), *[torch.randn(s) for s in inputs], steps=2, tmp_path=tmp_path)
    program = program_of(tm)
    for op in ops:
        assert op + "(" in program, f"{op} is not in the recorded program:\n{program}"
    assert not fallbacks(program), fallbacks(program)


def test_a_zero_row_through_normalize_has_eager_gradients_not_nan():
    """A zero row is divided by eps: its gradient is 1 / eps, as eager's, not 0 * inf."""
    x = torch.zeros(2, 3)
    x[1] = torch.randn(3)

    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.normalize(x, dim=1) + torch.nn.functional.normalize(x, p=3.0, dim=1)

    grads = []
    for module in (tv.jit(Model()), Model()):
        leaf = x.clone().requires_grad_()
        module(leaf).sum().backward()
        grads.append(leaf.grad)
    assert torch.isfinite(grads[0]).all()
    torch.testing.assert_close(grads[0], grads[1])


def test_what_the_decompositions_do_not_take_runs_as_fallbacks_with_eager_numbers():
    """A diagonal in einsum has no native rule: it is recorded as ATen operators."""

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        def forward(self, x):
            return torch.einsum("ii->i", self.lin(x))

    torch.manual_seed(0)
    tm = check_against_eager(Model(), torch.randn(3, 3))
    assert fallbacks(program_of(tm))
