"""The JSON schemas numguard's documents follow, and their one versioning convention.

Every JSON document numguard writes starts with ``header(kind)``: its
``schema_version`` (one number for all of them, raised when any changes
incompatibly), its ``kind`` (KINDS) and the ``tool`` that wrote it.
``kind_of`` also reads the forms numguard wrote before (a regress report's
``"schema": "numguard-regress/1"``, a replay's ``replay_version``).
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Mapping, Optional

from .. import __version__

# 2: the import stage judged per element (framework.outputs[].worst carries err_tvm and err_framework,
# unjudged counts elements with no truth; widened, flips and checked say what excused a difference)
SCHEMA_VERSION = 2
# report: bisect, search, trace, and each guarded compile; check: numguard check;
# build_failure: a pipeline that does not build; guard: a guard block's report file;
# replay: numguard replay's result; regress: numguard regress's; repro: a reduced
# violation's record; verdict: a guard's cached verdict; fix: numguard fix's
KINDS = ("report", "check", "build_failure", "guard", "replay", "regress", "repro", "verdict", "fix")
_EARLIER = {"numguard-regress/1": "regress", "numguard-repro/1": "repro"}


def header(kind: str) -> dict:
    """The first fields of a document of ``kind``."""
    assert kind in KINDS, kind
    return {"schema_version": SCHEMA_VERSION, "kind": kind, "tool": {"name": "tvm_numguard", "version": __version__}}


def kind_of(document: Mapping) -> Optional[str]:
    """What kind of numguard document ``document`` is (None: not one)."""
    if document.get("kind") in KINDS:
        return document["kind"]
    if "replay_version" in document:
        return "replay"
    return _EARLIER.get(document.get("schema", ""))


REPORT_SCHEMA = "schema.json"  # bisect, search, trace and guard reports
CHECK_SCHEMA = "check-schema.json"  # numguard check's document
REGRESS_SCHEMA = "regress-schema.json"  # numguard regress --json's document


@functools.lru_cache(maxsize=None)
def load_schema(name: str = REPORT_SCHEMA) -> dict:
    """A schema shipped in the package (read once; it never changes)."""
    return json.loads(resources.files("tvm_numguard.report").joinpath(name).read_text())


@functools.lru_cache(maxsize=None)
def _validator(name: str):
    import jsonschema

    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validate(document: dict, schema: str = REPORT_SCHEMA) -> None:
    """Raise jsonschema.ValidationError when ``document`` breaks the schema ``schema``."""
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(document))
    if error is not None:
        raise error
