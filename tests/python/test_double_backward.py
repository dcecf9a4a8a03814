"""Second-order gradients through a jitted module: a backward with create_graph=True (a physics-
informed loss on du/dx, WGAN-GP's gradient penalty, a Hessian-vector product) runs the forward again
with LibTorch's autograd recording and gives gradients that are differentiable in turn. Every number
is checked against eager autograd on an identical module; what cannot be done again (a forward that
writes into a buffer, a parameter changed since the forward) is refused, saying what to do."""
import pytest
import torch

import thunder_viz as tv

NODES = [False, True]
NODE_IDS = ["engine node", "python bridge"]


def twins(make):
    """An eager module and a jitted copy of the same weights."""
    torch.manual_seed(1)
    eager = make()
    torch.manual_seed(1)
    jitted = tv.jit(make())
    return eager, jitted


def compare(make, step, timed, atol=1e-6, rtol=1e-5):
    """Runs `step(module)` (a list of tensors) on both twins from one seed, then compares the results
    and every parameter's .grad."""
    eager, tm = twins(make)
    tm.timing = timed
    torch.manual_seed(2)
    want = step(eager)
    torch.manual_seed(2)
    got = step(tm)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=atol, rtol=rtol)
    for (name, p), q in zip(eager.named_parameters(), tm.parameters()):
        assert (p.grad is None) == (q.grad is None), name
        if p.grad is not None:
            torch.testing.assert_close(q.grad, p.grad, atol=atol, rtol=rtol, msg=name)


def pinn_mlp():
    return torch.nn.Sequential(torch.nn.Linear(1, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 1))


def pinn_step(model):
    """u'' + u = 0 and u'(x)^2 as losses: derivatives of the output in the input, trained."""
    x = torch.rand(12, 1, requires_grad=True)
    u = model(x)
    ux, = torch.autograd.grad(u.sum(), x, create_graph=True)
    uxx, = torch.autograd.grad(ux.sum(), x, create_graph=True)
    loss = (uxx + u).square().mean() + ux.square().mean()
    loss.backward()
    return [loss.detach(), ux.detach(), uxx.detach()]


def critic():
    # leaky_relu is an ATen fallback here: its gradient is LibTorch's, recomputed
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, 2, 1), torch.nn.LeakyReLU(0.2), torch.nn.Conv2d(4, 8, 3, 2, 1),
                               torch.nn.LayerNorm([8, 4, 4]), torch.nn.LeakyReLU(0.2), torch.nn.Flatten(),
                               torch.nn.Linear(128, 1))


def gradient_penalty_step(model):
    """WGAN-GP's critic loss: the penalty is the norm of the critic's gradient at interpolates."""
    real, fake = torch.randn(4, 3, 16, 16), torch.randn(4, 3, 16, 16)
    eps = torch.rand(4, 1, 1, 1)
    between = (eps * real + (1 - eps) * fake).requires_grad_(True)
    d = model(between)
    g, = torch.autograd.grad(d, between, grad_outputs=torch.ones_like(d), create_graph=True)
    penalty = ((g.flatten(1).norm(2, dim=1) - 1) ** 2).mean()
    loss = model(fake).mean() - model(real).mean() + 10 * penalty
    loss.backward()
    return [loss.detach(), penalty.detach(), g.detach()]


def smooth_mlp():
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.GELU(), torch.nn.Linear(8, 8), torch.nn.SiLU(),
                               torch.nn.Linear(8, 3), torch.nn.Softplus())


def hessian_vector_step(model):
    """H v for the parameters (the input needs no gradient)."""
    loss = model(torch.randn(5, 6)).square().mean()
    params = list(model.parameters())
    grads = torch.autograd.grad(loss, params, create_graph=True)
    vs = [torch.randn_like(p) for p in params]
    hv = torch.autograd.grad(sum((g * v).sum() for g, v in zip(grads, vs)), params)
    return [loss.detach(), *hv]


@pytest.mark.parametrize("timed", NODES, ids=NODE_IDS)
def test_a_physics_informed_loss_trains_as_eager(timed):
    compare(pinn_mlp, pinn_step, timed)


