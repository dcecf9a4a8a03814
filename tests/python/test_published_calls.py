"""torch calls as published code makes them, each through thunder_viz.jit against eager torch
(outputs, parameter gradients and a few SGD steps, by the model suite's check): tensors passed by
keyword, a method whose arguments come in another order than the function of its name, an int where
the operator takes a list of ints, an operator whose meta kernel fails, a plain tensor attribute or a
global tensor that changes (a trace input, its gradient included), settings that change wherever
the forward reads them (a global number, a list, private or class attribute, a config object or
module, a dict, a swapped submodule, the default dtype), a draw from Python's random (every call
recorded anew), an output that is NaN in eager too; and refusals made inside torch.nn, which name
the library's line as well as the user's."""
import collections
import copy
import dataclasses
import enum
import os
import random
import sys
import types
import typing

import pytest
import torch
import torch.fx

import thunder_viz as tv

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from harness import check_against_eager  # noqa: E402


class After(torch.nn.Module):
    """A linear layer, then `f(y, self)`."""

    def __init__(self, f):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.other = torch.nn.Linear(4, 4)
        self.low = torch.nn.Parameter(torch.full((4,), -0.2))
        self.f = f

    def forward(self, x):
        return self.f(self.lin(x), self)


CALLS = {
    # keyword tensors: the engine differentiates an ATen operator's positional arguments
    "clamp(min=parameter)": lambda y, m: y.clamp(min=m.low),
    "atan2(other=tensor)": lambda y, m: torch.atan2(y, other=m.other(y)),
    "lerp(weight=tensor)": lambda y, m: torch.lerp(y, m.other(y), weight=torch.sigmoid(y)),
    # Tensor.where(cond, other) is torch.where(cond, self, other)
    "Tensor.where, float": lambda y, m: y.where(y > 0, -y),
    "Tensor.where, bool": lambda y, m: y * (y > 0).where(y < 0.5, torch.ones_like(y, dtype=torch.bool)),
    # an int for `int[1]?`
    "var_mean(dim=1), std_mean(0)": lambda y, m: torch.var_mean(y, dim=1)[0].sum() + torch.std_mean(y, 0)[1],
    "nansum(dim=1)": lambda y, m: torch.nansum(y, dim=1),
    "vector_norm(ord 3, dim 1)": lambda y, m: torch.linalg.vector_norm(y, 3, 1),
    # an int count of repeats gives a fixed shape (a tensor of counts does not: refused)
    "repeat_interleave(2, dim=0)": lambda y, m: y.repeat_interleave(2, dim=0) * 2,
    # a detached target: LibTorch's autograd refuses a grad for it, which the trace still asks for
    "soft_margin_loss(y, sign(z.detach()))": lambda y, m: torch.nn.functional.soft_margin_loss(y, torch.sign(m.other(y).detach())),
    # a conversion takes TensorOptions too (_to_copy), yet is no factory: its output requires grad
    "log_softmax(dtype=float64)": lambda y, m: torch.nn.functional.log_softmax(y, -1, dtype=torch.float64).float(),
    # an output that does not require grad whatever its inputs: rrelu's noise (empty_like)
    "rrelu(training=False)": lambda y, m: torch.nn.functional.rrelu(y, training=False),
    # arguments by the names the native rules do not take: recorded as the ATen operators they run
    "flip(dims=...)": lambda y, m: torch.flip(y, dims=[0, 1]) + y.flip(dims=[1]),
    "permute(dims=...), transpose(dim0=, dim1=)": lambda y, m: torch.permute(y, dims=(1, 0)) + torch.transpose(y, dim0=0, dim1=1),
    "where(condition=, input=, other=), matmul(input=, other=)": lambda y, m: torch.where(condition=y > 0, input=y, other=-y) @ torch.matmul(input=y.t(), other=y),
    # torch's Python meta kernel of _cdist_forward cannot take compute_mode=None: run on the CPU instead
    "cdist": lambda y, m: torch.cdist(y, m.other(y)),
    # an in-place call with an argument its native rule does not take: recorded as the ATen operators it ran
    "div_(rounding_mode='floor')": lambda y, m: y + (y * 10).div_(3, rounding_mode="floor"),
    # one sample: input [C], target a 0-d class index
    "nll_loss of one unbatched sample": lambda y, m: torch.nn.functional.nll_loss(y[0].log_softmax(-1), torch.tensor(2)),
    # F.embedding counts a negative padding_idx from the last row (nn.Embedding turns it positive itself)
    "embedding(padding_idx=-1)": lambda y, m: y + torch.nn.functional.embedding(torch.tensor([0, 3, 3]), m.other.weight, padding_idx=-1),
    # an accumulator that starts as torch.tensor([]): cat skips it
    "cat onto torch.tensor([])": lambda y, m: torch.cat([torch.cat([torch.tensor([]), y]), y]),
    # a bool mask picked by positions (gpt-fast's causal_mask[None, None, input_pos]): a fixed shape
    "bool mask indexed by a long tensor": lambda y, m: y.masked_fill(~torch.ones(4, 4, dtype=torch.bool).tril()[torch.tensor([0, 2, 3])], 0.0),
    "embedding(scale_grad_by_freq=True)": lambda y, m: y + torch.nn.functional.embedding(torch.tensor([0, 3, 3]), m.other.weight, scale_grad_by_freq=True),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_published_call_follows_eager(name):
    torch.manual_seed(0)
    check_against_eager(After(CALLS[name]), torch.randn(3, 4))


class TensorAttributes(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.temperature = torch.tensor(2.0)  # neither a parameter nor a buffer
        self.columns = torch.tensor([0, 2])

    def forward(self, x):
        return (self.lin(x) / self.temperature).index_select(1, self.columns)


def test_a_plain_tensor_attribute_that_changes_is_read_again():
    torch.manual_seed(0)
    model, x = TensorAttributes(), torch.randn(3, 4)
    tm = tv.jit(model)
    for change in (lambda: None, lambda: setattr(model, "temperature", torch.tensor(5.0)),
                   lambda: model.temperature.fill_(3.0), lambda: setattr(model, "columns", torch.tensor([1, 3]))):
        change()
        for _ in range(2):  # the call that sees the change, then a steady one
            torch.testing.assert_close(tm(x), model(x))


SHIFT = torch.tensor([0.5, -1.0, 2.0, 0.25])  # a global the forward reads
SCALE = torch.tensor(1.5, requires_grad=True)  # a global leaf that learns beside the parameters
GAINS = {"out": torch.tensor([1.0, 2.0, 3.0, 4.0])}  # a global dict's tensor


class ReadsGlobals(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        # torchvision's normalisation as often written: plain attributes, not buffers
        self.mean = torch.tensor([0.485, 0.456, 0.406, 0.5])
        self.std = torch.tensor([0.229, 0.224, 0.225, 0.25])

    def forward(self, x):
        y = self.lin((x - self.mean) / self.std) + SHIFT
        return y * SCALE * GAINS["out"] + torch.tensor([1.5, -0.5, 0.0, 3.0])  # a constant made in forward


def test_globals_and_float_tensor_attributes_are_inputs_read_at_every_call():
    global SHIFT
    torch.manual_seed(0)
    model, x = ReadsGlobals(), torch.randn(3, 4)
    tm = tv.jit(model)
    changes = (lambda: None, lambda: SHIFT.mul_(3.0), lambda: model.std.fill_(0.5),
               lambda: globals().__setitem__("SHIFT", torch.tensor([1.0, 2.0, 3.0, 4.0])),
               lambda: setattr(model, "mean", torch.zeros(4)), lambda: GAINS["out"].mul_(2),
               lambda: GAINS.__setitem__("out", torch.ones(4)))
    try:
        for change in changes:
            change()
            for _ in range(2):  # the call that sees the change, then a steady one
                SCALE.grad = None
                got = tm(x)
                got.sum().backward()
                got_grad = SCALE.grad
                SCALE.grad = None
                want = model(x)
                want.sum().backward()
                torch.testing.assert_close(got, want)
                torch.testing.assert_close(got_grad, SCALE.grad)
        assert tm.cache_misses == 1  # a tensor replaced in its place by one of its metadata is read from there
        text = str(tv.last_traces(tm)[-1])
        for name in ("mean", "std", "SHIFT", "SCALE"):
            assert name in text, f"{name} is no input of the trace:\n{text}"
    finally:
        SHIFT = torch.tensor([0.5, -1.0, 2.0, 0.25])


STEPS = torch.zeros(())


def test_counters_a_forward_updates_in_place_count_every_call():
    class Counts(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.calls = torch.zeros(())  # a plain attribute, as a counter often is

        def forward(self, x):
            STEPS.add_(1.0)
            self.calls += 1
            return self.lin(x) * STEPS + self.calls

    torch.manual_seed(0)
    model, x = Counts(), torch.randn(2, 4)
    tm = tv.jit(model)
    got = [tm(x) for _ in range(3)]
    assert STEPS.item() == 3.0 and model.calls.item() == 3.0
    STEPS.zero_()
    model.calls.zero_()
    for g in got:
        torch.testing.assert_close(g, model(x))


TEMPERATURE = 2.0  # a global number the forward divides by (an annealed temperature)
WARMUP = 1.0  # one a helper reads


def _warmup_factor():
    return WARMUP * 2  # no torch call: no frame of it is on the stack when torch is called


def test_a_global_number_that_changes_is_a_new_recording():
    global TEMPERATURE, WARMUP

    class Tempered(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return torch.softmax(self.lin(x) / TEMPERATURE, -1) * _warmup_factor()

    torch.manual_seed(0)
    model, x = Tempered(), torch.randn(2, 4)
    tm = tv.jit(model)
    try:
        for value, warmup in ((2.0, 1.0), (0.5, 1.0), (0.5, 1.0), (1, 1.0), (1, 3.0)):
            TEMPERATURE, WARMUP = value, warmup
            for _ in range(2):  # the call that sees the change, then a steady one
                torch.testing.assert_close(tm(x), model(x))
        assert tm.cache_misses == 4  # 2.0, 0.5, then 1 (an int: another type, another constant), then WARMUP
    finally:
        TEMPERATURE, WARMUP = 2.0, 1.0


def test_list_and_private_attributes_and_the_default_dtype_that_change_are_new_recordings():
    class Sums(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.dims = [0]  # what the forward reduces over, kept as a list
            self._offset = 0.0  # a private number

        def forward(self, x):
            return self.lin(x).sum(self.dims) + torch.zeros(()) + self._offset  # the zeros take the default dtype

    torch.manual_seed(0)
    model, x = Sums(), torch.randn(2, 4)
    tm = tv.jit(model)
    changes = (lambda: None, lambda: setattr(model, "dims", [1]), lambda: model.dims.append(0),
               lambda: setattr(model, "_offset", 1.5), lambda: torch.set_default_dtype(torch.float64))
    try:
        for change in changes:
            change()
            for _ in range(2):  # the call that sees the change, then a steady one
                got, want = tm(x), model(x)
                assert got.dtype == want.dtype
                torch.testing.assert_close(got, want)
        # the prologue states the default dtype its entry was made under
        assert "check_literal_like(cache_info_default_dtype, torch.float64)" in str(tv.last_prologue_traces(tm)[-1])
    finally:
        torch.set_default_dtype(torch.float32)
    assert tm.cache_misses == 5


def test_layerdrop_drawn_from_pythons_random_decides_at_every_call_as_in_eager():
    class LayerDrop(torch.nn.Module):  # as Hugging Face's encoders were written: random.uniform(0, 1)
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(4)])
            self.layerdrop = 0.5

        def forward(self, x):
            for layer in self.layers:
                if self.training and random.uniform(0, 1) < self.layerdrop:
                    continue
                x = torch.tanh(layer(x))
            return x

    torch.manual_seed(0)
    model, x = LayerDrop(), torch.randn(2, 4)
    tm = tv.jit(model)
    random.seed(0)
    with pytest.warns(UserWarning, match="random.uniform at .*every call records the forward anew"):
        got = [tm(x) for _ in range(6)]
    random.seed(0)
    for g in got:
        torch.testing.assert_close(g, model(x))
    assert tm.cache_misses == 6


class Mode(enum.Enum):
    SUM = "sum"
    MEAN = "mean"


SETTINGS = types.ModuleType("settings")  # a config module the forward reads as settings.SHIFT
SETTINGS.SHIFT = 0.0
WEIGHTS = {"bias": 0.0}  # a global dict the forward reads


class Configured(torch.nn.Module):
    """Settings kept every way published code keeps them."""
    GAIN = 1.0  # a class attribute

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.act = torch.nn.ReLU()
        self.head = torch.nn.Linear(4, 3)
        self.config = types.SimpleNamespace(eps=0.0, scale=1)
        self.opts = {"power": 1}
        self.squash = torch.tanh
        self.mode = Mode.SUM
        self.offset = 0.0

    def forward(self, x):
        y = self.act(self.lin(x)) * self.GAIN * self.config.scale + self.config.eps + SETTINGS.SHIFT + WEIGHTS["bias"]
        y = self.head(self.squash(y) ** self.opts["power"]) + self.offset
        if self.config.scale is True:  # 1 and True are one key to a dict, two constants here
            y = y * 3
        return y.sum(-1) if self.mode is Mode.SUM else y.mean(-1)


def test_settings_kept_anywhere_the_forward_reads_them_are_new_recordings_when_changed():
    torch.manual_seed(0)
    model, x = Configured(), torch.randn(2, 4)
    tm = tv.jit(model)
    changes = {
        "none": lambda: None,
        "activation swapped": lambda: setattr(model, "act", torch.nn.GELU()),
        "head replaced": lambda: setattr(model, "head", torch.nn.Linear(4, 3)),
        "settings object": lambda: setattr(model.config, "eps", 0.5),
        "int to bool": lambda: setattr(model.config, "scale", True),
        "dict attribute": lambda: model.opts.__setitem__("power", 2),
        "class attribute": lambda: setattr(Configured, "GAIN", 2.0),
        "function attribute": lambda: setattr(model, "squash", torch.sigmoid),
        "enum": lambda: setattr(model, "mode", Mode.MEAN),
        "negative zero": lambda: setattr(model, "offset", -0.0),
        "config module": lambda: setattr(SETTINGS, "SHIFT", 0.25),
        "global dict": lambda: WEIGHTS.__setitem__("bias", -1.0),
    }
    try:
        for name, change in changes.items():
            change()
            for _ in range(2):  # the call that sees the change, then a steady one
                for p in model.parameters():
                    p.grad = None
                got = tm(x)
                got.sum().backward()
                got_grads = [p.grad for p in model.parameters()]
                for p in model.parameters():
                    p.grad = None
                want = model(x)
                want.sum().backward()
                torch.testing.assert_close(got, want, msg=lambda m: f"after '{name}': {m}")
                for g, p in zip(got_grads, model.parameters()):
                    torch.testing.assert_close(g, p.grad, msg=lambda m: f"gradient after '{name}': {m}")
        assert tm.cache_misses == len(changes)  # each change is a new recording, -0.0 after 0.0 included
    finally:
        Configured.GAIN, SETTINGS.SHIFT, WEIGHTS["bias"] = 1.0, 0.0, 0.0


def test_shapes_read_from_values_are_refused_naming_the_way_out():
    class Trimmed(torch.nn.Module):  # ASR and TTS code trims padding so
        def forward(self, x, lengths):
            return x[:, :lengths.max()].sum(-1)

    class OneHot(torch.nn.Module):
        def forward(self, y):
            return torch.nn.functional.one_hot(y).float().mean(0)

    with pytest.raises(tv.UnsupportedOp, match="slice bound given as a tensor.*pass the bound as a Python int"):
        tv.jit(Trimmed())(torch.randn(2, 5), torch.tensor([3, 2]))
    with pytest.raises(tv.UnsupportedOp, match="one_hot without num_classes.*num_classes=C"):
        tv.jit(OneHot())(torch.tensor([0, 2, 1]))

    class OneHotOf(torch.nn.Module):
        def forward(self, y):
            return torch.nn.functional.one_hot(y, num_classes=4).float().mean(0)

    torch.testing.assert_close(tv.jit(OneHotOf())(torch.tensor([0, 2, 1])), OneHotOf()(torch.tensor([0, 2, 1])))


def test_a_library_imported_inside_forward_records():
    class LazyImport(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 1)

        def forward(self, x, target):
            from torchvision.ops import sigmoid_focal_loss  # its import asks torch.ops for a version
            return sigmoid_focal_loss(self.lin(x).squeeze(-1), target, reduction="mean")

    torch.manual_seed(0)
    check_against_eager(LazyImport(), torch.randn(3, 4), torch.tensor([1.0, 0.0, 1.0]))


class KeepsState(torch.nn.Module):
    """What a forward assigns: an auxiliary loss (a mixture of experts' load balancing), a memory
    read at the next call (Transformer-XL), a phase that cycles."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.gate = torch.nn.Linear(4, 2)
        self.memory = torch.zeros(3, 4)
        self.phase = 0

    def forward(self, x):
        self.phase = (self.phase + 1) % 3
        p = torch.softmax(self.gate(x + self.memory), -1)
        self.aux_loss = (p.mean(0) ** 2).sum()
        y = self.lin(x) * p[:, :1]
        self.memory = y.detach()
        return y * 10 if self.phase == 0 else y


def test_what_forward_assigns_is_assigned_at_every_call_gradients_included():
    import copy
    torch.manual_seed(0)
    model = KeepsState()
    eager = copy.deepcopy(model)
    tm = tv.jit(model)
    for step in range(7):
        x = torch.randn(3, 4)
        for m in (model, eager):
            m.zero_grad()
        got, want = tm(x), eager(x)
        (got.sum() + model.aux_loss).backward()
        (want.sum() + eager.aux_loss).backward()
        torch.testing.assert_close(got, want, msg=lambda m: f"step {step}: {m}")
        torch.testing.assert_close(model.aux_loss, eager.aux_loss)
        torch.testing.assert_close(model.memory, eager.memory)
        assert model.phase == eager.phase
        for (name, p), q in zip(model.named_parameters(), eager.parameters()):
            torch.testing.assert_close(p.grad, q.grad, msg=lambda m: f"step {step}, {name}: {m}")
    # one entry per phase, and one more for the first, made before self.aux_loss existed; the memory
    # is read from its place
    assert tm.cache_misses == 4


STATS = {"calls": 0, "mode": "a"}  # a global dict a forward updates


class Bookkeeping(torch.nn.Module):
    """Python state a forward changes besides its own attributes' values."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.acts = []
        self.cache = {}
        self.prev = torch.zeros(2, 3)

    def forward(self, x):
        y = self.lin(x - self.prev)
        self.prev = x  # the input, kept for the next call
        self.acts.append(y)
        self.cache["h"] = y * 2
        STATS["calls"] += 1
        STATS["mode"] = "b" if STATS["mode"] == "a" else "a"
        return y * 3 if STATS["mode"] == "b" else y


def test_lists_dicts_globals_and_hooks_a_forward_changes_change_at_every_call():
    import copy
    torch.manual_seed(0)
    model = Bookkeeping()
    eager = copy.deepcopy(model)
    features = {}
    model.lin.register_forward_hook(lambda m, inputs, out: features.__setitem__("lin", out))  # feature extraction
    tm = tv.jit(model)
    try:
        for step in range(5):
            x = torch.randn(2, 3)
            before = dict(STATS)
            got = tm(x)
            after = dict(STATS)
            STATS.update(before)  # eager's call makes the same change
            want = eager(x)
            assert STATS == after and after["calls"] == step + 1
            torch.testing.assert_close(got, want)
            torch.testing.assert_close(model.cache["h"], eager.cache["h"])
            assert len(model.acts) == len(eager.acts) == step + 1
            torch.testing.assert_close(model.acts[-1], eager.acts[-1])
            torch.testing.assert_close(features["lin"], model.acts[-1])  # this call's, not the first's
            assert model.prev is x and not model.prev.requires_grad
    finally:
        STATS.update(calls=0, mode="a")


def _activation(y):
    return torch.relu(y)


LOOP_STATE = {"lr_now": 0.1, "log_every": 1}  # the training loop writes lr_now; forward reads log_every


class Stateful(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.cfg = types.SimpleNamespace(flag=False)
        self.cache = None

    def forward(self, x):
        self.cfg.flag = not self.cfg.flag  # a settings field the forward toggles
        y = _activation(self.lin(x)) * (2.0 if self.cfg.flag else 1.0) * LOOP_STATE["log_every"]
        if self.cache is None:  # a memory that is dropped every other call
            self.cache = y.detach() * 0.5
        else:
            y = y + self.cache
            self.cache = None
        return y


def test_state_that_comes_and_goes_toggles_helpers_and_the_loops_own_state():
    global _activation
    import copy
    torch.manual_seed(0)
    model = Stateful()
    eager = copy.deepcopy(model)
    tm = tv.jit(model)
    original = _activation
    try:
        for step in range(8):
            if step == 5:
                _activation = torch.tanh  # a helper monkeypatched
            model.num_updates = eager.num_updates = step  # what a training loop keeps on the model
            LOOP_STATE["lr_now"] = 0.1 / (step + 1)
            x = torch.randn(2, 4)
            got, want = tm(x), eager(x)
            torch.testing.assert_close(got, want, msg=lambda m: f"step {step}: {m}")
            assert model.cfg.flag == eager.cfg.flag and (model.cache is None) == (eager.cache is None)
            assert model.cache is None or not model.cache.requires_grad
            got.sum().backward()  # each call's graph is its own
        # two states that alternate, each before and after the helper changed; the loop's own state
        # (num_updates, lr_now) is no part of the key
        assert tm.cache_misses == 4
    finally:
        _activation = original
        LOOP_STATE["lr_now"] = 0.1


def test_a_counter_in_a_hooks_closure_counts_every_call():
    model = torch.nn.Linear(4, 4)
    counts = {"n": 0}
    model.register_forward_hook(lambda m, inputs, out: counts.__setitem__("n", counts["n"] + 1))
    tm = tv.jit(model)
    # (the hook's closure is watched: each call's count is another value, so each call records)
    with pytest.warns(UserWarning, match="recorded its forward anew at 16 calls in a row"):
        for _ in range(16):
            tm(torch.randn(2, 4))
    assert counts["n"] == 16


def test_a_weight_norm_hooks_weight_attribute_is_this_calls():
    torch.manual_seed(0)
    model = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3))
    tm = tv.jit(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(3):
        opt.zero_grad()
        tm(torch.randn(2, 4)).sum().backward()
        opt.step()
        tm(torch.randn(2, 4))
        torch.testing.assert_close(model.weight, model.weight_g * model.weight_v / model.weight_v.norm(dim=1, keepdim=True))


def test_a_change_no_replay_redoes_records_every_call_with_a_warning():
    class Logs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.seen = []

        def forward(self, x):
            self.seen = self.seen + [x.detach()]  # a new list each call
            return self.lin(x)

    model = Logs()
    tm = tv.jit(model)
    with pytest.warns(UserWarning, match=r"Logs.seen = a list.*records the forward anew"):
        for _ in range(3):
            tm(torch.randn(2, 4))
    assert len(model.seen) == 3


def test_a_counter_the_forward_assigns_counts_and_warns_that_each_call_records():
    class Counts(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return self.lin(x) * self.calls

    model, x = Counts(), torch.randn(2, 4)
    tm = tv.jit(model)
    with pytest.warns(UserWarning, match="16 calls in a row"):
        for k in range(1, 21):
            torch.testing.assert_close(tm(x), model.lin(x) * k)
    assert model.calls == 20 and len(tm._cache) <= 64


def test_tensors_kept_in_a_dict_or_in_a_module_hidden_in_a_list_are_read_at_every_call():
    class Distills(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.teacher = [torch.nn.Linear(4, 4).requires_grad_(False)]  # hidden from parameters()
            self.consts = {"w": torch.tensor([1.0, 2.0, 3.0, 4.0])}

        def forward(self, x):
            return (self.lin(x) - self.teacher[0](x)) * self.consts["w"]

    torch.manual_seed(0)
    model, x = Distills(), torch.randn(3, 4)
    tm = tv.jit(model)
    tm(x)
    with torch.no_grad():
        model.teacher[0].weight.mul_(0.5)  # the teacher's EMA step
        model.consts["w"].mul_(3)
    for _ in range(2):
        torch.testing.assert_close(tm(x), model(x))
    assert tm.cache_misses == 1
    model.teacher[0] = torch.nn.Linear(4, 4).requires_grad_(False)  # a new teacher
    model.consts = {"w": torch.full((4,), 7.0)}
    for _ in range(2):
        torch.testing.assert_close(tm(x), model(x))


def test_rrelu_in_training_is_refused():
    model = After(lambda y, m: torch.nn.functional.rrelu(y, training=True))
    with pytest.raises(tv.UnsupportedOp, match="rrelu in training.*drawn from torch's generator.*eval"):
        tv.jit(model)(torch.randn(3, 4))


def test_a_parameter_assigned_inside_forward_is_refused():
    class Reassigns(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(4, 3)

        def forward(self, x):
            self.emb.weight = torch.nn.Parameter(self.emb.weight * 0.9)  # a codebook's EMA, as some VQ-VAEs do
            return self.emb(x)

    with pytest.raises(tv.UnsupportedOp, match="parameter or buffer assigned inside forward.*outside forward"):
        tv.jit(Reassigns())(torch.tensor([0, 1]))


def test_a_draw_the_patches_do_not_see_is_found_by_the_generators_state():
    from random import random as draw  # a bound method of Python's generator, taken at import

    class Coin(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.own = random.Random(0)  # a generator of the module's own

        def forward(self, x):
            y = self.lin(x)
            if draw() < 0.5 or self.own.random() < 0.3:
                y = y * 0
            return y

    model, x = Coin(), torch.randn(2, 4)
    tm = tv.jit(model)
    random.seed(1)
    with pytest.warns(UserWarning, match="every call records the forward anew"):
        got = [tm(x) for _ in range(8)]
    random.seed(1)
    model.own.seed(0)
    for g in got:
        torch.testing.assert_close(g, model(x))


def test_a_tensor_that_requires_grad_found_in_no_place_is_refused():
    class InADeque(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.gains = collections.deque([torch.tensor(2.0, requires_grad=True)])  # no place the recording looks at

        def forward(self, x):
            return self.lin(x) * self.gains[0]

    with pytest.raises(tv.UnsupportedOp, match="requires grad and is no parameter.*nn.Parameter"):
        tv.jit(InADeque())(torch.randn(2, 4))


def test_a_forwards_default_arguments_and_torchs_global_settings_are_watched():
    """A default argument replaced after the first call (positional or keyword-only) is read by the
    next call that leaves it out; so is the deterministic-algorithms setting a forward branches on,
    and the default dtype, on the steady path and after it."""
    class Defaults(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x, scale=2.0, *, shift=0.0):
            y = self.lin(x) * scale + shift
            if torch.are_deterministic_algorithms_enabled():
                y = y * 3
            if torch.get_default_dtype() == torch.float64:
                y = y * 5
            return y

    model = Defaults()
    tm, x = tv.jit(model), torch.randn(2, 4)

    def deterministic(on):
        torch.use_deterministic_algorithms(on)

    def default_dtype(dtype):
        torch.set_default_dtype(dtype)

    def set_default(value):
        Defaults.forward.__defaults__ = (value,)

    def set_keyword_default(value):
        Defaults.forward.__kwdefaults__["shift"] = value

    try:
        for change in (lambda: None, lambda: set_default(3.0), lambda: set_keyword_default(1.0),
                       lambda: deterministic(True), lambda: deterministic(False),
                       lambda: default_dtype(torch.float64), lambda: default_dtype(torch.float32)):
            change()
            for _ in range(3):  # the recording, the first hit (it makes the steady guard), the steady path
                with torch.no_grad():
                    torch.testing.assert_close(tm(x), model(x))
        with torch.no_grad():
            torch.testing.assert_close(tm(x, 5.0, shift=2.0), model(x, 5.0, shift=2.0))
    finally:
        torch.use_deterministic_algorithms(False)
        torch.set_default_dtype(torch.float32)
    assert tm.cache_hits >= 12


def test_the_variables_of_a_factory_made_forwards_closure_are_watched():
    """A forward built by a factory reads its closure: a tensor there (which may require grad), a
    number a `nonlocal` assignment changes, a tensor it rebinds or changes in place."""
    def make(gain, scale):
        class InAClosure(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 4)

            def forward(self, x):
                return self.lin(x) * gain * scale

        def rescale(value):
            nonlocal scale
            scale = value

        def regain(value):
            nonlocal gain
            gain = value
        return InAClosure(), rescale, regain

    gain = torch.tensor(2.0, requires_grad=True)
    model, rescale, regain = make(gain, 3.0)
    tm, x = tv.jit(model), torch.randn(2, 4)
    tm(x).sum().backward()
    got = gain.grad.clone()
    gain.grad = None
    model(x).sum().backward()
    torch.testing.assert_close(got, gain.grad)
    for change in (lambda: rescale(0.5), lambda: gain.data.mul_(4), lambda: regain(torch.tensor(-1.0))):
        change()
        with torch.no_grad():
            torch.testing.assert_close(tm(x), model(x))
    hits = tm.cache_hits
    with torch.no_grad():
        tm(x)
    assert tm.cache_hits == hits + 1  # an unchanged closure is a cache hit


def test_a_hooks_nonlocal_counter_follows_eager():
    def counting():
        calls = 0

        def hook(module, inputs, output):
            nonlocal calls
            calls += 1
            return output * calls
        return hook

    model, reference = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
    reference.load_state_dict(model.state_dict())
    model.register_forward_hook(counting())
    reference.register_forward_hook(counting())
    tm, x = tv.jit(model), torch.randn(2, 3)
    for _ in range(3):
        torch.testing.assert_close(tm(x), reference(x))


def test_a_tensor_of_a_module_kept_in_a_list_of_a_module_kept_in_a_list_is_read_at_each_call():
    class Inner(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)
            self.scales = [torch.ones(3)]

        def forward(self, x):
            return self.lin(x) * self.scales[0]

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = [Inner()]  # not a submodule: its parameters are not the model's

        def forward(self, x):
            return self.blocks[0](x)

    model, x = Outer(), torch.randn(2, 3)
    tm = tv.jit(model)
    tm(x)
    model.blocks[0].scales[0].mul_(3)
    torch.testing.assert_close(tm(x), model(x))


def test_a_tensor_that_requires_grad_kept_in_a_list_gets_its_gradient():
    class InAList(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.gains = [torch.tensor(2.0, requires_grad=True)]

        def forward(self, x):
            return self.lin(x) * self.gains[0]

    model, x = InAList(), torch.randn(2, 4)
    tv.jit(model)(x).sum().backward()
    got = model.gains[0].grad.clone()
    model.gains[0].grad = None
    model(x).sum().backward()
    torch.testing.assert_close(got, model.gains[0].grad)


def test_an_output_that_is_nan_in_eager_too_is_the_same_result():
    class Root(torch.nn.Module):
        def forward(self, x):
            return torch.sqrt(x) + x ** 0.5

    x = torch.tensor([4.0, -1.0, 0.25])
    torch.testing.assert_close(tv.jit(Root())(x), Root()(x), equal_nan=True)


def test_a_refusal_inside_torch_nn_names_the_librarys_line():
    # RReLU in training calls rrelu inside torch.nn.functional, whose random slopes are refused
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 1), torch.nn.RReLU())
    with pytest.raises(tv.UnsupportedOp) as refused:
        tv.jit(model)(torch.randn(2, 2, 3, 3))
    message = str(refused.value)
    assert "test_published_calls.py" in message and "functional.py:" in message and "rrelu in training" in message


def test_embedding_with_max_norm_is_refused_naming_max_norm():
    with pytest.raises(tv.UnsupportedOp, match="embedding with max_norm.*renormalises the weight's rows"):
        tv.jit(torch.nn.Embedding(10, 4, max_norm=1.0))(torch.tensor([1, 2]))


def test_spectral_norm_in_training_follows_eager_over_steps():
    # its power iteration writes the module's u and v buffers through `out=` under no_grad, and its
    # pre-hook sets `weight` as a plain attribute at every call
    import copy
    torch.manual_seed(0)
    model = torch.nn.utils.spectral_norm(torch.nn.Linear(4, 4))
    eager = copy.deepcopy(model)
    tm = tv.jit(model)
    for _ in range(3):
        x = torch.randn(3, 4)
        got, want = tm(x), eager(x)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(model.weight_u, eager.weight_u)
        torch.testing.assert_close(torch.autograd.grad(got.square().sum(), model.weight_orig)[0],
                                   torch.autograd.grad(want.square().sum(), eager.weight_orig)[0])
    assert tm.cache_hits == 2


class OutArguments(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        with torch.no_grad():
            scale = torch.empty_like(y)
            torch.mul(y, 2, out=scale)
            torch.add(scale, 1, out=scale)
        return y * scale


def test_out_arguments_into_a_tensor_made_in_forward_follow_eager():
    torch.manual_seed(0)
    check_against_eager(OutArguments(), torch.randn(3, 4))


class ConvFrontEnd(torch.nn.Module):
    """Whisper's: a convolution, GELU, then the time axis moved (the gradient reaching GELU is not
    contiguous)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(3, 6, 3, padding=1)

    def forward(self, x):
        return torch.nn.functional.gelu(self.conv(x)).permute(0, 2, 1)


def test_gelu_under_a_permutation_gives_float64_eagers_gradients():
    # the reference is eager in float64: torch 1.13's own float32 gelu_backward on the CPU is wrong
    # for a non-contiguous gradient
    torch.manual_seed(0)
    model, x, g = ConvFrontEnd(), torch.randn(2, 3, 8), torch.randn(2, 8, 6)
    tm = tv.jit(model)
    (tm(x) * g).sum().backward()
    got = model.conv.weight.grad.double()
    reference = ConvFrontEnd().double()
    reference.load_state_dict(model.state_dict())
    (reference(x.double()) * g.double()).sum().backward()
    torch.testing.assert_close(got, reference.conv.weight.grad, rtol=1e-4, atol=1e-5)


class Checkpointed(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()
        self.inner = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU())
        self.out = torch.nn.Linear(4, 2)
        self.options = options

    def forward(self, x):
        import torch.utils.checkpoint
        return self.out(torch.utils.checkpoint.checkpoint(self.inner, x, **self.options))


@pytest.mark.parametrize("options", [{"use_reentrant": True}, {"use_reentrant": False}], ids=["reentrant", "non-reentrant"])
def test_a_checkpointed_block_gets_eagers_gradients(options):
    # the reentrant checkpoint (torch 1.13's default) runs its block under no_grad, which is not a no_grad
    # block of the user's
    torch.manual_seed(0)
    check_against_eager(Checkpointed(**options), torch.randn(3, 4))  # eager: the block gets no gradient
    x = torch.randn(3, 4, requires_grad=True)
    check_against_eager(Checkpointed(**options), x)
    model = Checkpointed(**options)
    tm = tv.jit(model)
    tm(x).sum().backward()
    assert model.inner[0].weight.grad is not None


class CheckpointedNorm(torch.nn.Module):
    """A batch norm inside a checkpointed block (densenet's memory_efficient layers), with a dropout
    inside the block or not."""

    def __init__(self, dropout=False, **options):
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.Tanh(),
                                         *([torch.nn.Dropout(0.5)] if dropout else []))
        self.out = torch.nn.Linear(4, 2)
        self.options = options

    def forward(self, x):
        import torch.utils.checkpoint
        return self.out(torch.utils.checkpoint.checkpoint(self.block, x, **self.options))


@pytest.mark.parametrize("options", [{"use_reentrant": True}, {"use_reentrant": False}], ids=["reentrant", "non-reentrant"])
def test_a_checkpointed_batch_norm_updates_its_statistics_as_eagers_recomputation(options):
    """Eager's checkpoint recomputes the block in backward, which updates the running statistics a
    second time, when the backward runs: the buffers are eager's after a training step, between a
    forward and its backward, after two forwards and one backward (the later call's block is
    recomputed first), and after calls under no_grad (no recomputation)."""
    torch.manual_seed(0)
    model = CheckpointedNorm(**options)
    eager = copy.deepcopy(model)
    tm = tv.jit(model)
    norm, eager_norm = model.block[1], eager.block[1]

    def same_buffers(count):
        assert int(norm.num_batches_tracked) == int(eager_norm.num_batches_tracked) == count
        torch.testing.assert_close(norm.running_mean, eager_norm.running_mean)
        torch.testing.assert_close(norm.running_var, eager_norm.running_var)

    x, x2 = torch.randn(6, 4, requires_grad=True), torch.randn(6, 4, requires_grad=True)
    for _ in range(2):
        tm(x).square().sum().backward()
        eager(x).square().sum().backward()
    same_buffers(4)
    loss, eager_loss = tm(x).square().sum(), eager(x).square().sum()
    same_buffers(5)  # (the recomputation comes with the backward)
    loss.backward()
    eager_loss.backward()
    same_buffers(6)
    (tm(x).square().sum() + tm(x2).sum()).backward()
    (eager(x).square().sum() + eager(x2).sum()).backward()
    same_buffers(10)
    with torch.no_grad():
        tm(x)
        eager(x)
    same_buffers(11)
    for p, q in zip(model.parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad)


class CheckpointedFunctionalNorm(torch.nn.Module):
    """F.batch_norm on running statistics of the module's own, with no batch counter: torch 1.13
    writes them without a new version."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.register_buffer("mean", torch.zeros(4))
        self.register_buffer("var", torch.ones(4))

    def block(self, x):
        return torch.nn.functional.batch_norm(self.linear(x), self.mean, self.var, training=True).tanh()

    def forward(self, x):
        import torch.utils.checkpoint
        return torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=False)


def test_a_checkpointed_functional_batch_norm_updates_its_statistics_as_eagers_recomputation():
    torch.manual_seed(0)
    model = CheckpointedFunctionalNorm()
    eager = copy.deepcopy(model)
    tm = tv.jit(model)
    x = torch.randn(6, 4, requires_grad=True)
    for _ in range(2):
        tm(x).sum().backward()
        eager(x).sum().backward()
    torch.testing.assert_close(model.mean, eager.mean)
    torch.testing.assert_close(model.var, eager.var)


@pytest.mark.parametrize("options", [{"use_reentrant": True}, {"use_reentrant": False}], ids=["reentrant", "non-reentrant"])
def test_an_inspectors_eager_reference_leaves_a_checkpointed_batch_norms_statistics_alone(options):
    """The Inspector's eager reference runs on copies of the buffers, but a checkpointed block's
    recomputation in that reference's backward runs on the module's own: they are put back."""
    torch.manual_seed(0)
    model = CheckpointedNorm(**options)
    eager = copy.deepcopy(model)
    tm = tv.jit(model)
    tv.attach(tm)
    x = torch.randn(6, 4, requires_grad=True)
    for _ in range(3):
        tm(x).square().sum().backward()
        eager(x).square().sum().backward()
    assert int(model.block[1].num_batches_tracked) == int(eager.block[1].num_batches_tracked) == 6
    torch.testing.assert_close(model.block[1].running_mean, eager.block[1].running_mean)
    torch.testing.assert_close(model.block[1].running_var, eager.block[1].running_var)


def test_a_checkpointed_block_with_a_dropout_and_a_batch_norm_is_refused_naming_the_way_out():
    tm = tv.jit(CheckpointedNorm(dropout=True, use_reentrant=True))
    with pytest.raises(tv.UnsupportedOp, match="draws random numbers and updates a buffer.*memory_efficient=False"):
        tm(torch.randn(6, 4, requires_grad=True))


class MomentumEncoder(torch.nn.Module):
    """MoCo's key encoder: its parameters follow the query encoder's by an in-place momentum update
    under no_grad at every forward."""

    def __init__(self, how="in place"):
        super().__init__()
        self.query = torch.nn.Linear(3, 2)
        self.key = torch.nn.Linear(3, 2)
        for p in self.key.parameters():
            p.requires_grad = False
        self.how = how

    @torch.no_grad()
    def momentum_update(self):
        for q, k in zip(self.query.parameters(), self.key.parameters()):
            if self.how == "assign .data":
                k.data = k.data * 0.9 + q.data * 0.1
            elif self.how == ".data in place":  # the mean teacher's way
                k.data.mul_(0.9).add_(q.data, alpha=0.1)
            elif self.how == ".data copy_":
                k.data.copy_(k.data * 0.9 + q.data * 0.1)
            elif self.how == ".data lerp_":
                k.data.lerp_(q.data, 0.1)
            else:
                k.mul_(0.9).add_(q.detach(), alpha=0.1)

    def forward(self, x):
        self.momentum_update()
        return self.query(x) * self.key(x)


@pytest.mark.parametrize("how", ["in place", "assign .data", ".data in place", ".data copy_", ".data lerp_"])
def test_a_momentum_update_of_parameters_in_forward_follows_eager_over_steps(how):
    import copy
    torch.manual_seed(0)
    model = MomentumEncoder(how)
    eager = copy.deepcopy(model)
    tm = tv.jit(model)
    opt, opt_eager = (torch.optim.SGD(m.query.parameters(), lr=0.1) for m in (model, eager))
    for _ in range(3):
        x = torch.randn(4, 3)
        for module, optimizer in ((tm, opt), (eager, opt_eager)):
            optimizer.zero_grad()
            module(x).square().sum().backward()
            optimizer.step()
        for (name, p), q in zip(model.named_parameters(), eager.parameters()):
            torch.testing.assert_close(p, q, msg=name)
    assert tm.cache_hits == 2


class AssignsData(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)

    def forward(self, x):
        self.fc.weight.data = self.fc.weight.data * 0.5  # a parameter that requires grad
        return self.fc(x)


def test_assigning_data_of_a_parameter_that_requires_grad_is_refused():
    with pytest.raises(tv.UnsupportedOp, match=r"assigning Tensor.data inside forward.*'fc.weight' requires grad"):
        tv.jit(AssignsData())(torch.randn(2, 3))


class LayerScaleInPlace(torch.nn.Module):
    """timm's LayerScale(inplace=True) applied to the forward's own input."""

    def __init__(self):
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.full((4,), 0.5))

    def forward(self, x):
        return x.mul_(self.gamma)


def test_an_input_scaled_in_place_and_returned_follows_eager():
    torch.manual_seed(0)
    model, x = LayerScaleInPlace(), torch.randn(2, 4)
    tm = tv.jit(model)
    for _ in range(2):
        mine, theirs = x.clone(), x.clone()
        got, want = tm(mine), model(theirs)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(mine, theirs)  # the caller's tensor is written once, as eager writes it


class Noisy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        mean = self.fc(x)
        return mean + torch.randn_like(mean) * 0.1


def test_a_seeded_first_call_draws_as_a_seeded_cached_call_and_eager_do():
    torch.manual_seed(0)
    model, x = Noisy(), torch.randn(3, 4)
    tm = tv.jit(model)
    outs = []
    for _ in range(2):  # the recording call, then a cached one
        torch.manual_seed(1)
        outs.append(tm(x))
    torch.manual_seed(1)
    torch.testing.assert_close(outs[0], outs[1])
    torch.testing.assert_close(outs[0], model(x))


@dataclasses.dataclass
class CausalLMOutput:
    """A dataclass output, as Hugging Face's ModelOutput (a dataclass and an OrderedDict) is."""
    logits: torch.Tensor
    loss: typing.Optional[torch.Tensor] = None
    hidden_states: tuple = ()


class OrderedOutput(collections.OrderedDict):
    pass


class ModelOutput(collections.OrderedDict):
    """Hugging Face's ModelOutput as it behaves: the fields that are not None are its keys, an item
    set is an attribute too, `out[0]` is the first key's value."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            if getattr(self, f.name) is not None:
                self[f.name] = getattr(self, f.name)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def __getitem__(self, k):
        return dict(self.items())[k] if isinstance(k, str) else tuple(self.values())[k]


@dataclasses.dataclass
class LMOutput(ModelOutput):
    loss: typing.Optional[torch.Tensor] = None
    logits: torch.Tensor = None


class ReturnsRecords(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.kind = kind

    def forward(self, x):
        y = self.fc(x)
        if self.kind == "dataclass":
            return CausalLMOutput(logits=y, loss=y.square().mean(), hidden_states=(y * 2,))
        if self.kind == "ModelOutput, its loss set after":
            out = LMOutput(logits=y)  # a backbone's output, whose loss the caller adds: no key
            out.loss = y.square().mean()
            out["extra"] = y + 1  # an item that is no field
            return out
        return OrderedOutput(logits=y, loss=y.square().mean())


@pytest.mark.parametrize("kind", ["dataclass", "OrderedDict subclass", "ModelOutput, its loss set after"])
def test_a_forward_returning_a_dataclass_or_a_dict_subclass_returns_the_same_type(kind):
    torch.manual_seed(0)
    model, x = ReturnsRecords(kind), torch.randn(2, 4)
    tm = tv.jit(model)
    for _ in range(2):
        got, want = tm(x), model(x)
        assert type(got) is type(want)
        if isinstance(want, dict):
            assert list(got.keys()) == list(want.keys())
        if isinstance(want, ModelOutput):
            torch.testing.assert_close(got[0], want[0])
        by_key = isinstance(want, dict) and not dataclasses.is_dataclass(want)
        for name in ["logits", "loss"]:
            torch.testing.assert_close(got[name] if by_key else getattr(got, name),
                                       want[name] if by_key else getattr(want, name))
    (got["loss"] if by_key else got.loss).backward()
    assert model.fc.weight.grad is not None


class ComplexRotary(torch.nn.Module):
    """Meta's llama: rotary frequencies as a complex buffer."""

    def __init__(self):
        super().__init__()
        self.register_buffer("freqs_cis", torch.polar(torch.ones(4, 2), torch.randn(4, 2)))

    def forward(self, x):
        rotated = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2)) * self.freqs_cis
        return torch.view_as_real(rotated).flatten(2)


def test_a_complex_buffer_is_refused_naming_it():
    with pytest.raises(tv.UnsupportedOp, match=r"the buffer 'freqs_cis' of dtype complex64.*no complex dtypes"):
        tv.jit(ComplexRotary())(torch.randn(3, 4, 4))


class MetaRotary(torch.nn.Module):
    """Meta's llama as published: freqs_cis a plain complex attribute, sliced at start_pos, broadcast
    by view, multiplied in complex numbers."""

    def __init__(self):
        super().__init__()
        self.wq = torch.nn.Linear(8, 8)
        freqs = 1.0 / (10000.0 ** (torch.arange(0, 8, 2).float() / 8))
        self.freqs_cis = torch.polar(torch.ones(16, 4), torch.outer(torch.arange(16).float(), freqs))

    def forward(self, x, start_pos: int):
        batch, length, _ = x.shape
        freqs_cis = self.freqs_cis[start_pos:start_pos + length]
        xq = torch.view_as_complex(self.wq(x).float().reshape(batch, length, -1, 2))
        shape = [d if i == 1 or i == xq.ndim - 1 else 1 for i, d in enumerate(xq.shape)]
        return torch.view_as_real(xq * freqs_cis.view(*shape)).flatten(2).type_as(x)


def test_complex_numbers_as_metas_llama_writes_them_follow_eager_on_their_real_pairs():
    torch.manual_seed(0)
    for start_pos in (0, 3):
        check_against_eager(MetaRotary(), torch.randn(2, 5, 8), start_pos)
    with pytest.raises(tv.UnsupportedOp, match=r"torch.exp on a complex tensor.*real pair"):
        tv.jit(After(lambda y, m: torch.view_as_real(torch.exp(torch.view_as_complex(y.reshape(3, 2, 2))))))(torch.randn(3, 4))


class ClampsItsWeight(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        with torch.no_grad():
            self.fc.weight.clamp_(-0.3, 0.3)
        return self.fc(x)


def test_an_in_place_update_of_a_parameter_that_requires_grad_in_forward_is_refused():
    # eager differentiates the later reads to the leaf; the trace's reads of the new value would not
    with pytest.raises(tv.UnsupportedOp, match=r"in-place update of the parameter 'fc.weight', which requires grad"):
        tv.jit(ClampsItsWeight())(torch.randn(3, 4))


class Sine(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()


class UsesAFunction(torch.nn.Module):
    def forward(self, x):
        return Sine.apply(x) * 2


def test_a_custom_autograd_function_is_refused_naming_it():
    # its forward runs under no_grad: read as the user's own no_grad block, its input would get no gradient
    with pytest.raises(tv.UnsupportedOp, match=r"a custom torch.autograd.Function \(Sine\)"):
        tv.jit(UsesAFunction())(torch.randn(3, requires_grad=True))


class ScaledByAConstant(torch.nn.Module):
    """Gemma's embedding scale as LitGPT writes it."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x) * torch.tensor(4 ** 0.5, dtype=x.dtype) + torch.as_tensor(1.0)


def test_a_tensor_made_from_a_python_number_in_forward_follows_eager():
    torch.manual_seed(0)
    check_against_eager(ScaledByAConstant(), torch.randn(2, 4))



DRAWS = {
    # dispatch leaves out bernoulli_'s p=0.5 (its default), which the out-of-place bernoulli.p needs
    "dropout2d(p=0.5, training)": lambda y, m: torch.nn.functional.dropout2d(y.reshape(2, 3, 2, 2), 0.5, training=True),
    "alpha_dropout(p=0.5, training)": lambda y, m: torch.nn.functional.alpha_dropout(y, 0.5, training=True),
    # a factory's tensor does not require grad, and the factory has no gradient
    "y * randint_like(y, 0, 10)": lambda y, m: y * torch.randint_like(y, 0, 10),
    # no meta kernel: the build's CPU run needs a valid distribution
    "multinomial": lambda y, m: y * torch.multinomial(torch.softmax(y, -1), 2, replacement=True).sum(-1, keepdim=True),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_a_random_draw_is_reproducible_and_differs_between_calls(name):
    torch.manual_seed(0)
    model, x = After(DRAWS[name]), torch.randn(6, 4) if name.startswith("dropout2d") else torch.randn(3, 4)
    tm = tv.jit(model)
    torch.manual_seed(5)
    first = tm(x)
    torch.manual_seed(5)
    again = tm(x)
    torch.testing.assert_close(first, again)
    assert first.shape == model(x).shape
    assert any(not torch.equal(tm(x), first) for _ in range(5))
    tm(x).sum().backward()
    assert model.lin.weight.grad is not None


class ShapeFromAParameter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.template = torch.nn.Parameter(torch.randn(2, 6))

    def forward(self, x):
        return self.fc(x).view_as(self.template) + self.fc(x).reshape_as(self.template) + x.sum().expand_as(self.template)


def test_a_parameter_used_only_for_its_shape_gets_no_gradient_as_in_eager():
    # an optimizer skips a parameter whose grad is None; a zero grad would be decayed
    torch.manual_seed(0)
    check_against_eager(ShapeFromAParameter(), torch.randn(3, 4))
    model = ShapeFromAParameter()
    tv.jit(model)(torch.randn(3, 4)).sum().backward()
    assert model.template.grad is None and model.fc.weight.grad is not None


def test_a_cumulative_batch_norm_in_training_is_refused_naming_the_way_out_and_runs_in_eval():
    torch.manual_seed(0)
    model, x = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4, momentum=None)), torch.randn(8, 4)
    with pytest.raises(tv.UnsupportedOp, match=r"BatchNorm1d\(momentum=None\) in training.*module '1'.*give it a momentum"):
        tv.jit(model)(x)
    model.eval()
    torch.testing.assert_close(tv.jit(model)(x), model(x))


@torch.jit.script
def _scripted_gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))


class CallsAScriptedFunction(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return _scripted_gelu(self.lin(x)) * 2


@pytest.mark.parametrize("grad", [True, False], ids=["grad", "no_grad"])
def test_a_scripted_function_is_recorded_by_its_operators_never_as_constants(grad):
    """TorchScript runs a scripted function's torch calls below the recording's torch-function
    level: they are recorded as the ATen operators they dispatch (torch 1.13 lets the recording see
    them there), or the tensor they make is refused where it is read; never written into the trace
    as a constant (its values change with the input)."""
    torch.manual_seed(0)
    model = CallsAScriptedFunction()
    tm = tv.jit(model)
    with torch.set_grad_enabled(grad):
        for _ in range(3):
            x = torch.randn(2, 4)
            try:
                got = tm(x)
            except tv.UnsupportedOp as refused:
                assert "computed below the recording" in str(refused) and "TorchScript" in str(refused)
                return
            torch.testing.assert_close(got, model(x))
    if grad:
        check_against_eager(CallsAScriptedFunction(), torch.randn(2, 4))


def test_a_torchscript_module_is_refused_naming_it():
    class HoldsAScriptedModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = torch.jit.script(torch.nn.Linear(4, 4))

        def forward(self, x):
            return self.inner(x)

    with pytest.raises(tv.UnsupportedOp, match="TorchScript module.*module 'inner'.*Python module it was made from"):
        tv.jit(HoldsAScriptedModule())(torch.randn(2, 4))


_SCRIPTED_BY_NAME = {"gelu": _scripted_gelu}


def test_a_scripted_function_torchscript_optimized_is_recorded_unoptimized_or_refused():
    """After two eager runs TorchScript runs a scripted function as a graph that differentiates
    itself (its calls dispatched on detached inputs): the recording clears the plans of the scripted
    functions the model's code names, and one it cannot find (here through a dict) is refused, never
    recorded without its gradient."""
    class ThroughADict(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return _SCRIPTED_BY_NAME["gelu"](self.lin(x)) * 2

    for model in (CallsAScriptedFunction(), ThroughADict()):
        for _ in range(3):
            model(torch.randn(2, 4)).sum().backward()
        model.zero_grad(set_to_none=True)
        try:
            tv.jit(model)(torch.randn(2, 4)).sum().backward()
        except tv.UnsupportedOp as refused:
            assert isinstance(model, ThroughADict) and "optimized graph" in str(refused)
            continue
        assert model.lin.weight.grad is not None


@dataclasses.dataclass
class _Settings:
    scale: float = 2.0
    inner: dict = dataclasses.field(default_factory=lambda: {"k": 1.0})


_TABLE = {"scale": 2.0}
_SETTINGS = _Settings()


def test_dicts_and_settings_objects_read_through_globals_closures_and_attributes_are_watched_deep():
    """A key added later (`cfg.get("act")`), a dict inside a settings object, and a settings object
    put in place of another: each through a global, a closure and a module attribute."""
    global _SETTINGS

    class GlobalTable(torch.nn.Module):
        def forward(self, x):
            y = x * _TABLE["scale"]
            return y.relu() if _TABLE.get("act") else y

    class GlobalSettings(torch.nn.Module):
        def forward(self, x):
            return x * _SETTINGS.scale * _SETTINGS.inner["k"]

    def closing_over(settings):
        class ClosureSettings(torch.nn.Module):
            def forward(self, x):
                return x * settings.scale * settings.inner["k"]

        def rebind(new):
            nonlocal settings
            settings = new
        return ClosureSettings(), rebind

    class AttributeSettings(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.settings = _Settings()

        def forward(self, x):
            return x * self.settings.scale * self.settings.inner["k"]

    x = torch.tensor([-1.0, 2.0])
    model = GlobalTable()
    tm = tv.jit(model)
    tm(x)
    _TABLE["act"] = True
    try:
        torch.testing.assert_close(tm(x), model(x))
    finally:
        del _TABLE["act"]
    model = GlobalSettings()
    tm = tv.jit(model)
    tm(x)
    saved = _SETTINGS
    try:
        _SETTINGS.inner["k"] = 3.0
        torch.testing.assert_close(tm(x), model(x))
        _SETTINGS = _Settings(scale=7.0)
        torch.testing.assert_close(tm(x), model(x))
    finally:
        _SETTINGS = saved
        saved.inner["k"] = 1.0
    settings = _Settings()
    model, rebind = closing_over(settings)
    tm = tv.jit(model)
    tm(x)
    settings.inner["k"] = 3.0
    torch.testing.assert_close(tm(x), model(x))
    rebind(_Settings(scale=7.0))
    torch.testing.assert_close(tm(x), model(x))
    model = AttributeSettings()
    tm = tv.jit(model)
    tm(x)
    model.settings.inner["k"] = 3.0
    torch.testing.assert_close(tm(x), model(x))
    model.settings = _Settings(scale=7.0)
    torch.testing.assert_close(tm(x), model(x))
    hits = tm.cache_hits
    tm(x)
    assert tm.cache_hits == hits + 1


def test_state_kept_in_nested_dicts_and_lists_follows_eager():
    """An EMA in a dict inside a dict (of a closure, of a module attribute), a hook storing a feature
    in a nested dict and appending to a list held in a dict."""
    def make():
        history = {"cfg": {"ema": torch.zeros(4)}}
        store = {"feats": {}, "seen": []}

        class Keeps(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 4)
                self.hist = {"cfg": {"ema": torch.zeros(4)}}
                self.lin.register_forward_hook(self.keep)

            @staticmethod
            def keep(module, inputs, output):
                store["feats"]["lin"] = output
                store["seen"].append(output.detach())

            def forward(self, x):
                d = history["cfg"]
                d["ema"] = d["ema"] * 0.5 + x.mean(0)
                e = self.hist["cfg"]
                e["ema"] = e["ema"] * 0.5 + x.mean(0)
                return self.lin(x) + d["ema"] + e["ema"]
        return Keeps(), history, store

    torch.manual_seed(0)
    model, history, store = make()
    reference, reference_history, reference_store = make()
    reference.load_state_dict(model.state_dict())
    tm = tv.jit(model)
    for _ in range(3):
        x = torch.randn(3, 4)
        torch.testing.assert_close(tm(x), reference(x))
        torch.testing.assert_close(history["cfg"]["ema"], reference_history["cfg"]["ema"])
        torch.testing.assert_close(model.hist["cfg"]["ema"], reference.hist["cfg"]["ema"])
        torch.testing.assert_close(store["feats"]["lin"], reference_store["feats"]["lin"])
    assert len(store["seen"]) == len(reference_store["seen"]) == 3


def test_calls_recorded_as_aten_operators_run_under_inference_mode():
    """Under torch.inference_mode the inputs are inference tensors, which have no version counter."""
    class Mixed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = torch.nn.MultiheadAttention(8, 2)
            self.w = torch.nn.Parameter(torch.randn(8, 8))

        def forward(self, x):
            y = self.attn(x, x, x)[0]
            return torch.nn.functional.hardtanh(torch.mm(y.reshape(-1, 8), self.w))

    model = Mixed().eval()
    tm = tv.jit(model)
    for _ in range(2):
        with torch.inference_mode():
            x = torch.randn(5, 3, 8)
            torch.testing.assert_close(tm(x), model(x))


_TEACHER = torch.nn.Linear(4, 4)


def test_modules_a_forward_calls_through_its_closure_or_a_global_are_read_at_each_call():
    """A factory-made forward calling a module it closes over (its parameters get gradients), and a
    frozen teacher kept as a global: changed in place or replaced, each call reads the current one."""
    global _TEACHER

    def make():
        other = torch.nn.Linear(4, 4)

        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 4)

            def forward(self, x):
                with torch.no_grad():
                    target = _TEACHER(x)
                return other(self.lin(x)) - target

        def swap(module):
            nonlocal other
            other = module
        return Block(), (lambda: other), swap

    torch.manual_seed(0)
    model, other, swap = make()
    tm = tv.jit(model)
    saved = _TEACHER
    try:
        for change in (lambda: None, lambda: other().weight.data.mul_(2), lambda: swap(torch.nn.Linear(4, 4)),
                       lambda: _TEACHER.weight.data.mul_(2)):
            change()
            x = torch.randn(3, 4)
            got = tm(x)
            got.sum().backward()
            grad = other().weight.grad.clone()
            other().zero_grad()
            want = model(x)
            want.sum().backward()
            torch.testing.assert_close(got, want)
            torch.testing.assert_close(grad, other().weight.grad)
            other().zero_grad()
        _TEACHER = torch.nn.Linear(4, 4)
        x = torch.randn(3, 4)
        torch.testing.assert_close(tm(x), model(x))
    finally:
        _TEACHER = saved


@torch.jit.script
def _scripted_relu(x):
    return x.relu() * 2


@torch.jit.script
def _scripted_branch(x, threshold: float):
    if bool(x.sum() > threshold):
        return x * 2
    return x


def test_a_scripted_function_saving_its_output_records_and_a_refusal_inside_one_keeps_its_message():
    class Relu(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return _scripted_relu(self.lin(x))

    class Branches(Relu):
        def forward(self, x):
            return _scripted_branch(self.lin(x), 0.0)

    check_against_eager(Relu(), torch.randn(2, 4))  # relu's autograd detaches its output to save it
    with pytest.raises(tv.UnsupportedOp, match="value read into Python"):
        tv.jit(Branches())(torch.randn(2, 4))


_DEEP = {"a": {"b": {"c": {"d": {"scale": 2.0}}}}}
_ORDERED = collections.OrderedDict(v=torch.zeros(2))
_STORE = {"store": {"feats": {}}}


def test_state_five_levels_deep_in_ordered_dicts_and_by_len_follows_eager():
    class Reads(torch.nn.Module):
        def forward(self, x):
            y = x * _DEEP["a"]["b"]["c"]["d"]["scale"] * len(_STORE["store"]["feats"])
            _ORDERED["v"] = _ORDERED["v"] + x
            _STORE["store"]["feats"].clear()
            _STORE["store"]["feats"]["k"] = 1
            return y + _ORDERED["v"]

    model, x = Reads(), torch.ones(2)
    tm = tv.jit(model)
    try:
        want = []
        for _ in range(3):
            want.append(model(x))
        _ORDERED["v"], _STORE["store"]["feats"] = torch.zeros(2), {}
        for i in range(3):
            torch.testing.assert_close(tm(x), want[i])
        _DEEP["a"]["b"]["c"]["d"]["scale"] = 5.0
        torch.testing.assert_close(tm(x), model(x) - x)  # (each call adds x to the kept value)
    finally:
        _DEEP["a"]["b"]["c"]["d"]["scale"] = 2.0


_GLOBAL_NORM = torch.nn.BatchNorm1d(3)


def _normalise(x):
    return _GLOBAL_NORM(x)


def test_a_dict_two_modules_share_and_a_global_modules_mode_and_hooks_are_watched():
    class Scales(torch.nn.Module):
        def __init__(self, table):
            super().__init__()
            self.table = table

        def forward(self, x):
            return x * self.table["s"]

    class Both(torch.nn.Module):
        def __init__(self):
            super().__init__()
            shared = {"s": 2.0}
            self.a, self.b = Scales(shared), Scales(shared)

        def forward(self, x):
            return self.a(x) + self.b(x) + _normalise(x)

    model, x = Both(), torch.randn(4, 3)
    tm = tv.jit(model)
    tm(x)
    model.b.table = {"s": 10.0}
    torch.testing.assert_close(tm(x), model(x))
    _GLOBAL_NORM.eval()
    handle = _GLOBAL_NORM.register_forward_hook(lambda module, inputs, output: output * 3)
    try:
        before = _GLOBAL_NORM.running_mean.clone()
        torch.testing.assert_close(tm(x), model(x))
        torch.testing.assert_close(_GLOBAL_NORM.running_mean, before)
    finally:
        handle.remove()
        _GLOBAL_NORM.train()


CLASS_WEIGHTS = None  # a global numpy array (set by the test)
GLOBAL_CFG = types.SimpleNamespace(mult=1.0)


def _apply_mult(cfg, y):
    return y * cfg.mult


def _scale_out(module, y):
    return y * module.alpha


class _Rope:
    """A plain helper object whose own method reads its field (a rotary embedding's base)."""

    def __init__(self, base):
        self.base = base

    def inv_freq(self, d):
        return 1.0 / (self.base ** (torch.arange(0, d, 2).float() / d))


class _ReadsAround(torch.nn.Module):
    """Reads a number where only a string, a static method, a helper function or a helper object's
    method names it, or from a numpy array."""

    def __init__(self, how):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.how = how
        self.config = types.SimpleNamespace(logit_scale=1.0, mult=1.0)
        self.alpha = 1.0
        self.rope = _Rope(10000.0)
        self.anchors = __import__("numpy").array([1.0, 2.0, 3.0, 4.0], dtype="float32")

    @staticmethod
    def scaled(cfg, y):
        return y * cfg.mult

    def forward(self, x):
        y = self.lin(x)
        if self.how == "getattr":
            return y * getattr(self.config, "logit_scale", 1.0)
        if self.how == "staticmethod":
            return self.scaled(self.config, y)
        if self.how == "helper":
            return _apply_mult(self.config, y)
        if self.how == "helper_reads_module":
            return _scale_out(self, y)
        if self.how == "helper_object":
            f = self.rope.inv_freq(4)
            return y * torch.cat([f, f]).cos()
        if self.how == "global_through_helper":
            return _apply_mult(GLOBAL_CFG, y)
        if self.how == "numpy_attribute":
            return y * torch.from_numpy(self.anchors)
        return y * torch.tensor(CLASS_WEIGHTS)


@pytest.mark.parametrize("how", ["getattr", "staticmethod", "helper", "helper_reads_module", "helper_object",
                                 "global_through_helper", "numpy_attribute", "numpy_global"])
def test_numbers_read_where_the_models_classes_do_not_name_them_are_watched(how, monkeypatch):
    """The key follows the names the model's code spells as strings, its static methods, the helper
    functions and classes it names, a global passed to a helper, and numpy arrays (by value)."""
    import numpy
    monkeypatch.setattr(sys.modules[__name__], "CLASS_WEIGHTS", numpy.array([1.0, 2.0, 3.0, 4.0], dtype="float32"))
    monkeypatch.setattr(GLOBAL_CFG, "mult", 1.0)
    model = _ReadsAround(how)
    tm, x = tv.jit(model), torch.randn(3, 4)
    changes = {
        "getattr": lambda i: setattr(model.config, "logit_scale", i + 2.0),
        "staticmethod": lambda i: setattr(model.config, "mult", i + 2.0),
        "helper": lambda i: setattr(model.config, "mult", i + 2.0),
        "helper_reads_module": lambda i: setattr(model, "alpha", i + 2.0),
        "helper_object": lambda i: setattr(model.rope, "base", 5.0 * (i + 1)),
        "global_through_helper": lambda i: setattr(GLOBAL_CFG, "mult", i + 2.0),
        "numpy_attribute": lambda i: model.anchors.__setitem__(slice(None), i + 5.0),
        "numpy_global": lambda i: CLASS_WEIGHTS.__setitem__(slice(None), i + 5.0),
    }
    for i in range(3):
        for _ in range(3):  # the recording, the hit that makes the steady guard, the steady path
            with torch.no_grad():
                torch.testing.assert_close(tm(x), model(x))
        changes[how](i)


def test_random_draws_with_the_same_arguments_draw_apart():
    """Two drop-path masks drawn by the same call (bernoulli_ into same-shaped tensors) and two
    randn_like of one tensor are independent draws, as in eager: none is merged with another."""
    class TwoDraws(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            h = self.lin(x)
            k1 = torch.empty(x.shape[0], 1).bernoulli_(0.5)
            k2 = torch.empty(x.shape[0], 1).bernoulli_(0.5)
            return h * k1 + h * k2, torch.randn_like(x), torch.randn_like(x), torch.rand(64), torch.rand(64)

    model, x = TwoDraws(), torch.randn(64, 4)
    torch.manual_seed(0)
    want = model(x)
    torch.manual_seed(0)
    got = tv.jit(model)(x)
    assert not torch.equal(got[1], got[2]) and not torch.equal(got[3], got[4])
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


def test_noise_drawn_by_normal_in_place_is_eagers_draw():
    """`x.new_empty(shape).normal_()` (noise injection) draws what eager draws from torch's generator."""
    class Noisy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x) + 0.1 * x.new_empty(x.shape).normal_() + x.new_empty(x.shape).normal_(2.0, 3.0)

    model = Noisy()
    tm = tv.jit(model)
    for seed in range(3):
        x = torch.randn(3, 4)
        torch.manual_seed(seed)
        want = model(x)
        torch.manual_seed(seed)
        got = tm(x)
        torch.testing.assert_close(got, want)


GLOBAL_GAINS = []  # a global list of tensors (set by the test)


class _KaggleCfg:  # settings kept as a class's attributes
    scale = 1.0


@dataclasses.dataclass(slots=True)
class _SlotsCfg:
    scale: float = 1.0


class _NamedCfg(typing.NamedTuple):
    scale: float = 1.0


class _MappedConfig:
    """Hugging Face's PretrainedConfig in small: a field read under another name (attribute_map),
    and a property that reads two fields the model's code never names."""
    attribute_map = {"eps": "layer_norm_epsilon"}

    def __init__(self, **fields):
        for k, v in fields.items():
            setattr(self, k, v)

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)

    @property
    def use_return_dict(self):
        return self.return_dict and not self.torchscript


class _AttrDict(dict):
    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__


class _KeptSettings(torch.nn.Module):
    """One linear layer scaled by a number read from settings kept in one of many ways."""

    opts = types.SimpleNamespace(scale=1.0)  # a settings object on the module's class

    def __init__(self, how):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.how = how
        self.cfg_class = _KaggleCfg
        self.slots = _SlotsCfg()
        self.named = _NamedCfg()
        self.mapped = _MappedConfig(layer_norm_epsilon=1e-5, return_dict=True, torchscript=False)
        self.layer_cfgs = [types.SimpleNamespace(scale=1.0), types.SimpleNamespace(scale=1.0)]
        self.attr_dict = _AttrDict(scale=1.0)
        self.window = slice(0, 4)
        self.span = range(4)

    def forward(self, x):
        y = self.lin(x)
        how = self.how
        if how == "class_held":
            return y * self.cfg_class.scale
        if how == "class_global":
            return y * _KaggleCfg.scale
        if how == "class_attribute_settings":
            return y * self.opts.scale
        if how == "slots":
            return y * self.slots.scale
        if how == "named_tuple":
            return y * self.named.scale
        if how == "mapped_eps":
            return F.layer_norm(y, (4,), eps=self.mapped.eps)
        if how == "mapped_property":
            return {"y": y} if self.mapped.use_return_dict else (y,)
        if how == "list_of_settings":
            return y * self.layer_cfgs[1].scale
        if how == "attr_dict":
            return y * self.attr_dict.scale
        if how == "slice":
            return y[:, self.window] * 2
        if how == "range":
            return y[:, list(self.span)] * 2
        return y * GLOBAL_GAINS[0] * GLOBAL_GAINS[1]


F = torch.nn.functional


@pytest.mark.parametrize("how", ["class_held", "class_global", "class_attribute_settings", "slots", "named_tuple",
                                 "mapped_eps", "mapped_property", "list_of_settings", "attr_dict", "slice", "range",
                                 "global_list"])
def test_settings_kept_in_classes_slots_tuples_lists_and_global_lists_are_watched(how, monkeypatch):
    """Settings as a class's attributes (held, global, or a settings object on the module's class),
    a slots dataclass, a NamedTuple swapped by _replace, a config whose property or attribute map
    reads fields the model never names, settings objects in a list, an AttrDict, a slice or range
    attribute, and tensors in a global list: each change is seen, on the steady path too."""
    monkeypatch.setattr(_KaggleCfg, "scale", 1.0)
    monkeypatch.setattr(_KeptSettings.opts, "scale", 1.0)
    monkeypatch.setattr(sys.modules[__name__], "GLOBAL_GAINS", [torch.ones(4), torch.ones(4)])
    model = _KeptSettings(how)
    tm, x = tv.jit(model), torch.randn(3, 4) * 0.1
    changes = {
        "class_held": lambda i: setattr(_KaggleCfg, "scale", i + 2.0),
        "class_global": lambda i: setattr(_KaggleCfg, "scale", i + 2.0),
        "class_attribute_settings": lambda i: setattr(_KeptSettings.opts, "scale", i + 2.0),
        "slots": lambda i: setattr(model.slots, "scale", i + 2.0) if i % 2 else setattr(model, "slots", _SlotsCfg(9.0 + i)),
        "named_tuple": lambda i: setattr(model, "named", model.named._replace(scale=i + 2.0)),
        "mapped_eps": lambda i: setattr(model.mapped, "layer_norm_epsilon", 10.0 ** i),
        "mapped_property": lambda i: setattr(model.mapped, "torchscript", not model.mapped.torchscript),
        "list_of_settings": lambda i: setattr(model.layer_cfgs[1], "scale", i + 2.0),
        "attr_dict": lambda i: model.attr_dict.__setitem__("scale", i + 2.0),
        "slice": lambda i: setattr(model, "window", slice(i + 1, 4)),
        "range": lambda i: setattr(model, "span", range(i + 1)),
        "global_list": lambda i: GLOBAL_GAINS[0].mul_(2.0) if i % 2 else GLOBAL_GAINS.__setitem__(1, torch.full((4,), 3.0 + i)),
    }
    for i in range(3):
        for _ in range(3):  # the recording, the hit that makes the steady guard, the steady path
            with torch.no_grad():
                got, want = tm(x), model(x)
            assert type(got) is type(want)
            torch.testing.assert_close(got, want)
        changes[how](i)


def test_the_settings_of_every_block_of_a_deep_model_are_watched():
    """A LoRA-style `scaling` dict and an options object on each of 12 blocks: a change on the last
    block is seen (the modules' own tables are not counted among the settings the key holds)."""
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.scaling = {"default": 1.0}
            self.opts = types.SimpleNamespace(mult=1.0)

        def forward(self, x):
            return torch.tanh(self.lin(x)) * self.scaling["default"] * self.opts.mult

    torch.manual_seed(0)
    model = torch.nn.Sequential(*[Block() for _ in range(12)])
    tm, x = tv.jit(model), torch.randn(2, 4)
    for change in (lambda: model[-1].scaling.__setitem__("default", 3.0), lambda: setattr(model[-1].opts, "mult", 0.5),
                   lambda: setattr(model[-1], "scaling", {"default": 2.0})):
        change()
        for _ in range(2):
            with torch.no_grad():
                torch.testing.assert_close(tm(x), model(x))


def test_attributes_no_code_of_the_model_names_are_no_part_of_the_key():
    """A training loop's attributes on the model (`model._step = i`, a number on a torch layer) do
    not make every call record anew; an attribute a hook reads of its module is watched."""
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.head = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.head(x).tanh()

    model = Net()
    tm, x = tv.jit(model), torch.randn(2, 4)
    for step in range(6):
        model._step = step
        model.head.last_norm = float(step)
        with torch.no_grad():
            torch.testing.assert_close(tm(x), model(x))
    assert tm.cache_misses == 1
    model.head.scale = 2.0
    handle = model.head.register_forward_hook(lambda m, i, o: o * m.scale)
    for scale in (2.0, 3.0, 4.0):
        model.head.scale = scale
        for _ in range(2):
            with torch.no_grad():
                torch.testing.assert_close(tm(x), model(x))
    handle.remove()


class _ClassMask(torch.nn.Module):
    MASK = torch.ones(3)  # a tensor kept on the class

    def forward(self, x):
        return x * self.MASK


GLOBAL_STATS = types.SimpleNamespace(mean=torch.zeros(3))


class _GlobalStats(torch.nn.Module):
    def forward(self, x):
        return x - GLOBAL_STATS.mean


@pytest.mark.parametrize("where", ["class", "global_object"])
def test_tensors_kept_on_a_class_or_a_global_object_are_read_at_each_call(where, monkeypatch):
    monkeypatch.setattr(_ClassMask, "MASK", torch.ones(3))
    monkeypatch.setattr(GLOBAL_STATS, "mean", torch.zeros(3))
    model = _ClassMask() if where == "class" else _GlobalStats()
    tm, x = tv.jit(model), torch.ones(3)
    for i in range(3):
        torch.testing.assert_close(tm(x), model(x))
        (_ClassMask.MASK if where == "class" else GLOBAL_STATS.mean).add_(1.0)  # in place
    if where == "class":
        _ClassMask.MASK = torch.full((3,), 10.0)
    else:
        GLOBAL_STATS.mean = torch.full((3,), 10.0)
    torch.testing.assert_close(tm(x), model(x))


def test_a_global_module_hook_runs_once_and_a_list_reset_between_calls_is_the_one_appended_to():
    import operator
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    tm, x = tv.jit(model), torch.randn(2, 4)
    handle = torch.nn.modules.module.register_module_forward_hook(lambda mod, i, o: o + 1)
    try:
        for _ in range(2):
            torch.testing.assert_close(tm(x), model(x))
    finally:
        handle.remove()
    torch.testing.assert_close(tm(x), model(x))

    class Keeps(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.feats = []
            self.cfg = types.SimpleNamespace(scale=1.0)

        def forward(self, x):
            y = self.lin(x) * operator.attrgetter("cfg.scale")(self)
            self.feats.append(y)
            return y.relu()

    model = Keeps()
    tm = tv.jit(model)
    for step in range(3):
        model.feats = []
        model.cfg.scale = float(step + 1)
        got = tm(x)
        assert len(model.feats) == 1
        torch.testing.assert_close(got, model.lin(x).mul(step + 1).relu())


def _scaled_by_default(x, scale=1.0):
    return x * scale


def test_a_helpers_default_argument_and_the_thread_count_a_forward_reads_are_watched():
    class Reads(torch.nn.Module):
        def forward(self, x):
            y = _scaled_by_default(x)
            return y * 2 if torch.get_num_threads() > 1 else y

    model, x = Reads(), torch.randn(2, 3)
    tm, threads = tv.jit(model), torch.get_num_threads()
    try:
        for change in (lambda: None, lambda: setattr(_scaled_by_default, "__defaults__", (3.0,)),
                       lambda: torch.set_num_threads(2 if threads == 1 else 1)):
            change()
            for _ in range(3):
                torch.testing.assert_close(tm(x), model(x))
    finally:
        _scaled_by_default.__defaults__ = (1.0,)
        torch.set_num_threads(threads)


def test_a_hook_objects_list_and_counter_follow_eager():
    """The usual SaveOutput hook object (its list replaced by clear() between steps) collects each
    call's output in its current list; a hook object's counter counts every call."""
    class SaveOutput:
        def __init__(self):
            self.outputs = []

        def __call__(self, module, inputs, output):
            self.outputs.append(output)

        def clear(self):
            self.outputs = []

    class Counter:
        def __init__(self):
            self.n = 0

        def __call__(self, module, inputs, output):
            self.n += 1

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
    save, count = SaveOutput(), Counter()
    model[0].register_forward_hook(save)
    model[1].register_forward_hook(count)
    tm, x = tv.jit(model), torch.randn(2, 4)
    for step in range(3):
        save.clear()
        got = tm(x)
        assert len(save.outputs) == 1
        torch.testing.assert_close(save.outputs[0], model[0](x))
        torch.testing.assert_close(got, torch.tanh(model[0](x)))
    assert count.n == 3


def _affine(x, scale, shift):
    return x * scale + shift


def test_settings_passed_to_a_helper_as_keywords_are_watched():
    class Unpacks(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cfg = types.SimpleNamespace(scale=1.0, shift=0.0)

        def forward(self, x):
            return _affine(x, **vars(self.cfg))

    model, x = Unpacks(), torch.ones(3)
    tm = tv.jit(model)
    for step in range(3):
        for _ in range(2):
            torch.testing.assert_close(tm(x), model(x))
        model.cfg.scale = step + 2.0


_NINE_DEEP = {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"scale": 2.0}}}}}}}}
_LONG_TABLE = [1.0] * 3000
_SCALES = {"scale_0": 1.0, "scale_1": 2.0}


def test_values_read_by_a_built_name_deep_or_in_long_tables_are_watched():
    """What the key cannot spell by name or item by item is still a new recording when it changes:
    an attribute looked up by a name built at run time (of the module, of its config, absent at the
    recording and set later), a global dict's entry read by such a name, a number nine dicts deep (a
    module's and a global), an item of a list or numpy array of thousands (a module's and a global),
    a number kept in a list or tuple beside a module or tensor, and a default list the forward
    changes in place."""
    numpy = pytest.importorskip("numpy")

    class Reads(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for k in range(2):
                setattr(self, f"alpha_{k}", 1.0 + k)
            self.cfg = types.SimpleNamespace(**{f"w_{k}": 1.0 for k in range(2)})
            self.deep = {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"scale": 1.0}}}}}}}}
            self.table = [1.0] * 2000
            self.anchors = numpy.ones(5000, dtype=numpy.float32)
            self.mixed = [2.0, torch.nn.Linear(3, 3)]  # a number beside a module, and beside a tensor
            self.pair = (1.0, torch.ones(3))

        def forward(self, x):
            for k in range(2):
                x = x * getattr(self, f"alpha_{k}") * getattr(self.cfg, f"w_{k}")
            x = x * getattr(self, "ex" + "tra", 1.0)
            x = x * self.deep["a"]["b"]["c"]["d"]["e"]["f"]["g"]["scale"]
            x = x * _NINE_DEEP["a"]["b"]["c"]["d"]["e"]["f"]["g"]["scale"]
            x = x * self.table[7] * _LONG_TABLE[7]
            for k in range(2):
                x = x * _SCALES[f"scale_{k}"]
            x = self.mixed[1](x) * self.mixed[0] + self.pair[1] * self.pair[0]
            return x * float(self.anchors[9])

    model, x = Reads(), torch.randn(2, 3)
    tm = tv.jit(model)
    changes = [lambda: None,
               lambda: setattr(model, "alpha_1", 5.0),
               lambda: setattr(model.cfg, "w_1", 3.0),
               lambda: setattr(model, "ex" + "tra", 7.0),
               lambda: model.deep["a"]["b"]["c"]["d"]["e"]["f"]["g"].update(scale=0.5),
               lambda: _NINE_DEEP["a"]["b"]["c"]["d"]["e"]["f"]["g"].update(scale=3.0),
               lambda: model.table.__setitem__(7, 4.0),
               lambda: _LONG_TABLE.__setitem__(7, 0.25),
               lambda: model.anchors.__setitem__(9, 6.0),
               lambda: _SCALES.__setitem__("scale_1", 5.0),
               lambda: model.mixed.__setitem__(0, 3.0),
               lambda: setattr(model, "pair", (4.0, model.pair[1]))]
    try:
        for change in changes:
            change()
            for _ in range(2):
                torch.testing.assert_close(tm(x), model(x))
    finally:
        _NINE_DEEP["a"]["b"]["c"]["d"]["e"]["f"]["g"]["scale"] = 2.0
        _LONG_TABLE[7] = 1.0
        _SCALES["scale_1"] = 2.0

    class Counts(torch.nn.Module):
        def forward(self, x, seen=[0.0]):  # noqa: B006 (the pattern under test)
            seen[0] += 1.0
            return x * seen[0]

    tm, seen = tv.jit(Counts()), Counts.forward.__defaults__[0]
    for step in range(3):
        torch.testing.assert_close(tm(x), x * seen[0])
    assert seen[0] == 3.0


