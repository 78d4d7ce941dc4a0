"""Input search inside the user's range."""

from .budget import DEFAULT_BUDGET, Budget, parse_budget
from .ranges import InputRange, validate_span, parse_range_spec, resolve_ranges
from .searches import SEARCHES, FixedInputs, Observation, SearchResult, make_search, score_of

__all__ = [
    "DEFAULT_BUDGET",
    "SEARCHES",
    "Budget",
    "FixedInputs",
    "InputRange",
    "Observation",
    "SearchResult",
    "make_search",
    "validate_span",
    "parse_budget",
    "parse_range_spec",
    "resolve_ranges",
    "score_of",
]
