"""Pipelines as replayable text: ``DecomposeOpsForInference,FastMathTransform,zero``.

A Relax pipeline is a comma-separated list of parts run in order:
  - ``zero`` or ``default`` (the target's optimizing pipeline, ending in VM lowering),
  - a ``tvm.relax.transform`` pass that needs no arguments (``FastMathTransform``),
  - ``module:callable`` or ``path/to/file.py:callable`` returning a Pass (called
    with no arguments, or with the Target when it has one parameter without a
    default, or a parameter named ``target``). A file's own folder is on the
    import path while it loads, so it can import the modules beside it; file
    paths are kept absolute, so a recorded pipeline replays from any folder.
When no part is ``default``, the VM lowering (``relax.get_pipeline("default")``,
the one ``tvm.compile`` uses) is appended so the result is buildable.

One part of the Relax and TIR pipelines together may be in brackets,
``[module:callable],zero``: the **pass under test**. It runs where it stands,
between two marker passes that change nothing (``UNDER_TEST_BEGIN`` and
``UNDER_TEST_END``, never skipped), and the question becomes that pass's own:
the reference build skips only the events between the markers
(``instrument.catalog.under_test_span``, read by ``build.compile.optional_events``).
``CompileConfig.passes`` can name pass
objects by a label the text uses (``[<MyPass>]``), for callers that hold a
Pass rather than a spec; such a configuration does not replay from its text.

A TIR pipeline uses the same syntax with ``default`` meaning TVM's default TIR
pipeline, ``tvm.tirx.transform`` names as passes; parts before ``default`` see
TIR with blocks, parts after it see lowered, flattened TIR.
"""

from __future__ import annotations

import difflib
import dataclasses
import os

from typing import Optional, Protocol, Sequence

import tvm
from tvm import relax

from ..base.errors import PipelineError, named, summarize_error
from ..base.flags import FLAG
from .instrument.catalog import UNDER_TEST_BEGIN, UNDER_TEST_END
from .narrow.plan import FixPlan
from .pass_specs import import_pass
from .targets import gpu_fallback, is_gpu, parse_target


class BuildConfig(Protocol):
    """What a build reads of its configuration: ``CompileConfig`` (a pipeline as
    text) and the guard's ``CallConfig`` (a caught compile call's own objects)
    both are one. ``pass_context`` opens the PassContext it asks for."""

    @property
    def opt_level(self) -> int: ...

    @property
    def disable(self) -> tuple:  # pass event ids every build skips
        ...

    @property
    def fix(self) -> Optional[FixPlan]:  # a narrow fix every build applies (numguard fix)
        ...

    @property
    def under_test(self) -> Optional[str]:  # the pass under test's spec, or None
        ...

    def make_target(self) -> tvm.target.Target: ...

    def relax_pass(self, target: tvm.target.Target): ...

    def tir_pass(self, target: tvm.target.Target): ...

    def context_options(self) -> dict:
        """PassContext settings besides opt_level and instruments (a caught call's own)."""

    def build_options(self) -> dict:
        """``relax.build`` keywords besides the target and pipelines (a caught call's own)."""


def pass_context(config: BuildConfig, instruments: Sequence = ()) -> tvm.transform.PassContext:
    """The PassContext every build, range check and replay of ``config`` runs in."""
    return tvm.transform.PassContext(opt_level=config.opt_level, instruments=list(instruments),
                                     **config.context_options())