def _factory_model():
    cfg = {"scale": 1.0}

    def head(x):
        return x * cfg["scale"]

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)

        def forward(self, x):
            return head(self.lin(x))
    return Net(), cfg


class _Scaler:
    def __init__(self):
        self.k = 1.0

    def hook(self, module, inputs, output):
        return output * self.k


def test_a_helpers_closure_a_bound_method_hooks_object_a_patched_forward_and_mkldnn_are_watched():
    """Each changes between calls and the next call follows eager: a dict in the closure of a helper
    whose frame runs before its caller names it, the object a bound-method hook reads (`scaler.hook`
    reading `self.k`), a submodule's forward replaced on the instance, and torch.backends.mkldnn."""
    torch.manual_seed(0)
    model, cfg = _factory_model()
    scaler = _Scaler()
    model.lin.register_forward_hook(scaler.hook)
    tm, x = tv.jit(model), torch.randn(2, 4)
    lin = model.lin
    changes = [lambda: None, lambda: cfg.update(scale=3.0), lambda: setattr(scaler, "k", 2.0),
               lambda: setattr(lin, "forward", lambda v: torch.nn.functional.linear(v, lin.weight, lin.bias) * 5.0),
               lambda: setattr(lin, "forward", lambda v: torch.nn.functional.linear(v, lin.weight, lin.bias) * 7.0)]
    for change in changes:
        change()
        for _ in range(2):
            torch.testing.assert_close(tm(x), model(x))

    class Branches(torch.nn.Module):
        def forward(self, x):
            return x * (1.0 if torch.backends.mkldnn.enabled else 3.0)

    tm, enabled = tv.jit(Branches()), torch.backends.mkldnn.enabled
    try:
        for flag in (True, False, True):
            torch.backends.mkldnn.enabled = flag
            torch.testing.assert_close(tm(x), Branches()(x))
    finally:
        torch.backends.mkldnn.enabled = enabled


