"""A reduction written out: ``model.py`` (TVMScript), ``constants.npz``,
``witness.npz``, ``test_repro.py`` (a ready pytest file) and ``repro.json``."""

from __future__ import annotations

import json
import os
import re

from ...ir.pipeline import CompileConfig
from ...report.files import write_atomic, write_witness
from ...report.schemas import header
from ...base.tolerance import Tolerance
from .cut import lift_constants
from .reducer import Reduction

MODEL_FILE = '''"""Reduced by `numguard reduce`: {summary}

The TVMScript below takes its constants as trailing parameters (this TVM cannot
print constants into TVMScript and parse them back); ``Module`` binds them from
constants.npz.
"""

import os

import numpy as np
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

{script}

_HERE = os.path.dirname(os.path.abspath(__file__))
with np.load(os.path.join(_HERE, "constants.npz")) as _values:
    _constants = {{name: tvm.runtime.tensor(_values[name]) for name in _values.files}}
Module = relax.transform.BindParams("main", _constants)(Lifted) if _constants else Lifted
'''

TEST_FILE = '''"""Regression test written by `numguard reduce`: {summary}

It fails while the pass changes what model.py computes on witness.npz, and
passes once the pass is fixed. Replay the search that found it:
    {replay}
"""

import os

from tvm_numguard.testing import assert_same_on_witness

HERE = os.path.dirname(os.path.abspath(__file__))


def test_{name}_keeps_what_the_repro_computes():
    assert_same_on_witness(
        os.path.join(HERE, "model.py"), os.path.join(HERE, "witness.npz"),
        pipeline={pipeline!r}, tir_pipeline={tir_pipeline!r}, target={target!r}, rtol={rtol!r}, atol={atol!r})
'''


def write_repro(directory: str, reduction: Reduction, config: CompileConfig, tol: Tolerance, source: dict) -> dict:
    """Write the repro files to ``directory``; returns what repro.json holds."""
    os.makedirs(directory, exist_ok=True)
    lifted, constants = lift_constants(reduction.cut.mod)
    summary = (f"{config.under_test} changes what this {reduction.operators}-operator module computes "
               f"(score {reduction.score:.3g}; reduced from {reduction.operators_before} operators "
               f"of {source.get('model', 'the model')}).")
    script = lifted.script().replace("class Module:", "class Lifted:")
    script = "\n".join(line for line in script.splitlines() if not line.startswith("# from tvm.script"))
    write_atomic(os.path.join(directory, "model.py"), MODEL_FILE.format(summary=summary, script=script).encode())
    write_witness(os.path.join(directory, "constants.npz"), constants)
    write_witness(os.path.join(directory, "witness.npz"), reduction.inputs)
    name = re.sub(r"[^A-Za-z0-9]+", "_", config.under_test or "pass").strip("_").lower() or "pass"
    test = TEST_FILE.format(summary=summary, replay=source.get("replay") or "-", name=name,
                            pipeline=config.pipeline, tir_pipeline=config.tir_pipeline, target=config.target,
                            rtol=tol.rtol, atol=tol.atol)
    write_atomic(os.path.join(directory, "test_repro.py"), test.encode())
    record = {**header("repro"), "pass": config.under_test, "config": config.to_json(),
              "tolerance": tol.to_json(), "source": source, **reduction.to_json(),
              "files": ["model.py", "constants.npz", "witness.npz", "test_repro.py"]}
    write_atomic(os.path.join(directory, "repro.json"), (json.dumps(record, indent=2) + "\n").encode())
    return record
