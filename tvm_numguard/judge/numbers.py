"""The judge's numbers, in one place: each defined once here with its reason, and the test that fails when it
is changed the wrong way (the way that makes the judge more lenient, or breaks what it was chosen for).

The modules that use them import them from here (and keep exporting them under the same names).
``OWN_SCALE_ULPS`` lives in ``base/tolerance.py`` (the base layer never imports the judge) and is listed
here by importing it. ``NUMBERS`` is the table; ``markdown_table`` writes it as docs/judging.md shows it
(tests/test_judge_numbers.py checks that every named test exists, that each number is defined only here,
and that the docs' table is this one). Not here, since no verdict depends on them: ``EMBEDDED_ELEMENTS``
(components/scripts.py: how large a standalone script's arguments may be), ``ORACLE_WORKER_CORES``
(oracle.py: how the work is conditioning bound over cores); nor rangecheck's, a separate analysis.
"""

from __future__ import annotations

import dataclasses

from ..base.tolerance import OWN_SCALE_ULPS

# -- elements.py: the per-element rule -------------------------------------------------------------------
K = 32.0  # TVM is at fault where its error is over K times the framework's at that element (five bits)
# the inputs move by up to this many roundings of the float an output is computed in when its
# conditioning is measured: in float32 the same five bits K allows between two implementations;
# in float16 and bfloat16 two, since every intermediate value of such a model is rounded that
# coarsely (a one-ulp change of a softmax's float16 argument moves its result by 0.4%)
CONDITIONING_ROUNDINGS = {"float64": 32.0, "float32": 32.0, "float16": 2.0, "bfloat16": 2.0}
# moved truth runs (Framework.moved_truth): an element's conditioning bound is measured over them. Each run moves an
# element by a random share of its sensitivity; with 8 the chance that all 8 moves are under a
# tenth of it is 1e-8
CONDITIONING_RUNS = 8
# an element's conditioning bound, in root mean squares of its movement over those runs
# (``conditioning_bound``): the largest
# of CONDITIONING_RUNS draws is under two sigmas, and a bound there would blame about one element in two
# hundred of a correct float16 MatMul chain
CONDITIONING_SIGMAS = 3.0

# a sum of n terms is allowed SUMMATION_LAMBDA * sqrt(n) * u * sum(|terms|) (summation.py): a plain float32 loop
# over 576 to 11008 uniform positive terms reached 0.97 of sqrt(n) * u * sum(|terms|); the worst case, n * u,
# would excuse a kernel that drops one term of a sum of 4096
SUMMATION_LAMBDA = 2.0
# terms whose coefficient of variation is under ONE_WAY_SPREAD * n * u are added one way by a plain loop's roundings
# (summation.py): every sum past the first part that 32 rows of n = 16384..262144 values in [lo, 1] gave had a spread
# of at most 1.95 n*u
ONE_WAY_SPREAD = 4.0
# a reduction over inputs is also allowed PLAIN_LOOP_MARGIN times the error of a plain float32 loop in index order on
# its own terms (summation.py: plain_loop_error, plain_two_pass_error): emulated as TVM runs them, TVM's stock kernels
# equal that loop bit for bit, so a margin under 1 blames them; 2 leaves room for an honest kernel of another order
# (the float64 mean's deviations made one 1.41 times the loop's error); 1000 excuses a mean dropping 128 of 65536 terms
PLAIN_LOOP_MARGIN = 2.0

# -- components/: which part of TVM is at fault ----------------------------------------------------------
# differing nodes placed before the rest is left unplaced (each costs a few small kernel builds)
PLACED_NODES = 32
# the conversion's formula check runs again on TVM's arguments moved by MOVED_BY (relative), MOVED_ROUNDS
# times: far beyond rounding, so that two formulas that agree only at a degenerate point part (every input
# -1 made a float64 matmul narrowed to float32 exact); still near the witness
MOVED_BY = 1e-2
MOVED_ROUNDS = 2

