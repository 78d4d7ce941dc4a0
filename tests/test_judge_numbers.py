"""The judge's numbers (tvm_numguard/judge/numbers.py): each defined there only, each naming a test that
fails when it is changed the wrong way, the table in docs/judging.md the module's; and the tests of the
numbers no other test holds (issue 53.4)."""

from __future__ import annotations

import os
import re
import types

import numpy as np
import pytest
from onnx import TensorProto, helper

import tvm_numguard as ng
from tvm_numguard.base.tolerance import Tolerance
from tvm_numguard.judge import numbers
from tvm_numguard.judge.numbers import NUMBERS, markdown_table
from onnxfile import save_onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# numbers of the same name elsewhere that are not the judge's (another stage's own)
_OTHER_NUMBERS = {("tvm_numguard/fixes/finder.py", "MAX_ROUNDS"), ("tvm_numguard/api/guard/guard.py", "FRESH_INPUTS")}
# the one home of each number: numbers.py, but the base layer's, which the judge imports
_HOME = {"OWN_SCALE_ULPS": "tvm_numguard/base/tolerance.py"}
_ASSIGNED = re.compile(r"^\s*([A-Za-z_][\w, ]*?)\s*(?::[^=\n]*)?=(?!=)", re.MULTILINE)


# -- the table ------------------------------------------------------------------
def test_every_number_names_a_test_that_exists():
    assert len({n.name for n in NUMBERS}) == len(NUMBERS)
    for number in NUMBERS:
        path, _, name = number.test.partition("::")
        assert name, number
        with open(os.path.join(ROOT, path)) as f:
            assert re.search(rf"^def {re.escape(name.split('[')[0])}\(", f.read(), re.MULTILINE), number.test
        assert number.reason and getattr(numbers, number.name) == number.value


def test_every_number_is_defined_in_numbers_py_only():
    names = {n.name for n in NUMBERS}
    found = []
    for folder, _, files in os.walk(os.path.join(ROOT, "tvm_numguard")):
        for file in files:
            if not file.endswith(".py"):
                continue
            path = os.path.relpath(os.path.join(folder, file), ROOT)
            with open(os.path.join(ROOT, path)) as f:
                text = f.read()
            for match in _ASSIGNED.finditer(text):
                for name in (part.strip() for part in match.group(1).split(",")):
                    if name in names and (path, name) not in _OTHER_NUMBERS:
                        found.append((path, name))
    expected = {(_HOME.get(name, "tvm_numguard/judge/numbers.py"), name) for name in names}
    assert sorted(found) == sorted(expected)


def test_the_modules_that_use_a_number_hold_numbers_py_own():
    from tvm_numguard.judge import components, elements
    from tvm_numguard.judge.components import conversion
    from tvm_numguard.judge.import_stage import agreement, flips, framework_watch, local_node, precision

    assert elements.K is numbers.K and agreement.K is numbers.K and local_node.K is numbers.K
    assert elements.CONDITIONING_ROUNDINGS is numbers.CONDITIONING_ROUNDINGS
    assert agreement.CONDITIONING_RUNS is numbers.CONDITIONING_RUNS
    assert elements.CONDITIONING_SIGMAS is numbers.CONDITIONING_SIGMAS
    assert components.PLACED_NODES is numbers.PLACED_NODES
    assert (conversion.MOVED_BY, conversion.MOVED_ROUNDS) == (numbers.MOVED_BY, numbers.MOVED_ROUNDS)
    assert precision.MAX_ROUNDS is numbers.MAX_ROUNDS and flips.MAX_FLIPS is numbers.MAX_FLIPS
    assert local_node.LOCAL_NODES is numbers.LOCAL_NODES and framework_watch.FRESH_INPUTS is numbers.FRESH_INPUTS
    assert framework_watch.UNPROVEN_JUMP_SCORE is numbers.UNPROVEN_JUMP_SCORE


def test_the_docs_table_is_the_modules():
    with open(os.path.join(ROOT, "docs", "judging.md")) as f:
        text = f.read()
    assert "tvm_numguard/judge/numbers.py" in text
    assert markdown_table() in text, "docs/judging.md: paste tvm_numguard.judge.numbers.markdown_table()"