@dataclasses.dataclass(frozen=True)
class CompileConfig:
    """Everything a compilation needs to be replayed, as text."""

    pipeline: str = "default"
    tir_pipeline: str = "default"
    target: str = "llvm"
    opt_level: int = 3
    # pass event ids every build of this configuration skips (``--disable``: to verify a fix)
    disable: tuple = ()
    # label -> tvm.transform.Pass: objects a bracketed part names instead of a spec
    passes: tuple = dataclasses.field(default=(), compare=False, repr=False)
    # a fix every build applies (``--apply-fix FILE``), and the file it was read from
    fix: Optional[FixPlan] = None
    fix_file: str = dataclasses.field(default="", compare=False)
    # the sha256 of the model file the fix was made for ("" unknown): a fix applied to another model is refused
    fix_model: str = dataclasses.field(default="", compare=False)
    # whether numguard fix verified the fix when it wrote it (None: not said, as a fix made in Python)
    fix_verified: Optional[bool] = dataclasses.field(default=None, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "disable", tuple(self.disable))
        object.__setattr__(self, "passes", tuple(dict(self.passes).items()))
        under_test = [p for p in _split(self.pipeline, "pipeline") + _split(self.tir_pipeline, "TIR pipeline")
                      if is_bracketed(p)]
        if len(under_test) > 1:
            raise PipelineError(f"only one pass can be under test (in brackets), got {', '.join(under_test)}")
        if isinstance(self.opt_level, bool) or not isinstance(self.opt_level, int) or not 0 <= self.opt_level <= 4:
            raise PipelineError(f"{named('opt_level')} must be an integer from 0 to 4 (TVM's PassContext levels), "
                                f"got {self.opt_level!r}")
        object.__setattr__(self, "pipeline", absolute_file_parts(self.pipeline))
        object.__setattr__(self, "tir_pipeline", absolute_file_parts(self.tir_pipeline))

    def to_json(self) -> dict:
        data = {f: getattr(self, f) for f in ("pipeline", "tir_pipeline", "target", "opt_level")}
        data["disable"] = list(self.disable)
        if self.fix:
            data["fix"] = {"file": self.fix_file or None, "culprits": self.fix.to_json(), "verified": self.fix_verified}
        return data

    @classmethod
    def from_json(cls, data) -> "CompileConfig":
        """Read back from ``to_json`` (a report's ``configuration`` section has these fields)."""
        fix = data.get("fix")
        return cls(data["pipeline"], data["tir_pipeline"], data["target"], int(data["opt_level"]),
                   tuple(data.get("disable", ())), fix=FixPlan.from_json(fix["culprits"]) if fix else None,
                   fix_file=(fix or {}).get("file") or "", fix_verified=(fix or {}).get("verified"))

    def to_args(self) -> list:
        """The command-line arguments that give this configuration (the pipeline
        always; the rest where it is not the default)."""
        words = [FLAG["pipeline"], self.pipeline]
        defaults = CompileConfig()
        for field in ("tir_pipeline", "target", "opt_level"):
            if getattr(self, field) != getattr(defaults, field):
                words += [FLAG[field], str(getattr(self, field))]
        for event_id in self.disable:
            words += [FLAG["disable"], event_id]
        if self.fix_file:  # a fix read from a file is said back, whatever it holds
            words += [FLAG["fix"], self.fix_file]
        return words

    @property
    def under_test(self) -> Optional[str]:
        """The bracketed part's spec (the pass under test), or None."""
        for part in _split(self.pipeline, "pipeline") + _split(self.tir_pipeline, "TIR pipeline"):
            if is_bracketed(part):
                return part[1:-1].strip()
        return None

    def without_under_test(self) -> "CompileConfig":
        """The same configuration with the bracketed part (the pass under test) left out."""
        def drop(text: str, alone: str) -> str:
            # a pipeline that was the pass alone becomes the least that builds
            return ",".join(p for p in _split(text, "pipeline") if not is_bracketed(p)) or alone
        return dataclasses.replace(self, pipeline=drop(self.pipeline, "zero"),
                                   tir_pipeline=drop(self.tir_pipeline, "default"))

    def make_target(self) -> tvm.target.Target:
        return make_target(self.target)

    def relax_pass(self, target: tvm.target.Target) -> tvm.transform.Pass:
        return relax_pipeline(self.pipeline, target, dict(self.passes))

    def relax_under_test(self) -> bool:
        """Whether the pass under test is in the Relax pipeline (not the TIR one)."""
        return any(is_bracketed(p) for p in _split(self.pipeline, "pipeline"))

    def tir_pass(self, target: tvm.target.Target) -> str:
        return tir_pipeline(self.tir_pipeline, target, dict(self.passes))

    def validate(self) -> None:
        """Resolve every part once, so a typo fails before any work is done."""
        target = self.make_target()
        self.relax_pass(target)
        self.tir_pass(target)

    def context_options(self) -> dict:
        return {}

    def build_options(self) -> dict:
        return {}


def make_target(text: str) -> tvm.target.Target:
    """The Target of ``text`` (a kind, TVM 0.27's JSON form, or the old string
    form translated: ``targets.parse_target``); it queries no device (a process
    that did could not fork workers that use CUDA): ``targets.require_device``
    says whether a device is there, where a command runs the model."""
    target = parse_target(text).make()
    # the code generator, not the runtime: a GPU target compiles where no GPU (or driver) is
    if tvm.get_global_func(f"target.build.{target.kind.name}", allow_missing=True) is None:
        raise PipelineError(f"target '{text}' is not available in this TVM build")
    return target


def target_device(target: tvm.target.Target):
    """The device a build for ``target`` runs on."""
    kind = target.kind.name
    return tvm.cpu(0) if kind in ("llvm", "c") else tvm.device(kind, 0)


def absolute_file_parts(text: str) -> str:
    """``text`` with every ``file.py:callable`` part's path made absolute (in brackets too)."""
    parts = []
    for part in text.split(","):
        bracketed = is_bracketed(part)
        inner = part.strip()[1:-1].strip() if bracketed else part
        path, sep, attr = inner.strip().rpartition(":")
        inner = f"{os.path.abspath(path)}:{attr}" if sep and path.endswith(".py") else inner
        parts.append(f"[{inner}]" if bracketed else inner)
    return ",".join(parts)


