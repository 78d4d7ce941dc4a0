"""The fix a violation's summary prints is code that works for the way the
blamed pass entered the build: run in a fresh process, it clears the
violation (issue 25)."""

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import tvm
from tvm import relax

import tvm_numguard as numguard
from tvm_numguard.api.guard import NumericalRiskWarning
from tvm_numguard.ir.instrument import PassRecorder, disabled_pass_reaches
from tvm_numguard.report.advice import CODE

from clirun import run_cli  # noqa: E402
from relax_modules import unary_module

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")

# runs code that leaves ``executable`` on the model's module ``mod``, and scores
# its outputs on the witness against the plain float32 build (the reference's numbers)
RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np, tvm
    from tvm import relax
    import tvm_numguard as numguard
    from tvm_numguard.build.compile import call_main
    from tvm_numguard.base.compare import compare_outputs
    from tvm_numguard.base.tolerance import Tolerance
    spec = json.load(open(sys.argv[1]))
    witness = dict(np.load(spec["witness"]))
    model = numguard.load_model(spec["model"])
    def outputs(executable):
        vm = relax.VirtualMachine(executable, tvm.cpu())
        return call_main(vm, tvm.cpu(), model.input_names(), witness)
    reference = outputs(tvm.compile(model.mod, "llvm"))
    scores = []
    for code in spec["programs"]:
        scope = {"mod": numguard.load_model(spec["model"]).mod}
        exec(code, scope)
        scores.append(compare_outputs(reference, outputs(scope["executable"]), Tolerance()).score)
    print(json.dumps(scores))
""")


def fresh_process_scores(tmp_path, witness: str, programs: list, cwd=None) -> list:
    """Each program's score on the witness, all run in one new Python process (in ``cwd``)."""
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"model": DEMO, "witness": witness, "programs": programs}))
    out = subprocess.run([sys.executable, "-c", RUNNER, str(spec)], capture_output=True, text=True, timeout=300,
                         cwd=cwd)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def code_blocks(summary: str) -> list:
    """The runnable blocks of a summary's fix: runs of lines at the code indent."""
    lines = summary.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("fix "))
    base = len(lines[start]) - len(lines[start].lstrip()) - 2 + len(CODE)
    blocks, current = [], []
    for line in lines[start + 1:]:
        is_code = len(line) - len(line.lstrip()) >= base and line.strip()
        if is_code:
            current.append(line[base:])
        elif current:
            blocks.append("\n".join(current))
            current = []
    return blocks + (["\n".join(current)] if current else [])


def test_disabled_pass_reaches_only_the_passes_a_sequential_runs():
    """The TVM fact the advice rests on, and the recorder's reading of it."""
    ran = []

    @tvm.transform.module_pass(opt_level=0, name="CountMe")
    def count_me(mod, ctx):
        ran.append(1)
        return mod

    mod = unary_module(lambda x: relax.op.exp(x))
    with tvm.transform.PassContext(disabled_pass=["CountMe"]):
        count_me(mod)
        assert ran == [1]  # called directly: disabled_pass is not asked
        tvm.transform.Sequential([count_me])(mod)
        assert ran == [1]  # run by a Sequential: switched off
    recorder = PassRecorder(keep_snapshots=False, hash_modules=False)
    with tvm.transform.PassContext(instruments=[recorder]):
        count_me(mod)
        tvm.transform.Sequential([count_me])(mod)
    ids = [e.id for e in recorder.events if e.name == "CountMe"]
    assert ids == ["CountMe#0", "CountMe#1"]
    assert disabled_pass_reaches(recorder.events) == {"CountMe#1"}


@pytest.mark.slow  # a fresh Python process; the snippets' text and the switch-off rule stay fast
def test_pipeline_fix_snippets_clear_the_violation_in_a_fresh_process(tmp_path, capsys):
    witness = str(tmp_path / "w.npz")
    code, out, _ = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--pipeline",
                           "ToMixedPrecision,default", "--save-inputs", witness, "--budget", "20")
    assert code == 1 and "ToMixedPrecision#0" in out
    blocks = code_blocks(out)
    disabled, dropped = blocks[0], blocks[1]
    assert 'disabled_pass=["ToMixedPrecision"]' in disabled and "relax_pipeline=pipeline" in disabled
    setup = "\n".join(line for line in disabled.splitlines() if not line.startswith(("with", " ")))
    as_written = setup + "\nexecutable = tvm.compile(mod, target, relax_pipeline=pipeline)"
    scores = fresh_process_scores(tmp_path, witness, [as_written, disabled, setup + "\n" + dropped])
    assert scores[0] > 1.0, scores  # the pipeline as the snippet spells it has the violation
    assert scores[1] <= 1.0 and scores[2] <= 1.0, scores


