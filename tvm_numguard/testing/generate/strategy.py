"""The generator as a hypothesis strategy (``pip install 'tvm_numguard[hypothesis]'``).

``relax_graphs()`` draws every decision of ``draw_graph`` from hypothesis, so a
failing property shrinks toward fewer operators, smaller shapes and the first
option of each choice::

    from hypothesis import given, settings
    from tvm_numguard.testing.generate.strategy import relax_graphs
    from tvm_numguard.testing import assert_pass_numerically_safe

    @settings(max_examples=20, deadline=None)
    @given(relax_graphs(target="FoldConstant"))
    def test_my_pass(graph):
        assert_pass_numerically_safe("mypkg:make_pass", graph)
"""

from __future__ import annotations

from typing import Optional, Sequence

from hypothesis import strategies as st

from . import GeneratorConfig
from . import draw_graph


class DrawnChoices:
    """Choices drawn from hypothesis (each shrinks toward its low end / first option)."""

    def __init__(self, draw):
        self._draw = draw

    def integer(self, low: int, high: int) -> int:
        return self._draw(st.integers(low, high))

    def choice(self, options: Sequence):
        return options[self._draw(st.integers(0, len(options) - 1))]

    def chance(self, p: float) -> bool:
        return self._draw(st.integers(0, 99)) < round(p * 100)


def relax_graphs(min_ops: int = 1, max_ops: int = 8, target: Optional[str] = None, discontinuous: bool = False):
    """A strategy of valid generated ``Graph``s (see ``tvm_numguard.testing.generate``)."""
    config = GeneratorConfig(min_ops, max_ops, discontinuous, target).validate()

    @st.composite
    def graphs(draw):
        return draw_graph(DrawnChoices(draw), config)

    return graphs()
