import copy

import pytest
import torch

import thunder_viz as tv


def seed_model():
    torch.manual_seed(0)
    return torch.nn.Linear(5, 10, bias=False)


def test_ddp_both_orders_give_equal_traces_on_one_rank():
    m = seed_model()
    x = torch.randn(2, 5)
    a = tv.ddp(tv.jit(m))
    b = tv.jit(tv.ddp(m))
    assert a.order == ["jit", "ddp"] and b.order == ["ddp", "jit"]
    a(x).sum().backward()
    ta = tv.last_backward_traces(a)[-1]
    b(x).sum().backward()
    tb = tv.last_backward_traces(b)[-1]
    assert ta.canonically_equal(tb)
    assert "all_reduce" in str(ta)


def test_thunder_2024_03_fails_ddp_after_jit_the_seed_way():
    m = seed_model()
    tm = tv.ddp(tv.jit(m, semantics="thunder-2024-03"))
    with pytest.raises(ValueError, match="None had an unexpected type <class 'NoneType'>"):
        tm(torch.randn(2, 5))
    fsdp = tv.fsdp(tv.jit(seed_model(), semantics="thunder-2024-03"))
    fsdp(torch.randn(2, 5)).sum().backward()


def test_thunder_2026_01_refuses_ddp_before_jit():
    with pytest.raises(tv.IllegalOrder, match=r"TypeError: Thunder DDP only works on ThunderModule, got "
                                              r"<class 'torch.nn.modules.linear.Linear'>"):
        tv.jit(tv.ddp(seed_model()), semantics="thunder-2026-01")
    with pytest.raises(ValueError, match="unknown semantics 'thunder-2023'"):
        tv.jit(seed_model(), semantics="thunder-2023")


def test_ddp_on_two_cpu_ranks_averages_gradients():
    base = seed_model()
    xs = [torch.randn(2, 5) for _ in range(2)]
    eager = []
    for x in xs:
        r = copy.deepcopy(base)
        r(x).sum().backward()
        eager.append(r.weight.grad)
    mean = (eager[0] + eager[1]) / 2

    def rank_fn(rank):
        m = copy.deepcopy(base)
        tm = tv.ddp(tv.jit(m))
        tm(xs[rank]).sum().backward()
        return m.weight.grad.clone(), str(tv.last_backward_traces(tm)[-1])

    results = tv.run_world(2, rank_fn)
    for g, text in results:
        assert torch.allclose(g, mean, rtol=1e-5, atol=1e-6)
        assert "all_reduce" in text


class ScaledMlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.GELU(), torch.nn.Linear(7, 1))
        self.scale = torch.nn.Parameter(torch.tensor(1.5))

    def forward(self, x):
        return self.body(x) * self.scale


@pytest.mark.parametrize("order", ["jit,fsdp", "fsdp,jit"])
def test_fsdp_on_two_cpu_ranks_trains_as_eager_on_the_mean_gradient(order):
    # each rank keeps whole parameters, which its optimizer steps; the engine takes its shard from them
    # at every call, and the gradient comes back whole: the mean of the ranks' eager gradients
    torch.manual_seed(0)
    base = ScaledMlp()  # (odd rows, a row that is the whole parameter, a 0-d parameter)
    batches = [[torch.randn(2, 5) for _ in range(2)] for _ in range(3)]
    ref = copy.deepcopy(base)
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=0.1)
    want = []
    for xs in batches:
        outs, grads = [], []
        for x in xs:
            r = copy.deepcopy(ref)
            y = r(x)
            y.sum().backward()
            outs.append(y.detach())
            grads.append([p.grad for p in r.parameters()])
        for p, *gs in zip(ref.parameters(), *grads):
            p.grad = sum(gs) / len(gs)
        want.append((outs, [p.grad.clone() for p in ref.parameters()]))
        ref_opt.step()

    def rank_fn(rank):
        m = copy.deepcopy(base)
        tm = tv.fsdp(tv.jit(m)) if order == "jit,fsdp" else tv.jit(tv.fsdp(m))
        opt = torch.optim.AdamW(tm.parameters(), lr=0.1)
        got = []
        for xs in batches:
            opt.zero_grad()
            y = tm(xs[rank])
            y.sum().backward()
            got.append((y.detach(), [p.grad.clone() for p in m.parameters()]))
            opt.step()
        return got, [p.detach().clone() for p in m.parameters()], str(tv.last_backward_traces(tm)[-1])

    for rank, (got, params, text) in enumerate(tv.run_world(2, rank_fn)):
        assert "reduce_scatter" in text
        for step, ((y, grads), (outs, mean)) in enumerate(zip(got, want)):
            torch.testing.assert_close(y, outs[rank], msg=f"rank {rank} step {step}")
            for g, m in zip(grads, mean):
                torch.testing.assert_close(g, m, msg=f"rank {rank} step {step}")
        for p, q in zip(params, ref.parameters()):
            torch.testing.assert_close(p, q.detach())


def test_inspector_checks_outputs_on_every_rank_and_skips_ddp_gradients():
    base = seed_model()
    xs = [torch.randn(2, 5) for _ in range(2)]

    def rank_fn(rank):
        m = copy.deepcopy(base)
        tm = tv.ddp(tv.jit(m))
        insp = tv.attach(tm)
        tm(xs[rank]).sum().backward()
        c = insp.last.checks
        return c["rank"], [(o.name, o.passed) for o in c["outputs"]], c["gradients_checked"]

    # Outputs are local (checked on each rank); gradients are the mean over ranks (not checked).
    assert tv.run_world(2, rank_fn) == [(0, [("output[0]", True)], False), (1, [("output[0]", True)], False)]
