"""A llama decoder layer and a Hugging Face-style attention block, as they are usually written,
through thunder_viz.jit against eager torch (outputs, gradients, SGD steps)."""
import torch

from blocks import BertSelfAttention, LlamaDecoderLayer
from harness import check_against_eager


def test_llama_decoder_layer(tmp_path):
    torch.manual_seed(0)
    check_against_eager(LlamaDecoderLayer(), torch.randn(2, 6, 32), tmp_path=tmp_path)


def test_llama_decoder_layer_with_given_positions():
    torch.manual_seed(0)
    mask = torch.zeros(2, 1, 6, 6)
    check_against_eager(LlamaDecoderLayer(), torch.randn(2, 6, 32), mask, torch.tensor([[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0]]))


def test_hf_style_attention_block_with_a_padding_mask_and_keywords(tmp_path):
    torch.manual_seed(0)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    block = BertSelfAttention()
    check_against_eager(block, torch.randn(2, 5, 32), mask, tmp_path=tmp_path)
    check_against_eager(BertSelfAttention(), torch.randn(2, 5, 32), mask, None, True)
