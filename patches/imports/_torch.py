"""Helpers for the torch defects' cores: a module around a function, and
seeded parameters (not a defect itself)."""

from __future__ import annotations

from typing import Callable

import torch

SEED = 0


class Lambda(torch.nn.Module):
    """``fn(x)`` as a module, for a core without parameters."""

    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def uniform(shape, low: float, high: float, seed: int = SEED) -> torch.Tensor:
    """A seeded uniform tensor in [low, high) (float32)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=generator) * (high - low) + low


def emit(importer, expr):
    """Bind ``expr`` in the importer's block, as the stock converters do."""
    return importer.block_builder.emit(expr)


class ContextModule(torch.nn.Module):
    """A defect's core inside one of the torch contexts (``contexts.py`` says which)."""

    def __init__(self, core, context: str, kind: str, planted_shape: tuple):
        super().__init__()
        self.core, self.context, self.kind = core, context, kind
        big = torch.rand(planted_shape, generator=torch.Generator().manual_seed(7)) * 300.0 + 100.0
        self.register_buffer("big", big)

    def forward(self, x):
        p = self.core(x)
        if self.context in "abg":
            return p * 2
        if self.context == "c":
            return torch.cat([p * 0.01, self.big + x.mean()], dim=-1)
        if self.context == "d":
            return self._jump(p), p * 2
        return p * 2, torch.tanh(x.to(torch.float16) * 0.5).to(torch.float32) * 3

    def _jump(self, p):
        if self.kind == "floor":
            return torch.floor(p * 4)
        if self.kind == "greater":
            return p > 0
        if self.kind == "argmax":
            return torch.argmax(p, dim=-1)
        return (p * 4).to(torch.int32)