# -- import_stage/: the import question ------------------------------------------------------------------
# differing nodes explained by precision in a row before the rest is left to the import: a float16 GPT2
# block needs more than 4 (its QKV projection, the attention MatMuls, a LayerNorm, the MLP projection)
MAX_ROUNDS = 16
# fresh inputs of the range a widening is verified on, beside the witness and the last searched ones
FRESH_INPUTS = 4
# an input whose difference only the conditioning bound excuses, across a discontinuous operator: the search
# keeps it (an exact tie a wrong rounding rule decides differently) but scores it below a certain violation
# (engine.CERTAIN_SCORE, 10), so that it goes on looking for a difference nothing excuses; a flip that
# rounding explains would otherwise stop it first
UNPROVEN_JUMP_SCORE = 2.0
MAX_FLIPS = 4  # flips proven in a row before the rest is left to the import
# differing nodes judged alone on their own inputs before the rest is left as it is (each costs ten runs
# of one node)
LOCAL_NODES = 32


@dataclasses.dataclass(frozen=True)
class JudgeNumber:
    """One of the judge's numbers: its name, its value, why it is that, and the pytest node id of a test that
    fails when it is changed the wrong way."""

    name: str
    value: object
    reason: str
    test: str


_FRAMEWORK, _COMPONENTS, _PRECISION = "tests/test_framework.py", "tests/test_components.py", "tests/test_precision.py"
_REDTEAM, _NUMBERS = "tests/test_redteam_import.py", "tests/test_judge_numbers.py"

