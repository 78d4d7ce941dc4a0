"""Stable pass event ids, from hook sequences and from real compilations."""

import pytest

from tvm_numguard.ir.instrument import EventPath, close_skip_set
from tvm_numguard.ir.model import load_model
from tvm_numguard.ir.pipeline import CompileConfig
from tvm_numguard.build.compile import BuildRequest, compile_model, optional_events


def replay(hooks, skip=()):
    """Drive an EventPath like TVM drives an instrument; return ran ids."""
    path = EventPath()
    ran = []
    for hook, name in hooks:
        if hook == "enter":
            event = path.propose(name, 0)
            if event.id in skip:
                continue
            ran.append(path.enter(name, 0).id)
        else:
            path.leave(name)
    path.finish()
    return ran, [e.id for e in path.skipped_events]


SEQ = [
    ("enter", "sequential"),
    ("enter", "LegalizeOps"), ("leave", "LegalizeOps"),
    ("enter", "FoldConstant"),
    ("enter", "tirx.VectorizeLoop"), ("leave", "tirx.VectorizeLoop"),
    ("enter", "tirx.VectorizeLoop"), ("leave", "tirx.VectorizeLoop"),
    ("leave", "FoldConstant"),
    ("enter", "_pipeline"),
    ("enter", "sequential"),
    ("enter", "LegalizeOps"), ("leave", "LegalizeOps"),
    ("leave", "sequential"),
    ("leave", "_pipeline"),
    ("leave", "sequential"),
]


def test_ids_are_paths_of_non_wrappers_with_per_name_counters():
    ran, skipped = replay(SEQ)
    assert ran == [
        "sequential#0",
        "LegalizeOps#0",
        "FoldConstant#0",
        "FoldConstant#0/tirx.VectorizeLoop#0",
        "FoldConstant#0/tirx.VectorizeLoop#1",
        "_pipeline#0",
        "sequential#1",
        "LegalizeOps#1",
    ]
    assert skipped == []


def _skipping(hooks, event_name_index):
    """The hooks TVM fires when the given enter is skipped (no nested hooks)."""
    out, depth, skipping, count = [], 0, None, -1
    for hook, name in hooks:
        if hook == "enter":
            count += 1
            if skipping is None and count == event_name_index:
                out.append(("propose", name))
                skipping = depth
                depth += 1
                continue
            depth += 1
            if skipping is None:
                out.append((hook, name))
        else:
            depth -= 1
            if skipping is not None and depth == skipping:
                skipping = None
                continue
            if skipping is None:
                out.append((hook, name))
    return out


def test_skipping_an_event_leaves_every_other_id_unchanged():
    full, _ = replay(SEQ)
    path = EventPath()
    ran = []
    for hook, name in _skipping(SEQ, 2):  # FoldConstant and its nested passes
        if hook == "propose":
            path.propose(name, 0)
        elif hook == "enter":
            path.propose(name, 0)
            ran.append(path.enter(name, 0).id)
        else:
            path.leave(name)
    path.finish()
    assert [e.id for e in path.skipped_events] == ["FoldConstant#0"]
    assert ran == [i for i in full if not i.startswith("FoldConstant#0")]


def test_a_nested_pass_that_raised_does_not_corrupt_the_nesting():
    """FoldConstant catches the error of a build it runs inside itself: the
    nested pass that raised never leaves; the passes after FoldConstant are
    still top level."""
    hooks = [
        ("enter", "sequential"),
        ("enter", "FoldConstant"),
        ("enter", "_pipeline"), ("enter", "tirx.VectorizeLoop"),  # raises: no leave for either
        ("enter", "tirx.VectorizeLoop"), ("leave", "tirx.VectorizeLoop"),
        ("leave", "FoldConstant"),
        ("enter", "FuseOps"), ("leave", "FuseOps"),
        ("leave", "sequential"),
    ]
    ran, _ = replay(hooks)
    assert ran[-1] == "FuseOps#0"
    assert ran[3] == "FoldConstant#0/tirx.VectorizeLoop#0"


def test_required_passes_get_ids_without_should_run():
    path = EventPath()
    path.propose("A", 0)
    assert path.enter("A", 0).id == "A#0"
    path.leave("A")
    # a required pass reaches run_before_pass without should_run
    assert path.enter("A", 0).id == "A#1"
    path.leave("A")
    # two same-name passes, the first skipped
    path.propose("B", 0)
    path.propose("B", 0)
    assert path.enter("B", 0).id == "B#1"
    path.finish()
    assert [e.id for e in path.skipped_events] == ["B#0"]


MODULE = '''
from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 8), "float32"), w: R.Tensor((8, 4), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.nn.relu(y)
            o = R.add(z, R.const(1.0, "float32"))
            R.output(o)
        return o
'''


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "small.py"
    path.write_text(MODULE)
    return load_model(str(path))


def test_real_compilation_ids_are_stable_when_events_are_skipped(small_model):
    config = CompileConfig(pipeline="zero")
    full = compile_model(small_model.mod, config, BuildRequest(record=True))
    assert full.ok, full.error
    ids = [e.id for e in full.events]
    assert len(ids) == len(set(ids)), "ids must be unique"
    assert "FuseOps#0" in ids and "LegalizeOps#1" in ids and "tirx.VectorizeLoop#0" in ids
    levels = {e.id: e.level for e in full.events}
    assert levels["FuseOps#0"] == "relax" and levels["tirx.VectorizeLoop#0"] == "tir"
    changed = {e.id: e.changed for e in full.events}
    assert changed["LegalizeOps#0"] is True and changed["LegalizeOps#1"] is False
    skipped = compile_model(small_model.mod, config,
                            BuildRequest(skip=frozenset({"FoldConstant#0", "tirx.VectorizeLoop#0"})))
    assert skipped.ok, skipped.error
    ran = [e.id for e in skipped.events if e.ran]
    not_ran = [e.id for e in skipped.events if not e.ran]
    assert not_ran == ["FoldConstant#0", "tirx.VectorizeLoop#0"]
    assert ran == [i for i in ids if i not in not_ran]
    assert "BISECT: NOT running pass (5) FoldConstant#0 [relax]" in skipped.trace
    assert any(line.startswith("BISECT: running pass") and "FuseOps#0 [relax]" in line for line in skipped.trace)


def test_fuse_ops_is_skipped_with_the_fuse_tir_it_needs(small_model):
    full = compile_model(small_model.mod, CompileConfig(pipeline="zero"))
    events = optional_events(full.events)
    assert close_skip_set({"FuseTIR#0"}, events) == {"FuseTIR#0", "FuseOps#0"}
    assert close_skip_set({"FuseOps#0"}, events) == {"FuseOps#0"}


def test_an_event_instrument_that_overrides_tvms_hooks_is_refused_when_made():
    import pytest

    from tvm_numguard.ir.instrument.base import EventInstrument

    with pytest.raises(TypeError, match="overrides TVM's hook should_run"):
        class Sloppy(EventInstrument):  # noqa: F841 - made to be refused
            def should_run(self, mod, info):
                return True

    class Fine(EventInstrument):
        def decide(self, event, mod):
            return event.name != "FuseOps"

    assert Fine().decide(type("E", (), {"name": "FuseOps"})(), None) is False
