"""A dlight schedule rule in a user's style, with a planted precision bug, and
the pipeline that applies it (a pipeline part: ``dlight_rules:half_accumulator``).

``HalfAccumulator`` gives every kernel with a reduction a schedule whose
accumulator is a float16 buffer (``cache_write`` then ``unsafe_set_dtype``): the
sort of "fast on GPUs with half units" schedule a rule author writes, and it
rounds every partial sum to 11 bits. Reductions that do not start from 0
(a max starts from -inf, which float16 cannot hold) are left alone. Kernels without a reduction are left to
the next rule (``ElementwiseAsIs``, which keeps them as they are but scheduled),
so one ApplyDefaultSchedule makes events for two rules.
"""

import tvm
from tvm import s_tir
from tvm.s_tir import dlight


class HalfAccumulator(dlight.ScheduleRule):
    def apply(self, func, target, tunable):
        sch = s_tir.Schedule(func)
        reductions = [block for block in sch.get_child_blocks(sch.get_sblock("root")) if _sums(sch.get(block))]
        if not reductions:
            return None
        for block in reductions:
            sch.cache_write(block, 0, "global")
            sch.unsafe_set_dtype(block, 0, "float16")
        return sch


def _sums(block) -> bool:
    """A reduction that starts from 0 (a sum; a max starts from -inf, which float16 cannot hold)."""
    init = block.init
    return init is not None and isinstance(init, tvm.tirx.BufferStore) and getattr(init.value, "value", None) == 0


class ElementwiseAsIs(dlight.ScheduleRule):
    def apply(self, func, target, tunable):
        return s_tir.Schedule(func)


def half_accumulator():
    return dlight.ApplyDefaultSchedule(HalfAccumulator(), ElementwiseAsIs())


class RaisesOnMax(dlight.ScheduleRule):
    """A rule with a crash: it raises on a kernel whose reduction is a max (the softmax's)."""

    def apply(self, func, target, tunable):
        sch = s_tir.Schedule(func)
        blocks = [sch.get(b) for b in sch.get_child_blocks(sch.get_sblock("root"))]
        if any(b.init is not None and not _sums(b) for b in blocks):
            raise ValueError("RaisesOnMax cannot schedule a max")
        return None


def raises_on_max():
    return dlight.ApplyDefaultSchedule(RaisesOnMax(), ElementwiseAsIs())