def is_bracketed(part: str) -> bool:
    """A ``[spec]`` part: the pass under test."""
    part = part.strip()
    return len(part) > 2 and part.startswith("[") and part.endswith("]")


def _marker(name: str) -> tvm.transform.Pass:
    """A pass that changes nothing, so the events between two of them can be told apart."""
    return tvm.transform.module_pass(lambda mod, ctx: mod, opt_level=0, name=name)


def _under_test(part: str, resolve) -> list:
    """[begin marker, the pass, end marker] for a bracketed part, else [the part resolved]."""
    if not is_bracketed(part):
        return [resolve(part)]
    return [_marker(UNDER_TEST_BEGIN), resolve(part.strip()[1:-1].strip()), _marker(UNDER_TEST_END)]


def _split(text: str, what: str) -> list:
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise PipelineError(f"empty part in {what} '{text}'")
    return parts


def relax_pipeline(text: str, target: tvm.target.Target, objects: Optional[dict] = None) -> tvm.transform.Pass:
    parts = _split(text, "pipeline")
    objects = objects or {}

    def resolve(part: str) -> tvm.transform.Pass:
        if part in objects:
            return objects[part]
        if part == "zero":
            return relax.get_pipeline("zero")
        if part == "default":
            try:
                return relax.get_default_pipeline(target)
            except ValueError as err:  # TVM 0.27 has a default pipeline for llvm and the GPUs only ('c': none)
                raise PipelineError(f"TVM has no 'default' pipeline for target {target.kind.name}: "
                                    f"{str(err).splitlines()[0]} (give --pipeline zero, or passes by name)") from None
        if ":" in part:
            return import_pass(part, target)
        return _named_pass(part, relax.transform, "tvm.relax.transform")

    passes = [p for part in parts for p in _under_test(part, resolve)]
    if "default" not in parts:
        passes.append(relax.get_pipeline("default"))
    if is_gpu(target):  # every kernel scheduled, the user's dlight or not (the reference skips it)
        passes.append(gpu_fallback())
    return tvm.transform.Sequential(passes)


def tir_pipeline(text: str, target: tvm.target.Target, objects: Optional[dict] = None) -> str:
    """The name of a registered TIR pipeline that runs ``text``'s parts.

    ``tvm.tirx.build`` only takes a pipeline by name, so a pipeline with parts
    of its own is registered under a name derived from its text (the same text
    always registers the same factory, so this is idempotent; the target is in the
    name too, since the factory resolves parts for it). The finalize
    passes (LowerTVMBuiltin, LowerIntrin) stay TVM's default ones.
    """
    parts = _split(text, "TIR pipeline")
    if parts == ["default"]:
        return "default"
    objects = objects or {}

    def resolve(part: str):
        return objects[part] if part in objects else _tir_part(part, target)

    # resolve every part now, so a typo fails before any build
    for part in parts:
        _under_test(part, resolve)
    # the factory closes over the target: one registered name per (target, text), so a
    # later build for another target never runs a factory made for this one; a pass
    # object's identity is in the name too (two objects may share a label)
    name = f"numguard:{target}:{text}" + "".join(f":{id(objects[p])}" for p in sorted(objects) if p in text)

    def factory():
        default_main, finalize_host, finalize_device = tvm.tirx.get_tir_pipeline("default")
        passes = [default_main if part == "default" else p for part in parts for p in _under_test(part, resolve)]
        return tvm.transform.Sequential(passes), finalize_host, finalize_device

    tvm.tirx.register_tir_pipeline(name, factory)
    return name


def _tir_part(part: str, target: tvm.target.Target):
    if part == "default":
        return None
    if ":" in part:
        return import_pass(part, target)
    return _named_pass(part, tvm.tirx.transform, "tvm.tirx.transform")


def _named_pass(name: str, namespace, label: str) -> tvm.transform.Pass:
    factory = getattr(namespace, name, None)
    if factory is None or not callable(factory) or name.startswith("_"):
        known = [n for n in dir(namespace) if n[:1].isupper() and callable(getattr(namespace, n, None))]
        close = [n for n in known if n.lower() == name.lower()]
        close += [n for n in difflib.get_close_matches(name, known + ["zero", "default"], n=3, cutoff=0.6)
                  if n not in close]
        hint = f"; did you mean {' or '.join(close[:3])}?" if close else ""
        raise PipelineError(f"unknown pipeline part '{name}': not zero, default, module:callable, or a pass in "
                            f"{label}{hint}")
    try:
        result = factory()
    except TypeError:
        raise PipelineError(f"pass '{name}' needs arguments; wrap it in a module:callable part") from None
    except Exception as err:
        raise PipelineError(f"pass '{name}' fails to construct: {summarize_error(err)}") from None
    if not isinstance(result, tvm.transform.Pass):
        raise PipelineError(f"'{name}' in {label} is not a pass")
    return result
