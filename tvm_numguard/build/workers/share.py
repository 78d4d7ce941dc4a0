"""RunShare: a run of one executable on one input, made once for a whole session.

Configurations that differ often compile to the same executable: an IR
snapshot whose pass changed nothing the lowering keeps (7 of 17 Relax
snapshots of SqueezeNet under ToMixedPrecision), a TIR event whose skipping
changes nothing (4 of its 10). Running each again costs the VM's machine code
and a run: 4.5 s there, in float16. A share keys a run's outputs by what ran:
the build's fingerprint (``Build.fingerprint``: equal fingerprints, same
executable, for builds made alike), how it was built (``kind``) and the inputs'
bytes. The first worker to need a key claims it and runs; another that finds
it claimed waits for the outputs, or runs itself once the claimant has died.
A shared run gives what running again would: a session checks that both of
its builds run deterministically before it bisects.

A share is a directory, so it reaches workers forked before it existed: tasks
carry its path (``directory``). Only the process that made it removes it; one
that was killed (SIGKILL, or ended a second after a Ctrl-C or SIGTERM while TVM
held on) could not, so a new share removes the shares whose process is gone
(their names carry the process id).
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import shutil
import tempfile
import time
import weakref
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

POLL_SECONDS = 0.02
PREFIX = "numguard-runs-"  # a share's directory: PREFIX, the pid of the process that made it, a random part
# how a build was made, the first part of a key: a build of the session's model
# by its configuration (some events skipped), or a module on its own (compile_plain)
PIPELINE, PLAIN = "pipeline", "plain"


class RunShare:
    """Outputs of runs in ``directory``, by ``key``."""

    _finalizer: weakref.finalize  # set by create: a share made otherwise has none

    def __init__(self, directory: str):
        self.directory = directory

    @classmethod
    def create(cls) -> "RunShare":
        """A new, empty share, removed when it is garbage (or ``remove``) in this process."""
        remove_orphans(tempfile.gettempdir())
        share = cls(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
        share._finalizer = weakref.finalize(share, _remove, share.directory, os.getpid())
        return share

    def remove(self) -> None:
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()

    @staticmethod
    def key(kind: str, fingerprint: Optional[str], inputs: Mapping[str, np.ndarray]) -> Optional[str]:
        """The key of running a build made as ``kind`` says, with ``fingerprint``,
        on ``inputs``; None for a build without a fingerprint (never shared)."""
        if fingerprint is None:
            return None
        digest = hashlib.sha256(f"{kind}\0{fingerprint}".encode())
        for name in sorted(inputs):
            value = np.ascontiguousarray(inputs[name])
            digest.update(f"\0{name}\0{value.dtype.str}\0{value.shape}\0".encode())
            digest.update(value.tobytes())
        return digest.hexdigest()[:32]

    def put(self, key: Optional[str], outputs: list) -> None:
        """Keep ``outputs`` (a run made elsewhere) under ``key``."""
        if key is not None and not os.path.exists(self._path(key, "pkl")):
            self._write(key, outputs)

    def run(self, kind: str, build, inputs: Sequence[Mapping[str, np.ndarray]], run: Callable) -> list:
        """``[run(build, x) for x in inputs]``, each shared under ``build``'s key."""
        return [self.outputs(self.key(kind, build.fingerprint, x), functools.partial(run, build, x))[0] for x in inputs]

    def outputs(self, key: Optional[str], run: Callable[[], list]) -> tuple:
        """(outputs, shared): the outputs kept under ``key``, else those of
        ``run()``, kept for the next worker that needs them. ``run``'s errors
        propagate, and leave the key to whoever needs it next."""
        if key is None:
            return run(), False
        claim = self._path(key, "claim")
        while True:
            kept = self._read(key)
            if kept is not None:
                return kept, True
            try:
                fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                if not _alive(_claimant(claim)):
                    _unlink(claim)  # its claimant died running it: the next to look runs it
                else:
                    time.sleep(POLL_SECONDS)
                continue
            with os.fdopen(fd, "w") as f:
                f.write(str(os.getpid()))
            try:
                outputs = run()
                self._write(key, outputs)
            finally:
                _unlink(claim)
            return outputs, False

    def _path(self, key: str, suffix: str) -> str:
        return os.path.join(self.directory, f"{key}.{suffix}")

    def _read(self, key: str) -> Optional[list]:
        try:
            with open(self._path(key, "pkl"), "rb") as f:
                return pickle.load(f)
        except FileNotFoundError:
            return None

    def _write(self, key: str, outputs: list) -> None:
        partial = self._path(key, f"{os.getpid()}.part")
        with open(partial, "wb") as f:
            pickle.dump(outputs, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, self._path(key, "pkl"))  # readers see all of it or nothing


def _claimant(claim: str) -> Optional[int]:
    try:
        with open(claim) as f:
            text = f.read()
        age = time.time() - os.stat(claim).st_mtime
    except FileNotFoundError:
        return None
    if not text:  # a claim just made has no pid yet; one that never got it, a dead claimant
        return os.getpid() if age < 5.0 else None
    return int(text)


def _alive(pid: Optional[int]) -> bool:
    """Is ``pid`` running? A worker killed and not yet reaped is a zombie: dead."""
    if pid is None:
        return False
    if os.path.isdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _remove(directory: str, owner: int) -> None:
    if os.getpid() == owner:  # a forked worker's copy of the share leaves it alone
        shutil.rmtree(directory, ignore_errors=True)


def remove_orphans(folder: str) -> None:
    """Remove the shares in ``folder`` whose process is gone."""
    for name in os.listdir(folder):
        pid = name[len(PREFIX):].split("-", 1)[0] if name.startswith(PREFIX) else ""
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