def test_a_bool_filled_tensor_is_bool():
    """torch.full(shape, True) is a bool tensor (a causal mask made so, then inverted)."""
    class Masks(torch.nn.Module):
        def forward(self, x):
            keep = torch.full((x.shape[0], x.shape[0]), True).tril()
            return x.unsqueeze(0).expand(x.shape[0], -1, -1).sum(-1).masked_fill(~keep, 0.0), ~keep

    x = torch.randn(3, 2)
    got, want = tv.jit(Masks())(x), Masks()(x)
    assert got[1].dtype == torch.bool
    torch.testing.assert_close(got, want)


@dataclasses.dataclass
class _Batch:
    x: torch.Tensor
    scale: float = 2.0
    out: typing.Optional[torch.Tensor] = None


class _TakesBatches(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, batch, store=None):
        x, scale = (batch.x, batch.scale) if isinstance(batch, _Batch) else (batch["x"], batch["scale"])
        y = self.lin(x) * scale
        if store is not None:  # what a feature-matching loss collects
            store.append(y)
        return y


def test_a_batch_as_a_dataclass_or_userdict_and_containers_the_forward_changes_follow_eager():
    """A batch passed as a dataclass or a UserDict (Hugging Face's BatchEncoding is one) is flattened
    as a dict is: its tensors are inputs, its numbers part of the key. A list the call passes and
    the forward appends to gets this call's tensor at every call (each such call records)."""
    torch.manual_seed(0)
    model = _TakesBatches()
    tm = tv.jit(model)
    for make in (lambda x, s: _Batch(x, s), lambda x, s: collections.UserDict(x=x, scale=s)):
        for scale in (2.0, 2.0, 3.0):
            x = torch.randn(2, 4)
            torch.testing.assert_close(tm(make(x, scale)), model(make(x, scale)))

    def run(module):
        store = []
        out = module(_Batch(torch.ones(2, 4)), store)
        return out, store

    with pytest.warns(UserWarning, match="every call records"):
        for _ in range(3):
            (got, mine), (want, theirs) = run(tm), run(model)
            assert len(mine) == len(theirs) == 1
            torch.testing.assert_close(mine[0], theirs[0])
            torch.testing.assert_close(got, want)


