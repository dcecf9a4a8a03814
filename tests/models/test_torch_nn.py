"""torch.nn's own layers, as users instantiate them: the transformer family, multi-head attention,
LSTM and GRU, through thunder_viz.jit against eager torch (outputs, gradients, SGD steps)."""
import inspect

import re

import pytest
import torch

import thunder_viz as tv
from harness import broken_float32_convolution_backward, check_against_eager


def test_transformer_encoder_layer(tmp_path):
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True)
    check_against_eager(layer, torch.randn(2, 5, 16), tmp_path=tmp_path)


def test_transformer_encoder_layer_in_eval_takes_the_fast_path_or_not():
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        torch.testing.assert_close(tv.jit(layer)(x), layer(x))


def test_an_encoder_given_a_padding_mask_in_eval_names_the_way_out():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)
    x, padding = torch.randn(2, 5, 16), torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    # whether the nested-tensor fast path may run is decided on the mask's values
    nested = torch.nn.TransformerEncoder(layer, 2).eval()
    with pytest.raises(tv.UnsupportedOp, match="enable_nested_tensor=False"):
        tv.jit(nested)(x, src_key_padding_mask=padding)
    plain = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    tm = tv.jit(plain)
    for grad in (True, False):
        with torch.set_grad_enabled(grad):
            torch.testing.assert_close(tm(x, src_key_padding_mask=padding), plain(x, src_key_padding_mask=padding))


def test_transformer_with_a_causal_mask():
    model = torch.nn.Transformer(16, 2, 1, 1, 32, dropout=0.0, batch_first=True)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    src, tgt = torch.randn(2, 5, 16), torch.randn(2, 4, 16)
    if "tgt_is_causal" in inspect.signature(model.forward).parameters:
        # torch 2.x otherwise compares the mask's values with a causal one (control flow on data)
        check_against_eager(model, src, tgt, None, mask, tgt_is_causal=True)
    else:
        check_against_eager(model, src, tgt, None, mask)


def test_a_mask_compared_by_value_is_refused_naming_the_way_out():
    model = torch.nn.Transformer(16, 2, 1, 1, 32, dropout=0.0, batch_first=True)
    if "tgt_is_causal" not in inspect.signature(model.forward).parameters:
        return  # torch 1.13 does not look at the mask's values
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    with pytest.raises(tv.UnsupportedOp, match="value read into Python"):
        tv.jit(model)(torch.randn(2, 5, 16), torch.randn(2, 4, 16), None, mask)


def test_multihead_attention_with_a_padding_mask():
    attn = torch.nn.MultiheadAttention(16, 2, batch_first=True)
    x = torch.randn(2, 5, 16)
    padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    check_against_eager(attn, x, x, x, padding)


def test_attentions_products_and_views_run_on_native_rules():
    """multi_head_attention_forward has no handler: its ATen operators are recorded, and those an
    engine rule computes (mm, bmm, addmm, views, transposes, softmax; torch 2's
    scaled_dot_product_attention) as that rule, which the engine differentiates without recomputing
    the operator under LibTorch's autograd. The packed projection's split (torch 1.13) or unflatten
    (torch 2), the copies and the scaling by a Python number are rules too: no ATen operator is left
    in the trace (torch 2's select of q, k and v from it is a slice and a reshape)."""
    torch.manual_seed(0)
    attn = torch.nn.MultiheadAttention(16, 2, batch_first=True)
    x = torch.randn(2, 5, 16)
    tm = check_against_eager(attn, x, x, x, steps=2)
    program = str(tv.last_traces(tm)[0])
    ops = set(re.findall(r"ltorch\.\w+", program))
    assert {"ltorch.matmul", "ltorch.softmax"} <= ops or "ltorch.scaled_dot_product_attention" in ops, sorted(ops)
    assert "torch.ops.aten." not in program, sorted(set(re.findall(r"torch\.ops\.aten\.\w+\.\w+", program)))
    assert "fallback" not in str(tv.last_backward_traces(tm)[-1])


def test_lstm_and_gru(tmp_path):
    """Both record the engine's own ltorch.lstm / ltorch.gru (time steps unrolled), no ATen fallback."""
    lstm = check_against_eager(torch.nn.LSTM(8, 6, num_layers=2, batch_first=True), torch.randn(2, 5, 8),
                               tmp_path=tmp_path)
    gru = check_against_eager(torch.nn.GRU(8, 6, bidirectional=True), torch.randn(5, 2, 8))
    for tm, symbol in ((lstm, "ltorch.lstm("), (gru, "ltorch.gru(")):
        trace = str(tv.last_traces(tm)[0])
        assert symbol in trace and "torch.ops.aten." not in trace, trace


class ConvNet(torch.nn.Module):
    """The layers of a small image classifier as users write them, with the losses computed in forward."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, stride=2, groups=2, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(8, affine=False)
        self.conv1d = torch.nn.Conv1d(8, 4, 3, padding="same")
        self.fc = torch.nn.Linear(4 * 3 * 3, 5)

    def forward(self, x, y):
        h = torch.relu(self.bn(self.conv(x)))
        h = torch.nn.functional.max_pool2d(h, 2)
        h = torch.nn.functional.avg_pool2d(self.bn2(self.conv2(h)), 3, stride=1, padding=1, count_include_pad=False)
        h = self.conv1d(h.flatten(2)).reshape(h.shape[0], 4, h.shape[2], h.shape[3]).clamp(-2.0, 2.0)
        h = torch.nn.functional.adaptive_avg_pool2d(h.abs() + h.sin() * h.cos(), (3, 3))
        logp = torch.log_softmax(self.fc(torch.flatten(h, 1)), -1)
        return logp, torch.nn.functional.nll_loss(logp, y), torch.nn.functional.mse_loss(logp.exp(), torch.softmax(logp * 2, -1))


def test_convnet_runs_on_native_rules(tmp_path):
    """Convolutions, batch norms (running statistics equal to eager's after the steps), pooling, clamp
    and the losses record the engine's own ops: no ATen fallback in the program."""
    if why := broken_float32_convolution_backward():
        pytest.skip(why)
    torch.manual_seed(0)
    tm = check_against_eager(ConvNet(), torch.randn(4, 3, 12, 12), torch.randint(0, 5, (4,)), steps=3, tmp_path=tmp_path)
    program = str(tv.last_traces(tm)[0])
    for op in ("ltorch.conv2d", "ltorch.conv1d", "ltorch.batch_norm", "ltorch.max_pool2d", "ltorch.avg_pool2d",
               "ltorch.adaptive_avg_pool2d", "ltorch.clamp", "ltorch.nll_loss", "ltorch.mse_loss"):
        assert op in program, op
    # num_batches_tracked += 1 is the only ATen operator left: an in-place update of a buffer
    fallbacks = {line.split("=", 1)[1].split("(")[0].strip() for line in program.splitlines() if "torch.ops.aten." in line
                 and not line.lstrip().startswith("#")}
    assert all(f.startswith("torch.ops.aten.add_.") for f in fallbacks), fallbacks
