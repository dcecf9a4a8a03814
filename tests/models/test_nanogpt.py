"""nanoGPT as published, through thunder_viz.jit: logits, loss and every gradient against eager
autograd, a few AdamW steps on both side by side, the inference path, dropout in training, and the
traces saved as a capture."""
import copy
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import thunder_viz as tv  # noqa: E402
from nanogpt import GPT, GPTConfig  # noqa: E402

CONFIG = dict(block_size=16, vocab_size=64, n_layer=2, n_head=2, n_embd=32, bias=True)


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, CONFIG["vocab_size"], (2, 12), generator=g)
    targets = torch.randint(0, CONFIG["vocab_size"], (2, 12), generator=g)
    targets[0, :3] = -1  # nanoGPT's ignore_index
    return idx, targets


def _models(dropout=0.0):
    torch.manual_seed(0)
    eager = GPT(GPTConfig(dropout=dropout, **CONFIG))
    return eager, copy.deepcopy(eager)


def test_loss_logits_and_gradients_match_eager():
    eager, ours = _models()
    tm = tv.jit(ours)
    idx, targets = _batch()
    logits, loss = tm(idx, targets)
    loss.backward()
    want_logits, want_loss = eager(idx, targets)
    want_loss.backward()
    torch.testing.assert_close(logits, want_logits)
    torch.testing.assert_close(loss, want_loss)
    want = dict(eager.named_parameters())
    for name, p in ours.named_parameters():
        torch.testing.assert_close(p.grad, want[name].grad, msg=name)
    assert "transformer.wte.weight" in want and "lm_head.weight" not in want  # tied: one parameter


def test_adamw_steps_follow_eager():
    """AdamW moves a weight whose gradient is near zero by about its learning rate in the direction
    of the gradient's sign, so float32 rounding of such gradients (here against PyTorch's fused
    attention on torch 2.x) shows in those weights: the losses are compared, and the weights against
    twice the learning rate per step."""
    eager, ours = _models()
    tm = tv.jit(ours)
    lr, steps = 1e-2, 4
    opt_e = torch.optim.AdamW(eager.parameters(), lr=lr)
    opt_o = torch.optim.AdamW(ours.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        idx, targets = _batch(step)
        for model, opt in ((eager, opt_e), (tm, opt_o)):
            opt.zero_grad()
            _, loss = model(idx, targets)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    for a, b in zip(losses[0::2], losses[1::2]):
        assert abs(a - b) < 1e-3 * max(1.0, abs(a)), (losses[0::2], losses[1::2])
    for (name, p), q in zip(ours.named_parameters(), eager.parameters()):
        assert (p - q).abs().max().item() <= 2 * lr * steps, name
    assert tm.cache_misses == 1


def test_inference_path_takes_the_last_position():
    eager, ours = _models()
    tm = tv.jit(ours).eval()
    idx, _ = _batch()
    with torch.no_grad():
        logits, loss = tm(idx)
        want, _ = eager.eval()(idx)
    assert loss is None and logits.shape == (2, 1, CONFIG["vocab_size"])
    torch.testing.assert_close(logits, want)


def test_dropout_trains_and_is_off_in_eval():
    eager, ours = _models(dropout=0.1)  # torch 2.x: the flash path's dropout runs as an ATen fallback
    tm = tv.jit(ours)
    idx, targets = _batch()
    _, loss = tm(idx, targets)
    loss.backward()
    assert torch.isfinite(loss) and all(torch.isfinite(p.grad).all() for p in ours.parameters())
    _, eager_loss = eager(idx, targets)
    assert loss.item() != eager_loss.item()  # masks were drawn
    tm.eval(), eager.eval()
    torch.testing.assert_close(tm(idx, targets)[1], eager(idx, targets)[1])


def test_traces_are_saved_as_a_capture(tmp_path):
    _, ours = _models()
    tm = tv.jit(ours)
    inspector = tv.attach(tm)
    idx, targets = _batch()
    tm(idx, targets)[1].backward()
    path = str(tmp_path / "nanogpt.tvz.json")
    inspector.save(path)
    loaded = tv.load(path)
    assert loaded is not None and os.path.getsize(path) > 0
    forward = str(tv.last_traces(tm)[-1])
    assert "prims.slice" in forward or "scaled_dot_product_attention" in forward