# -- K ------------------------------------------------------------------------------
def test_an_error_five_bits_past_the_frameworks_is_at_fault_and_three_bits_is_not():
    """Against a float64 truth of 1, the framework off by 2e-6: TVM off by 1e-4 (50 times) is at fault; off by
    1.6e-5 (8 times: three bits, what two honest implementations may differ by) is not, though both violate
    the tolerance against the framework and against the truth."""
    from tvm_numguard.judge.elements import judge_elements

    truth = np.ones(2)
    framework = np.full(2, 1 + 2e-6, np.float32)
    tvm = np.array([1 + 1e-4, 1 + 1.6e-5], np.float32)
    judged = judge_elements(framework, tvm, truth, Tolerance())
    assert judged.at_fault.tolist() == [True, False] and not judged.unjudged.any()


# -- PLACED_NODES ---------------------------------------------------------------------
def test_a_fault_behind_differing_nodes_every_component_exonerates_is_placed(monkeypatch):
    """Eight nodes differ by rounding every component exonerates before the one a component is at fault for
    (a transformer block differs at many nodes): the walk reaches it, it does not stop short and call the
    model's difference benign."""
    from tvm_numguard.judge import components

    keys = [f"n{i}" for i in range(8)] + ["bad"]
    monkeypatch.setattr(components, "differing_nodes", lambda located, tol: iter(keys))
    monkeypatch.setattr(components, "NodeCase", types.SimpleNamespace(of=lambda located, key, tol: key))
    monkeypatch.setattr(components, "place", lambda case: types.SimpleNamespace(key=case, exonerated=case != "bad"))
    located = types.SimpleNamespace(model=types.SimpleNamespace(folded={}), named={})
    placement, placements = components.place_fault(located, Tolerance())
    assert placement is not None and placement.key == "bad" and len(placements) == 9


# -- MAX_ROUNDS, FRESH_INPUTS: the precision stage ---------------------------------------
@pytest.fixture(scope="module")
def three_softmaxes(tmp_path_factory):
    """Three float16 blocks in a row, each a mean and a softmax of the input less it: operators ONNX Runtime
    computes in float32, each differing from TVM's float16."""
    f16, nodes, x = TensorProto.FLOAT16, [], "x"
    for i in range(3):
        nodes += [helper.make_node("ReduceMean", [x], [f"m{i}"], axes=[1], keepdims=1, name=f"mean{i}"),
                  helper.make_node("Sub", [x, f"m{i}"], [f"c{i}"]),
                  helper.make_node("Softmax", [f"c{i}"], [f"p{i}"], axis=-1, name=f"probs{i}")]
        x = f"p{i}"
    path = save_onnx(tmp_path_factory.mktemp("three") / "three.onnx", nodes,
                     [helper.make_tensor_value_info("x", f16, [2, 51])],
                     [helper.make_tensor_value_info(x, f16, [2, 51])], opset=17)
    return ng.bisect(path, ng.CompileConfig(pipeline="zero"), ng.Options(low=-3.0, high=3.0, budget="30", seed=0))


def test_a_float16_model_with_precision_differences_in_a_row_widens_them_all(three_softmaxes):
    """Each difference is explained by a round of its own: seven rounds here (a float16 GPT2 block needs
    more than four). With too few, the rest is left to the components, which call it rounding and print
    no float32 fix."""
    imports = three_softmaxes.imports
    assert imports.verdict == "precision", imports.reason
    assert {"m0", "p0", "m1", "p1", "m2", "p2"} <= {e.key for e in imports.widened}


def test_a_precision_verdict_is_verified_on_fresh_inputs_beside_the_witness(three_softmaxes):
    """Not the witness alone nor only the inputs the search already saw: the witness, the last searched
    ones and four fresh inputs of the range (fewer would let a widening that holds near the witness pass)."""
    imports = three_softmaxes.imports
    assert imports.verdict == "precision", imports.reason
    said = re.search(r"on (\d+) input set\(s\): the witness, (\d+) of the search's last inputs and (\d+) fresh "
                     r"ones of the range", imports.reason)
    assert said is not None, imports.reason
    verified, searched, fresh = (int(n) for n in said.groups())
    assert fresh >= 4 and verified == imports.verified_on == 1 + searched + fresh, imports.reason


# -- CONDITIONING_ROUNDINGS --------------------------------------------------------------
def test_inputs_move_by_a_few_roundings_of_their_float_when_conditioning_is_measured():
    """float32 values move by up to 32 of their roundings (K's five bits), float16 ones by up to two: any
    further and the moved truth would excuse a defect as the output's own conditioning."""
    from tvm_numguard.judge.elements import conditioning_scale
    from tvm_numguard.judge.framework.runtimes import moved

    rng = np.random.default_rng(0)
    for dtype, roundings in (("float32", 32), ("float16", 2)):
        values = moved(np.ones(1000, dtype), rng, conditioning_scale(dtype))
        assert 0 < np.max(np.abs(values - 1.0)) <= roundings * float(np.finfo(dtype).eps) / 2, dtype


