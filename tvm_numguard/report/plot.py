"""Plots: the search (best score over evaluations, one line per search) and
the trace (error added by each pass)."""

from __future__ import annotations

import io
import math

from ..base.numbers import from_json_number
from .files import write_atomic


def new_figure(figsize, dpi: int):
    """(figure, axes) drawn off screen. A bare ``Figure`` with its own Agg canvas,
    not pyplot: no backend is switched and no figure is registered in the host
    program (a notebook's or a GUI's plotting is left as it was)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def figure_bytes(fig, fmt: str = "png") -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt)
    return buffer.getvalue()


def _number(value) -> float:
    """A document's score as a float to plot (NaN drawn as inf: off the chart)."""
    value = from_json_number(value) or 0.0
    return float("inf") if math.isnan(value) else value


def search_plot_png(data: dict) -> bytes:
    fig, ax = new_figure((9, 4), 100)
    for run in data["search"].get("searches", []):
        best, curve = 0.0, []
        for score in run["history"]:
            best = max(best, _number(score))
            curve.append(best)
        finite = [c if c != float("inf") else 1e30 for c in curve]
        # identical outputs score 0; draw them at the bottom of a log axis
        ax.plot(range(1, len(finite) + 1), [max(c, 1e-3) for c in finite], label=run["search"])
    ax.axhline(1.0, color="red", linestyle="--", linewidth=1, label="violation (score 1)")
    ax.set_yscale("log")
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best score so far")
    ax.set_title(f"input search: {data['model']['source']}  [{data['configuration']['pipeline']}]", fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)  # beside, not on, the curves
    fig.tight_layout()
    return figure_bytes(fig)


def write_search_plot(data: dict, path: str) -> None:
    write_atomic(path, search_plot_png(data))


def pass_errors_png(data: dict) -> bytes:
    """Local error of each pass event that changed the module (bars) and the
    cumulative error after it (line), as scores on a log axis."""
    rows = data["trace"]["passes"]
    fig, ax = new_figure((max(6.0, 0.35 * len(rows) + 2) + 3.0, 4.5), 100)  # + the legend beside
    x = list(range(len(rows)))

    def plotted(entry):  # zero (no error) has no place on a log axis: no bar
        value = min(_number((entry or {}).get("score")), 1e30)
        return value if value > 0 else float("nan")

    local = [plotted(r["local"]) for r in rows]
    colors = ["tab:red" if r["id"] == data["trace"].get("culprit") else
              ("tab:purple" if r["level"] == "tir" else "tab:blue") for r in rows]
    ax.bar(x, local, color=colors, label="local error (this pass)")
    for level, style, label in (("relax", "-", "cumulative error (relax snapshots)"),
                                ("tir", ":", "error of the whole build")):
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
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)  # beside, not on, the bars
    fig.tight_layout()
    return figure_bytes(fig)