class _TwoHeads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 4)
        self.main = torch.nn.Linear(4, 2)
        self.aux = torch.nn.Linear(4, 3)

    def forward(self, x):
        z = torch.relu(self.body(x))
        return self.main(z), self.aux(z)


@pytest.mark.parametrize("timed", [False, True], ids=["engine_node", "python_bridge"])
def test_a_parameter_only_an_unused_output_reaches_gets_no_gradient_as_in_eager(timed):
    """A loss of the main logits only: the aux head's parameters keep grad None, as in eager (zeros
    would move them under AdamW's weight decay); the shared body gets its gradient."""
    torch.manual_seed(0)
    model = _TwoHeads()
    reference = copy.deepcopy(model)
    tm = tv.jit(model)
    tm.timing = timed
    mine = torch.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.1)
    theirs = torch.optim.AdamW(reference.parameters(), lr=0.1, weight_decay=0.1)
    for _ in range(3):
        x = torch.randn(5, 4)
        mine.zero_grad(), theirs.zero_grad()
        tm(x)[0].pow(2).sum().backward()
        reference(x)[0].pow(2).sum().backward()
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            assert (p.grad is None) == (q.grad is None), name
            if q.grad is not None:
                torch.testing.assert_close(p.grad, q.grad)
        mine.step(), theirs.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q)
    mine.zero_grad(set_to_none=True)
    tm(x)[1].sum().backward()  # the other head then gets its gradient
    assert model.aux.weight.grad is not None and model.main.weight.grad is None


