"""What this TVM (0.27) needs in a pipeline.

REQUIRED_PASSES: skipping any one of them alone fails the build or the run
(checked by tests/test_catalog.py). Unknown passes count as optional.
DEPENDS_ON: skipping the value forces skipping the key: a module that went
through FuseOps is not buildable unless FuseTIR also runs.
WRAPPERS: passes that only run other passes; they are never bisected.
"""

from __future__ import annotations

REQUIRED_PASSES = frozenset(
    {
        # Relax lowering to the VM
        "LegalizeOps",
        "ToNonDataflow",
        "RemovePurityChecking",
        "CallTIRRewrite",
        "LowerAllocTensor",
        "LowerRuntimeBuiltin",
        "VMShapeLower",
        "AttachGlobalSymbol",
        # TIR lowering to machine code
        "tirx.BindTarget",
        "tirx.Filter",
        "s_tir.LowerInitBlock",
        "s_tir.ConvertBlocksToOpaque",
        "s_tir.LowerOpaqueBlock",
        "tirx.FlattenBuffer",
        "tirx.SplitHostDevice",
        "tirx.MakePackedAPI",
        "tirx.LowerTVMBuiltin",
        "tirx.LowerIntrin",
    }
)

# key cannot stay once value is skipped (same parent, nearest following value)
DEPENDS_ON = {"FuseOps": "FuseTIR"}

_WRAPPER_NAMES = frozenset({"sequential", "_pipeline", "f_zero_pipeline"})


def is_wrapper(name: str) -> bool:
    """Passes that only group other passes (Sequential and pipeline closures)."""
    return name in _WRAPPER_NAMES or name.endswith("_pipeline")


def is_required(name: str) -> bool:
    return name in REQUIRED_PASSES


def close_skip_set(skip, events) -> frozenset:
    """Add to ``skip`` what must go with it (DEPENDS_ON), given events in order.

    A FuseOps event depends on the next FuseTIR event at the same nesting
    level: when that FuseTIR is skipped, the FuseOps is skipped too.
    """
    skip = set(skip)
    for i, event in enumerate(events):
        needed = DEPENDS_ON.get(event.name)
        if needed is None or event.id in skip:
            continue
        parent = event.id.rpartition("/")[0]
        for later in events[i + 1:]:
            if later.name == needed and later.id.rpartition("/")[0] == parent:
                if later.id in skip:
                    skip.add(event.id)
                break
    return frozenset(skip)
