"""The error tree: whose fault it is decides what the user is told.

- ``UsageError`` and its subclasses: the user's input is wrong (a model that
  does not load, a range that names no input, a report that is not one). One
  line says what; the CLI prints it and exits 2. They subclass ValueError so
  Python callers can catch them the usual way.
- ``NumericalError``: the compiler is wrong: a guarded compile changed the
  model's numbers (``guard(action="raise")``). Not a usage error; carries
  the report. The CLI reports a violation with exit 1, not with an exception.
- ``PipelineBreaksError``: the compiler is wrong: the pipeline as written
  does not build the model, and a bisection named the pass that breaks it
  (``.failure``, a ``bisect.build_failure.BuildFailure``). The CLI reports it
  like a violation, exit 1.
- ``UnsupportedModel``: TVM's limit: a valid model that TVM's frontend has
  no converter for (TVM 0.27's ONNX frontend has no LSTM or GRU). Not bad
  input, and nothing was checked: the CLI exits 5 (``EXIT_UNSUPPORTED``) and
  names the route that does import, where there is one.
- ``InternalError``: numguard itself is wrong (an invariant broke). The CLI
  exits 3 and asks for a bug report; any unexpected exception is treated so.
"""

import os
import re
import traceback
from typing import Mapping, Optional

BUG_REPORT = "please report it with the output of 'numguard --version' and the command that failed"


class NumguardError(Exception):
    """Every error numguard raises on purpose; the message is one line for the user.

    A setting the message names is said as the caller gave it: a Python
    caller reads the parameter, the CLI its flag (``said_with``). A message
    writes one as ``named(parameter)``."""

    def __init__(self, message: str = "", *args):
        self.template = message
        super().__init__(_NAMED.sub(_as_parameter, message), *args)

    def said_with(self, flags: Mapping[str, str]) -> str:
        """The message with its settings named as ``flags`` spells them (the command line's flags)."""
        return _NAMED.sub(lambda m: _as_flag(m, flags), getattr(self, "template", str(self)))


class UsageError(NumguardError, ValueError):
    """Bad usage or bad input: options that do not fit together or do not parse.

    ``parameter``: the Python parameter the message starts with (``jobs must
    be ...``); the CLI says its flag instead (``said_with``)."""

    def __init__(self, message: str = "", parameter: Optional[str] = None):
        super().__init__(message)
        self.parameter = parameter

    def said_with(self, flags: Mapping[str, str]) -> str:
        text = super().said_with(flags)
        if self.parameter is not None and self.parameter in flags and text.startswith(self.parameter):
            return flags[self.parameter] + text[len(self.parameter):]
        return text


# a setting inside an error's message: between two unit separators (which no message holds
# otherwise), with its value as the command line and as Python say it after record separators
_MARK, _VALUE = "\x1f", "\x1e"
_TEXT = f"([^{_MARK}{_VALUE}]*)"
_NAMED = re.compile(f"{_MARK}([A-Za-z_][A-Za-z0-9_]*)(?:{_VALUE}{_TEXT}{_VALUE}{_TEXT})?{_MARK}")


def named(parameter: str, cli_value: str = "", python_value: str = "") -> str:
    """``parameter`` inside an error's message, said as the caller gave it: a
    Python caller reads ``parameter=python_value`` (the name alone without a
    value), the command line ``--flag cli_value`` (``NumguardError.said_with``)."""
    if not cli_value:
        return f"{_MARK}{parameter}{_MARK}"
    return f"{_MARK}{parameter}{_VALUE}{cli_value}{_VALUE}{python_value}{_MARK}"


def _as_parameter(found) -> str:
    parameter, _, python_value = found.groups()
    return f"{parameter}={python_value}" if python_value else parameter


def _as_flag(found, flags: Mapping[str, str]) -> str:
    parameter, cli_value, _ = found.groups()
    flag = flags.get(parameter, parameter)
    return f"{flag} {cli_value}" if cli_value else flag


def from_keywords(cls, given: Mapping, caller: str, renamed: Optional[Mapping[str, str]] = None):
    """The dataclass ``cls`` made of the keywords ``given`` to ``caller``; an
    unknown keyword is a UsageError naming it and what ``caller`` takes.
    ``renamed``: {keyword ``caller`` takes: the field it fills}, where the
    public keyword and the field's name differ (the guard's ``fix`` is its
    ``remedy``)."""
    import dataclasses

    renamed = dict(renamed or {})
    names = [f.name for f in dataclasses.fields(cls) if f.name not in renamed.values()] + list(renamed)
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise UsageError(f"{caller} got an unknown keyword '{unknown[0]}'; it takes {', '.join(names)}")
    return cls(**{renamed.get(name, name): value for name, value in given.items()})


class ModelError(UsageError):
    """The model file cannot be loaded as a model."""


class PipelineError(UsageError):
    """A pipeline part, pass name or target is unknown or unusable."""


class RangeError(UsageError):
    """Input bounds are malformed, or name inputs the model does not have."""


class ToleranceError(UsageError):
    """rtol or atol is not a finite number >= 0."""


