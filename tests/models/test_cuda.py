"""The model suite on a CUDA device: the jitted module runs where the module's tensors are, as eager
does (outputs, gradients and buffers on the GPU), and its numbers are eager's there, through the
engine's CUDA paths (generated kernels for fusion regions, cuBLASLt for small products). Skipped
without a GPU."""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
import thunder_viz as tv  # noqa: E402
from harness import check_against_eager  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

# cuDNN's convolutions may use TF32 on this GPU, in eager as in the engine's ATen calls; the same
# kernels on both sides, but float32 sums in another order where the engine fuses
TOLERANCE = dict(atol=1e-4, rtol=1e-3, drift=1e-3)


def on_gpu(*tensors):
    return [t.cuda() for t in tensors]


def test_an_mlp_runs_on_the_gpu_and_trains_as_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64),
                                torch.nn.Linear(64, 8)).cuda()
    x, = on_gpu(torch.randn(16, 32))
    tm = check_against_eager(model, x, steps=3, **TOLERANCE)
    out = tm(x)
    assert out.device == x.device and all(p.grad.device == x.device for p in tm.parameters())
    assert "cuda" in str(tv.last_traces(tm)[-1])


def test_a_convnet_with_batch_norm_updates_its_statistics_on_the_gpu():
    from test_torch_nn import ConvNet
    torch.manual_seed(0)
    model = ConvNet().cuda()
    x, y = on_gpu(torch.randn(2, 3, 16, 16), torch.tensor([1, 4]))
    tm = check_against_eager(model, x, y, steps=2, **TOLERANCE)
    assert all(b.device == x.device for b in tm.buffers())


def test_nanogpt_trains_on_the_gpu_as_eager():
    from nanogpt import GPT, GPTConfig
    torch.manual_seed(0)
    model = GPT(GPTConfig(block_size=16, vocab_size=64, n_layer=2, n_head=2, n_embd=32, bias=True, dropout=0.0)).cuda()
    idx, targets = on_gpu(torch.randint(0, 64, (2, 12)), torch.randint(0, 64, (2, 12)))
    check_against_eager(model, idx, targets, steps=2, **TOLERANCE)


def test_a_transformer_encoder_layer_on_the_gpu():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True).cuda()
    x, = on_gpu(torch.randn(2, 6, 32))
    check_against_eager(layer, x, steps=2, **TOLERANCE)


def test_inputs_on_the_cpu_for_a_module_on_the_gpu_fail_as_eager():
    model = torch.nn.Linear(4, 2).cuda()
    with pytest.raises(Exception) as eager_error:
        model(torch.randn(3, 4))
    with pytest.raises(Exception) as ours:
        tv.jit(model)(torch.randn(3, 4))
    assert "cuda" in str(ours.value).lower() or "device" in str(ours.value).lower(), (str(eager_error.value), str(ours.value))
