"""What the user asked a check for, as replayable values (``--low`` .. ``--no-oracle``).

Options are checked when made: a bad range, tolerance, budget or search name
fails here with one line, before any build.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Mapping, Optional

from ..base.errors import RangeError, UsageError, named
from ..base.frozen import FrozenDict
from . import SEARCHES, validate_span, parse_budget
from ..base.flags import FLAG
from ..base.tolerance import Tolerance

BISECT_STRATEGIES = ("bisect", "linear")
DEFAULT_SEARCHES = "random,boundary,evolve"  # numguard search compares all three


@dataclasses.dataclass(frozen=True)
class Options:
    low: Optional[float] = None
    high: Optional[float] = None
    ranges: Mapping[str, tuple] = dataclasses.field(default_factory=dict)  # input name -> (low, high)
    rtol: Optional[float] = None
    atol: Optional[float] = None
    search: str = "evolve"  # search.SEARCHES names, comma-separated: each runs, the worst input wins
    budget: str = "200,60s"  # evaluations and/or seconds, as --budget takes it ("auto" in a guard)
    seed: int = 0
    strategy: str = "bisect"  # how to bisect: one of BISECT_STRATEGIES
    oracle: bool = True  # excuse differences that are not worse against float64
    oracle_k: float = 2.0
    framework: bool = True  # run the model's own framework beside TVM (the import question)

    def __post_init__(self):
        object.__setattr__(self, "ranges", FrozenDict({name: tuple(b) for name, b in dict(self.ranges).items()}))
        if (self.low is None) != (self.high is None):
            raise RangeError(f"give both {named('low')} and {named('high')}, or neither (with a range for every input)")
        if self.low is None and not self.ranges:
            raise RangeError(f"give the input range: {named('low')} and {named('high')}, or {named('ranges')} "
                             "for each input")
        if self.low is not None and self.high is not None:  # both or neither, as said above
            validate_span("all inputs", float(self.low), float(self.high))
        for name, (lo, hi) in self.ranges.items():
            validate_span(name, float(lo), float(hi))
        self.tolerance  # noqa: B018 - a bad rtol/atol fails here
        unknown = [n for n in self.searches if n not in SEARCHES]
        if not self.searches or unknown:
            raise UsageError(f"unknown search '{(unknown or [self.search])[0]}'; {named('search')} takes a "
                             f"comma-separated list of {', '.join(SEARCHES)}")
        if self.strategy not in BISECT_STRATEGIES:
            raise UsageError(f"unknown bisection strategy '{self.strategy}'; choose one of "
                             f"{', '.join(BISECT_STRATEGIES)}")
        if self.budget != "auto":
            parse_budget(self.budget)
        if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral) or self.seed < 0:
            raise UsageError(f"seed must be a whole number >= 0, got {self.seed!r}", "seed")

    @property
    def searches(self) -> tuple:
        """The search strategies' names, in the order given."""
        return tuple(n.strip() for n in self.search.split(",") if n.strip())

    @property
    def tolerance(self) -> Tolerance:
        return Tolerance(self.rtol, self.atol)

    @classmethod
    def from_json(cls, configuration) -> "Options":
        """Read back from a report's ``configuration`` section, which states each
        input's range (the low/high they came from are not kept)."""
        return cls(ranges={n: (float(r["low"]), float(r["high"])) for n, r in configuration["ranges"].items()},
                   rtol=configuration["rtol"], atol=configuration["atol"], search=configuration["search"],
                   budget=configuration["budget"], seed=int(configuration["seed"]),
                   strategy=configuration["strategy"], oracle=bool(configuration["oracle"]),
                   oracle_k=float(configuration["oracle_k"]),
                   framework=bool(configuration.get("framework", True)))

    def to_args(self, resolved: Optional[Mapping] = None, budget: Optional[str] = None,
                bisects: bool = True) -> list:
        """The command-line arguments that give these options. ``resolved``
        (input name -> search.Range): state each input's range instead of
        low/high; ``budget``: instead of the options' own; ``bisects``: the
        command takes ``--strategy`` (``regress`` does not)."""
        words = []
        if resolved is not None:
            for name, r in resolved.items():
                words += [FLAG["ranges"], f"{name}={r.low!r}:{r.high!r}"]
        else:
            if self.low is not None:
                words += [FLAG["low"], repr(self.low), FLAG["high"], repr(self.high)]
            for name, (lo, hi) in sorted(self.ranges.items()):
                words += [FLAG["ranges"], f"{name}={lo!r}:{hi!r}"]
        for field in ("rtol", "atol"):
            if getattr(self, field) is not None:
                words += [FLAG[field], repr(getattr(self, field))]
        words += [FLAG["search"], self.search, FLAG["budget"], budget or self.budget, FLAG["seed"], str(self.seed)]
        if bisects and self.strategy != "bisect":
            words += [FLAG["strategy"], self.strategy]
        if not self.oracle:
            words += [FLAG["oracle"]]
        if not self.framework:
            words += [FLAG["framework"]]
        return words

    def replace(self, **changes) -> "Options":
        return dataclasses.replace(self, **changes)
