"""Regress rows on an existing Dask cluster (``numguard regress --cluster ADDRESS``).

Why Dask distributed rather than Ray: it is pure Python (a small optional
extra, no native object store), its workers are plain processes that import
TVM once and keep it, a nanny restarts a worker that a crashing build killed,
and ``distributed.LocalCluster`` starts a real multi-process cluster in a test.
The tasks are the same (pass, model) rows as the local pool's, sent as plain
data (RowRequest, CorpusModel): a pipeline given as text or ``module:callable``
is re-created on the worker, so nothing depends on pickling a pass object.
A witness is written on the worker, sent back as bytes and saved here, so the
cluster's machines need not share a file system.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile

from ...base.errors import UsageError
from ...report.files import write_atomic
from .row import RowRequest, judge_model

CONNECT_TIMEOUT = "10s"
MISSING = "running rows on a cluster needs Dask distributed: pip install 'tvm_numguard[cluster]'"


def client_for(address: str):
    """A connected ``distributed.Client``; UsageError when Dask is missing or the scheduler is unreachable."""
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(MISSING) from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as err:
        raise UsageError(f"cannot reach the Dask scheduler at {address} ({type(err).__name__}: {err})") \
            from None


def remote_row(request: RowRequest, entry) -> tuple:
    """(row, witness bytes or None): one row, run on a cluster worker."""
    workdir = tempfile.mkdtemp(prefix="numguard_regress_")
    try:
        local = dataclasses.replace(request, out_dir=os.path.join(workdir, "witnesses"))
        row = judge_model(local, entry, workdir)
        data = None
        if row.witness:
            with open(row.witness, "rb") as f:
                data = f.read()
            row.witness = os.path.join(request.out_dir, os.path.basename(row.witness))
        return row, data
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def rows_on_cluster(address: str, requests, models, tasks, report, lost) -> list:
    """The rows of ``tasks`` ((request, model) index pairs) computed on the cluster at ``address``."""
    from distributed import as_completed

    client = client_for(address)
    try:
        futures = {client.submit(remote_row, requests[i], models[j], pure=False): k for k, (i, j) in enumerate(tasks)}
        rows: list = [None] * len(tasks)
        for future in as_completed(futures):
            k = futures[future]
            i, j = tasks[k]
            try:
                row, witness = future.result()
                if witness is not None:
                    os.makedirs(os.path.dirname(row.witness), exist_ok=True)
                    write_atomic(row.witness, witness)
            except Exception as err:  # noqa: BLE001 - a worker killed by its build (KilledWorker): the row says so
                row = lost(requests[i], models[j], f"the cluster lost this row: {type(err).__name__}: {err}")
            rows[k] = row
            report(row)
        return rows
    finally:
        client.close()