NUMBERS = (
    JudgeNumber("K", K, "TVM is at fault where its error is over K times the framework's at that element "
                "(five bits: two honest implementations differ by a few)",
                f"{_NUMBERS}::test_an_error_five_bits_past_the_frameworks_is_at_fault_and_three_bits_is_not"),
    JudgeNumber("CONDITIONING_ROUNDINGS", CONDITIONING_ROUNDINGS,
                "how many roundings of its float the inputs move by when an output's conditioning is measured: "
                "float32's five bits as K; float16's two, every value of such a model rounded that coarsely",
                f"{_NUMBERS}::test_inputs_move_by_a_few_roundings_of_their_float_when_conditioning_is_measured"),
    JudgeNumber("CONDITIONING_RUNS", CONDITIONING_RUNS,
                "moved truth runs an element's conditioning bound is measured over: with 8 the chance that all "
                "move it by "
                "under a tenth of its sensitivity is 1e-8",
                f"{_PRECISION}::test_a_layer_norm_of_constant_rows_is_no_import_difference"),
    JudgeNumber("CONDITIONING_SIGMAS", CONDITIONING_SIGMAS,
                "an element's conditioning bound in root mean squares of its movement: a bound at two would "
                "blame about one "
                "element in two hundred of a correct float16 MatMul chain",
                f"{_FRAMEWORK}::test_the_spread_is_three_root_mean_squares_of_the_movement_and_no_less_than_the_worst"),
    JudgeNumber("SUMMATION_LAMBDA", SUMMATION_LAMBDA,
                "a sum of n terms is allowed this many sqrt(n) * u * sum(|terms|): a plain float32 loop reached "
                "0.97 of it; the worst case, n * u, would excuse a kernel that drops one term of a sum of 4096",
                f"{_NUMBERS}::test_a_matmul_kernel_that_drops_one_term_of_4096_is_at_fault"),
    JudgeNumber("ONE_WAY_SPREAD", ONE_WAY_SPREAD,
                "terms whose coefficient of variation is under this many n * u are added one way by a plain loop's "
                "roundings, and allowed u * n/2 of their sum: every sum past the random-sign part had at most 1.95",
                "tests/test_summation.py::test_a_plain_loops_one_way_roundings_over_near_equal_terms_are_allowed"),
    JudgeNumber("PLAIN_LOOP_MARGIN", PLAIN_LOOP_MARGIN,
                "a reduction over inputs is allowed this many times a plain float32 loop's error on its own terms: "
                "TVM's stock kernels equal that loop, so under 1 blames them; 2 leaves room for another order",
                "tests/test_summation.py::test_a_normalizations_plain_loop_over_two_valued_inputs_is_no_fault"),
    JudgeNumber("PLACED_NODES", PLACED_NODES,
                "differing nodes placed in a component before the rest is left unplaced (each costs a few small "
                "kernel builds)",
                f"{_NUMBERS}::test_a_fault_behind_differing_nodes_every_component_exonerates_is_placed"),
    JudgeNumber("MOVED_BY", MOVED_BY,
                "how far (relative) TVM's arguments move when a conversion's formula is checked again: far "
                "beyond rounding, so that a degenerate witness does not hide a narrowing",
                f"{_COMPONENTS}::test_a_float64_model_computed_in_float32_is_a_narrowing_conversion"),
    JudgeNumber("MOVED_ROUNDS", MOVED_ROUNDS,
                "how many times a conversion's formula is checked again on moved arguments",
                f"{_COMPONENTS}::test_a_float64_model_computed_in_float32_is_a_narrowing_conversion"),
    JudgeNumber("MAX_ROUNDS", MAX_ROUNDS,
                "differing nodes explained by precision in a row before the rest is left to the import: a "
                "float16 GPT2 block needed more than 4; three float16 mean-softmax blocks in a row need 7",
                f"{_NUMBERS}::test_a_float16_model_with_precision_differences_in_a_row_widens_them_all"),
    JudgeNumber("FRESH_INPUTS", FRESH_INPUTS,
                "fresh inputs of the range a widening is verified on, beside the witness and the last searched "
                "ones", f"{_NUMBERS}::test_a_precision_verdict_is_verified_on_fresh_inputs_beside_the_witness"),
    JudgeNumber("UNPROVEN_JUMP_SCORE", UNPROVEN_JUMP_SCORE,
                "the search's score of a difference only the conditioning bound excuses past a discontinuous "
                "operator: kept "
                "(over 1) but below a certain violation (10), so that the search goes on",
                f"{_NUMBERS}::test_a_difference_past_a_jump_is_kept_below_a_certain_violation"),
    JudgeNumber("MAX_FLIPS", MAX_FLIPS, "flips of discontinuous nodes proven in a row before the rest is left to "
                "the import", f"{_PRECISION}::test_a_ceil_of_an_underflowing_product_is_a_benign_flip"),
    JudgeNumber("LOCAL_NODES", LOCAL_NODES,
                "differing nodes judged alone on their own inputs before the rest is left as it is (each costs "
                "ten runs of one node)",
                f"{_REDTEAM}::test_conditioning_of_one_branch_does_not_hide_a_defect_on_another"),
    JudgeNumber("OWN_SCALE_ULPS", OWN_SCALE_ULPS,
                "an output judged at its own scale is never held to less than this many of its float's spacing "
                "there: below that, two correctly rounded implementations already differ (base/tolerance.py)",
                f"{_COMPONENTS}::test_an_output_below_the_default_atol_is_judged_at_its_own_scale"),
)


def markdown_table() -> str:
    """``NUMBERS`` as the table docs/judging.md shows."""
    rows = ["| name | value | reason | test |", "|---|---|---|---|"]
    for number in NUMBERS:
        value = (", ".join(f"{k} {v:g}" for k, v in number.value.items()) if isinstance(number.value, dict)
                 else f"{number.value:g}")
        rows.append(f"| `{number.name}` | {value} | {number.reason} | `{number.test}` |")
    return "\n".join(rows) + "\n"


__all__ = ["CONDITIONING_ROUNDINGS", "CONDITIONING_RUNS", "FRESH_INPUTS", "JudgeNumber", "K", "LOCAL_NODES",
           "MAX_FLIPS", "MAX_ROUNDS", "MOVED_BY", "MOVED_ROUNDS", "NUMBERS", "OWN_SCALE_ULPS", "PLACED_NODES",
           "CONDITIONING_SIGMAS", "ONE_WAY_SPREAD", "PLAIN_LOOP_MARGIN", "SUMMATION_LAMBDA", "UNPROVEN_JUMP_SCORE",
           "markdown_table"]