def test_what_a_forward_reads_of_its_inputs_metadata_is_keyed_or_recorded_every_call():
    """Strides (a branch on channels_last or x.stride(); a reshape that is a view for one layout and
    a copy for another), whether an input that requires grad is a leaf, and its class are part of the
    key; a read of x.storage_offset() or x._version, which no key holds, records every call."""
    lin = torch.nn.Linear(4, 4)

    def check(fn, first, second):
        class Reads(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = lin

            def forward(self, x):
                return fn(self, x)
        tm = tv.jit(Reads())
        for x in (first, second, first):
            torch.testing.assert_close(tm(x), Reads()(x))

    base = torch.randn(6, 4)
    with pytest.warns(UserWarning, match="every call"):
        check(lambda s, x: s.lin(x) * (1 + x.storage_offset()), base[0:2], base[2:4])
    check(lambda s, x: s.lin(x) * (2 if x.is_leaf else 1), torch.randn(2, 4, requires_grad=True),
          torch.randn(2, 4, requires_grad=True) * 1)
    check(lambda s, x: s.lin(x) * (2 if isinstance(x, torch.nn.Parameter) else 1),
          torch.nn.Parameter(torch.randn(2, 4)), torch.randn(2, 4, requires_grad=True))
    check(lambda s, x: s.lin(x) * (2 if x.stride()[0] == 1 else 1), torch.randn(4, 3).t(), torch.randn(3, 8)[:, ::2])


class _TwoOutputs(torch.nn.Module):
    def __init__(self, pick):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.pick = pick

    def forward(self, x):
        return self.pick(self.lin(x))


@pytest.mark.parametrize("pick", [lambda h: (h, h[:, 0]), lambda h: (h, h.transpose(0, 1)),
                                  lambda h: (h.transpose(0, 1), h[0]), lambda h: (h.sum(0), h.sum(0).unsqueeze(0)),
                                  lambda h: (h, h.narrow(-1, -3, 2))],
                         ids=["token", "transposed", "two_views", "two_same_sums", "narrowed"])
def test_outputs_share_memory_as_eagers_do_for_values_and_autograd(pick):
    """The caller scales the second output in place and differentiates through the first: where it is
    a view of the first (a class token, a transpose, two views of one tensor) the write is part of
    the first's history, as in eager; where eager made two tensors (the same sum twice, which CSE
    merges) the first is left as it was."""
    torch.manual_seed(0)
    model = _TwoOutputs(pick)
    reference = copy.deepcopy(model)
    tm = tv.jit(model)
    for _ in range(3):
        x = torch.randn(3, 4)
        (h, token), (h_ref, token_ref) = tm(x), reference(x)
        token.mul_(3.0), token_ref.mul_(3.0)
        torch.testing.assert_close(h, h_ref)
        h.pow(2).sum().backward(), h_ref.pow(2).sum().backward()
        for p, q in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad)
            p.grad = q.grad = None


