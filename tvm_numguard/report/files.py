"""Writing results so that none is ever half-written or lost."""

from __future__ import annotations

import io
import os
import tempfile
from typing import Mapping

import numpy as np

from ..base.errors import OutputPathError


def ensure_writable(path: str) -> None:
    """Fail before any work when ``path`` cannot be written."""
    directory = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise OutputPathError(f"cannot write {path}: it is a directory")
    if not os.path.isdir(directory):
        raise OutputPathError(f"cannot write {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK):
        raise OutputPathError(f"cannot write {path}: directory {directory} is not writable")


def write_atomic(path: str, data: bytes) -> None:
    """Write to a temporary file next to ``path``, then rename over it."""
    ensure_writable(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".numguard-", dir=directory)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a report is an ordinary file
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as err:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise OutputPathError(f"cannot write {path}: {err.strerror or err}") from None
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_witness(path: str, inputs: Mapping[str, np.ndarray]) -> None:
    """Save witness inputs as .npz (keys are the model's input names)."""
    buffer = io.BytesIO()
    arrays = {name: np.asarray(value) for name, value in inputs.items()}
    np.savez(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub: **arrays might be allow_pickle
    write_atomic(path, buffer.getvalue())


def read_witness(path: str) -> dict:
    from ..base.errors import RangeError

    try:
        with np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except FileNotFoundError:
        raise RangeError(f"inputs file not found: {path}") from None
    except Exception as err:
        raise RangeError(f"{path}: not a .npz file of inputs ({type(err).__name__})") from None