class InvalidReferenceError(UsageError):
    """The reference build is not finite anywhere in the given range."""


class BuildError(UsageError):
    """The user's own pipeline does not build (nothing was skipped)."""


class OutputPathError(UsageError):
    """A report or witness path cannot be written."""


class ReportError(UsageError):
    """A report (or what it names: witness, model file) cannot be replayed."""


class FixError(UsageError):
    """A fix file that is not one, or a fix that does not apply to the model compiled."""


class NumericalError(NumguardError):
    """A guarded compile changes the results beyond tolerance (``action="raise"``).

    ``.report`` is that compile's Report."""

    def __init__(self, message: str, report=None):
        super().__init__(message)
        self.report = report


class PipelineBuildError(BuildError):
    """The pipeline as written does not build; the session that tried holds the
    failed build's events (what ``bisect_build_failure`` bisects)."""


class PipelineBreaksError(NumguardError):
    """A pass of the pipeline breaks the build: a compiler defect, found
    (``.failure``: the BuildFailure, culprit named where one could be)."""

    def __init__(self, message: str, failure, config=None, model=None):
        super().__init__(message)
        self.failure = failure
        self.config = config
        self.model = model


class ImportFailure(NumguardError):
    """TVM's import of a valid model cannot run it at a shape the model allows: a
    finding about TVM (exit 1), not bad input. ``repro``: a TVM-only script that
    shows it."""

    def __init__(self, message: str, repro: str = ""):
        super().__init__(message)
        self.repro = repro


EXIT_UNSUPPORTED = 5  # the CLI's exit code for UnsupportedModel


class UnsupportedModel(NumguardError):
    """A valid model that TVM's frontend cannot import: an operator the model's
    format defines and TVM has no converter for. TVM's limit, not the user's
    mistake (exit EXIT_UNSUPPORTED, not 2) and not a wrong answer either: no
    number was computed. The message says which route does import, where
    there is one."""


class InternalError(NumguardError):
    """numguard broke one of its own invariants; a bug to report, not the user's fault."""

    def __init__(self, message: str):
        super().__init__(f"{message} ({BUG_REPORT})")


class Terminated(KeyboardInterrupt):
    """SIGTERM (what ``timeout``, CI runners and schedulers send), where the CLI
    handles it as Ctrl-C (``cli.interrupt``): a KeyboardInterrupt, so every step
    that stops its workers on a Ctrl-C stops them on it too; the CLI exits 143
    instead of 130."""


def first_line(err, limit: int = 300) -> str:
    """The line of an error message a user reads, at most ``limit`` characters.

    The one home of this rule. TVM's errors carry C++ tracebacks, TVMScript's a
    diagnostic with the source around it, jsonschema's the whole schema; the
    line is, in order: a TVMScript diagnostic (``error: ...`` with its
    ``--> file:line:col``), the first line that names an error (``tvm.error.``,
    ``TVMError``, ``...Error:``), the first line that is not a Python traceback's,
    and, for a bare ``assert`` with no message, where it failed."""
    text = _OP_REPR.sub(lambda found: found.group("name"), str(err).replace(_METADATA_NOTE, ""))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    diagnostic = next((ln for ln in lines if ln.lower().startswith("error:")), None)
    if diagnostic is not None:
        where = next((ln[3:].strip() for ln in lines if ln.startswith("-->")), "")
        return _clip(diagnostic[len("error:"):].strip() + (f" (at {where})" if where else ""), limit)
    for ln in lines:
        if ln.startswith(_ERROR_STARTS) or "Error:" in ln:
            return _clip(ln, limit)
    message = next((ln for ln in lines if not ln.startswith(("File ", "Traceback", "^"))), "")
    if not message and isinstance(err, BaseException):
        frames = traceback.extract_tb(err.__traceback__)
        if frames:
            frame = frames[-1]
            message = f"(no message) at {os.path.basename(frame.filename)}:{frame.lineno} in {frame.name}"
    return _clip(message or type(err).__name__, limit)


def summarize_error(err: BaseException) -> str:
    """``first_line``, with the error's type in front unless the line names an error itself."""
    line = first_line(err)
    if "Error" in line.split(":", 1)[0] or line.startswith(_ERROR_STARTS):
        return line
    return _clip(f"{type(err).__name__}: {line}", 300)


def _clip(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[:limit - 3] + "..."


_ERROR_STARTS = ("tvm.error.", "InternalError", "ValueError", "TVMError")
# what TVMScript puts in the middle of messages that print IR
_METADATA_NOTE = "# Metadata omitted. Use show_meta=True in script() method to show it."
# how TVM 0.27 prints an operator inside a message (``ir.Op(span=None, ..., name="relax.nn.group_norm",
# ..., support_level=10)``, some 500 characters): the line says its name instead
_OP_REPR = re.compile(r'ir\.Op\((?:(?!ir\.Op\().)*?name="(?P<name>[^"]+)"(?:(?!ir\.Op\().)*?support_level=\d+\)',
                      re.DOTALL)
