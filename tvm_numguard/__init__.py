"""tvm_numguard: find, explain and switch off the TVM pass that changes a model's numbers."""

__version__ = "0.1.0"

import importlib
import sys
import types

# where each public name lives; imported on first use, so that ``numguard --help``
# answers without importing TVM (seconds)
_HOMES = {
    "Options": "api.public", "bisect": "api.public", "list_passes": "api.public", "search": "api.public",
    "NumguardError": "base.errors",
    "GuardReport": "api.guard", "NumericalError": "api.guard", "NumericalRiskWarning": "api.guard",
    "guard": "api.guard",
    "InputSpec": "ir.model", "Model": "ir.model", "load_model": "ir.model",
    "KeepFloat32": "ir.narrow.widen", "keep_float32": "ir.narrow.widen",
    "CompileConfig": "ir.pipeline",
    "Report": "report",
    "trace": "api.trace.tracer",
}


class _Package(types.ModuleType):
    """``bisect``, ``search``, ``guard`` and ``trace`` stay the public functions:
    importing the subpackages of those names sets the attributes to them (the
    eager imports this replaces assigned the functions after the subpackages)."""

    def __setattr__(self, name, value):
        if name in _HOMES and isinstance(value, types.ModuleType):
            return  # the subpackage is still in sys.modules, and ``from tvm_numguard.api.guard import ...`` works
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


# subpackages a user reaches as attributes: ``tvm_numguard.fixes.load(path)``
_SUBPACKAGES = ("fixes",)


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)
    if name in _HOMES:
        value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
        setattr(sys.modules[__name__], name, value)
        return value
    raise AttributeError(f"module 'tvm_numguard' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_HOMES) | set(_SUBPACKAGES))


__all__ = [
    "CompileConfig",
    "GuardReport",
    "NumericalError",
    "NumericalRiskWarning",
    "InputSpec",
    "KeepFloat32",
    "Model",
    "keep_float32",
    "NumguardError",
    "Options",
    "Report",
    "bisect",
    "guard",
    "list_passes",
    "search",
    "load_model",
    "trace",
]
