"""What a guard block is asked to do besides the range: validated when made."""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Literal, Mapping, Optional, Union

from ...base.errors import UsageError
from ...ir.narrow.plan import REMEDIES
from ...locate.options import Options
from ...report.files import ensure_writable
from ...build.workers import Workers

ACTIONS = ("disable", "report", "raise")
# guard()'s keyword -> the field it fills: ``fix=`` (its name since 0.1) says the remedy ``disable`` applies
KEYWORDS = {"fix": "remedy"}


@dataclasses.dataclass(frozen=True)
class GuardSettings:
    """The keywords of ``guard(low, high, **settings)``.

    ``ranges``: {input name: (low, high)}, instead of or besides low/high;
    ``rtol``/``atol``: the tolerance (default by dtype); ``action``: what a
    violation does, one of ACTIONS; ``budget``: ``"auto"`` (about one
    optimized-compile time of search, at most 200 evaluations) or what
    ``--budget`` takes (``"500"``, ``"60s"``); ``seed``; ``report_path``: a
    JSON report of the block, rewritten after each compile; ``cache``: a
    directory for verdicts, or False; ``oracle``: excuse differences a float64
    build shows are not worse; ``progress``: ``"auto"`` (phases and steps on
    stderr once a compile has been judged for 5 s), None (silent) or ``callable(message)``;
    ``jobs``: worker processes for the bisection's builds when the call's
    pipeline is given by name (default: one per core; 0: none); ``model``: the
    source model the compiled module was imported from (an ``onnx.ModelProto``,
    a ``torch.export.ExportedProgram`` or a file path), run in its own
    framework beside TVM so that a difference TVM's import makes is refused
    too (a warning, as no pass can be switched off for it); ``time_limit``:
    seconds one guarded compile may take in all (past it, the build as written
    is returned with a GuardWarning saying what was not finished); the default
    ``"auto"`` is 20 times the compile as written, at least 120 s (``clock.
    auto_time_limit``); None judges however long it takes; ``remedy`` (the
    keyword ``fix=`` of ``guard()``): what ``disable`` does to a culprit, one
    of ``narrow.plan.REMEDIES``: ``"narrow"`` (the pass
    kept from acting only at the places that break the model: numguard fix's
    narrowing, verified like a disable; the whole pass off where no narrow
    set is clean) or ``"off"`` (the culprit switched off everywhere; ``"pass"``, its
    name before 0.2, is taken too); ``clock``: what the time limit and the
    late progress read the time from (seconds; ``time.perf_counter``): a test
    gives one it moves itself, so that what the guard does at its limit does
    not depend on the machine's speed.
    """

    ranges: Optional[Mapping] = None
    rtol: Optional[float] = None
    atol: Optional[float] = None
    action: str = "disable"
    budget: str = "auto"
    seed: int = 0
    report_path: Optional[str] = None
    cache: Union[str, Literal[False]] = False
    oracle: bool = True
    progress: Union[str, None, Callable[[str], None]] = "auto"
    jobs: Optional[int] = None
    time_limit: object = "auto"
    model: Optional[object] = None
    remedy: str = "narrow"
    clock: Callable[[], float] = time.perf_counter

    def __post_init__(self):
        if self.remedy == "pass":  # its name before 0.2, kept for guarded code written then
            object.__setattr__(self, "remedy", "off")
        if self.remedy not in REMEDIES:
            raise UsageError(f"fix must be one of {', '.join(REMEDIES)} (the remedy for a culprit), got "
                             f"{self.remedy!r}", "fix")
        if self.action not in ACTIONS:
            raise UsageError(f"unknown guard action '{self.action}'; choose one of {', '.join(ACTIONS)}", "action")
        if self.report_path is not None:
            ensure_writable(self.report_path)
        if self.time_limit not in (None, "auto") and not (
                isinstance(self.time_limit, (int, float)) and not isinstance(self.time_limit, bool)
                and self.time_limit > 0):
            raise UsageError(f"time_limit must be a number of seconds > 0, 'auto' or None, got {self.time_limit!r}",
                             "time_limit")
        if not callable(self.clock):
            raise UsageError(f"clock must be a callable that returns seconds, got {self.clock!r}", "clock")
        self.workers  # noqa: B018 - a bad jobs fails here

    def options(self, low: Optional[float], high: Optional[float]) -> Options:
        """The Options each compile is judged with (made here, they refuse bad ranges, tolerances and budgets)."""
        return Options(low=low, high=high, ranges=dict(self.ranges or {}), rtol=self.rtol, atol=self.atol,
                       seed=self.seed, budget=self.budget, oracle=self.oracle, framework=self.model is not None)

    @property
    def workers(self) -> Workers:
        return Workers(jobs=self.jobs)
