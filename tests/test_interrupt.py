"""Ctrl-C stops every phase with exit 130 and keeps the witness; an exception in
a nested pass never corrupts the recorder's nesting (issue 10.4).

FoldConstant runs whole builds inside itself and gives up folding when one
fails, so an error raised in a nested pass (a KeyboardInterrupt included: Python
raises it in whatever hook runs next) was swallowed there; the nested pass never
left, and every later top-level pass was recorded under ``FoldConstant#0/``.
"""

import os
import signal

import pytest
import tvm

from tvm_numguard.ir.model import load_model
from tvm_numguard.ir.pipeline import CompileConfig
from tvm_numguard.build.compile import BuildRequest, compile_model, optional_events

from clirun import run_cli  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
PIPELINE = "ToMixedPrecision,zero"  # zero's FoldConstant builds constant subgraphs inside itself


@pytest.fixture(autouse=True)
def _sigint_delivered():
    """Each test here sends SIGINT to its own process. A process started with SIGINT ignored (under
    nohup, or as a background job of a shell without job control) keeps it ignored in numguard, as it
    should; here Python's own handler is put back for the test's length, as a terminal would have it."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@tvm.instrument.pass_instrument
class _InsideFoldConstant:
    """Calls ``act()`` in the first TIR pass that runs inside FoldConstant."""

    def __init__(self, act):
        self.act, self.inside, self.done = act, 0, False

    def run_before_pass(self, mod, info):
        if info.name == "FoldConstant":
            self.inside += 1
        elif self.inside and not self.done and info.name.startswith("tirx."):
            self.done = True
            self.act()

    def run_after_pass(self, mod, info):
        if info.name == "FoldConstant":
            self.inside -= 1


def _raise():
    raise RuntimeError("a nested pass failed")


@pytest.fixture(scope="module")
def demo():
    return load_model(DEMO)


def test_an_error_in_a_nested_pass_leaves_the_event_ids_intact(demo):
    config = CompileConfig(pipeline=PIPELINE)
    clean = compile_model(demo.mod, config, BuildRequest(record=True))
    hit = _InsideFoldConstant(_raise)
    failed_inside = compile_model(demo.mod, config, BuildRequest(record=True, instruments=[hit]))
    assert hit.done and failed_inside.ok  # FoldConstant swallowed the error
    assert [e.id for e in optional_events(failed_inside.events)] == [e.id for e in optional_events(clean.events)]


def test_ctrl_c_inside_a_nested_pass_stops_the_build(demo):
    hit = _InsideFoldConstant(lambda: signal.raise_signal(signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        compile_model(demo.mod, CompileConfig(pipeline=PIPELINE), BuildRequest(instruments=[hit]))
    assert hit.done
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the watch put the handler back


_BUILDS = {"count": 0, "at": None}


def interrupting_pass():
    """A no-op pass that sends SIGINT in the build numbered ``_BUILDS["at"]``:
    a wrapper by its name, so every build runs it (a bisection's probe runs
    no optional event before its first skipped one again: it starts there)."""

    @tvm.transform.module_pass(opt_level=0, name="count_builds_pipeline")
    def count(mod, ctx):
        _BUILDS["count"] += 1
        if _BUILDS["count"] == _BUILDS["at"]:
            signal.raise_signal(signal.SIGINT)
        return mod

    return count


@pytest.mark.parametrize("at, kept", [(1, False), (4, True)])
def test_ctrl_c_exits_130_and_says_where_the_witness_is(capsys, tmp_path, at, kept):
    """Build 1 is the optimized build (no witness yet), 2 the reference, 3 the
    range check's Relax phase; build 4 is the bisection's first."""
    _BUILDS.update(count=0, at=at)
    witness = str(tmp_path / "w.npz")
    code, out, err = run_cli(capsys, "bisect", DEMO, "--low", "0", "--high", "1", "--budget", "10",
                             "--pipeline", "test_interrupt:interrupting_pass,ToMixedPrecision,default",
                             "--save-inputs", witness)
    assert code == 130, out + err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines[-1].startswith("numguard: interrupted")
    assert "Traceback" not in err and out == ""
    assert (witness in lines[-1]) == kept and os.path.exists(witness) == kept


@pytest.fixture(scope="module")
def float16_unet(tmp_path_factory):
    """A float16 UNet as ONNX: its float16 GroupNorms differ from ONNX Runtime's float32 ones, so a
    check of it goes on to localize the import's first differing node (issue 55: minutes on a real UNet)."""
    from torch_blocks import unet_onnx

    return unet_onnx(tmp_path_factory.mktemp("unet") / "unet16.onnx")


def test_ctrl_c_while_localizing_the_first_node_keeps_the_witness_and_no_step_is_silent(
        capsys, tmp_path, monkeypatch, float16_unet):
    """The search's violation is kept before it is judged (the witness reached the CLI only after the
    import's judgement and its localization), and every build of the localization runs inside a wait
    that says what it waits for: the plain build of TVM's import, then the precision stage's, where
    a Ctrl-C comes."""
    from tvm_numguard.base import progress
    from tvm_numguard.judge.import_stage import first_node, precision

    waits = []

    def noting(module, interrupt: bool):
        built = module.compile_plain

        def compile_plain(*args, **kwargs):
            current = getattr(progress._current, "waits", None)
            waits.append((module.__name__.rsplit(".", 1)[-1], current[-1][0] if current else None))
            if interrupt:
                signal.raise_signal(signal.SIGINT)
            return built(*args, **kwargs)
        monkeypatch.setattr(module, "compile_plain", compile_plain)

    noting(first_node, interrupt=False)
    noting(precision, interrupt=True)
    witness = str(tmp_path / "w.npz")
    code, out, err = run_cli(capsys, "bisect", float16_unet, "--low", "0", "--high", "1", "--pipeline", "default",
                             "--budget", "20", "--save-inputs", witness)
    assert code == 130, out + err
    last = [ln for ln in err.splitlines() if ln.strip()][-1]
    assert last.startswith("numguard: interrupted while the precision stage"), last
    assert last.endswith(f"the witness of the violation found is kept in {witness}") and os.path.exists(witness)
    assert [where for where, _ in waits] == ["first_node", "precision"], waits
    assert waits[0][1].startswith("the first node: TVM's import built plainly") and waits[1][1].startswith(
        "the precision stage"), waits
