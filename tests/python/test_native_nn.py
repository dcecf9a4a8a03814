"""Neural-network layers recorded as the engine's own ops (group_norm, instance_norm,
conv_transpose1d/2d/3d, lstm, gru, smooth_l1_loss, binary_cross_entropy(_with_logits),
cross_entropy with label_smoothing, a class weight, every reduction and logits [N, C, ...]), each run
through thunder_viz.jit against eager torch (outputs, gradients, buffers, SGD steps) and recorded
natively: the op is in the trace and no ATen fallback is."""
import copy
import os
import sys

import pytest
import torch
import torch.nn.functional as F

import thunder_viz as tv

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from harness import broken_float32_convolution_backward, check_against_eager  # noqa: E402


def check_native(model, symbols, *inputs, **keywords):
    """The model against eager; its trace calls each of `symbols` and no ATen operator."""
    tm = check_against_eager(model, *inputs, **keywords)
    text = str(tv.last_traces(tm)[0])
    for symbol in symbols:
        assert symbol + "(" in text, f"{symbol} is not recorded:\n{text}"
    assert "torch.ops.aten." not in text, f"an ATen fallback is recorded:\n{text}"
    return tm


class Norms(torch.nn.Module):
    def __init__(self, norm):
        super().__init__()
        self.lin = torch.nn.Linear(5, 5)
        self.norm = norm

    def forward(self, x):
        return self.norm(self.lin(x)) * 2.0


def test_group_norm_module_and_functional():
    check_native(Norms(torch.nn.GroupNorm(2, 6)), ["ltorch.group_norm"], torch.randn(3, 6, 4, 5))
    check_native(Norms(torch.nn.GroupNorm(3, 6, affine=False, eps=1e-3)), ["ltorch.group_norm"], torch.randn(2, 6, 5))


class FunctionalGroupNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4))

    def forward(self, x):
        return F.group_norm(x, 4, weight=self.weight)


def test_group_norm_one_channel_per_group_weight_only():
    check_native(FunctionalGroupNorm(), ["ltorch.group_norm"], torch.randn(2, 4, 3, 3))


def test_instance_norm_with_input_statistics():
    check_native(Norms(torch.nn.InstanceNorm1d(4, affine=True)), ["ltorch.instance_norm"], torch.randn(3, 4, 5))
    check_native(Norms(torch.nn.InstanceNorm2d(4)), ["ltorch.instance_norm"], torch.randn(2, 3, 4, 5))


def test_instance_norm_with_running_statistics_in_training_and_eval():
    model = Norms(torch.nn.InstanceNorm1d(4, affine=True, track_running_stats=True, momentum=0.3))
    check_native(model, ["ltorch.instance_norm"], torch.randn(3, 4, 5))  # the buffers are compared too
    check_native(model.eval(), ["ltorch.instance_norm"], torch.randn(3, 4, 5))


class ConvTransposes(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up1 = torch.nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.up2 = torch.nn.ConvTranspose2d(4, 3, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), bias=False)
        self.up3 = torch.nn.ConvTranspose3d(2, 2, 2, stride=2)

    def forward(self, x1, x2, x3):
        return self.up1(x1), self.up2(x2), self.up3(x3), F.conv_transpose2d(x2, self.up2.weight, stride=3,
                                                                            output_padding=2)


def test_conv_transpose_1d_2d_3d():
    if why := broken_float32_convolution_backward():
        pytest.skip(why)
    check_native(ConvTransposes(), ["ltorch.conv_transpose1d", "ltorch.conv_transpose2d", "ltorch.conv_transpose3d"],
                 torch.randn(2, 4, 5), torch.randn(2, 4, 4, 5), torch.randn(1, 2, 2, 3, 2))


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("options", [
    dict(num_layers=2, batch_first=True),
    dict(bidirectional=True),
    dict(num_layers=2, bidirectional=True, bias=False),
])
def test_recurrent_layers(kind, options):
    layer = getattr(torch.nn, kind)(4, 3, **options)
    x = torch.randn(2, 5, 4) if options.get("batch_first") else torch.randn(5, 2, 4)
    check_native(layer, ["ltorch." + kind.lower()], x)


