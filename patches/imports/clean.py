"""The clean corpus of the judge table: models with no defect planted, on
which TVM's import must come out without an import alarm.

- ``gen/``: seeded random ONNX graphs (``_random_onnx.py``), float32 and float16.
- ``special/``: the float16 and discontinuous cases a judge must excuse: a
  float16 ReduceMean over 50 values, a float16 Softmax, Ceil(x*x) of tiny
  float16 x, casts to bool, LayerNormalization on the model's input
  ("LayerNorm-first" blocks, where the search finds constant rows).
- ``torch/``: torch.nn blocks exported to ``.pt2`` (conv-bn-relu, an MLP with
  GELU, a transformer encoder layer, an attention block, a GRU and an LSTM),
  and a convolution and an MLP without biases in float16.
- ``wheel/``: the onnx wheel's own small models (``simple``,
  ``pytorch-converted``, ``pytorch-operator``) at the range and shapes of
  their shipped test inputs, less ``KNOWN_DEFECTS``; ``light/``: its CNNs
  with random weights (slow, on request).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Optional

import numpy as np

from ._graph import INPUT, OnnxGraph

# onnx wheel models TVM 0.27 really imports wrong (docs/findings.md 1 and 2): a true alarm, not a clean row
KNOWN_DEFECTS = {
    "simple/test_expand_shape_model3": "TVM's Expand with a run-time shape (docs/findings.md 1)",
    "simple/test_expand_shape_model4": "TVM's Expand with a run-time shape (docs/findings.md 1)",
    "simple/test_sequence_model3": "TVM's SequenceInsert at a negative position (docs/findings.md 2)",
}
GENERATED = 20  # random graphs per float type
QUICK_GENERATED = 3


@dataclasses.dataclass(frozen=True)
class CleanModel:
    """One clean model: ``source`` says how to make it (``gen:SEED:DTYPE``,
    ``special:NAME``, ``torch:NAME:DTYPE``, a wheel model's path, ``light:NAME``);
    ``ranges``: ((input, low, high), ...) where known, else ``low``/``high``."""

    name: str
    group: str
    source: str
    low: float = -1.0
    high: float = 1.0
    ranges: tuple = ()
    shapes: tuple = ()


SPECIALS = {  # name -> (input shape, dtype, low, high)
    "reducemean-50-f16": ((4, 50), np.float16, 0.0, 4.0),
    "softmax-f16": ((4, 32), np.float16, -6.0, 6.0),
    "ceil-square-f16": ((4, 16), np.float16, -0.01, 0.01),
    "cast-bool-f32": ((4, 16), np.float32, -1.0, 1.0),
    "cast-bool-f16": ((4, 16), np.float16, -1.0, 1.0),
    "layernorm-first-f32": ((4, 16), np.float32, -1.0, 1.0),
    "layernorm-first-f16": ((4, 16), np.float16, -1.0, 1.0),
}
# float16 blocks have no bias: TVM 0.27's torch frontend does not import a float16 Linear or Conv2d with
# one (its addmm and conv2d converters compute with out_dtype float32, then add the float16 bias)
TORCH_BLOCKS = ("conv-bn-relu:float32", "mlp-gelu:float32", "conv-relu-nobias:float16", "conv-relu:float32",
                "mlp-gelu-nobias:float16", "encoder:float32", "attention:float32", "gru:float32", "lstm:float32")
# transformers blocks from configurations (random weights, no download: patches/unseen/models.py), exported to
# ONNX and as a torch program, in float32 and float16 (issue 52); a format TVM 0.27 does not import is counted
# as such, not judged (float16 .pt2 blocks with a biased Linear: the addmm converter's out_dtype float32)
TRANSFORMER_BLOCKS = ("bert", "gpt2", "vit", "llama", "mistral", "t5")
TRANSFORMER_FORMATS = ("onnx:float32", "onnx:float16", "pt2:float32", "pt2:float16")


def corpus(quick: bool = False, light: bool = False) -> list:
    """The clean models: a few of each group with ``quick``; the light CNNs with ``light``."""
    from tvm_numguard.testing.regress.corpus import light_models, onnx_cases

    count = QUICK_GENERATED if quick else GENERATED
    models = [CleanModel(f"gen/{dtype}-{seed}", "gen", f"gen:{seed}:{dtype}", *_gen_range(seed))
              for dtype in ("float32", "float16") for seed in range(count)]
    models += [CleanModel(f"special/{name}", "special", f"special:{name}", low, high)
               for name, (_, _, low, high) in SPECIALS.items()]
    blocks = TORCH_BLOCKS[:3] if quick else TORCH_BLOCKS
    models += [CleanModel(f"torch/{spec.replace(':', '-')}", "torch", f"torch:{spec}") for spec in blocks]
    if not quick:
        models += [CleanModel(f"transformers/{name}-{fmt.replace(':', '-')}", "transformers", f"hf:{name}:{fmt}")
                   for name in TRANSFORMER_BLOCKS for fmt in TRANSFORMER_FORMATS]
    wheel = [m for m in onnx_cases() if _wheel_name(m.name) not in KNOWN_DEFECTS]
    models += [CleanModel(f"wheel/{_wheel_name(m.name)}", "wheel", m.source, m.low if m.low is not None else 0.0,
                          m.high if m.high is not None else 1.0, m.ranges, m.shapes)
               for m in (wheel[::12] if quick else wheel)]
    if light:
        models += [CleanModel(m.name.replace("onnx-light", "light"), "light", m.source, m.low, m.high)
                   for m in light_models()]
    return models


def known_defects() -> dict:
    """{wheel model: why it is left out of the clean corpus}."""
    return dict(KNOWN_DEFECTS)


def _wheel_name(corpus_name: str) -> str:
    return corpus_name.split("/", 1)[1] if corpus_name.startswith("onnx-node/") else corpus_name


def _gen_range(seed: int) -> tuple:
    from ._random_onnx import RANGES

    return RANGES[seed % len(RANGES)]


def load(model: CleanModel, directory: str):
    """``model`` as numguard's Model (its file written to ``directory``), or the
    ModelError / ImportFailure numguard raises for it."""
    from tvm_numguard.ir.model import load_model
    from tvm_numguard.testing.regress.corpus import CorpusModel

    shapes = {name: list(dims) for name, dims in model.shapes} or None
    kind, _, rest = model.source.partition(":")
    if kind == "gen":
        seed, dtype = rest.split(":")
        path = _save_onnx(_generated(int(seed), dtype), directory, f"gen-{dtype}-{seed}")
    elif kind == "special":
        path = _save_onnx(special_model(rest), directory, f"special-{rest}")
    elif kind == "torch":
        path = torch_block(*rest.split(":"), directory=directory)
    elif kind == "hf":
        from patches.unseen.models import torch_block as transformer_block

        name, fmt, dtype = rest.split(":")
        path = transformer_block(directory, name=name, fmt=fmt, half=dtype == "float16")
    else:
        return CorpusModel(model.name, model.source, model.low, model.high, model.ranges, model.shapes).load(directory)
    return load_model(path, shapes)


def options_range(model: CleanModel) -> dict:
    """``Options`` keywords for the model's range: per input where known, else one for all."""
    if model.ranges:
        return {"ranges": {name: (low, high) for name, low, high in model.ranges}}
    return {"low": model.low, "high": model.high}


def _generated(seed: int, dtype: str):
    from ._random_onnx import random_graph

    return random_graph(seed, np.dtype(dtype))[0]


def _save_onnx(model, directory: str, stem: str) -> str:
    import onnx

    path = os.path.join(directory, f"{stem}.onnx")
    onnx.save(model, path)
    return path


def special_model(name: str):
    """The ModelProto of special model ``name`` (``SPECIALS``)."""
    shape, dtype, _, _ = SPECIALS[name]
    g = OnnxGraph(dtype)
    if name.startswith("reducemean"):
        outputs = [g.node("ReduceMean", [INPUT], axes=[1], keepdims=0)]
    elif name.startswith("softmax"):
        outputs = [g.node("Softmax", [INPUT], axis=-1)]
    elif name.startswith("ceil-square"):
        outputs = [g.node("Ceil", [g.node("Mul", [INPUT, INPUT])])]
    elif name.startswith("cast-bool"):
        flags = g.node("Cast", [g.node("Floor", [g.node("Mul", [INPUT, g.const(2.0)])])], to=9)  # BOOL
        outputs = [flags, g.node("Mul", [INPUT, g.const(3.0)])]
    else:
        rng = np.random.default_rng(11)
        normed = g.node("LayerNormalization", [INPUT, g.const(rng.uniform(0.5, 1.5, (16,))),
                                               g.const(rng.uniform(-0.1, 0.1, (16,)))], axis=-1)
        projected = g.node("Gemm", [normed, g.const(rng.uniform(-0.5, 0.5, (16, 16))),
                                    g.const(rng.uniform(-0.1, 0.1, (16,)))], transB=1)
        outputs = [g.node("Relu", [projected])]
    return g.model(shape, outputs)


def torch_block(name: str, dtype: str, directory: Optional[str] = None) -> str:
    """Export torch block ``name`` in ``dtype`` to ``directory``; its ``.pt2`` path."""
    import torch

    from ._clean_torch import BLOCKS

    torch.manual_seed(0)
    module, shape = BLOCKS[name]()
    dtype_ = getattr(torch, dtype)
    example = (torch.rand(shape, generator=torch.Generator().manual_seed(0)) * 2 - 1).to(dtype_)
    program = torch.export.export(module.to(dtype_).eval(), (example,))
    path = os.path.join(directory, f"torch-{name}-{dtype}.pt2")
    torch.export.save(program, path)
    return path
