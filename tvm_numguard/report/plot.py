"""Plots: the search (best score over evaluations, one line per strategy) and
the trace (error added by each pass)."""

from __future__ import annotations

import io
import math

from ..numbers import from_json_number
from .files import write_atomic


def pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display; never opens a window
    import matplotlib.pyplot as plt

    return plt


def figure_bytes(fig, fmt: str = "png") -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt)
    pyplot().close(fig)
    return buffer.getvalue()


def _number(value) -> float:
    """A document's score as a float to plot (NaN drawn as inf: off the chart)."""
    value = from_json_number(value) or 0.0
    return float("inf") if math.isnan(value) else value


def search_plot_png(data: dict) -> bytes:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for run in data["search"].get("strategies", []):
        best, curve = 0.0, []
        for score in run["history"]:
            best = max(best, _number(score))
            curve.append(best)
        finite = [c if c != float("inf") else 1e30 for c in curve]
        # identical outputs score 0; draw them at the bottom of a log axis
        ax.plot(range(1, len(finite) + 1), [max(c, 1e-3) for c in finite], label=run["strategy"])
    ax.axhline(1.0, color="red", linestyle="--", linewidth=1, label="violation (score 1)")
    ax.set_yscale("log")
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best score so far")
    ax.set_title(f"input search: {data['model']['source']}  [{data['configuration']['pipeline']}]", fontsize=9)
    ax.legend()
    fig.tight_layout()
    return figure_bytes(fig)


def write_search_plot(data: dict, path: str) -> None:
    write_atomic(path, search_plot_png(data))


def pass_errors_png(data: dict) -> bytes:
    """Local error of each pass event that changed the module (bars) and the
    cumulative error after it (line), as scores on a log axis."""
    rows = data["trace"]["passes"]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * len(rows) + 2), 4.5), dpi=100)
    x = list(range(len(rows)))

    def plotted(entry):  # zero (no error) has no place on a log axis: no bar
        value = min(_number((entry or {}).get("score")), 1e30)
        return value if value > 0 else float("nan")

    local = [plotted(r["local"]) for r in rows]
    colors = ["tab:red" if r["id"] == data["trace"].get("culprit") else
              ("tab:purple" if r["level"] == "tir" else "tab:blue") for r in rows]
    ax.bar(x, local, color=colors, label="local error (this pass)")
    for level, style, label in (("relax", "-", "cumulative error (relax snapshots)"),
                                ("tir", ":", "cumulative error of the TIR level")):
        xs = [i for i in x if rows[i]["level"] == level]
        if xs:
            ax.plot(xs, [plotted(rows[i]["cumulative"]) for i in xs], color="black", linestyle=style, marker=".",
                    label=label)
    ax.axhline(1.0, color="red", linestyle="--", linewidth=1, label="violation (score 1)")
    ax.set_yscale("log")
    ax.set_xticks(list(x))
    ax.set_xticklabels([r["id"] for r in rows], rotation=70, ha="right", fontsize=7)
    ax.set_ylabel("score on the witness")
    ax.set_title("error per pass (relax: blue, tir: purple, culprit: red)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return figure_bytes(fig)
