"""A corpus: the models a pass is regression-tested on, each with its input range.

``collect(items)`` takes what ``numguard regress --models`` takes: model files
(.onnx, .pt2, .py), directories of them, and the names of built-in corpora
(``BUILTIN``), or one model of a built-in corpus as ``NAME/MODEL``, or a
generated model as ``random/SEED-INDEX[@TARGET]`` (``random_models`` makes
them, at the ranges they are valid in). A model's
range comes, first found wins, from: a ``numguard-corpus.json`` manifest in its
directory (``[{"model": "file", "low": .., "high": .., "ranges": {input: [lo, hi]},
"shapes": {input: [dims]}}]``), the test data shipped beside it (the onnx
wheel's ``test_data_set_0/input_*.pb``: each input's [min, max] and shape), or
none (the caller's ``--low/--high``).

Nothing here builds or imports a model: ``CorpusModel.load`` does, when a row
runs (in a worker), so a model that does not import is one row saying why.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import Optional, Sequence

from ...base.errors import UsageError

MODEL_SUFFIXES = (".onnx", ".pt2", ".py")
MANIFEST_NAME = "numguard-corpus.json"
ONNX_SUITES = ("pytorch-converted", "pytorch-operator", "simple")
LIGHT_SEED = 0  # the light models' placeholder weights are replaced by these seeded ones


@dataclasses.dataclass(frozen=True)
class CorpusModel:
    """One model of a corpus. ``source``: a file path, ``light:NAME`` (an onnx
    wheel ImageNet model, weights randomized) or ``module:callable`` (returns an
    IRModule); ``ranges``: ((input, low, high), ...) known for this model;
    ``low``/``high``: one range for every input; ``shapes``: ((input, dims), ...)."""

    name: str
    source: str
    low: Optional[float] = None
    high: Optional[float] = None
    ranges: tuple = ()
    shapes: tuple = ()

    @property
    def has_range(self) -> bool:
        return bool(self.ranges) or (self.low is not None and self.high is not None)

    def load(self, workdir: str):
        """The Model (ModelError when it does not import); ``workdir`` holds files made for it."""
        from ...ir.model import load_model

        shapes = {name: list(dims) for name, dims in self.shapes} or None
        if self.source.startswith("light:"):
            from ..zoo.models import light_model

            return load_model(light_model(self.source[len("light:"):], seed=LIGHT_SEED, directory=workdir), shapes)
        if self.source.startswith(RANDOM_PREFIX):
            return load_model(random_graph(self.source).to_irmodule(), shapes)
        if self.source.startswith("zoo:"):
            return load_model(_export_zoo(self.source[len("zoo:"):], workdir), shapes)
        if self.source.startswith("tiny:"):
            from ..zoo import models

            kind = self.source[len("tiny:"):]
            return load_model(getattr(models, f"tiny_{kind}_onnx")(os.path.join(workdir, f"tiny_{kind}.onnx")), shapes)
        if not os.path.exists(self.source) and ":" in self.source:
            return load_model(_call_factory(self.source), shapes)
        return load_model(self.source, shapes)

    @property
    def selector(self) -> str:
        """What ``--models`` takes to name this model alone."""
        made = self.source.startswith(RANDOM_PREFIX) or (self.name.partition("/")[0] in BUILTIN
                                                          and not os.path.exists(self.source))
        return self.name if made else os.path.abspath(self.source)

    @classmethod
    def from_json(cls, data: dict) -> "CorpusModel":
        """The model ``to_json`` wrote (a regress report's ``models``)."""
        return cls(data["name"], data["source"], data.get("low"), data.get("high"),
                   tuple((n, float(lo), float(hi)) for n, (lo, hi) in sorted((data.get("ranges") or {}).items())),
                   tuple((n, tuple(int(d) for d in dims)) for n, dims in sorted((data.get("shapes") or {}).items())))

    def to_json(self) -> dict:
        return {"name": self.name, "source": self.source, "low": self.low, "high": self.high,
                "ranges": {n: [lo, hi] for n, lo, hi in self.ranges},
                "shapes": {n: list(d) for n, d in self.shapes}}


def _export_zoo(name: str, workdir: str) -> str:
    from ...base.errors import ModelError
    from ..zoo import blocks as zoo

    try:
        return zoo.export(name, workdir)
    except Exception as err:  # a transformers or torch release that exports differently: the row says so
        raise ModelError(f"zoo/{name}: torch.export failed ({type(err).__name__}: {err})") from None


def _call_factory(spec: str):
    import importlib

    from ...base.errors import ModelError

    module_name, _, attr = spec.rpartition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
        return factory()
    except Exception as err:  # the corpus names it; why it fails is the row's reason
        raise ModelError(f"{spec}: cannot make the model ({type(err).__name__}: {err})") from None


# ---------------------------------------------------------------------------
# built-in corpora


def onnx_data_dir() -> str:
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")


def onnx_cases() -> list:
    """The onnx wheel's small real models (pytorch-converted, pytorch-operator,
    simple), each with the range and shapes of its shipped test inputs."""
    base = onnx_data_dir()
    models = []
    for suite in ONNX_SUITES:
        folder = os.path.join(base, suite)
        for entry in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            path = os.path.join(folder, entry, "model.onnx")
            if os.path.isfile(path):
                models.append(from_file(path, name=f"onnx-node/{suite}/{entry}"))
    return models


def light_models() -> list:
    from ..zoo.models import LIGHT_MODELS

    return [CorpusModel(f"onnx-light/{name}", f"light:{name}", 0.0, 1.0) for name in LIGHT_MODELS]


def tiny_models() -> list:
    """The project's own seeded tiny ONNX models (a CNN and an MLP), inputs in [-1, 1]."""
    return [CorpusModel(f"tiny/{kind}", f"tiny:{kind}", -1.0, 1.0) for kind in ("cnn", "mlp")]


def patch_models() -> list:
    """The models of ``patches/`` (a checkout of this project) at each manifest's range."""
    try:
        import patches
    except ImportError:
        raise UsageError("the 'patches' corpus needs this project's patches/ folder importable "
                         "(run from the project root)") from None
    with open(os.path.join(os.path.dirname(patches.__file__), "manifest.json")) as f:
        manifest = json.load(f)
    return [CorpusModel(f"patches/{e['name']}", e["model"], float(e["low"]), float(e["high"])) for e in manifest]


def zoo_models() -> list:
    """Transformer and vision blocks exported with torch.export (testing/zoo/blocks.py; the ``zoo`` extra)."""
    from ..zoo import blocks as zoo

    missing = zoo.missing_requirements()
    if missing:
        raise UsageError(missing)
    return [CorpusModel(f"zoo/{e.name}", f"zoo:{e.name}", ranges=e.ranges) for e in zoo.ENTRIES.values()]


RANDOM_PREFIX = "random:"
_RANDOM_MEMBER = re.compile(r"(\d+)-(\d+)(?:@(.+))?$")


def random_models(count: int, seed: int, target: Optional[str] = None, discontinuous: bool = False) -> list:
    """``count`` generated models of stream ``seed`` (generate/), each at the
    input ranges it is valid in; ``target``: favour a pass's patterns."""
    return [random_model(seed, index, target, discontinuous) for index in range(count)]


def random_model(seed: int, index: int, target: Optional[str] = None, discontinuous: bool = False) -> CorpusModel:
    flags = "d" if discontinuous else ""
    source = f"{RANDOM_PREFIX}{seed}:{index}:{flags}:{target or ''}"
    graph = random_graph(source)
    name = f"random/{seed}-{index}" + (f"@{target}" if target else "") + ("~discontinuous" if discontinuous else "")
    ranges = tuple((n, float(lo), float(hi)) for n, (lo, hi) in graph.ranges().items())
    return CorpusModel(name, source, ranges=ranges)


def random_graph(source: str):
    """The Graph a ``random:SEED:INDEX:FLAGS:TARGET`` source names (the same in every process)."""
    from ..generate import GeneratorConfig, generate

    seed, index, flags, target = source[len(RANDOM_PREFIX):].split(":", 3)
    return generate(int(seed), int(index), GeneratorConfig(target=target or None, discontinuous="d" in flags))


def _random_member(member: str) -> list:
    """``random/SEED-INDEX[@TARGET][~discontinuous]``: one generated model, as its row names it."""
    discontinuous = member.endswith("~discontinuous")
    match = _RANDOM_MEMBER.match(member[: -len("~discontinuous")] if discontinuous else member)
    if not match:
        raise UsageError(f"random/{member}: a generated model is named random/SEED-INDEX[@TARGET]")
    return [random_model(int(match[1]), int(match[2]), match[3], discontinuous)]


BUILTIN = {
    "onnx-node": onnx_cases,  # ~80 node- and block-size models with test data
    "onnx-light": light_models,  # 9 ImageNet CNNs (slow: seconds per build)
    "patches": patch_models,  # the planted bugs' models, at their manifest ranges
    "tiny": tiny_models,
    "zoo": zoo_models,  # BERT, ViT, ResNet, GPT-2, Llama blocks and hand-written ones (needs transformers)
}


# ---------------------------------------------------------------------------
# files, directories, manifests


def collect(items: Sequence[str]) -> list:
    """The models ``items`` name, in order, each once (see the module docstring)."""
    models, seen = [], set()
    for item in items:
        for model in _expand(item):
            if model.name not in seen:
                seen.add(model.name)
                models.append(model)
    if not models:
        raise UsageError(f"no models in {', '.join(items) or '(nothing given)'}")
    return models


def _expand(item: str) -> list:
    if item in BUILTIN:
        return BUILTIN[item]()
    corpus, _, member = item.partition("/")
    if corpus == "random" and member and not os.path.exists(item):
        return _random_member(member)
    if corpus in BUILTIN and member and not os.path.exists(item):
        chosen = [m for m in BUILTIN[corpus]() if m.name == item]
        if not chosen:
            raise UsageError(f"no model '{member}' in the built-in corpus '{corpus}'")
        return chosen
    if os.path.isdir(item):
        return _directory(item)
    if os.path.isfile(item):
        if not item.endswith(MODEL_SUFFIXES):
            raise UsageError(f"{item}: not a model file (expected {', '.join(MODEL_SUFFIXES)})")
        return [from_file(item)]
    raise UsageError(f"{item}: no such file or directory, and not a built-in corpus "
                     f"({', '.join(BUILTIN)})")


def _directory(folder: str) -> list:
    manifest = _manifest(folder)
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__", "test_data_set")))
        for name in sorted(files):
            if name.endswith(MODEL_SUFFIXES) and not name.startswith((".", "_")):
                path = os.path.join(root, name)
                found.append(from_file(path, manifest.get(os.path.relpath(path, folder))))
    return found


def _manifest(folder: str) -> dict:
    path = os.path.join(folder, MANIFEST_NAME)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path) as f:
            entries = json.load(f)
        return {os.path.normpath(e["model"]): e for e in entries}
    except (OSError, ValueError, TypeError, KeyError) as err:
        raise UsageError(f"{path}: not a corpus manifest ({type(err).__name__}: {err})") from None


