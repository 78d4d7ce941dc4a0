"""The values of a Relax module as a graph, and the matching of two versions of
one (before and after a pass). Pure IR reading: no builds, no runs."""

from .value_graph import ValueGraph, ValueNode, value_graph
from .value_match import Matching, match_values

__all__ = ["Matching", "ValueGraph", "ValueNode", "match_values", "value_graph"]