def test_an_lstm_with_dropout_between_layers_draws_as_eager_and_is_refused_with_grad():
    """Its dropout draws from torch's generator (no eager twin to check a first call against): under
    no_grad the same seed gives eager's masks. With grad it is refused: the ATen fallback's backward
    runs the operator again, which would draw other masks."""
    torch.manual_seed(0)
    model = torch.nn.LSTM(4, 5, num_layers=2, dropout=0.3)
    tm, x = tv.jit(model), torch.randn(3, 2, 4)
    with torch.no_grad():
        for seed in range(3):
            torch.manual_seed(seed)
            got = tm(x)[0]
            torch.manual_seed(seed)
            torch.testing.assert_close(got, model(x)[0])
    with pytest.raises(tv.UnsupportedOp, match="gradient depends on its random draws"):
        tm(x)


def test_seeding_torch_inside_forward_is_refused():
    """The engine's draws come from the generator's state when a call starts: a forward that seeds
    (to fix its noise) is refused naming the line, where it would repeat other noise than eager's."""
    class Seeds(torch.nn.Module):
        def forward(self, x):
            torch.manual_seed(0)
            return x + torch.rand_like(x)

    with pytest.raises(tv.UnsupportedOp, match=r"torch.manual_seed inside forward"):
        tv.jit(Seeds())(torch.zeros(3))


