"""The model suite's one check: a model nobody here wrote, through thunder_viz.jit, against eager
torch on a copy of it: outputs, every parameter's gradient and every buffer after a few optimizer
steps, then the traces saved as a capture that loads back. Randomness (dropout, stochastic depth) is
turned off first, since the engine's masks are not eager's."""
import copy
import os

import torch

import thunder_viz as tv


def broken_float32_convolution_backward():
    """Why eager torch's own float32 CPU convolution input gradient cannot be a reference here (it
    differs from the float64 one: Debian 13's torch 2.6.0, through oneDNN), or None. The engine runs
    ATen's same kernel, so models with convolutions are not compared on such a LibTorch."""
    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(2, 3, 8, 8, generator=gen), torch.randn(4, 3, 3, 3, generator=gen)
    g = torch.randn(2, 4, 8, 8, generator=gen)
    grads = []
    for dtype in (torch.float32, torch.float64):
        xr = x.to(dtype).detach().requires_grad_()
        torch.nn.functional.conv2d(xr, w.to(dtype), padding=1).backward(g.to(dtype))
        grads.append(xr.grad.double())
    err = (grads[0] - grads[1]).abs().max().item()
    if err <= 1e-4 * max(1.0, grads[1].abs().max().item()):
        return None
    return (f"this LibTorch ({torch.__version__}) computes float32 convolution input gradients on the CPU "
            f"{err:.3g} away from float64 ones, in eager torch itself")


def without_randomness(model):
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout) or type(m).__name__ == "StochasticDepth":
            m.p = 0.0
        if hasattr(m, "dropout") and isinstance(m.dropout, float):
            m.dropout = 0.0
    return model


def _leaves(out):
    import torch.utils._pytree as pytree
    return [t for t in pytree.tree_flatten(out)[0] if isinstance(t, torch.Tensor) and t.is_floating_point()]


def _objective(out, weights):
    return sum((t * w).sum() for t, w in zip(_leaves(out), weights))


def check_against_eager(model, *inputs, steps=2, tmp_path=None, atol=1e-5, rtol=1e-4, drift=1e-4, **keywords):
    """Returns the jitted module after `steps` SGD steps that followed eager's. After the first step
    outputs and gradients are compared at `drift` (relative to the largest value): float32 rounding of
    the previous steps' gradients, amplified by a deep network's normalisations, moves them apart, as
    much in eager torch against itself in float64 (efficientnet_b0 here: 3e-3 of the largest gradient
    at the second step)."""
    torch.manual_seed(0)
    model = without_randomness(model)
    eager = copy.deepcopy(model)
    tm = tv.jit(model)
    inspector = tv.attach(tm, check=False) if tmp_path is not None else None
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    opt_eager = torch.optim.SGD(eager.parameters(), lr=1e-3)
    weights = None
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        opt_eager.zero_grad(set_to_none=True)
        out, want = tm(*inputs, **keywords), eager(*inputs, **keywords)
        if weights is None:  # a fixed random projection of every output: no gradient is trivially zero
            weights = [torch.randn_like(t) for t in _leaves(want)]
        for got_t, want_t in zip(_leaves(out), _leaves(want)):
            tol = atol if step == 0 else drift * max(1.0, want_t.abs().max().item())
            torch.testing.assert_close(got_t, want_t, atol=tol, rtol=rtol if step == 0 else drift,
                                       msg=lambda m: f"output at step {step}: {m}")
        _objective(out, weights).backward()
        _objective(want, weights).backward()
        # Gradients near zero (a norm's bias before another norm) carry float32 noise of the size of
        # the model's largest gradients, in eager torch as here: the tolerance is scaled by those.
        scale = max([q.grad.abs().max().item() for q in eager.parameters() if q.grad is not None] + [1.0])
        for (name, p), q in zip(model.named_parameters(), eager.parameters()):
            assert (p.grad is None) == (q.grad is None), f"{name}: gradient {'missing' if p.grad is None else 'unexpected'}"
            if q.grad is not None:
                torch.testing.assert_close(p.grad, q.grad, atol=(atol if step == 0 else drift) * scale,
                                           rtol=rtol if step == 0 else drift, msg=lambda m: f"grad of {name} at step {step}: {m}")
        opt.step()
        opt_eager.step()
    for (name, b), c in zip(model.named_buffers(), eager.buffers()):  # (after the last step: drift as well)
        tol = atol if steps == 1 or not c.is_floating_point() else drift * max(1.0, c.abs().max().item())
        torch.testing.assert_close(b, c, atol=tol, rtol=rtol if steps == 1 else drift, msg=lambda m: f"buffer {name}: {m}")
    if inspector is not None:
        path = os.path.join(str(tmp_path), "traces.tvz.json")
        inspector.save(path)
        assert tv.load(path) is not None
    return tm
