"""A compile call caught by the guard, as a replayable configuration.

``CallConfig`` stands where a CompileConfig stands for the CLI (the session's builds
read ``make_target``, ``relax_pass``, ``tir_pass``, ``opt_level``): it replays
``tvm.compile(mod, target, relax_pipeline=..., tir_pipeline=...)`` or
``tvm.relax.build(...)`` with the user's own pipeline objects and PassContext
settings, after the ``prelude``: the passes the user applied to the module
inside the guard block before compiling it (so they can be bisected and
switched off like any other).
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any, Callable, Optional

import numpy as np
import tvm
from tvm import relax

from ...ir.narrow import FixPlan
from ...ir.pipeline import make_target


def describe(pipeline) -> str:
    """A stable text for a pipeline given as a name, a Pass, a callable or None."""
    if pipeline is None:
        return "none"
    if isinstance(pipeline, str):
        return pipeline
    if isinstance(pipeline, tvm.transform.Pass):
        passes = getattr(pipeline, "passes", None)
        name = pipeline.info.name
        if passes is not None and name == "sequential":
            return "[" + ",".join(describe(p) for p in passes) + "]"
        return name
    return getattr(pipeline, "__qualname__", type(pipeline).__name__)


def params_digest(params) -> Optional[str]:
    """A hash of ``relax.build(params=...)``'s values (name -> tensor or list of
    tensors): two calls with different constants must not share a verdict."""
    if not params:
        return None
    digest = hashlib.sha256()
    for name in sorted(params):
        values = params[name]
        for value in values if isinstance(values, (list, tuple)) else [values]:
            array = np.ascontiguousarray(value.numpy() if hasattr(value, "numpy") else np.asarray(value))
            digest.update(f"{name}:{array.dtype}:{array.shape}:".encode())
            digest.update(array.tobytes())
    return digest.hexdigest()


@dataclasses.dataclass(frozen=True, eq=False)
class CallConfig:
    """How to rebuild a caught compile call; see the module docstring."""

    target_obj: tvm.target.Target
    relax_pipeline: Any = "default"
    tir_pipeline_obj: Any = "default"
    prelude: tuple = ()
    opt_level: int = 2
    pass_config: Optional[dict] = None
    disabled_pass: tuple = ()
    required_pass: tuple = ()
    build_kwargs: Optional[dict] = None
    fix: Optional[FixPlan] = None  # a narrow.FixPlan every build applies (the guard's narrow fix)

    @classmethod
    def from_call(cls, target, relax_pipeline, tir_pipeline, prelude=(), build_kwargs=None) -> "CallConfig":
        """The call's configuration, with the PassContext it runs under."""
        ctx = tvm.transform.PassContext.current()
        if target is None:
            target = tvm.target.Target.current(allow_none=True) or "llvm"
        return cls(
            target_obj=target if isinstance(target, tvm.target.Target) else make_target(str(target)),
            relax_pipeline=relax_pipeline,
            tir_pipeline_obj=tir_pipeline,
            prelude=tuple(prelude),
            opt_level=int(ctx.opt_level),
            pass_config=dict(ctx.config) if ctx.config else None,
            disabled_pass=tuple(str(p) for p in ctx.disabled_pass),
            required_pass=tuple(str(p) for p in ctx.required_pass),
            build_kwargs=dict(build_kwargs or {}),
        )

    # -- what the session's builds read ------------------------------------------
    @property
    def pipeline(self) -> str:
        parts = [describe(p) for p in self.prelude] + [describe(self.relax_pipeline)]
        return ",".join(parts)

    @property
    def tir_pipeline(self) -> str:
        return describe(self.tir_pipeline_obj)

    @property
    def target(self) -> str:
        text = str(self.target_obj)
        return self.target_obj.kind.name if text.startswith("{") else text

    def make_target(self) -> tvm.target.Target:
        return self.target_obj

    @property
    def recreatable(self) -> bool:
        """Named pipelines, no prelude, no PassContext settings of the user's: a
        worker builds exactly this from text."""
        return (isinstance(self.relax_pipeline, str) and isinstance(self.tir_pipeline_obj, str) and not self.prelude
                and not self.pass_config and not self.disabled_pass and not self.required_pass)

    def validate(self) -> None:
        """Nothing to resolve: the pipeline objects are the user's own."""

    def relax_pass(self, target: tvm.target.Target):
        pipeline = self.relax_pipeline
        if isinstance(pipeline, str):
            # what tvm.relax.build does with a pipeline name
            if pipeline == "default" and "gpu" in target.keys:
                pipeline = relax.get_default_pipeline(target)
            else:
                pipeline = relax.get_pipeline(pipeline)
        prelude = self.prelude

        def run(mod):
            for applied in prelude:
                mod = applied(mod)
            return mod if pipeline is None else pipeline(mod)

        return run

    def tir_pass(self, target: tvm.target.Target):
        return self.tir_pipeline_obj

    @property
    def disable(self) -> tuple:
        """No pass event is skipped by id: a caught call switches passes off by name (``disabled_pass``)."""
        return ()

    @property
    def under_test(self) -> None:
        return None

    def context_options(self) -> dict:
        options: dict = {"disabled_pass": list(self.disabled_pass), "required_pass": list(self.required_pass)}
        if self.pass_config:
            options["config"] = self.pass_config
        return options

    def build_options(self) -> dict:
        return dict(self.build_kwargs or {})

    def identity(self) -> dict:
        """What a verdict depends on besides the module and the range (cache key)."""
        return {
            "pipeline": self.pipeline,
            "tir_pipeline": self.tir_pipeline,
            "target": self.target,
            "opt_level": self.opt_level,
            "pass_config": {k: str(v) for k, v in sorted((self.pass_config or {}).items())},
            "disabled_pass": sorted(self.disabled_pass),
            "required_pass": sorted(self.required_pass),
            "build": {k: str(v) for k, v in sorted((self.build_kwargs or {}).items()) if k != "params"},
            "params": params_digest((self.build_kwargs or {}).get("params")),
        }

    def to_json(self) -> dict:
        return {"pipeline": self.pipeline, "tir_pipeline": self.tir_pipeline, "target": self.target,
                "opt_level": self.opt_level}


@dataclasses.dataclass(frozen=True)
class CaughtCall:
    """A compile call the guard caught: ``kind`` (``tvm.compile`` or
    ``tvm.relax.build``), the function and its arguments as the user gave
    them, and what they bound to."""

    kind: str
    original: Callable
    args: tuple
    kwargs: dict
    mod: object
    target: object = None
    relax_pipeline: object = "default"
    tir_pipeline: object = "default"
    build_kwargs: dict = dataclasses.field(default_factory=dict)

    def as_written(self):
        """The call made as the user made it."""
        return self.original(*self.args, **self.kwargs)

    def config(self, prelude: tuple = ()) -> CallConfig:
        return CallConfig.from_call(self.target, self.relax_pipeline, self.tir_pipeline, prelude, self.build_kwargs)


@dataclasses.dataclass(frozen=True)
class ReplayStart:
    """What judging a guarded call starts from: the ``module`` (the one the
    block started with) and the ``config`` that replays the call from it. Passes applied before the call
    that replay are the config's prelude; ones that do not are judged by
    the ``chain`` of modules they made (``note`` says so) and ``prelude``
    names them; ``calls``: where the user's code applied each
    (``PassCall.to_json``), for the advice to delete a call."""

    module: object
    config: CallConfig
    prelude: tuple = ()
    note: Optional[str] = None
    chain: Optional[list] = None
    calls: tuple = ()
