"""A transformer block (LayerNorm, attention with matmul/softmax, residual, MLP) through
thunder_viz.jit, checked against eager.

    PYTHONPATH=build-py/python /usr/bin/python3 samples/python/transformer_block.py
"""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import thunder_viz as tv


class Block(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        hd = C // self.heads
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q = q.reshape(B, T, self.heads, hd).transpose(1, 2)
        k = k.reshape(B, T, self.heads, hd).transpose(1, 2)
        v = v.reshape(B, T, self.heads, hd).transpose(1, 2)
        att = F.softmax(torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(hd)), dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, C)
        x = x + self.c_proj(y)
        return x + self.proj(F.gelu(self.fc(self.ln_2(x))))


torch.manual_seed(0)
model = Block()
ref = copy.deepcopy(model)
x = torch.randn(2, 8, 32)
tm = tv.jit(model)
out = tm(x)
out.sum().backward()
want = ref(x)
want.sum().backward()
print(tv.last_traces(tm)[0].python())
print(f"max |out - eager| = {(out - want).abs().max().item():.3g}")
worst = max((p.grad - q.grad).abs().max().item() for p, q in zip(model.parameters(), ref.parameters()))
print(f"max |grad - eager| over parameters = {worst:.3g}")
print("forward passes:", [s.pass_name for s in tv.history(tm)[-1].stages["forward"]])
