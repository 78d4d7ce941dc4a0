"""The judge table: numguard's import question and its placement measured by mutation.

Every planted defect of ``patches/imports`` (a bug in one of TVM 0.27's own
ONNX or torch converters, in a Relax operator's legalization or in a tirx
intrinsic's lowering, monkeypatched in while numguard imports and builds
the model) in each of its contexts, and every model of the clean corpus (no
defect planted), through ``tvm_numguard.bisect`` (pipeline ``zero``, the
model's framework beside it). One table from one run:

- per defect and context: ``caught`` (verdict "import", the origin names
  the planted node: its ONNX output tensor / FX node, and the placement names
  the planted component: the converter, the Relax operator's legalization,
  the tirx intrinsic's lowering) or ``MISSED`` (the verdict and, shortly, why), ``left`` (a
  context no fair judge could catch the defect in, or one TVM 0.27 cannot import or build unpatched: the
  reason is printed), ``ERROR`` / ``TIMEOUT``; totals and the caught share;
- the clean corpus: each verdict's count, and the false alarms (verdict
  "import" or "unjudged", a tool error, a timeout) with their count;
- ``targets: >= 95% caught, 0 false alarms: met / NOT met``; exit 0 / 1.

Each cell runs in a process forked for it alone (a monkeypatch never leaks
into the next cell), at most ``--jobs`` at a time, each bounded by
``--timeout`` seconds; progress goes to stderr as cells finish.

    .venv/bin/python benchmarks/judge_table.py [--jobs 2] [--quick] [--only DEFECT,..] [--contexts a,b]
                                               [--budget 20] [--timeout 120] [--light] [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections import Counter
from typing import Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from patches import imports  # noqa: E402
from patches.imports import clean, contexts  # noqa: E402
from patches.imports.judging import UNBUILT, fork_all, judge_clean, judge_defect  # noqa: E402

# one defect of each kind and of each way a cell was missed in the full table (no float64 kernel, a
# flip, the wrong node named, a tool error), in every context: the slow test's proxy for the targets
QUICK_DEFECTS = ("onnx_gemm_alpha", "onnx_layernorm_eps", "onnx_gather_negative", "onnx_elu_alpha",
                 "onnx_batchnorm_eps", "onnx_reducesum_fp16", "torch_gelu_quick", "torch_softmax_dim",
                 "torch_slice_negative", "torch_var_correction", "torch_cumsum_negdim")
TARGET_CAUGHT, TARGET_FALSE_ALARMS = 0.95, 0
FALSE_ALARM_VERDICTS = ("import", "unjudged")
COLUMNS = "abcdefg"


@dataclasses.dataclass(frozen=True)
class Job:
    """One row of work: a (defect, context) cell or a clean model."""

    label: str
    defect: str = ""
    context: str = ""
    model: Optional[clean.CleanModel] = None

    def run(self, budget: str) -> dict:
        if self.model is not None:
            return judge_clean(self.model, budget)
        return judge_defect(self.defect, self.context, budget)


def plan(args) -> tuple:
    """(jobs, left-out rows) for the options."""
    names = imports.DEFECTS
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        for name in names:
            imports.load(name)  # an unknown name fails here, with the list
    elif args.quick:
        names = QUICK_DEFECTS
    wanted = set(args.contexts.replace(",", "")) if args.contexts else set(COLUMNS)
    jobs, left = [], []
    for name in names:
        reasons = contexts.left_out(name)
        for context in contexts.contexts_for(name):
            if context not in wanted:
                continue
            if context in reasons:
                left.append({"defect": name, "context": context, "outcome": "left", "why": reasons[context]})
            else:
                jobs.append(Job(f"{name}/{context}", name, context))
    if not args.only:
        jobs += [Job(m.name, model=m) for m in clean.corpus(quick=args.quick, light=args.light)]
    return jobs, left


def summarize(cells: list, models: list) -> dict:
    """The totals behind the targets line."""
    judged = [c for c in cells if c["outcome"] != "left"]
    caught = sum(c["outcome"] == "caught" for c in judged)
    alarms = [m for m in models if is_false_alarm(m)]
    share = caught / len(judged) if judged else 0.0
    met = bool(judged) and share >= TARGET_CAUGHT and len(alarms) <= TARGET_FALSE_ALARMS
    return {"cells": len(judged), "caught": caught, "share": share, "left_out": len(cells) - len(judged),
            "clean_models": len(models), "false_alarms": len(alarms), "met": met}


def is_false_alarm(row: dict) -> bool:
    return row["outcome"] in ("error", "timeout") or row.get("verdict") in FALSE_ALARM_VERDICTS


def print_defects(cells: list) -> None:
    by_defect: dict = {}
    for cell in cells:
        by_defect.setdefault(cell["defect"], {})[cell["context"]] = cell
    print(f"{'defect':28s} {'op':22s} " + " ".join(f"{c:7s}" for c in COLUMNS))
    mark = {"caught": "caught", "missed": "MISSED", "left": "left", "error": "ERROR", "timeout": "TIMEOUT"}
    for name in imports.DEFECTS:
        if name in by_defect:
            row = by_defect[name]
            op = f"{imports.load(name).FRONTEND} {imports.load(name).OP}"
            print(f"{name:28s} {op[:22]:22s} " + " ".join(
                f"{mark[row[c]['outcome']] if c in row else '-':7s}" for c in COLUMNS))
    for title, outcomes in (("missed", ("missed", "error", "timeout")), ("left out", ("left",))):
        chosen = [c for c in cells if c["outcome"] in outcomes]
        if chosen:
            print(f"\n{title}:")
            for cell in chosen:
                print(f"  {cell['defect'] + '/' + cell['context']:32s} {cell['why']}")


def print_shares(cells: list, summary: dict) -> None:
    judged = [c for c in cells if c["outcome"] != "left"]
    print(f"\ncaught {summary['caught']}/{summary['cells']} ({100 * summary['share']:.1f}%), "
          f"{summary['left_out']} cells left out")
    for label, key in (("by component", lambda c: getattr(imports.load(c["defect"]), "COMPONENT", "conversion")),
                       ("by frontend", lambda c: imports.load(c["defect"]).FRONTEND),
                       ("by context", lambda c: c["context"])):
        groups: dict = {}
        for cell in judged:
            groups.setdefault(key(cell), []).append(cell["outcome"] == "caught")
        print(f"  {label}: " + ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in sorted(groups.items())))


def print_clean(models: list, summary: dict) -> None:
    if not models:
        print("\nclean corpus: not run (--only)")
        return
    groups = Counter(m["group"] for m in models)
    print(f"\nclean corpus: {len(models)} models ({', '.join(f'{g} {n}' for g, n in groups.items())})")
    verdicts = Counter(m.get("verdict") or m["outcome"] for m in models)
    print("  verdicts: " + ", ".join(f"{v} {n}" for v, n in verdicts.most_common()))
    alarms = [m for m in models if is_false_alarm(m)]
    print(f"  false alarms (import, unjudged, tool error, timeout): {len(alarms)}")
    for row in alarms:
        print(f"    {row['name']:40s} {row.get('verdict') or row['outcome']}: {row['why']}")
    unimported = [m for m in models if m["outcome"] == UNBUILT]
    if unimported:
        print(f"  TVM 0.27 does not import or build them (not counted): {len(unimported)}")
        for row in unimported:
            print(f"    {row['name']:40s} {row['why']}")
    print("  left out, TVM 0.27 really imports them wrong: " +
          ", ".join(f"{name} ({why})" for name, why in clean.known_defects().items()))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="cells in parallel, one forked process each")
    parser.add_argument("--only", help="these defects only (comma-separated), no clean corpus")
    parser.add_argument("--contexts", help="these contexts only, e.g. a,b")
    parser.add_argument("--quick", action="store_true", help=f"{len(QUICK_DEFECTS)} defects and a few clean models")
    parser.add_argument("--light", action="store_true", help="the onnx wheel's CNNs too (slow)")
    parser.add_argument("--budget", default="20", help="the search budget of each cell, as --budget takes it")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a cell may take")
    parser.add_argument("--json", help="also write every row here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    jobs, left = plan(args)
    print(f"judge table: {sum(1 for j in jobs if j.model is None)} defect cells ({len(left)} left out), "
          f"{sum(1 for j in jobs if j.model is not None)} clean models; pipeline zero, budget {args.budget}, "
          f"{args.jobs} jobs, {args.timeout:.0f} s a cell", flush=True)
    results = fork_all(jobs, args.jobs, args.timeout, args.budget)
    cells = sorted([r for r in results if r["kind"] == "defect"] + left,
                   key=lambda c: (imports.DEFECTS.index(c["defect"]), c["context"]))
    models = [r for r in results if r["kind"] == "clean"]
    summary = summarize(cells, models)
    print()
    print_defects(cells)
    print_shares(cells, summary)
    print_clean(models, summary)
    print(f"\n{time.perf_counter() - started:.0f} s")
    print(f"targets: >= {100 * TARGET_CAUGHT:.0f}% caught, {TARGET_FALSE_ALARMS} false alarms: "
          f"{'met' if summary['met'] else 'NOT met'} ({100 * summary['share']:.1f}% caught, "
          f"{summary['false_alarms']} false alarms)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "defects": cells, "clean": models}, f, indent=2)
    return 0 if summary["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
