"""Small torch.nn models built like the ones users bring (issue 55): a
Llama-style decoder block (RMSNorm, rotary embeddings, SwiGLU) and a UNet
(GroupNorm, ConvTranspose2d, upsampling, SiLU), tiny so that a check takes
seconds. Each is written with ``torch.export.save`` as a ``.pt2``.
"""

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = 1e-6

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x, cos, sin):
    """Rotary position embedding: each pair of features turned by its position's angle."""
    even, odd = x[..., ::2], x[..., 1::2]
    return torch.cat([even * cos - odd * sin, even * sin + odd * cos], -1)


class LlamaBlock(nn.Module):
    """Pre-norm attention with rotary embeddings, then a SwiGLU MLP, both residual."""

    def __init__(self, width: int = 16, heads: int = 2, hidden: int = 32, tokens: int = 4):
        super().__init__()
        self.heads, self.head = heads, width // heads
        self.attention_norm, self.mlp_norm = RMSNorm(width), RMSNorm(width)
        self.q, self.k, self.v, self.o = (nn.Linear(width, width, bias=False) for _ in range(4))
        self.gate, self.up = nn.Linear(width, hidden, bias=False), nn.Linear(width, hidden, bias=False)
        self.down = nn.Linear(hidden, width, bias=False)
        frequencies = 1.0 / 10000 ** (torch.arange(0, self.head, 2).float() / self.head)
        angles = torch.arange(tokens).float()[:, None] * frequencies
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def split(self, x):
        batch, tokens, _ = x.shape
        return x.view(batch, tokens, self.heads, self.head).transpose(1, 2)

    def forward(self, x):
        batch, tokens, width = x.shape
        y = self.attention_norm(x)
        q, k = rotate(self.split(self.q(y)), self.cos, self.sin), rotate(self.split(self.k(y)), self.cos, self.sin)
        scores = torch.softmax(q @ k.transpose(-1, -2) / self.head ** 0.5, -1)
        x = x + self.o((scores @ self.split(self.v(y))).transpose(1, 2).reshape(batch, tokens, width))
        y = self.mlp_norm(x)
        return x + self.down(nn.functional.silu(self.gate(y)) * self.up(y))


class UNet(nn.Module):
    """One level down and up: GroupNorm and SiLU, a strided conv down, a
    ConvTranspose2d and a nearest upsampling up, a skip connection, a sigmoid mask."""

    def __init__(self, channels: int = 4):
        super().__init__()
        self.norm_in = nn.GroupNorm(2, channels)
        self.enter = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm = nn.GroupNorm(2, channels)
        self.down = nn.Conv2d(channels, 2 * channels, 3, stride=2, padding=1)
        self.norm_down = nn.GroupNorm(2, 2 * channels)
        self.up = nn.ConvTranspose2d(2 * channels, channels, 2, stride=2)
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.side = nn.Conv2d(2 * channels, channels, 1)
        self.leave = nn.Conv2d(2 * channels, 1, 1)

    def forward(self, x):
        skip = nn.functional.silu(self.norm(self.enter(self.norm_in(x))))
        low = nn.functional.silu(self.norm_down(self.down(skip)))
        up = self.up(low) + self.side(self.upsample(low))
        return torch.sigmoid(self.leave(torch.cat([skip, up], 1)))


def export(module: nn.Module, example, path, dtype=torch.float32) -> str:
    """``module`` (seeded weights, eval mode, in ``dtype``) exported to ``path``; returns the path."""
    module = module.eval().to(dtype)
    torch.export.save(torch.export.export(module, (example.to(dtype),)), str(path))
    return str(path)


def llama_block(path, seed: int = 0) -> str:
    """The Llama-style block (x: 1x4x16) as a .pt2 at ``path``."""
    torch.manual_seed(seed)
    return export(LlamaBlock(), torch.randn(1, 4, 16), path)


def unet(path, seed: int = 0, dtype=torch.float32, norms=None) -> str:
    """The UNet (x: 1x4x8x8) as a .pt2 at ``path``, computing in ``dtype``; ``norms``: the dtype its
    GroupNorms keep their parameters in, where it is another (float32 norms in a float16 net, as
    mixed-precision training leaves them: torch normalizes a float16 input with float32 parameters)."""
    torch.manual_seed(seed)
    module = UNet().eval().to(dtype)
    for norm in (module.norm_in, module.norm, module.norm_down) if norms is not None else ():
        norm.to(norms)
    torch.export.save(torch.export.export(module, (torch.randn(1, 4, 8, 8).to(dtype),)), str(path))
    return str(path)


def unet_onnx(path, seed: int = 0, dtype=torch.float16) -> str:
    """The UNet as ONNX (opset 17, TorchScript exporter) at ``path``, computing in ``dtype``."""
    import warnings

    torch.manual_seed(seed)
    module = UNet().eval().to(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(module, (torch.randn(1, 4, 8, 8).to(dtype),), str(path), dynamo=False, opset_version=17)
    return str(path)
