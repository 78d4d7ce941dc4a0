"""Reports: one JSON document per run, validated against the shipped schema."""

import importlib

_HOMES = {"SCHEMA_VERSION": "schemas", "Report": "document", "load_schema": "schemas", "validate": "schemas",
          "environment": "sections", "write_atomic": "files", "write_witness": "files"}

__all__ = ["SCHEMA_VERSION", "Report", "environment", "load_schema", "validate", "write_atomic", "write_witness"]


def __getattr__(name: str):
    # on first use: ``report.files`` (atomic writes) must not import TVM with the documents
    if name in _HOMES:
        value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tvm_numguard.report' has no attribute {name!r}")
