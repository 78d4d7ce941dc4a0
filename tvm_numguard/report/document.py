"""The report document: data, schema validation, JSON, text summary."""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import shlex
from importlib import resources
from typing import Mapping, Optional

import numpy as np

from .. import __version__
from .files import write_atomic, write_witness

SCHEMA_VERSION = 1


def environment(target: str) -> dict:
    import tvm

    return {
        "tvm_version": tvm.__version__,
        "numpy_version": np.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "target": target,
        "cwd": os.getcwd(),  # relative paths in the report were typed here
    }


@functools.lru_cache(maxsize=1)
def load_schema() -> dict:
    """The report schema shipped in the package (read once; it never changes)."""
    return json.loads(resources.files("tvm_numguard.report").joinpath("schema.json").read_text())


@functools.lru_cache(maxsize=1)
def _validator():
    import jsonschema

    schema = load_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validate(document: dict) -> None:
    """Raise jsonschema.ValidationError when ``document`` breaks the schema."""
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator().iter_errors(document))
    if error is not None:
        raise error


def _plain(value):
    """JSON-safe copy: numpy scalars to Python, inf/nan to strings."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    return value


class Report:
    """What a run found, as data. ``summary()`` is the text a terminal shows."""

    def __init__(self, data: dict, witness: Optional[Mapping[str, np.ndarray]] = None):
        self.data = _plain({"schema_version": SCHEMA_VERSION, "tool": {"name": "tvm_numguard", "version": __version__},
                            **data})
        self.witness = witness
        self._validated = False

    @property
    def violation(self) -> bool:
        return self.data["verdict"] == "violation"

    @property
    def culprit(self) -> Optional[str]:
        bis = self.data.get("bisection") or {}
        culprit = bis.get("culprit")
        return culprit["id"] if culprit and bis.get("status") == "culprit" else None

    @property
    def minimal_set(self) -> list:
        bis = self.data.get("bisection") or {}
        return [e["id"] for e in bis.get("minimal_set", [])]

    @property
    def exit_code(self) -> int:
        return 1 if self.violation else 0

    def to_json(self) -> dict:
        """The document, validated against the schema (once until it changes)."""
        if not self._validated:
            validate(self.data)
            self._validated = True
        return self.data

    def save_witness(self, path: str) -> None:
        """Write the witness inputs and record where they are."""
        if self.witness is None:
            return
        write_witness(path, self.witness)
        self._validated = False
        self.data["witness"]["path"] = path
        replay = self.data["replay"].split(" --inputs ")[0]
        self.data["replay"] = replay + " --inputs " + shlex.quote(os.path.abspath(path))

    def write_json(self, path: str) -> None:
        text = json.dumps(self.to_json(), indent=2, sort_keys=False, allow_nan=False)
        write_atomic(path, (text + "\n").encode())

    def summary(self) -> str:
        from .text import render_summary

        return render_summary(self.data)