def from_file(path: str, entry: Optional[dict] = None, name: Optional[str] = None) -> CorpusModel:
    """A model file with its range: the manifest ``entry`` if given, else its shipped test data."""
    name = name or path
    if entry is not None:
        ranges = tuple((n, float(lo), float(hi)) for n, (lo, hi) in sorted((entry.get("ranges") or {}).items()))
        shapes = tuple((n, tuple(int(d) for d in dims)) for n, dims in sorted((entry.get("shapes") or {}).items()))
        low, high = entry.get("low"), entry.get("high")
        return CorpusModel(name, path, None if low is None else float(low), None if high is None else float(high),
                           ranges, shapes)
    ranges, shapes = _test_data_ranges(path)
    return CorpusModel(name, path, ranges=ranges, shapes=shapes)


def _test_data_ranges(path: str) -> tuple:
    """(ranges, shapes) from ``test_data_set_0/input_*.pb`` beside an ONNX model, else ((), ())."""
    data = os.path.join(os.path.dirname(path), "test_data_set_0")
    if not path.endswith(".onnx") or not os.path.isdir(data):
        return (), ()
    try:
        import numpy as np
        import onnx
        from onnx import numpy_helper

        model = onnx.load(path, load_external_data=False)
        initializers = {i.name for i in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in initializers]
        files = sorted((f for f in os.listdir(data) if f.startswith("input_") and f.endswith(".pb")),
                       key=lambda f: int(f[len("input_"):-len(".pb")]))
        ranges, shapes = [], []
        for name, file in zip(names, files):
            tensor = onnx.TensorProto()
            with open(os.path.join(data, file), "rb") as f:
                tensor.ParseFromString(f.read())
            value = numpy_helper.to_array(tensor)
            if value.dtype.kind not in "biuf":
                return (), ()
            v = value.astype(np.float64) if value.size else np.zeros(1)
            ranges.append((name, float(v.min()), float(v.max())))
            if value.ndim:
                shapes.append((name, tuple(int(d) for d in value.shape)))
        return tuple(ranges), tuple(shapes)
    except Exception:  # unreadable test data: the model is still tested, at the caller's range
        return (), ()