# -- UNPROVEN_JUMP_SCORE -------------------------------------------------------------------
def test_a_difference_past_a_jump_is_kept_below_a_certain_violation():
    """A difference only the conditioning bound excuses, past a discontinuous operator: the search keeps it (scored over
    1) but below a certain violation, so that it goes on looking for one nothing excuses."""
    from tvm_numguard.engine.engine import CERTAIN_SCORE
    from tvm_numguard.judge.import_stage.framework_watch import PAST_A_JUMP, FrameworkWatch

    mine = [np.array([1.0, 2.0, 3.0], np.float32)]
    watch = types.SimpleNamespace(session=types.SimpleNamespace(runs=types.SimpleNamespace(
        reference_outputs=lambda inputs: mine)), tol=Tolerance(), _differs=lambda inputs, theirs, ours: PAST_A_JUMP)
    score = FrameworkWatch.import_score(watch, {}, [np.array([1.0, 2.5, 3.0], np.float32)])
    assert 1.0 < score < CERTAIN_SCORE


# -- SUMMATION_LAMBDA ------------------------------------------------------------------------
def _matmul_meaning():
    from tvm_numguard.judge.components.meaning import MEANINGS, OpMeaning

    return OpMeaning("relax.matmul", MEANINGS["relax.matmul"], None)


def test_a_transposed_convolution_kernel_that_drops_one_of_2048_channels_is_at_fault():
    """An upsampling's kernel that skips its last input channel (0.01 to 0.04 of every element) is at fault at
    every element though its 8192 terms each are allowed their sum's bound (4e-4 here); PyTorch's own float32
    kernel, summing in its own order, is not."""
    import torch
    import torch.nn.functional as F
    from types import SimpleNamespace

    from tvm_numguard.judge.components.meaning import MEANINGS, OpMeaning
    from tvm_numguard.judge.components.rule import fault_of, honest_bound

    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (1, 2048, 4, 4)).astype(np.float32)
    w = (rng.uniform(-1, 1, (2048, 4, 4, 4)) * 0.02).astype(np.float32)
    x[:, -1], w[-1] = 0.5, 0.02
    attrs = SimpleNamespace(strides=[2, 2], padding=[1, 1, 1, 1], output_padding=[0, 0], dilation=[1, 1], groups=1,
                            data_layout="NCHW", kernel_layout="IOHW")
    meaning = OpMeaning("relax.nn.conv2d_transpose", MEANINGS["relax.nn.conv2d_transpose"], attrs)

    def up(a, b):
        return F.conv_transpose2d(torch.from_numpy(a), torch.from_numpy(b), stride=2, padding=1).numpy()
    truth, honest, dropped = up(x.astype(np.float64), w.astype(np.float64)), up(x, w), up(x[:, :-1], w[:-1])
    bound = honest_bound(meaning, [x.astype(np.float64), w.astype(np.float64)], truth, "float32")
    assert fault_of(honest, dropped, truth, Tolerance(), bound).elements == dropped.size
    assert fault_of(honest, honest, truth, Tolerance(), bound).elements == 0


def test_a_matmul_kernel_that_drops_one_term_of_4096_is_at_fault():
    """An off-by-one in a reduction's loop (the last of 4096 terms dropped, 0.02 of a sum near 1000) is at
    fault at every element: the summation bound allows 2 * sqrt(n) * u of the terms' magnitudes (0.008 here);
    a bound four times as wide would excuse it, and the worst case, n * u, allows 0.25."""
    from tvm_numguard.judge.components.rule import fault_of, honest_bound

    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 1, (8, 4096)).astype(np.float32), rng.uniform(0, 1, (4096, 32)).astype(np.float32)
    a[:, -1], b[-1, :] = np.sqrt(0.02), np.sqrt(0.02)
    dropped = a[:, :-1] @ b[:-1]
    truth = a.astype(np.float64) @ b.astype(np.float64)
    bound = honest_bound(_matmul_meaning(), [a.astype(np.float64), b.astype(np.float64)], truth, "float32")
    fault = fault_of(a @ b, dropped, truth, Tolerance(), bound)
    assert fault.elements == dropped.size, fault
