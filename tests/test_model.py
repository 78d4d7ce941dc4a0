"""Loading models: ONNX, light ONNX models with random weights, .pt2, TVMScript, IRModule; errors."""

import os
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tvm
from tvm_numguard.base.errors import ModelError, UnsupportedModel
from tvm_numguard.base.flags import FLAG
from tvm_numguard.ir.model import InputSpec, load_model
from tvm_numguard.ir.pipeline import CompileConfig
from tvm_numguard.build.compile import compile_model, run_build
from tvm_numguard.testing import (
    light_model,
    light_model_path,
    randomize_onnx_weights,
    tiny_cnn_onnx,
    tiny_mlp_onnx,
)

from onnxfile import save_onnx

ZERO = CompileConfig(pipeline="zero")


def _run(model, inputs):
    build = compile_model(model.mod, ZERO)
    assert build.ok, build.error
    return run_build(build, model.input_names(), inputs)


def _uniform(spec, seed=0):
    return np.random.default_rng(seed).uniform(0.0, 1.0, spec.shape).astype(spec.dtype)


def _param_shapes(model):
    return {p.name: tuple(int(d) for d in p.ty.shape.values) for p in model.mod["main"].params}




def _model_error(source, shapes=None) -> str:
    """The message a ModelError says on the command line; a Python caller's
    names the settings by their parameters, never by a flag."""
    with pytest.raises(ModelError) as info:
        load_model(source, shapes)
    message = str(info.value)
    assert message and "\n" not in message, message
    assert "Traceback" not in message and "File \"" not in message, message
    assert not [flag for flag in FLAG.values() if flag in message], message
    return info.value.said_with(FLAG)


# ---------------------------------------------------------------------------
# ONNX


@pytest.fixture(scope="module")
def cnn_path(tmp_path_factory):
    return tiny_cnn_onnx(tmp_path_factory.mktemp("cnn") / "cnn.onnx", seed=0)


def test_onnx_initializers_are_weights_not_inputs(cnn_path):
    model = load_model(cnn_path)
    assert model.inputs == [InputSpec("x", (1, 3, 16, 16), "float32")]
    assert _param_shapes(model) == {"x": (1, 3, 16, 16)}
    assert model.source == cnn_path
    assert len(model.sha256) == 64 and int(model.sha256, 16) >= 0
    assert model.to_json()["inputs"] == [{"name": "x", "shape": [1, 3, 16, 16], "dtype": "float32"}]


def test_onnx_initializers_listed_as_graph_inputs_are_weights(tmp_path, cnn_path):
    # IR version < 4 lists every initializer among the graph inputs too
    proto = onnx.load(cnn_path)
    for init in proto.graph.initializer:
        proto.graph.input.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    path = str(tmp_path / "listed.onnx")
    onnx.save(proto, path)
    model = load_model(path)
    assert model.input_names() == ["x"]
    assert [p.name for p in model.mod["main"].params] == ["x"]


def test_tiny_models_match_the_onnx_reference(tmp_path, cnn_path):
    from onnx.reference import ReferenceEvaluator

    mlp_path = tiny_mlp_onnx(tmp_path / "mlp.onnx", seed=1)
    for path in (cnn_path, mlp_path):
        model = load_model(path)
        x = _uniform(model.inputs[0])
        (got,) = _run(model, {"x": x})
        (want,) = ReferenceEvaluator(path).run(None, {"x": x})
        assert got.shape == want.shape
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert load_model(mlp_path).inputs == [InputSpec("x", (1, 32), "float32")]


def test_tiny_models_are_seeded(tmp_path):
    def weights(path):
        return {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}

    a = weights(tiny_cnn_onnx(tmp_path / "a.onnx", seed=3))
    b = weights(tiny_cnn_onnx(tmp_path / "b.onnx", seed=3))
    c = weights(tiny_cnn_onnx(tmp_path / "c.onnx", seed=4))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["conv1_w"], c["conv1_w"])


# ---------------------------------------------------------------------------
# light models with random weights


