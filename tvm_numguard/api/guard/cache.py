"""The verdict cache: a directory of JSON files, one per judged compile.

The key hashes what a verdict depends on (``Guard._cache_key``): the module
(structural hash), what the pipelines made of it (``Build.fingerprint``: a
pass edited under the same name changes it), the call's settings, target,
TVM and numguard versions, the catalog of required passes, input ranges and
tolerances. An entry holds the verdict and the pass events to skip. Writes go
through a temporary file and ``os.replace``, so two processes writing at once
leave one whole entry; an entry that cannot be read is ignored (with a warning)
and rewritten after the next compile is judged.

Beside each entry an empty ``.seen`` file is named by the key without the
build's fingerprint (the ``hint``): a compile whose hint is there will likely
hit, so the guard does not fork a worker to build the reference ahead.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from typing import Optional

from ...report.files import write_atomic
from ...report.schemas import header
from .intercept import user_stacklevel

CACHE_VERSION = 1


class CacheWarning(UserWarning):
    """A cache entry could not be used."""


def cache_key(parts: dict) -> str:
    text = json.dumps({"cache_version": CACHE_VERSION, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class VerdictCache:
    def __init__(self, directory: str):
        self.directory = os.fspath(directory)

    def _path(self, key: str, suffix: str = ".json") -> str:
        return os.path.join(self.directory, key[:2], key + suffix)

    def expects(self, hint: str) -> bool:
        """Whether a verdict was stored under this ``hint`` (see the module docstring)."""
        return os.path.exists(self._path(hint, ".seen"))

    def get(self, key: str) -> Optional[dict]:
        path = self._path(key)
        if not os.path.exists(path):
            return None
        try:
            with open(path, encoding="utf-8") as f:
                entry = json.load(f)
            if entry.get("key") != key or entry.get("verdict") not in ("clean", "benign", "violation"):
                raise ValueError("not a verdict entry")
            if not isinstance(entry.get("skip"), list):
                raise ValueError("no skip list")
        except (OSError, ValueError) as err:
            warnings.warn(f"numguard: ignoring corrupt verdict cache entry {path}: {err}", CacheWarning,
                          stacklevel=user_stacklevel())
            return None
        return entry

    def put(self, key: str, entry: dict, hint: Optional[str] = None) -> None:
        os.makedirs(os.path.dirname(self._path(key)), exist_ok=True)
        text = json.dumps({**header("verdict"), **entry, "key": key}, indent=1, sort_keys=True, allow_nan=False)
        write_atomic(self._path(key), (text + "\n").encode())
        if hint is not None:
            os.makedirs(os.path.dirname(self._path(hint)), exist_ok=True)
            write_atomic(self._path(hint, ".seen"), b"")
