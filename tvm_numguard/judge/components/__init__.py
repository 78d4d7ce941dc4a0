"""Which part of TVM computes a node of the model differently: conversion, legalization or code generation.

One table, ``COMPONENTS``: each entry a module with ``judge(case: NodeCase) ->
ComponentVerdict``, its own truth sharing no code with what it judges
(``verdict.py`` says each). Adding a component is a module with that function
and a row here. ``place`` asks every component about one node; ``place_fault``
walks the nodes whose TVM value differs from the framework's, in the
framework's order, and stops at the first a component is at fault for (or
that no truth reaches): a node that differs only because its arguments did is
passed, since every component agrees on its own inputs there.
"""

from __future__ import annotations

import numpy as np

from ...base.compare import compare_output
from . import codegen, conversion, legalization
from ..numbers import PLACED_NODES
from .node import NodeCase
from .verdict import Component, ComponentVerdict, NodePlacement, Outcome

# the components, in the order a model meets them (frontend, LegalizeOps, the target's code generator)
COMPONENTS = (conversion, legalization, codegen)


def place(case: NodeCase) -> NodePlacement:
    """Every component's verdict on one node."""
    return NodePlacement(case.label, case.key, tuple(_judged(component, case) for component in COMPONENTS))


def _judged(component, case: NodeCase) -> ComponentVerdict:
    """``component.judge(case)``; a failure on the way is that component not judged, never the end of the check."""
    try:
        return component.judge(case)
    except Exception as err:  # noqa: BLE001 - TVM, numpy and the frameworks raise many types: no truth reached
        which = Component(component.__name__.rsplit(".", 1)[-1])
        return ComponentVerdict(which, Outcome.UNJUDGED, f"the {which.value} of {case.label}",
                                f"not judged: {type(err).__name__}: "
                                f"{str(err).splitlines()[0][:200] if str(err) else ''}")


def place_fault(located, tol, progress=None) -> tuple:
    """(the NodePlacement of the first differing node a component is at fault for or cannot
    judge, or None where every differing node placed is exonerated; the placements made)."""
    placements: list = []
    for key in differing_nodes(located, tol):
        if len(placements) >= PLACED_NODES:
            break
        if key in located.model.folded and key not in located.named:
            placement = conversion.folded(located, key, tol)
            placements.append(placement)
            if not placement.exonerated:
                return placement, placements
            continue
        case = NodeCase.of(located, key, tol)
        if case is None:
            continue
        if progress is not None:
            progress(f"  placing the difference at {case.label}: conversion, legalization, code generation")
        placement = place(case)
        placements.append(placement)
        if not placement.exonerated:
            return placement, placements
    return None, placements


def differing_nodes(located, tol):
    """The model's values (their names), in the framework's order, whose TVM value differs beyond the tolerance."""
    if located.error is not None:
        return
    for key, theirs in located.expected.items():
        name, _ = located.named.get(key, (None, None))
        if name is None and key in located.model.folded:
            mine = np.asarray(located.model.folded[key].value)
        elif name is None or name not in located.computed:
            continue
        else:
            mine = np.asarray(located.computed[name])
        theirs = np.asarray(theirs)
        if mine.shape != theirs.shape or compare_output(0, theirs, mine, located.tolerance_of(key, tol),
                                                        top_k=0).violated:
            yield key


__all__ = ["COMPONENTS", "Component", "ComponentVerdict", "NodeCase", "NodePlacement", "Outcome", "PLACED_NODES",
           "differing_nodes", "place", "place_fault"]
