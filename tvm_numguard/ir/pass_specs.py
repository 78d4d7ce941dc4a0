"""Passes a pipeline part names as ``module:callable`` or ``path/to/file.py:callable``.

A module is imported as ``python -m`` would (the working directory counts); a
file runs as a module of its own with its folder importable meanwhile. The
callable is a Pass, or a factory called with no arguments or with the Target
when it asks for it. Every failure is one ``PipelineError`` line naming the part.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import os
import sys

import tvm

from ..base.errors import PipelineError, summarize_error


def _import_from_cwd(module_name: str):
    """Import like ``python -m`` would: modules in the working directory count."""
    with _on_path(os.getcwd()):
        return importlib.import_module(module_name)


@contextlib.contextmanager
def _on_path(folder: str):
    """``folder`` first on ``sys.path`` inside the block (if it was not there)."""
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        yield
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)


def _load_file(path: str):
    """Execute a pipeline file as a module of its own; its folder is importable meanwhile."""
    path = os.path.abspath(path)
    name = "_numguard_pass_" + hashlib.sha1(path.encode()).hexdigest()[:12]
    mspec = importlib.util.spec_from_file_location(name, path)
    assert mspec is not None and mspec.loader is not None  # a .py file (the only kind loaded here) has both
    module = importlib.util.module_from_spec(mspec)
    sys.modules[name] = module  # the TVMScript parser finds the source through sys.modules
    try:
        with _on_path(os.path.dirname(path)):
            mspec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def _call_factory(factory, target: tvm.target.Target):
    """Call a pass factory with no arguments, or with the Target when it asks
    for it: one parameter without a default, or a parameter named ``target``
    (``EliminateCommonSubexpr(call_only=False)`` does not ask)."""
    try:
        params = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if len(required) == 1:
        return factory(target)
    if not required and any(p.name == "target" for p in params):
        return factory(target=target)
    return factory()


def import_pass(spec: str, target: tvm.target.Target) -> tvm.transform.Pass:
    module_name, _, attr = spec.rpartition(":")
    if not module_name or not attr:
        raise PipelineError(f"pipeline part '{spec}' must look like module:callable")
    is_file = module_name.endswith(".py")
    if is_file and not os.path.exists(module_name):
        raise PipelineError(f"pipeline part '{spec}': file {module_name} not found")
    try:
        module = _load_file(module_name) if is_file else _import_from_cwd(module_name)
    except Exception as err:
        raise PipelineError(f"pipeline part '{spec}': cannot import {module_name} ({summarize_error(err)})") from None
    factory = getattr(module, attr, None)
    if factory is None:
        raise PipelineError(f"pipeline part '{spec}': {module_name} has no attribute '{attr}'")
    if isinstance(factory, tvm.transform.Pass):
        return factory
    if not callable(factory):
        raise PipelineError(f"pipeline part '{spec}': {attr} is neither a Pass nor a callable returning one")
    try:
        result = _call_factory(factory, target)
    except Exception as err:
        raise PipelineError(f"pipeline part '{spec}': {attr}() raised {summarize_error(err)}") from None
    if not isinstance(result, tvm.transform.Pass):
        raise PipelineError(f"pipeline part '{spec}' returned {type(result).__name__}, not a tvm.transform.Pass")
    return result