@pytest.mark.parametrize("timed", NODES, ids=NODE_IDS)
def test_a_gradient_penalty_trains_as_eager(timed):
    compare(critic, gradient_penalty_step, timed)


@pytest.mark.parametrize("timed", NODES, ids=NODE_IDS)
def test_a_hessian_vector_product_is_eagers(timed):
    compare(smooth_mlp, hessian_vector_step, timed)


def test_torch_autograd_functional_hessian_is_eagers():
    eager, tm = twins(smooth_mlp)
    x = torch.randn(2, 6)
    want = torch.autograd.functional.hessian(lambda v: eager(v).sum(), x)
    got = torch.autograd.functional.hessian(lambda v: tm(v).sum(), x)
    torch.testing.assert_close(got, want)


def test_a_first_order_backward_after_a_second_order_one_still_frees_as_it_goes():
    """The same entry serves both: a plain step after a penalty step gives eager's gradients."""
    eager, tm = twins(critic)
    for model in (eager, tm):
        torch.manual_seed(3)
        gradient_penalty_step(model)
        model.zero_grad()
        model(torch.randn(4, 3, 16, 16)).sum().backward()
    for p, q in zip(eager.parameters(), tm.parameters()):
        torch.testing.assert_close(q.grad, p.grad)


def test_a_forward_that_updates_running_statistics_is_refused_saying_why():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    tm = tv.jit(model)
    x = torch.randn(6, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"create_graph=True .*writes into a tensor .*model\.eval\(\)"):
        torch.autograd.grad(tm(x).sum(), x, create_graph=True)
    model.eval()  # the way out the message names: the same module, statistics read only
    want, = torch.autograd.grad(model(x).sum(), x, create_graph=True)
    got, = torch.autograd.grad(tm(x).sum(), x, create_graph=True)
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("timed", NODES, ids=NODE_IDS)
def test_a_parameter_stepped_between_forward_and_second_order_backward_is_refused(timed):
    torch.manual_seed(0)
    tm = tv.jit(pinn_mlp())
    tm.timing = timed
    x = torch.rand(4, 1, requires_grad=True)
    u = tm(x)
    with torch.no_grad():
        tm[0].weight.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        torch.autograd.grad(u.sum(), x, create_graph=True)


class Through(torch.nn.Module):
    """A linear layer, then `fn` of its output (an op the engine differentiates with LibTorch's
    autograd, by recomputing it: an ATen fallback)."""

    def __init__(self, fn):
        super().__init__()
        self.fn, self.linear = fn, torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fn(self.linear(x))


@pytest.mark.parametrize("fn", [lambda a: torch.stack([a, a.exp()]).sum(0),
                                lambda a: torch.addcmul(torch.ones_like(a), a, a),
                                lambda a: torch.lerp(a, a.exp(), 0.3),
                                lambda a: torch.nn.functional.cosine_similarity(a, a.exp())],
                         ids=["stack of a and exp(a)", "addcmul(1, a, a)", "lerp", "cosine_similarity"])
def test_a_fallback_whose_arguments_depend_on_each_other_counts_each_path_once(fn):
    eager, tm = twins(lambda: Through(fn))
    x = torch.randn(2, 4, requires_grad=True)
    want, = torch.autograd.grad(eager(x).sum(), x, create_graph=True)
    got, = torch.autograd.grad(tm(x).sum(), x, create_graph=True)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(torch.autograd.grad(got.square().sum(), x)[0],
                               torch.autograd.grad(want.square().sum(), x)[0])


def test_autograd_grad_through_a_fallback_leaves_parameter_grads_alone():
    """(PReLU's weight is an ATen fallback's argument: its recomputation must not write .grad)"""
    def make():
        return torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.PReLU(), torch.nn.Linear(5, 1))
    eager, tm = twins(make)
    x = torch.randn(4, 3, requires_grad=True)
    for model in (eager, tm):
        g, = torch.autograd.grad(model(x).sum(), x, create_graph=True)
        assert all(p.grad is None for p in model.parameters())
        g.square().sum().backward()
    for p, q in zip(eager.parameters(), tm.parameters()):
        torch.testing.assert_close(q.grad, p.grad)


