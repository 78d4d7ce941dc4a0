"""torch.nn blocks of the clean corpus (seeded weights, inputs in [-1, 1]):
``BLOCKS[name]()`` -> (module, input shape)."""

from __future__ import annotations

import torch


def _conv_bn_relu():
    conv, norm = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8)
    with torch.no_grad():
        norm.running_mean.uniform_(-0.2, 0.2)
        norm.running_var.uniform_(0.5, 1.5)
    return torch.nn.Sequential(conv, norm, torch.nn.ReLU()), (1, 3, 8, 8)


def _conv_relu(bias: bool = True):
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1, bias=bias), torch.nn.ReLU(),
                               torch.nn.Conv2d(8, 4, 3, bias=bias)), (1, 3, 8, 8)


def _mlp_gelu(bias: bool = True):
    return torch.nn.Sequential(torch.nn.Linear(16, 32, bias=bias), torch.nn.GELU(),
                               torch.nn.Linear(32, 8, bias=bias)), (4, 16)


def _encoder():
    layer = torch.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
    return layer, (1, 6, 16)


class _SelfAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = torch.nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x):
        return self.attention(x, x, x, need_weights=False)[0]


class _Recurrent(torch.nn.Module):
    """The whole output sequence (``x[:, -1]`` would meet TVM 0.27's negative select, a real defect)."""

    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def forward(self, x):
        return self.cell(x)[0]


BLOCKS = {
    "conv-bn-relu": _conv_bn_relu,
    "conv-relu": _conv_relu,
    "mlp-gelu": _mlp_gelu,
    "mlp-gelu-nobias": lambda: _mlp_gelu(bias=False),
    "conv-relu-nobias": lambda: _conv_relu(bias=False),
    "encoder": _encoder,
    "attention": lambda: (_SelfAttention(), (1, 6, 16)),
    "gru": lambda: (_Recurrent(torch.nn.GRU(8, 16, batch_first=True)), (1, 5, 8)),
    "lstm": lambda: (_Recurrent(torch.nn.LSTM(8, 16, batch_first=True)), (1, 5, 8)),
}
