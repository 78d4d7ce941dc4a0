"""Errors that mean: the user's input is wrong (not: the compiler is wrong).

Each carries one line that says what is wrong; the CLI prints it and exits 2.
They subclass ValueError so Python callers can catch them the usual way.
"""


class NumguardError(ValueError):
    """Bad usage or bad input; the message is one line for the user."""


class UsageError(NumguardError):
    """Command-line options that do not fit together or do not parse."""


class ModelError(NumguardError):
    """The model file cannot be loaded as a model."""


class PipelineError(NumguardError):
    """A pipeline part, pass name or target is unknown or unusable."""


class RangeError(NumguardError):
    """Input bounds are malformed, or name inputs the model does not have."""


class ToleranceError(NumguardError):
    """rtol or atol is not a finite number >= 0."""


class InvalidReferenceError(NumguardError):
    """The reference build is not finite anywhere in the given range."""


class BuildError(NumguardError):
    """The user's own pipeline does not build (nothing was skipped)."""


class OutputPathError(NumguardError):
    """A report or witness path cannot be written."""


class ReportError(NumguardError):
    """A report (or what it names: witness, model file) cannot be replayed."""