class WithInitialState(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.rnn = getattr(torch.nn, kind)(4, 3, num_layers=2, dropout=0.5)  # dropout off in eval
        self.h0 = torch.nn.Parameter(torch.randn(2, 2, 3))
        self.c0 = torch.nn.Parameter(torch.randn(2, 2, 3))

    def forward(self, x):
        out, state = self.rnn(x, (self.h0, self.c0) if self.kind == "LSTM" else self.h0)
        return out, state


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_layers_with_initial_state_in_eval(kind):
    check_native(WithInitialState(kind).eval(), ["ltorch." + kind.lower()], torch.randn(3, 2, 4))


class Losses(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("weight", torch.rand(4) + 0.5)
        self.register_buffer("pos_weight", torch.rand(4) + 0.5)

    def forward(self, x, y, t):
        h = self.lin(x)
        p = torch.sigmoid(h)
        return (F.smooth_l1_loss(h, y), F.smooth_l1_loss(h, y, reduction="none", beta=0.5),
                F.smooth_l1_loss(h, y, reduction="sum", beta=0.0),
                F.binary_cross_entropy(p, t), F.binary_cross_entropy(p, t, weight=self.weight, reduction="sum"),
                torch.nn.BCELoss(reduction="none")(p, t),
                F.binary_cross_entropy_with_logits(h, t),
                F.binary_cross_entropy_with_logits(h, t, weight=self.weight, pos_weight=self.pos_weight,
                                                   reduction="none"),
                torch.nn.BCEWithLogitsLoss(pos_weight=self.pos_weight, reduction="sum")(h, t))


def test_losses():
    check_native(Losses(), ["ltorch.smooth_l1_loss", "ltorch.binary_cross_entropy",
                            "ltorch.binary_cross_entropy_with_logits"],
                 torch.randn(6, 4), torch.randn(6, 4) * 2, torch.rand(6, 4))


class SmoothedCrossEntropy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 5)

    def forward(self, x, y):
        logits = self.lin(x)
        return (F.cross_entropy(logits, y, label_smoothing=0.1),
                torch.nn.CrossEntropyLoss(ignore_index=2, label_smoothing=0.4)(logits, y))


def test_cross_entropy_label_smoothing():
    y = torch.tensor([0, 2, 4, 1, 2, 3])
    check_native(SmoothedCrossEntropy(), ["ltorch.cross_entropy"], torch.randn(6, 4), y)


class WeightedCrossEntropy(torch.nn.Module):
    """cross_entropy as classifiers with imbalanced classes and segmenters call it: a class weight
    (a buffer), every reduction, ignore_index, label smoothing, and logits [N, C, L]."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 5)
        self.register_buffer("class_weight", torch.tensor([0.5, 2.0, 1.0, 3.0, 0.25]))

    def forward(self, x, y, y_seq):
        logits = self.lin(x)
        per_position = self.lin(x.reshape(2, 3, 4)).transpose(1, 2)  # [2, 5, 3]: classes on dim 1
        w = self.class_weight
        return (F.cross_entropy(logits, y, weight=w),
                F.cross_entropy(logits, y, weight=w, reduction="sum", ignore_index=2),
                F.cross_entropy(logits, y, weight=w, reduction="none", label_smoothing=0.2),
                torch.nn.CrossEntropyLoss(weight=w, ignore_index=4, label_smoothing=0.3)(logits, y),
                F.cross_entropy(logits, y, reduction="none", ignore_index=0),
                F.cross_entropy(per_position, y_seq),
                F.cross_entropy(per_position, y_seq, weight=w, reduction="sum", label_smoothing=0.1),
                F.nll_loss(F.log_softmax(logits, 1), y, weight=w, ignore_index=1),
                torch.nn.NLLLoss(weight=w, reduction="none")(F.log_softmax(per_position, 1), y_seq))


def test_cross_entropy_weight_reductions_and_positions():
    y = torch.tensor([0, 2, 4, 1, 2, 3])
    check_native(WeightedCrossEntropy(), ["ltorch.cross_entropy", "ltorch.nll_loss"], torch.randn(6, 4), y, y.reshape(2, 3))


class SoftTargets(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 5)

    def forward(self, x, p):
        return F.cross_entropy(self.lin(x), p)


class SoftTargetsSpatial(torch.nn.Module):
    def __init__(self, **loss):
        super().__init__()
        self.lin = torch.nn.Linear(3, 5)
        self.register_buffer("weight", loss.pop("weight", None))
        self.loss = loss

    def forward(self, x, p):  # logits [N, C, H, W] from x [N, H, W, 3]
        return F.cross_entropy(self.lin(x).permute(0, 3, 1, 2), p, weight=self.weight, **self.loss)


def test_cross_entropy_of_class_probabilities_is_native():
    tm = check_against_eager(SoftTargets(), torch.randn(6, 4), torch.softmax(torch.randn(6, 5), 1))
    assert "ltorch.cross_entropy(" in str(tv.last_traces(tm)[0])


@pytest.mark.parametrize("loss", [
    {},
    {"reduction": "sum"},
    {"reduction": "none"},
    {"label_smoothing": 0.2},
    {"weight": torch.rand(5) + 0.1, "label_smoothing": 0.1},
    {"weight": torch.rand(5) + 0.1, "reduction": "none"},
], ids=["mean", "sum", "none", "smoothing", "weight_smoothing", "weight_none"])
def test_cross_entropy_of_class_probabilities_per_position_matches_eager(loss):
    torch.manual_seed(0)
    p = torch.softmax(torch.randn(2, 5, 3, 3), 1)
    tm = check_against_eager(SoftTargetsSpatial(**dict(loss)), torch.randn(2, 3, 3, 3), p)
    assert "ltorch.cross_entropy(" in str(tv.last_traces(tm)[0])


class Clipped(torch.nn.Module):
    """ReLU6 in place (mobilenet's), nn.Hardtanh, F.relu6 and F.hardtanh."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.relu6 = torch.nn.ReLU6(inplace=True)
        self.hardtanh = torch.nn.Hardtanh(-0.5, 0.5)

    def forward(self, x):
        y = self.lin(x) + x
        return self.relu6(y * 1.0) + self.hardtanh(y) + F.relu6(y) + F.hardtanh(y, -2.0, 2.0)


def test_relu6_and_hardtanh_with_eagers_gradient_at_the_bounds():
    """hardtanh's gradient is zero where the input equals a bound (clamp's is not): inputs set so that
    y = lin(x) + x sits exactly on 0, 6, -0.5, 0.5, -2 and 2."""
    torch.manual_seed(0)
    model = Clipped()
    with torch.no_grad():
        model.lin.weight.zero_()
        model.lin.bias.zero_()
    x = torch.tensor([[0.0, 6.0, -0.5, 0.5], [-2.0, 2.0, 1.0, -1.0], [3.0, -3.0, 7.0, 0.25]], requires_grad=True)
    tm = tv.jit(Clipped())
    tm.load_state_dict(model.state_dict())
    got = tm(x)
    (gx,) = torch.autograd.grad(got.square().sum(), x)
    want = model(x)
    (wx,) = torch.autograd.grad(want.square().sum(), x)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(gx, wx)
    assert str(tv.last_traces(tm)[0]).count("ltorch.hardtanh(") == 4
    check_native(Clipped(), ["ltorch.hardtanh"], torch.randn(3, 4) * 4)


@pytest.mark.parametrize("make", [lambda: torch.nn.Conv1d(2, 3, 4, padding="same"),
                                  lambda: torch.nn.Conv2d(2, 3, (2, 3), padding="same", dilation=(1, 2)),
                                  lambda: torch.nn.Conv2d(2, 3, 3, padding="same")],
                         ids=["even_kernel", "even_kernel_dilated", "odd_kernel"])
def test_a_same_padded_convolution_with_an_even_kernel_pads_its_right_as_torch(make):
    """padding='same' with an even kernel: half each side and the odd one on the right, as torch's own
    convolution pads it."""
    if why := broken_float32_convolution_backward():
        pytest.skip(why)
    conv = make()
    reference = copy.deepcopy(conv)
    tm = tv.jit(conv)
    for _ in range(2):
        x = torch.randn((2, 2, 7) if isinstance(conv, torch.nn.Conv1d) else (2, 2, 6, 7))
        a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
        got, want = tm(a), reference(b)
        torch.testing.assert_close(got, want)
        got.pow(2).sum().backward(), want.pow(2).sum().backward()
        torch.testing.assert_close(a.grad, b.grad)
        torch.testing.assert_close(conv.weight.grad, reference.weight.grad)


def test_two_batches_of_other_sizes_through_a_training_batch_norm_then_one_backward():
    """Two views of a batch (multi-crop) of different sizes, then one backward: each call's backward
    reads its own batch statistics, not the running ones the second call updated."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.BatchNorm1d(5))
    reference = copy.deepcopy(model)
    tm = tv.jit(model)
    for _ in range(2):
        a, b = torch.randn(4, 4), torch.randn(7, 4)
        (tm(a).sum() + tm(b).pow(2).sum()).backward()
        (reference(a).sum() + reference(b).pow(2).sum()).backward()
        # (the engine's products round otherwise than torch's BLAS, and a batch norm over 4 rows
        # amplifies the difference in its small gradients)
        for p, q in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(model[1].running_var, reference[1].running_var)
