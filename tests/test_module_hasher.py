"""The recorder's ModuleHasher: whether an event changed the module, told
function by function, hashing each function object once."""

import os

import pytest
import tvm
import tvm_ffi
from tvm import relax

from tvm_numguard.ir.instrument import recorder
from tvm_numguard.ir.instrument.recorder import ModuleHasher
from tvm_numguard.ir.model import load_model
from tvm_numguard.ir.pipeline import CompileConfig
from tvm_numguard.build.compile import BuildRequest, compile_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLP = os.path.join(ROOT, "examples", "mlp", "mlp.onnx")
T = relax.TensorType((2,), "float32")


def _caller(callee: relax.GlobalVar) -> relax.Function:
    x = relax.Var("x", T)
    return relax.Function([x], relax.Call(callee, [x]), T)


def _identity() -> relax.Function:
    x = relax.Var("x", T)
    return relax.Function([x], x, T)


def _module(main_calls: str, names=("a", "b")) -> tvm.IRModule:
    gvars = {n: relax.GlobalVar(n) for n in names}
    funcs = {gvars[n]: _identity() for n in names}
    funcs[relax.GlobalVar("main")] = _caller(gvars[main_calls])
    return tvm.IRModule(funcs)


def test_a_module_hashes_as_its_structure():
    hasher = ModuleHasher()
    assert hasher(_module("a")) == hasher(_module("a"))  # new objects, same structure
    assert hasher(_module("a")) != hasher(_module("b"))  # main calls the other function
    assert hasher(_module("a")) != hasher(_module("a", names=("a", "c")))  # a function renamed
    with_attr = _module("a").with_attr("numguard_test", "x")
    assert hasher(with_attr) != hasher(_module("a"))  # module attributes count


def test_each_function_object_is_hashed_once(monkeypatch):
    hashed = []
    plain_hash = tvm_ffi.structural_hash
    monkeypatch.setattr(recorder.tvm_ffi, "structural_hash",
                        lambda obj, **kw: hashed.append(type(obj).__name__) or plain_hash(obj, **kw))
    hasher, mod = ModuleHasher(), _module("a")
    hasher(mod)
    functions = [n for n in hashed if "Function" in n]
    hasher(mod)
    mod["b"] = _identity()  # one function replaced
    hasher(mod)
    assert len([n for n in hashed if "Function" in n]) == len(functions) + 1 == 4


@pytest.mark.parametrize("pipeline", ["ToMixedPrecision,default", "zero"])
def test_the_changed_flags_are_those_of_whole_module_hashes(monkeypatch, pipeline):
    model = load_model(MLP)
    config = CompileConfig(pipeline=pipeline)
    by_function = compile_model(model.mod, config, BuildRequest(record=True)).events

    class WholeModule:
        def __call__(self, mod):
            return tvm_ffi.structural_hash(mod)

    monkeypatch.setattr(recorder, "ModuleHasher", WholeModule)
    whole = compile_model(model.mod, config, BuildRequest(record=True)).events
    assert [(e.id, e.changed) for e in by_function] == [(e.id, e.changed) for e in whole]
    assert any(e.changed for e in whole) and any(e.changed is False for e in whole)