@pytest.mark.slow  # SqueezeNet built and run; the fast tier keeps light_model's small cases
def test_light_squeezenet_with_random_weights_builds_and_is_finite(tmp_path):
    path = light_model("squeezenet", seed=0, directory=tmp_path)
    assert path == str(tmp_path / "squeezenet.onnx")
    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    assert not [n for n in proto.graph.node if n.op_type == "ConstantOfShape"]
    model = load_model(path)
    assert model.inputs == [InputSpec("data_0", (1, 3, 224, 224), "float32")]
    assert list(_param_shapes(model)) == ["data_0"]
    build = compile_model(model.mod, ZERO)
    assert build.ok, build.error
    outs = [run_build(build, model.input_names(), {"data_0": _uniform(model.inputs[0], seed)})[0] for seed in (1, 2)]
    for out in outs:
        assert out.size == 1000 and np.all(np.isfinite(out))
        assert abs(float(out.sum()) - 1.0) < 1e-3  # a softmax
        assert out.std() > 1e-5 and out.max() < 0.99  # neither flat nor saturated
    assert np.abs(outs[0] - outs[1]).max() > 1e-6  # the output depends on the input


def test_randomize_onnx_weights_scales_and_seeds():
    proto = onnx.load(light_model_path("shufflenet"))
    a = randomize_onnx_weights(proto, seed=0)
    b = randomize_onnx_weights(proto, seed=0)
    c = randomize_onnx_weights(proto, seed=1)
    assert not [n for n in a.graph.node if n.op_type == "ConstantOfShape"]
    assert not [i for i in a.graph.initializer if i.name.endswith("__SHAPE")]
    onnx.checker.check_model(a)
    arrays = {i.name: numpy_helper.to_array(i) for i in a.graph.initializer}
    same = {i.name: numpy_helper.to_array(i) for i in b.graph.initializer}
    other = {i.name: numpy_helper.to_array(i) for i in c.graph.initializer}
    assert all(np.array_equal(arrays[k], same[k]) for k in arrays)
    uses, producer = {}, {}
    for node in a.graph.node:
        for k, name in enumerate(node.input):
            uses.setdefault(name, (node, k))
        for name in node.output:
            producer[name] = node.op_type
    checked = {"Relu": 0, "BatchNormalization": 0}
    for name, (node, k) in uses.items():
        if name not in arrays or name not in {n.output[0] for n in proto.graph.node if n.op_type == "ConstantOfShape"}:
            continue
        w = arrays[name]
        assert not np.array_equal(w, other[name])
        if node.op_type == "BatchNormalization" and k == 4:
            assert w.min() > 0  # variance
        if node.op_type == "Conv" and k == 1 and w.size > 1000 and producer.get(node.input[0]) in checked:
            # He (gain 2) on ReLU outputs, gain 1 on the signed output of a BatchNormalization
            gain = 2.0 if producer[node.input[0]] == "Relu" else 1.0
            std = np.sqrt(gain / np.prod(w.shape[1:]))
            assert 0.85 * std < w.std() < 1.15 * std, (name, w.std(), std)
            checked[producer[node.input[0]]] += 1
    assert checked["Relu"] > 5 and checked["BatchNormalization"] > 5, checked
    # the float initializers that were in the file are kept unless asked
    kept = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer if i.data_type == TensorProto.FLOAT}
    assert kept and all(np.array_equal(arrays[k], v) for k, v in kept.items())
    redone = randomize_onnx_weights(proto, seed=0, randomize_initializers=True)
    redone_arrays = {i.name: numpy_helper.to_array(i) for i in redone.graph.initializer}
    assert any(not np.array_equal(redone_arrays[k], v) for k, v in kept.items())


def test_light_model_path_names():
    assert light_model_path("resnet50").endswith(os.path.join("light", "light_resnet50.onnx"))
    with pytest.raises(ValueError):
        light_model_path("no_such_net")


# ---------------------------------------------------------------------------
# --shape


@pytest.fixture
def dynamic_onnx(tmp_path):
    return save_onnx(
        tmp_path / "dyn.onnx",
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
    )


def test_shape_override_fixes_a_dynamic_onnx_dim(dynamic_onnx):
    model = load_model(dynamic_onnx, {"x": [3, 4]})
    assert model.inputs == [InputSpec("x", (3, 4), "float32")]
    assert _param_shapes(model) == {"x": (3, 4)}
    x = np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4)
    (y,) = _run(model, {"x": x})
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_dynamic_onnx_dim_without_override(dynamic_onnx):
    message = _model_error(dynamic_onnx)
    assert "'x'" in message and "--shape x=N,4" in message
    with pytest.raises(ModelError, match=r"give its shape: shapes=\{'x': \[N, 4\]\}$"):  # as a Python caller gives it
        load_model(dynamic_onnx)


