"""torch.nn's own layers, as users instantiate them: the transformer family, multi-head attention,
LSTM and GRU, through thunder_viz.jit against eager torch (outputs, gradients, SGD steps)."""
import inspect

import pytest
import torch

import thunder_viz as tv
from harness import check_against_eager


def test_transformer_encoder_layer(tmp_path):
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True)
    check_against_eager(layer, torch.randn(2, 5, 16), tmp_path=tmp_path)


def test_transformer_encoder_layer_in_eval_takes_the_fast_path_or_not():
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        torch.testing.assert_close(tv.jit(layer)(x), layer(x))


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


def test_lstm_and_gru(tmp_path):
    check_against_eager(torch.nn.LSTM(8, 6, num_layers=2, batch_first=True), torch.randn(2, 5, 8), tmp_path=tmp_path)
    check_against_eager(torch.nn.GRU(8, 6, bidirectional=True), torch.randn(5, 2, 8))
