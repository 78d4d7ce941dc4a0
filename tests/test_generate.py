"""The random model generator: valid models, the same in every process, patterns passes rewrite."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import relax

from tvm_numguard.base.errors import UsageError
from tvm_numguard.testing.generate import MOTIFS, GeneratorConfig, generate
from tvm_numguard.judge.rangecheck.interval import Interval
from tvm_numguard.testing.generate.ops import POSITIVE_MARGIN, SPECS
from tvm_numguard.testing.generate.validate import invalid_reason
from tvm_numguard.testing.regress.corpus import collect, random_models


@pytest.mark.slow  # builds and runs every generated model; the generator's own tests stay fast
def test_generated_models_build_and_are_finite_everywhere_in_their_range():
    graphs = [generate(7, index) for index in range(30)]
    reasons = [(invalid_reason(g), g) for g in graphs]
    invalid = [(reason, g.describe()) for reason, g in reasons if reason is not None]
    assert not invalid, invalid[:1]
    assert len({op for g in graphs for op in g.operators()}) >= 20  # the generator explores the operators


def test_the_same_seed_and_index_give_the_same_model_and_others_differ():
    first, again, other = generate(3, 5), generate(3, 5), generate(3, 6)
    assert first.describe() == again.describe()
    assert tvm_ffi.structural_equal(first.to_irmodule(), again.to_irmodule())
    assert first.describe() != other.describe()


def test_the_shapes_the_generator_tracks_are_the_shapes_relax_infers():
    for index in range(20):
        graph = generate(11, index)
        ret = graph.to_irmodule()["main"].ret_ty
        fields = list(ret.fields) if isinstance(ret, relax.TupleType) else [ret]
        assert [tuple(int(d) for d in f.shape) for f in fields] == [graph.nodes[k].shape for k in graph.outputs]


def test_operands_are_kept_in_their_operators_domain():
    graphs = [generate(5, index, GeneratorConfig(target="log,rsqrt,divide,power,exp")) for index in range(40)]
    checked = 0
    for graph in graphs:
        for node in graph.nodes:
            if node.op in ("log", "rsqrt", "power"):
                assert graph.nodes[node.args[0]].interval.lo > POSITIVE_MARGIN
                checked += 1
            if node.op == "divide":
                assert graph.nodes[node.args[1]].interval.lo > POSITIVE_MARGIN
            if node.op == "exp":
                assert graph.nodes[node.args[0]].interval.hi <= 8.0
    assert checked >= 20


def test_discontinuous_operators_only_when_asked():
    plain = {op for index in range(60) for op in generate(2, index).operators()}
    asked = {op for index in range(60) for op in generate(2, index, GeneratorConfig(discontinuous=True)).operators()}
    discontinuous = {name for name, spec in SPECS.items() if spec.discontinuous}
    assert not plain & discontinuous and asked & discontinuous


@pytest.mark.parametrize("pass_name", sorted(MOTIFS))
def test_a_targeted_stream_makes_models_the_pass_rewrites(pass_name):
    make = getattr(relax.transform, pass_name)
    rewrite = make(out_dtype="float16") if pass_name == "ToMixedPrecision" else make()
    fired = untargeted = 0
    for index in range(10):
        for target in (pass_name, None):
            mod = generate(4, index, GeneratorConfig(target=target, max_ops=5)).to_irmodule()
            try:
                changed = not tvm_ffi.structural_equal(rewrite(mod), mod)
            except tvm.error.InternalError:  # ToMixedPrecision and clip after matmul: docs/findings.md
                changed = False
            fired += changed and target is not None
            untargeted += changed and target is None
    assert fired >= 7 and fired > untargeted


def test_an_unknown_target_is_one_clear_error():
    with pytest.raises(UsageError, match="not a pass with a known pattern"):
        generate(0, 0, GeneratorConfig(target="NoSuchPass"))


@pytest.mark.parametrize("op", ["add", "multiply", "square", "abs", "maximum"])
def test_interval_arithmetic_bounds_every_sampled_result(op):
    rng = np.random.default_rng(0)
    for _ in range(200):
        a, b = sorted(rng.uniform(-5, 5, 2)), sorted(rng.uniform(-5, 5, 2))
        x, y = Interval(*a), Interval(*b)
        bound = SPECS[op].value([x, y], {}, [(), ()])
        xs, ys = rng.uniform(*a, 50), rng.uniform(*b, 50)
        got = {"add": xs + ys, "multiply": xs * ys, "square": xs * xs, "abs": np.abs(xs),
               "maximum": np.maximum(xs, ys)}[op]
        assert bound.lo - 1e-12 <= got.min() and got.max() <= bound.hi + 1e-12


def test_a_generated_model_is_named_by_its_row_and_comes_back_the_same():
    made = random_models(4, 9, "FoldConstant")[3]
    again, = collect([made.name])
    assert again == made and made.selector == "random/9-3@FoldConstant"
    assert all(math.isfinite(lo) and lo < hi for _, lo, hi in made.ranges)


def test_the_hypothesis_strategy_shrinks_to_a_small_model():
    hypothesis = pytest.importorskip("hypothesis")
    from tvm_numguard.testing.generate.strategy import relax_graphs

    smallest = hypothesis.find(relax_graphs(), lambda g: "exp" in g.operators(),
                               settings=hypothesis.settings(database=None, max_examples=300))
    assert smallest.operators() == ["exp"] and len(smallest.nodes) == 2


def test_the_validity_check_catches_a_model_that_leaves_its_domain():
    from tvm_numguard.testing.generate.model_graph import Graph, Node

    # log of an input whose range crosses 0: what the generator's adapters prevent
    graph = Graph((Node("input", (), (), (2,), Interval(-1.0, 1.0)), Node("log", (0,), (), (2,), Interval(-1.0, 0.0))),
                  (1,))
    assert invalid_reason(graph) == "NaN/Inf at trial 0 (corner)"