def test_smooth_l1_of_beta_zero_differentiates_a_tie_as_eager():
    """beta=0 is an L1 loss whose gradient where the input equals the target is eager's: -1 in torch
    1.13 (its kernel tests d <= -beta first), 0 in torch 2 (whose functional calls l1_loss)."""
    class Loss(torch.nn.Module):
        def forward(self, x, target):
            return torch.nn.functional.smooth_l1_loss(x, target, beta=0.0, reduction="none")

    x, target = torch.tensor([0.0, 1.0, -1.0]), torch.zeros(3)
    grads = []
    for module in (Loss(), tv.jit(Loss())):
        a = x.clone().requires_grad_()
        module(a, target).sum().backward()
        grads.append(a.grad)
    torch.testing.assert_close(grads[1], grads[0])
    torch.testing.assert_close(grads[0][1:], torch.tensor([1.0, -1.0]))


@pytest.mark.parametrize("timed", [False, True], ids=["engine_node", "python_bridge"])
def test_a_backward_that_keeps_the_graph_allows_another_as_in_eager(timed):
    """backward(retain_graph=True), then another backward through the same call (two losses of one
    forward, a GAN's discriminator and generator losses): the gradients add up as eager's."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    reference = copy.deepcopy(model)
    tm = tv.jit(model)
    tm.timing = timed
    for _ in range(2):
        x = torch.randn(3, 4)
        for module in (tm, reference):
            y = module(x)
            y[:, 0].sum().backward(retain_graph=True)
            y[:, 1].pow(2).sum().backward()
        for p, q in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad)
    y = tm(x)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="second time|twice"):
        y.sum().backward()  # (as eager's: the first freed what the second needs)


class _ReturnsItsBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("stat", torch.zeros(4))
        self.register_buffer("cos", torch.randn(8, 4))

    def forward(self, x):
        with torch.no_grad():
            self.stat.mul_(0.5).add_(x.mean(0))
        return self.lin(x), self.stat, self.cos[:8]  # (all of the rotary cache: the buffer's own memory)


@pytest.mark.parametrize("timed", [False, True], ids=["engine_node", "python_bridge"])
def test_a_buffer_returned_as_it_is_stays_a_buffer(timed):
    """A forward returning its buffer (a statistic, the whole of a rotary cache) leaves it as eager
    does: not requiring grad, so that the next call's inputs are as recorded."""
    torch.manual_seed(0)
    model = _ReturnsItsBuffer()
    reference = copy.deepcopy(model)
    tm = tv.jit(model)
    tm.timing = timed
    for _ in range(3):
        x = torch.randn(3, 4)
        got, want = tm(x), reference(x)
        torch.testing.assert_close(got, want)
        assert not model.stat.requires_grad and not model.cos.requires_grad
        assert [t.requires_grad for t in got] == [t.requires_grad for t in want]
        got[0].sum().backward(), want[0].sum().backward()
    torch.testing.assert_close(model.stat, reference.stat)