def test_shape_override_errors(dynamic_onnx):
    message = _model_error(dynamic_onnx, {"z": [3, 4]})
    assert "z" in message and "unknown input" in message and "x" in message
    message = _model_error(dynamic_onnx, {"x": [3, 4, 5]})
    assert "--shape x" in message and "rank 3" in message and "rank 2" in message
    assert "positive" in _model_error(dynamic_onnx, {"x": [3, -1]})
    assert "integers" in _model_error(dynamic_onnx, {"x": ["a", 4]})


# ---------------------------------------------------------------------------
# torch .pt2


def test_pt2_file_loads_builds_and_matches_torch(tmp_path):
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(8, 16)
            self.fc2 = torch.nn.Linear(16, 4)

        def forward(self, x):
            return torch.softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1)

    torch.manual_seed(0)
    net = Net().eval()
    x = torch.rand(2, 8)
    path = str(tmp_path / "net.pt2")
    torch.export.save(torch.export.export(net, (x,)), path)
    model = load_model(path)
    assert model.inputs == [InputSpec("x", (2, 8), "float32")]
    assert _param_shapes(model) == {"x": (2, 8)}  # the weights are constants, not inputs
    (got,) = _run(model, {"x": x.numpy()})
    with torch.no_grad():
        want = net(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_pt2_with_a_dynamic_batch_needs_and_takes_shape(tmp_path):
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        def forward(self, x):
            return torch.exp(x) * 2.0

    x = torch.rand(3, 5)
    program = torch.export.export(Net(), (x,), dynamic_shapes={"x": {0: torch.export.Dim("batch", min=2)}})
    path = str(tmp_path / "dyn.pt2")
    torch.export.save(program, path)
    message = _model_error(path)
    assert "'x'" in message and "--shape x=" in message
    model = load_model(path, {"x": [3, 5]})
    assert model.inputs == [InputSpec("x", (3, 5), "float32")]
    (got,) = _run(model, {"x": x.numpy()})
    np.testing.assert_allclose(got, np.exp(x.numpy()) * 2.0, rtol=1e-5)
    assert "fixed at 5" in _model_error(path, {"x": [3, 6]})


# ---------------------------------------------------------------------------
# TVMScript .py and IRModule objects

SCRIPT = '''
from tvm.script import ir as I, relax as R


@I.ir_module
class {name}:
    @R.function
    def main(x: R.Tensor(({n}, 4), "float32"), y: R.Tensor(({n}, 4), "float32")) -> R.Tensor(({n}, 4), "float32"):
        with R.dataflow():
            z = R.add(R.multiply(x, y), x)
            R.output(z)
        return z
'''


def _script(tmp_path, filename, *modules):
    """Write a .py defining one IRModule per (class name, first dim) pair."""
    text = "".join(SCRIPT.format(name=name, n=n) for name, n in modules)
    path = tmp_path / filename
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_tvmscript_file(tmp_path):
    path = _script(tmp_path, "model.py", ("Module", 2))
    model = load_model(path)
    assert model.inputs == [InputSpec("x", (2, 4), "float32"), InputSpec("y", (2, 4), "float32")]
    x = np.arange(8, dtype="float32").reshape(2, 4)
    y = np.full((2, 4), 0.5, dtype="float32")
    (z,) = _run(model, {"x": x, "y": y})
    np.testing.assert_allclose(z, x * y + x)


def test_tvmscript_file_with_several_modules(tmp_path):
    path = _script(tmp_path, "two.py", ("First", 2), ("Second", 3))
    message = _model_error(path)
    assert "First" in message and "Second" in message and "'Module'" in message
    # one of them named Module is the one used
    path = _script(tmp_path, "named.py", ("Other", 2), ("Module", 3))
    assert load_model(path).inputs[0].shape == (3, 4)


def test_tvmscript_symbolic_dims_bound_with_shape(tmp_path):
    path = _script(tmp_path, "sym.py", ("Module", '"n"'))
    message = _model_error(path)
    # the hint is a shape --shape takes (issue 25: 'x=n,4' is refused by the parser)
    assert "'x'" in message and "dimension 'n'" in message and "--shape x=1,4" in message
    model = load_model(path, {"x": [3, 4], "y": [3, 4]})
    assert [spec.shape for spec in model.inputs] == [(3, 4), (3, 4)]
    assert _param_shapes(model) == {"x": (3, 4), "y": (3, 4)}
    assert "'n'" in _model_error(path, {"x": [3, 4], "y": [2, 4]})
    assert "rank" in _model_error(path, {"x": [3]})
    assert "unknown input" in _model_error(path, {"w": [3, 4]})


def test_irmodule_object(tmp_path):
    import importlib.util
    import sys

    path = _script(tmp_path, "objmod.py", ("Module", 2))
    spec = importlib.util.spec_from_file_location("numguard_test_objmod", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(spec.name, None)
    mod = module.Module
    model = load_model(mod)
    assert isinstance(model.mod, tvm.IRModule)
    assert model.source == "<IRModule>" and model.sha256.startswith("structural:")
    assert model.input_names() == ["x", "y"]
    assert load_model(mod).sha256 == model.sha256
    assert "unknown input" in _model_error(mod, {"q": [2, 4]})


def test_irmodule_without_main():
    assert "'main'" in _model_error(tvm.IRModule({}))


# ---------------------------------------------------------------------------
# errors: one line, naming the problem


def test_missing_file(tmp_path):
    message = _model_error(str(tmp_path / "nope.onnx"))
    assert "not found" in message and "nope.onnx" in message


def test_directory(tmp_path):
    assert "directory" in _model_error(str(tmp_path))


def test_text_file_renamed_onnx(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("these are my notes, not a model\n" * 20)
    message = _model_error(str(path))
    assert "notes.onnx" in message and "ONNX" in message


def test_unknown_extension(tmp_path):
    path = tmp_path / "model.tflite"
    path.write_bytes(b"\0" * 16)
    message = _model_error(str(path))
    assert ".tflite" in message and ".onnx" in message


def test_onnx_operator_the_frontend_lacks(tmp_path):
    path = save_onnx(
        tmp_path / "det.onnx",
        [helper.make_node("Det", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
    )
    onnx.checker.check_model(onnx.load(path))
    with pytest.raises(UnsupportedModel) as info:  # a valid model: TVM's limit, not a usage error
        load_model(path)
    message = str(info.value)
    assert "no converter for Det" in message and "det.onnx" in message and "\n" not in message
    assert not isinstance(info.value, ModelError)


def test_garbage_pt2(tmp_path, capfd):
    path = tmp_path / "junk.pt2"
    path.write_bytes(np.random.default_rng(0).bytes(512))
    message = _model_error(str(path))
    assert "junk.pt2" in message and ".pt2" in message
    assert "Traceback" not in capfd.readouterr().err  # nothing noisy on the way either


def test_pt2_zip_that_is_not_an_export(tmp_path):
    import zipfile

    path = tmp_path / "other.pt2"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("hello.txt", "hi")
    assert "other.pt2" in _model_error(str(path))


def test_py_that_raises_on_import(tmp_path):
    """A TVMScript file that fails while it loads says why."""
    path = tmp_path / "broken.py"
    path.write_text("raise RuntimeError('the weights are missing')\n" + SCRIPT.format(name="Module", n=2))
    message = _model_error(str(path))
    assert "broken.py" in message and "RuntimeError" in message and "the weights are missing" in message


def test_a_py_that_is_not_tvmscript_is_refused_without_running_it(tmp_path, capsys):
    """Found by a new user's trial: any .py given as the model was run (imported), whatever it was; only
    a TVMScript file (a class decorated with @I.ir_module, as docs/cli.md says) is a model. Anything
    else is refused with one line, exit 2, before a line of it runs."""
    from clirun import assert_one_line_error, run_cli

    ran = tmp_path / "ran"
    path = tmp_path / "train.py"
    path.write_text(f"open({str(ran)!r}, 'w').write('ran')\nmod = None\n")
    code, _, err = run_cli(capsys, "bisect", str(path), "--low", "0", "--high", "1")
    assert not ran.exists()
    assert_one_line_error(code, err, "train.py", "not a TVMScript model", "has not run it")
    assert "not Python" in _model_error(str(_written(tmp_path / "notes.py", "these are notes, not code\n")))
    assert not ran.exists()
    # the documented forms still load: the decorator spelled as TVMScript allows, an IRModule assigned to Module
    spelled = SCRIPT.format(name="Module", n=2).replace("@I.ir_module", "@I.ir_module(check_well_formed=True)")
    assert load_model(str(_written(tmp_path / "spelled.py", spelled))).input_names() == ["x", "y"]
    built = ("from tvm import relax\nbb = relax.BlockBuilder()\nx = relax.Var('x', relax.TensorType((2, 4), "
             "'float32'))\nwith bb.function('main', [x]):\n    bb.emit_func_output(bb.emit(relax.op.exp(x)))\n"
             "Module = bb.get()\n")
    assert load_model(str(_written(tmp_path / "built.py", built))).input_names() == ["x"]


def _written(path, text):
    path.write_text(text)
    return path


def test_py_with_a_tvmscript_error(tmp_path):
    path = tmp_path / "typo.py"
    path.write_text(
        textwrap.dedent(
            '''
            from tvm.script import ir as I, relax as R

            @I.ir_module
            class Module:
                @R.function
                def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
                    y = R.no_such_op(x)
                    return y
            '''
        )
    )
    message = _model_error(str(path))
    assert "no_such_op" in message and "typo.py" in message


def test_py_without_a_module_or_exiting(tmp_path):
    path = tmp_path / "empty.py"
    path.write_text("x = 1\n")
    assert "no IRModule" in _model_error(str(path))
    path = tmp_path / "exits.py"
    path.write_text("import sys\nsys.exit(3)\n")
    assert "exits.py" in _model_error(str(path))


def test_shape_names_unknown_input_and_wrong_rank(cnn_path):
    message = _model_error(cnn_path, {"image": [1, 3, 16, 16]})
    assert "image" in message and "--shape" in message and "x" in message
    message = _model_error(cnn_path, {"x": [1, 3, 16]})
    assert "--shape x" in message and "rank 3" in message and "rank 4" in message


def test_not_a_path():
    assert "int" in _model_error(42)


def test_onnx_input_of_unknown_rank(tmp_path):
    path = save_onnx(
        tmp_path / "norank.onnx",
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    message = _model_error(path)
    assert "'x'" in message and "rank" in message and "--shape" in message
    assert load_model(path, {"x": [2, 3]}).inputs == [InputSpec("x", (2, 3), "float32")]


def test_malformed_onnx_node_is_rejected_before_the_frontend(tmp_path):
    # MaxUnpool needs 2 or 3 inputs; TVM's frontend crashes the process on this one
    path = save_onnx(
        tmp_path / "unpool.onnx",
        [helper.make_node("MaxUnpool", ["x"], ["y"], kernel_shape=[2, 2])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])],
    )
    message = _model_error(path)
    assert "MaxUnpool" in message and "unpool.onnx" in message


def test_pt2_dynamic_batch_hint_is_a_shape_the_export_allows(tmp_path):
    """The hint for a .pt2 dynamic dimension, pasted, loads; a value the export's
    constraint refuses is refused at --shape, not deep inside a build (issue 25)."""
    torch = pytest.importorskip("torch")
    batch = torch.export.Dim("batch", min=2, max=64)
    program = torch.export.export(torch.nn.Linear(8, 4), (torch.rand(4, 8),), dynamic_shapes={"input": {0: batch}})
    path = str(tmp_path / "dynamic.pt2")
    torch.export.save(program, path)
    message = _model_error(path)
    hint = message.split("--shape ")[1].split(" ")[0]
    assert hint == "input=2,8" and "[2, 64]" in message, message
    name, dims = hint.split("=")
    assert load_model(path, {name: [int(d) for d in dims.split(",")]}).inputs[0].shape == (2, 8)
    assert "[2, 64]" in _model_error(path, {"input": [1, 8]})
    assert "[2, 64]" in _model_error(path, {"input": [65, 8]})


def test_a_torch_node_torch_decomposed_is_named_with_the_programs_own_operator(tmp_path):
    """TVM's torch frontend runs torch's decompositions first: softplus reaches
    it as exp, log1p, where..., so a value named by its FX node alone ("node
    'log1p'") is nowhere in the user's program. Its label says the program's
    operator and the line it is on; a node torch kept (the multiply) says nothing more."""
    import torch
    import torch.nn.functional as F

    class Softplus(torch.nn.Module):
        def forward(self, x):
            return F.softplus(x) * 1e4

    path = str(tmp_path / "softplus.pt2")
    torch.export.save(torch.export.export(Softplus(), (torch.randn(4),)), path)
    labels = {p.key: p.label for p in load_model(path).provenance.values() if p.key and not p.inside}
    assert "of the program's softplus (torch decomposed it, test_model.py:" in labels["log1p"], labels
    assert labels["mul"] == "torch node 'mul'", labels
