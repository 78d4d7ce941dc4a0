"""The command line's spelling of every setting numguard says back, and of
the program that command lines start with.

One home: the CLI's option groups declare these flags, each settings object's
``to_args`` says itself back with them (the printed verify and replay lines),
and the CLI names them in a library error (``UsageError.said_with``). A key is
the field's name in the object that holds it (``Options``, ``CompileConfig``,
``Workers``, ``load_model``/``Model``).

Documents record their command lines as ``numguard ...``; what is printed
starts with the program as the user can run it (``as_invoked``): the command
as invoked (``invoked_as``), or, where numguard runs inside another program
(the pytest plugin), the console script installed beside this Python
(``installed_program``). After the README's install that is
``.venv/bin/numguard``, which is not on PATH.
"""

import os
import shlex
import shutil
import sys
from typing import Optional

FLAG = {
    # Options
    "low": "--low", "high": "--high", "ranges": "--range", "rtol": "--rtol", "atol": "--atol",
    "search": "--search", "budget": "--budget", "seed": "--seed", "strategy": "--strategy",
    "oracle": "--no-oracle", "framework": "--no-framework",
    # CompileConfig
    "pipeline": "--pipeline", "tir_pipeline": "--tir-pipeline", "target": "--target",
    "opt_level": "--opt-level", "disable": "--disable", "fix": "--apply-fix",
    # Workers
    "jobs": "--jobs", "build_timeout": "--build-timeout", "max_memory": "--max-memory",
    # load_model / Model
    "shapes": "--shape", "import_at_shapes": "--fix-shapes", "kept_float32": "--keep-float32",
}


def invoked_as(argv0: Optional[str] = None) -> str:
    """How this command was invoked, for the command lines it prints: ``numguard``
    where that is what PATH finds, else the script's path as given."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if os.path.basename(argv0) != "numguard":  # not the console script (a test calling cli.main)
        return "numguard"
    return _on_path_or(argv0)


def installed_program() -> str:
    """The ``numguard`` console script of this Python's environment, as a
    command line can start with it: ``numguard`` where PATH finds that one,
    else its path (the venv's ``bin/numguard``, beside ``sys.executable``;
    ``bin`` is not resolved: a venv's python is a link out of it)."""
    beside = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "numguard")
    if not os.path.isfile(beside):
        return "numguard"  # not installed as a script here: the name is all there is
    return _on_path_or(beside)


def _on_path_or(script: str) -> str:
    found = shutil.which("numguard")
    if found and os.path.realpath(found) == os.path.realpath(script):
        return "numguard"
    return script


def as_invoked(command: str, program: str) -> str:
    """A command line of a document (``numguard ...``) starting with ``program``,
    how numguard can be run here, instead."""
    if program == "numguard" or not command.startswith("numguard "):
        return command
    return " ".join(shlex.quote(w) for w in shlex.split(program)) + command[len("numguard"):]
