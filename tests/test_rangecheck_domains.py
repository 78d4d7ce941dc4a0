"""Valid domains of vulnerable ops, and naming the op that made the reference NaN."""

import numpy as np
import pytest
from tvm import relax

from tvm_numguard.judge.rangecheck import DOMAINS, check_domains, domain_of, find_invalid_ops, is_vulnerable
from relax_modules import run_module, unary_module






def test_log_of_nonpositive_is_named():
    mod = unary_module(lambda x: relax.op.multiply(relax.op.log(x), relax.const(2.0, "float32")))
    x = np.linspace(-1.0, 1.0, 64, dtype=np.float32)
    out = run_module(mod, x)
    assert np.isnan(out[x < 0]).all() and np.isfinite(out[x > 0]).all()
    found = find_invalid_ops(mod, {"x": x})
    assert len(found) == 1
    op, binding = found[0]
    assert op == "log"
    assert binding == mod["main"].body.blocks[0].bindings[0].var.name
    (detail,) = check_domains(mod, [x])
    assert detail.invalid == int(np.count_nonzero(x <= 0)) and detail.example[0] <= 0


def test_valid_inputs_find_nothing():
    mod = unary_module(lambda x: relax.op.log(x))
    x = np.linspace(0.1, 1.0, 64, dtype=np.float32)
    assert find_invalid_ops(mod, {"x": x}) == []


def test_only_the_culprit_among_several_ops():
    """sqrt(x) stays in domain on x >= 0; divide by (x - 0.5) hits zero; exp overflows."""

    def fn(x):
        s = relax.op.sqrt(x)
        d = relax.op.divide(s, relax.op.subtract(x, relax.const(0.5, "float32")))
        return relax.op.add(d, relax.op.exp(relax.op.multiply(x, relax.const(200.0, "float32"))))

    mod = unary_module(fn, shape=(3,))
    x = np.array([0.5, 0.25, 0.75], np.float32)
    ops = sorted(op for op, _ in find_invalid_ops(mod, {"x": x}))
    assert ops == ["divide", "exp"]


def test_onnx_model_as_loaded(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    from tvm_numguard.ir.model import load_model

    graph = helper.make_graph(
        [helper.make_node("Sqrt", ["x"], ["s"]), helper.make_node("Log", ["s"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "m.onnx"))
    loaded = load_model(str(tmp_path / "m.onnx"))
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    # sqrt gets the negative values; log then only sees NaN (not its fault) and sqrt(0)=0 (its fault)
    ops = [op for op, _ in find_invalid_ops(loaded.mod, {"x": x})]
    assert ops[0] == "sqrt"


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_domain_table_is_consistent(name):
    domain = DOMAINS[name]
    assert name.startswith("relax.") and domain.op == name
    assert len(domain.valid_example) == len(domain.invalid_example) == len(domain.args)
    for dtype in (np.float32, np.float64):
        ok = [np.array(v, dtype) for v in domain.valid_example]
        bad = [np.array(v, dtype) for v in domain.invalid_example]
        assert domain.check(*ok).all(), f"{name} rejects its valid example"
        assert not domain.check(*bad).any(), f"{name} accepts its invalid example"
    assert domain.text and domain.failure
    assert domain_of(domain.short_name) is domain and is_vulnerable(name)


def test_domain_examples_match_numpy():
    """Where numpy has the function, the invalid example really gives NaN/Inf."""
    funcs = {
        "relax.log": np.log,
        "relax.sqrt": np.sqrt,
        "relax.rsqrt": lambda x: 1 / np.sqrt(x),
        "relax.divide": np.divide,
        "relax.power": np.power,
        "relax.asin": np.arcsin,
        "relax.acos": np.arccos,
        "relax.acosh": np.arccosh,
        "relax.atanh": np.arctanh,
        "relax.exp": np.exp,
        "relax.log1p": np.log1p,
    }
    with np.errstate(all="ignore"):
        for name, f in funcs.items():
            d = DOMAINS[name]
            assert np.isfinite(f(*[np.float32(v) for v in d.valid_example])), name
            assert not np.isfinite(f(*[np.float32(v) for v in d.invalid_example])), name


def test_special_domains():
    assert not is_vulnerable("relax.add")
    power = DOMAINS["relax.power"]
    assert power.check(np.float32(-2.0), np.float32(3.0))  # integer exponent is fine
    assert not power.check(np.float32(0.0), np.float32(-1.0))
    exp = DOMAINS["relax.exp"]
    assert exp.check(np.float32(88.0)) and not exp.check(np.float32(89.0))
    assert exp.check(np.float64(89.0))  # float64 overflows much later
    assert DOMAINS["relax.divide"].check(np.float32(1.0), np.float32(np.nan))  # NaN is not this op's fault
