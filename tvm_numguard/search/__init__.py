"""Input search inside the user's range (DESIGN 5.2)."""

from .ranges import InputRange, parse_range_spec, resolve_ranges
from .sampling import FixedInputs, SampleSearch, SearchResult

__all__ = ["FixedInputs", "InputRange", "SampleSearch", "SearchResult", "parse_range_spec", "resolve_ranges"]
