"""Small torch models shared by the tests and samples."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp(d=64, hidden=256):
    return nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))


class Block(nn.Module):
    """Pre-norm transformer block: LayerNorm, attention (matmul/softmax), residual, MLP."""

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
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = F.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, C)
        x = x + self.c_proj(y)
        x = x + self.proj(F.gelu(self.fc(self.ln_2(x))))
        return x


class ConvNet(nn.Module):
    """Conv, batch norm in training (running statistics written in place), max pool, strided conv,
    adaptive average pool, linear, log_softmax: tests/fixtures/thunder_cpu's convnet."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 16, 3, stride=2)
        self.fc = nn.Linear(16 * 3 * 3, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.c1(x))), 2)
        x = F.relu(self.c2(x))
        x = F.adaptive_avg_pool2d(x, 3).flatten(1)
        return F.log_softmax(self.fc(x), dim=-1)