_ABLATE = False


def _ablating_hook(module, inputs, output):
    if _ABLATE:  # (no torch call while off: no frame of it is seen)
        return output * 0.0


def test_what_a_hook_that_makes_no_torch_call_reads_is_watched():
    """A forward hook switched by a global flag (an ablation): turned on after a recording made with
    it off, the next call follows eager."""
    global _ABLATE
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    model[1].register_forward_hook(_ablating_hook)
    tm, x = tv.jit(model), torch.randn(3, 4)
    try:
        for flag in (False, False, True, True, False):
            _ABLATE = flag
            torch.testing.assert_close(tm(x), model(x))
    finally:
        _ABLATE = False


def test_state_updating_fallbacks_with_grad_and_cached_parametrizations_are_refused():
    """QAT's fused fake quantization updates its observer's buffers: its ATen fallback's backward
    would run it again on the updated values (another clamp mask), so with grad it is refused, and
    runs as eager under no_grad. A parametrized module inside parametrize.cached() is refused (eager
    computes the weight once in the block); outside it, it runs as eager."""
    quant = pytest.importorskip("torch.ao.quantization")

    class FakeQuantized(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(8))
            self.fq = quant.FusedMovingAvgObsFakeQuantize(averaging_constant=0.5, quant_min=0, quant_max=255)

        def forward(self, x):
            return self.fq(x * self.w)

    model = FakeQuantized()
    reference = copy.deepcopy(model)
    with pytest.raises(tv.UnsupportedOp, match="updates the buffer 'fq.activation_post_process.min_val'"):
        tv.jit(model)(torch.linspace(-1, 1, 8))
    with torch.no_grad():
        tm = tv.jit(model)
        for step in range(3):
            x = torch.linspace(-1, 1, 8) * (1 + step)
            torch.testing.assert_close(tm(x), reference(x))
        torch.testing.assert_close(model.fq.scale, reference.fq.scale)

    parametrize = torch.nn.utils.parametrize
    torch.manual_seed(0)
    linear = torch.nn.Linear(4, 4, bias=False)
    torch.nn.utils.parametrizations.spectral_norm(linear)
    reference = copy.deepcopy(linear)
    tm, x = tv.jit(linear), torch.randn(3, 4)
    torch.testing.assert_close(tm(x), reference(x))
    with pytest.raises(tv.UnsupportedOp, match=r"parametrize.cached\(\)"), parametrize.cached():
        tm(x)
    torch.testing.assert_close(tm(x), reference(x))


class _ReturnsItsInput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.b1 = torch.nn.Parameter(torch.zeros(3))
        self.b2 = torch.nn.Parameter(torch.zeros(3))

    def forward(self, x):
        return x, self.lin(x) + self.b1 + self.b2


def test_a_returned_input_is_the_callers_tensor_and_gradient_hooks_edit_their_own_gradient():
    """An input returned as it is comes back as the caller's tensor itself (a hook on it, or a
    gradient with respect to it, sees every path, as in eager); a parameter hook that edits its
    gradient in place (clamp_, mul_) changes that parameter's only, where the engine's backward gave
    two parameters one tensor."""
    torch.manual_seed(0)
    model = _ReturnsItsInput()
    reference = copy.deepcopy(model)
    for m in (model, reference):
        m.b1.register_hook(lambda g: g.mul_(2))
    tm = tv.jit(model)
    for _ in range(3):
        x = torch.randn(2, 4, requires_grad=True)
        y = x.detach().clone().requires_grad_()
        (same, out), (same_ref, out_ref) = tm(x), reference(y)
        assert same is x
        same.register_hook(lambda g: g * 10), same_ref.register_hook(lambda g: g * 10)
        (same.sum() + out.sum()).backward(), (same_ref.sum() + out_ref.sum()).backward()
        torch.testing.assert_close(x.grad, y.grad)
        for p, q in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad)
            p.grad = q.grad = None


class _WritesItsInput(torch.nn.Module):
    def __init__(self, how):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4))
        self.how = how

    def forward(self, x):
        if self.how == "twice":  # (a plain input that the first write makes carry a gradient)
            x.mul_(self.w)
            x.add_(self.w)
            return x * 2
        if self.how == "no_grad":  # (x's history is kept: later reads differentiate to it)
            with torch.no_grad():
                x.add_(1.0)
            return x * self.w
        if self.how == "data":
            x.data.mul_(2.0)
            return x * self.w
        if self.how == "scale":
            x.mul_(2)
            return x
        if self.how == "layer_scale":  # (timm's in-place LayerScale: gamma's gradient goes through x)
            return x.mul_(self.w)
        x.mul_(self.w)
        return x.view(-1), x.detach(), x.sum(0)  # (a view of the caller's tensor, a detached one)


@pytest.mark.parametrize("how", ["scale", "layer_scale", "twice", "no_grad", "data", "views"])
@pytest.mark.parametrize("activation", [False, True], ids=["plain", "activation"])
def test_inputs_written_in_forward_give_eagers_values_and_gradients(how, activation):
    """The forward writes its input in place; the caller then reads it beside the outputs and
    backpropagates through both: values and gradients (of the input's own history too) as eager's.
    The engine's call writes it once, with the write's history, on the recording call and after it,
    and the write's backward reads the value before it."""
    if how == "twice" and activation:
        pytest.skip("eager itself refuses: x is read by mul_'s backward after add_ wrote it")
    torch.manual_seed(0)
    model = _WritesItsInput(how)
    reference = copy.deepcopy(model)
    tm = tv.jit(model)
    for _ in range(3):
        a = torch.randn(3, 4, requires_grad=True)
        b = a.detach().clone().requires_grad_()
        x, y = (a * 1.5, b * 1.5) if activation else (a.detach().clone(), b.detach().clone())
        got, want = tm(x), reference(y)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(x, y)
        got, want = (got,) if isinstance(got, torch.Tensor) else got, (want,) if isinstance(want, torch.Tensor) else want
        assert [t.requires_grad for t in got] == [t.requires_grad for t in want]
        loss = lambda outs, inp: sum(t.pow(2).sum() for t in outs if t.requires_grad) + inp.sin().sum() * inp.requires_grad
        mine, theirs = loss(got, x), loss(want, y)
        assert mine.requires_grad == theirs.requires_grad
        if mine.requires_grad:  # (a plain input scaled: nothing carries a gradient)
            mine.backward(), theirs.backward()
        torch.testing.assert_close(model.w.grad, reference.w.grad)
        if activation:
            torch.testing.assert_close(a.grad, b.grad)
        model.w.grad = reference.w.grad = None


def test_inputs_sharing_memory_written_in_place_are_refused():
    class Writes(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(4))

        def forward(self, x, y):
            x.mul_(self.w)
            return x + y

    b = torch.randn(4, 4, requires_grad=True) * 1.0
    with pytest.raises(tv.UnsupportedOp):
        tv.jit(Writes())(b[:3], b[1:])


class _ReadsThroughContainers(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(4))
        self.b = torch.nn.Parameter(torch.randn(4))
        self.kind = kind
        self.ws, self.mixed, self.table, self.cfg = [self.a], [2.0, self.a], {"w": self.a}, types.SimpleNamespace(w=self.a)

    def forward(self, x):
        return x * {"list": lambda: self.ws[0], "mixed": lambda: self.mixed[1], "dict": lambda: self.table["w"],
                    "namespace": lambda: self.cfg.w}[self.kind]()


@pytest.mark.parametrize("kind", ["list", "mixed", "dict", "namespace"])
def test_a_parameter_read_through_a_container_is_the_one_there_now(kind):
    """The place is pointed at another of the module's parameters between calls: the next call reads
    that one (its gradient too)."""
    torch.manual_seed(0)
    model = _ReadsThroughContainers(kind)
    tm, x = tv.jit(model), torch.randn(3, 4)
    tm(x).sum().backward()
    model.ws[0] = model.mixed[1] = model.table["w"] = model.cfg.w = model.b
    model.zero_grad(set_to_none=True)
    got = tm(x)
    torch.testing.assert_close(got, x * model.b)
    got.sum().backward()
    assert model.a.grad is None
    torch.testing.assert_close(model.b.grad, x.sum(0))


def test_an_expanded_or_strided_input_records_through_its_copy():
    """The recording's copy of an input keeps its strides and offset, an expanded one's too (its
    elements overlap): values and the gradient of the tensor it was expanded from are eager's."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    tm = tv.jit(model)
    for _ in range(2):
        a = torch.randn(1, 4, requires_grad=True)
        b = a.detach().clone().requires_grad_()
        got, want = tm((a * 2).expand(3, 4)), model((b * 2).expand(3, 4))
        torch.testing.assert_close(got, want)
        got.sum().backward(), want.sum().backward()
        torch.testing.assert_close(a.grad, b.grad)
        x = torch.randn(6, 4)[1::2]
        torch.testing.assert_close(tm(x), model(x))


def test_a_lazy_module_not_yet_run_is_refused_then_follows_eager_once_run():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.LazyLinear(4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    with pytest.raises(tv.UnsupportedOp, match="uninitialised parameter or buffer '0.weight'.*run one forward"):
        tv.jit(model)(torch.randn(3, 5))
    model(torch.randn(1, 5))  # gives LazyLinear its weight
    check_against_eager(model, torch.randn(3, 5))


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.backbone(x))


backbone = None  # the training script's global, named as the attribute forward reads


def test_a_global_holding_the_jitted_module_named_like_an_attribute_keeps_one_entry():
    global backbone
    backbone = tv.jit(Classifier())
    opt = torch.optim.SGD(backbone.parameters(), lr=0.1)
    for _ in range(5):
        opt.zero_grad()
        backbone(torch.randn(3, 4)).sum().backward()
        opt.step()
    assert (backbone.cache_misses, backbone.cache_hits) == (1, 4)
    backbone.eval()  # its mode is still watched
    backbone(torch.randn(3, 4))
    assert backbone.cache_misses == 2


def test_an_fx_graph_module_records_once_and_its_graph_is_no_setting():
    # (its fx Graph's nodes, shared along the chain, were walked as settings objects: exponential)
    torch.manual_seed(0)
    chain = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh()) for _ in range(24)])
    traced = torch.fx.symbolic_trace(chain)
    check_against_eager(traced, torch.randn(2, 4))
    tm = tv.jit(traced)
    for _ in range(3):
        tm(torch.randn(2, 4))
    assert (tm.cache_misses, tm.cache_hits) == (1, 2)


@dataclasses.dataclass
class ClassifierOutput:
    logits: torch.Tensor
    loss: torch.Tensor = dataclasses.field(init=False)  # set only when labels are given

    def __post_init__(self):
        self.probs = self.logits.softmax(-1)  # an attribute that is no field


def test_a_dataclass_output_keeps_attributes_that_are_no_fields_and_leaves_unset_fields_unset():
    model = After(lambda y, m: ClassifierOutput(y))
    x = torch.randn(2, 4)
    tm = tv.jit(model)
    for _ in range(2):
        got, want = tm(x), model(x)
        assert sorted(vars(got)) == sorted(vars(want)) == ["logits", "probs"]
        torch.testing.assert_close(got.probs, want.probs)


def test_a_value_computed_from_constants_alone_is_read_as_a_constant_one_from_the_input_is_refused():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    # torchvision's Normalize checks `if (std == 0).any():` on a tensor made from its Python list
    model = torch.nn.Sequential(torchvision.transforms.Normalize([0.5, 0.4, 0.3], [0.2, 0.3, 0.25]),
                                torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(144, 2))
    check_against_eager(model, torch.randn(2, 3, 8, 8))
    with pytest.raises(tv.UnsupportedOp, match="value read into Python"):
        tv.jit(After(lambda y, m: y * 2 if (y > 0).any() else y))(torch.randn(3, 4))
