"""The search plot: best score so far over evaluations, one line per strategy."""

from __future__ import annotations

import io

from .files import write_atomic


def search_plot_png(data: dict) -> bytes:
    import matplotlib

    matplotlib.use("Agg")  # no display; never opens a window
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for run in data["search"].get("strategies", []):
        best, curve = 0.0, []
        for score in run["history"]:
            value = float("inf") if score in ("inf", "nan") else (score or 0.0)
            best = max(best, value)
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
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def write_search_plot(data: dict, path: str) -> None:
    write_atomic(path, search_plot_png(data))