@pytest.mark.slow  # end to end; the fast tier keeps the advice snippets' own tests
def test_a_pass_called_directly_gets_delete_the_call_and_that_works(tmp_path):
    program = textwrap.dedent("""
        import tvm
        from tvm import relax
        mod = relax.transform.ToMixedPrecision()(mod)
        executable = tvm.compile(mod, "llvm")
    """)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumericalRiskWarning)
        with numguard.guard(0.0, 1.0, action="report", budget="20", time_limit=None) as g:
            exec(program, {"mod": numguard.load_model(DEMO).mod})
    (report,) = g.report
    summary = g.report.summary()
    assert report.culprit == "ToMixedPrecision#0"
    assert "disabled_pass=" not in summary  # it would not reach a pass called directly
    (block,) = code_blocks(summary)
    call = block.split("#")[0].strip()
    assert call in program
    witness = str(tmp_path / "w.npz")
    np.savez(witness, **report.witness)
    fixed = "\n".join(line for line in program.splitlines() if line.strip() != call)
    scores = fresh_process_scores(tmp_path, witness, [program, fixed])
    assert scores[0] > 1.0 and scores[1] <= 1.0, scores


USER_PASS = textwrap.dedent('''
    import tvm
    from tvm import relax


    @tvm.transform.module_pass(opt_level=0, name="MyFastGelu")
    class MyFastGelu:
        """A user's own pass (float16 arithmetic inside)."""

        def transform_module(self, mod, ctx):
            return relax.transform.ToMixedPrecision()(mod)
''')
USER_PROGRAM = textwrap.dedent('''
    import tvm
    import my_passes
    mod = my_passes.MyFastGelu()(mod)
    executable = tvm.compile(mod, "llvm")
''')


def _guarded(path: str, source: str) -> tuple:
    """(report, summary) of ``source``, saved at ``path`` and run there under a guard (action="report")."""
    with open(path, "w") as f:
        f.write(source)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumericalRiskWarning)
        with numguard.guard(0.0, 1.0, action="report", budget="20", time_limit=None) as g:
            exec(compile(source, path, "exec"), {"mod": numguard.load_model(DEMO).mod})
    return g.report[0], g.report.summary()


def test_a_users_own_pass_is_deleted_as_the_user_wrote_it_and_that_works(tmp_path, monkeypatch):
    (tmp_path / "my_passes.py").write_text(USER_PASS)
    monkeypatch.syspath_prepend(str(tmp_path))
    app = str(tmp_path / "app.py")
    report, summary = _guarded(app, USER_PROGRAM)
    assert report.culprit == "MyFastGelu#0" and "relax.transform.MyFastGelu" not in summary
    (block,) = code_blocks(summary)
    assert block == "mod = my_passes.MyFastGelu()(mod)  # delete this call (app.py:4)", block
    assert USER_PROGRAM.splitlines()[3] == block.split("  #")[0]  # line 4 of app.py, as written
    fixed, _ = _guarded(app, USER_PROGRAM.replace(block.split("  #")[0] + "\n", ""))
    assert fixed.verdict == "clean" and fixed.data["guard"]["prelude_calls"] == []
    assert report.data["guard"]["prelude_calls"][0]["qualname"] == "my_passes.MyFastGelu"


def test_a_call_whose_source_cannot_be_read_is_named_by_the_pass_objects_qualname():
    from tvm_numguard.report.advice import CODE, switch_off_lines

    cfg = {"pipeline": "MyFastGelu,default", "target": "llvm", "opt_level": 3}
    event = {"id": "MyFastGelu#0", "name": "MyFastGelu", "disabled_pass_reaches": False}

    def lines(qualname):
        call = {"pass": "MyFastGelu", "qualname": qualname, "file": "<string>", "line": 3, "code": None}
        return switch_off_lines(cfg, [event], ["MyFastGelu"], True, [call])

    assert CODE + "mod = my_passes.MyFastGelu()(mod)  # delete this call (or its like, with arguments)" in \
        lines("my_passes.MyFastGelu")
    # a pass made of a function keeps no qualified name: no code is made up for it (none names relax.transform)
    assert not [line for line in lines(None) if line.startswith(CODE)]