class Reparameterised(torch.nn.Module):
    """A VAE's sampling: noise from torch's generator, not a seeded dropout mask."""

    def __init__(self):
        super().__init__()
        self.encode, self.decode = torch.nn.Linear(4, 4), torch.nn.Linear(2, 1)

    def forward(self, x):
        mu, log_var = self.encode(x).chunk(2, -1)
        return self.decode(mu + torch.randn_like(mu) * (0.5 * log_var).exp()).sum()


def test_the_forward_run_again_draws_what_the_forward_drew_and_leaves_the_generator_where_it_was():
    torch.manual_seed(1)
    tm = tv.jit(Reparameterised().double())
    x = torch.randn(2, 3, 4, dtype=torch.double, requires_grad=True)
    torch.manual_seed(5)
    y = tm(x)
    plain, = torch.autograd.grad(y, x, retain_graph=True)
    torch.manual_seed(6)
    recomputed, = torch.autograd.grad(y, x, create_graph=True)
    after = torch.rand(1)
    torch.manual_seed(6)
    torch.testing.assert_close(after, torch.rand(1))
    torch.testing.assert_close(recomputed, plain)


def test_a_buffer_changed_since_the_forward_is_refused():
    class Scaled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("s", torch.ones(4))

        def forward(self, x):
            return (x * self.s).tanh()

    tm = tv.jit(Scaled())
    x = torch.randn(4, requires_grad=True)
    y = tm(x)
    with torch.no_grad():
        tm.s.mul_(3)
    with pytest.raises(RuntimeError, match=r"buffers \(s\).*modified by an inplace operation"):
        torch.autograd.grad(y.sum(), x, create_graph=True)


def test_a_forward_that_writes_its_input_is_refused_naming_it():
    class Doubling(torch.nn.Module):
        def forward(self, x):
            x.mul_(2)
            return x.tanh()

    tm = tv.jit(Doubling())
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="writes into its input `x`"):
        torch.autograd.grad(tm(x.clone()).sum(), x, create_graph=True)


@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_cross_entropy_inside_the_model_differentiates_twice(ignore_index):
    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 4)

        def forward(self, x, target):
            return torch.nn.functional.cross_entropy(self.linear(x), target, ignore_index=ignore_index)

    eager, tm = twins(Classifier)
    x, target = torch.randn(3, 4, requires_grad=True), torch.tensor([0, 1, 3])
    results = []
    for model in (eager, tm):
        g, = torch.autograd.grad(model(x, target), x, create_graph=True)
        results.append((g, torch.autograd.grad(g.square().sum(), x)[0]))
    for got, want in zip(*results[::-1]):
        torch.testing.assert_close(got, want)


def test_a_vectorized_jacobian_runs_the_backward_on_batched_cotangents():
    eager, tm = twins(smooth_mlp)
    x = torch.randn(2, 6)
    want = torch.autograd.functional.jacobian(eager, x, vectorize=True)
    got = torch.autograd.functional.jacobian(tm, x, vectorize=True)
    torch.testing.assert_close(got, want)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("timed", NODES, ids=NODE_IDS)
def test_a_gradient_penalty_on_the_gpu_is_eagers(timed):
    """On CUDA the engine's forward runs generated kernels and direct cuBLASLt products; the forward
    run again for create_graph takes ATen's, which autograd records."""
    def gpu_critic():
        return torch.nn.Sequential(torch.nn.Linear(48, 64), torch.nn.GELU(), torch.nn.LayerNorm(64),
                                   torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1)).cuda()

    def step(model):
        real, fake = torch.randn(8, 48, device="cuda"), torch.randn(8, 48, device="cuda")
        between = (0.3 * real + 0.7 * fake).requires_grad_(True)
        d = model(between)
        g, = torch.autograd.grad(d, between, grad_outputs=torch.ones_like(d), create_graph=True)
        penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
        (model(fake).mean() - model(real).mean() + 10 * penalty).backward()
        return [penalty.detach(), g.detach()]
    compare(gpu_critic, step, timed, atol=1e-5, rtol=1e-4)
