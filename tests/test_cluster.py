"""regress --cluster: the same rows on a Dask cluster started by the test (slow: the cluster's workers import TVM)."""

from __future__ import annotations

import json
import os

import pytest

from clirun import assert_one_line_error, run_cli

distributed = pytest.importorskip("distributed")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _rows(path) -> list:
    return [{k: v for k, v in r.items() if k not in ("seconds", "peak_private_bytes", "witness")}
            for r in json.loads(path.read_text())["rows"]]


@pytest.mark.slow
def test_regress_on_a_local_dask_cluster_gives_the_local_rows_and_survives_a_crashing_pass(tmp_path, capsys,
                                                                                          monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([ROOT, HERE]))  # patches/ and the crash passes, on the workers
    common = ["regress", "--pass", "patches.exp_range:make_pass", "--pass", "FoldConstant", "--models",
              "patches/exp_range", "--models", "tiny/mlp", "--random", "2", "-q"]
    local, remote = tmp_path / "local.json", tmp_path / "cluster.json"
    code_local, _, err = run_cli(capsys, *common, "--json", str(local), "--jobs", "1", "--out", str(tmp_path / "l"))
    assert code_local == 1, err
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        code, _, err = run_cli(capsys, *common, "--json", str(remote), "--cluster", cluster.scheduler_address,
                               "--out", str(tmp_path / "c"))
        assert code == code_local, err
        assert _rows(remote) == _rows(local)
        witness = [r["witness"] for r in json.loads(remote.read_text())["rows"] if r["verdict"] == "violation"]
        assert witness and all(os.path.isfile(w) and w.startswith(str(tmp_path / "c")) for w in witness)
        crash = os.path.join(HERE, "crash_passes.py")
        code, stdout, err = run_cli(capsys, "regress", "--pass", f"{crash}:pack_crash", "--models", "tiny/mlp",
                                    "--cluster", cluster.scheduler_address, "-q", "--require-changed", "0")
        assert "the cluster lost this row" in stdout and code == 0, (stdout, err)


@pytest.mark.slow  # the connection attempt times out after 10 s
def test_an_unreachable_cluster_is_one_line_and_exit_2(capsys):
    code, _, err = run_cli(capsys, "regress", "--pass", "FoldConstant", "--models", "tiny/mlp", "--cluster",
                           "tcp://127.0.0.1:9", "-q")
    assert_one_line_error(code, err, "cannot reach the Dask scheduler")
