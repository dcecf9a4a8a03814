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


def test_fsdp_on_two_cpu_ranks_gives_each_rank_its_shard():
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.GELU(), torch.nn.Linear(7, 3))
    xs = [torch.randn(2, 5) for _ in range(2)]
    refs = [copy.deepcopy(base) for _ in range(2)]
    for r, x in zip(refs, xs):
        r(x).sum().backward()

    def rank_fn(rank):
        m = copy.deepcopy(base)
        tm = tv.jit(tv.fsdp(m))
        out = tm(xs[rank])
        out.sum().backward()
        return out.detach(), {n: p.grad.clone() for n, p in m.named_parameters()}

    results = tv.run_world(2, rank_fn)
    for rank, (out, grads) in enumerate(results):
        assert torch.allclose(out, refs[rank](xs[rank]).detach(), rtol=1e-5, atol=1e-6)
        for n, p in base.named_parameters():
            mean = (dict(refs[0].named_parameters())[n].grad + dict(refs[1].named_parameters())[n].grad) / 2
            rows = -(-p.shape[0] // 2)  # the shard of dim 0 (padded) this rank owns
            lo, hi = rank * rows, min((rank + 1) * rows, p.shape[0])
            assert torch.allclose(grads[n][lo:hi], mean[lo:hi], rtol=1e-5, atol=1e-6), n


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
