"""The propagation graph drawn: DOT text, and an SVG for the HTML report.

Nodes are coloured by their error (score on a log scale: green within
tolerance, through yellow, to red), the origin is drawn with a thick black
border, values that could not be matched are grey and dashed, and the edges
on a path from the origin to a violating output are red and thick.
networkx lays the graph out in layers of dependency depth.
"""

from __future__ import annotations

import math

from ..numbers import from_json_number
from .plot import figure_bytes, new_figure


def _score(node) -> float | None:
    value = node.get("score")
    if value is None:
        return None
    value = from_json_number(value)
    return float("inf") if math.isnan(value) else value


def _colour(score) -> str:
    """A hex colour for a score: <= 1 green, 1e4 and above red."""
    if score is None:
        return "#cccccc"
    t = 0.0 if score <= 1 else min(1.0, math.log10(score) / 4.0) if math.isfinite(score) else 1.0
    import matplotlib

    r, g, b, _ = matplotlib.colormaps["RdYlGn_r"](0.15 + 0.85 * t)
    return "#{:02x}{:02x}{:02x}".format(int(r * 255), int(g * 255), int(b * 255))


def _label(node) -> str:
    """The user's name for the value first (where the model has one), then TVM's op and name, then the error."""
    score = _score(node)
    error = "unmatched" if node.get("matched") is None else f"score {score:.3g}" if score is not None else "no value"
    if node.get("model_name"):
        return f"{node['model_name']}\\n{node['op']} ({node['id']})\\n{error}"
    return f"{node['id']}\\n{node['op']}\\n{error}"


def propagation_dot(graph: dict) -> str:
    lines = ["digraph propagation {", "  rankdir=TB;", '  node [shape=box, style="rounded,filled", fontsize=10];']
    for node in graph["nodes"]:
        attrs = [f'label="{_label(node)}"', f'fillcolor="{_colour(_score(node) if node.get("matched") else None)}"']
        if node.get("origin"):
            attrs.append("penwidth=3")
        if node.get("matched") is None:
            attrs.append('style="rounded,filled,dashed"')
        if node.get("output"):
            attrs.append("peripheries=2")
        lines.append(f'  "{node["id"]}" [{", ".join(attrs)}];')
    for edge in graph["edges"]:
        style = ' [color="red", penwidth=2.5]' if edge.get("on_path") else ' [color="gray50"]'
        lines.append(f'  "{edge["src"]}" -> "{edge["dst"]}"{style};')
    lines.append("}")
    return "\n".join(lines) + "\n"


def propagation_svg(graph: dict) -> str:
    """The graph as an inline SVG document (empty string for an empty graph)."""
    if not graph["nodes"]:
        return ""
    import networkx as nx

    g = nx.DiGraph()
    for node in graph["nodes"]:
        g.add_node(node["id"])
    for edge in graph["edges"]:
        g.add_edge(edge["src"], edge["dst"])
    depth = {}
    for name in nx.topological_sort(g):
        depth[name] = max((depth[p] + 1 for p in g.predecessors(name)), default=0)
    nx.set_node_attributes(g, depth, "layer")
    pos = nx.multipartite_layout(g, subset_key="layer", align="horizontal", scale=1.0)
    pos = {k: (x, -y) for k, (x, y) in pos.items()}  # origin at the top
    layers = max(depth.values()) + 1
    width = max(sum(1 for d in depth.values() if d == k) for k in range(layers))
    fig, ax = new_figure((min(3 + 2.6 * width, 40), min(2 + 1.3 * layers, 60)), 80)
    by_id = {n["id"]: n for n in graph["nodes"]}
    on_path = [(e["src"], e["dst"]) for e in graph["edges"] if e.get("on_path")]
    off_path = [(e["src"], e["dst"]) for e in graph["edges"] if not e.get("on_path")]
    nx.draw_networkx_edges(g, pos, edgelist=off_path, edge_color="#999999", ax=ax, arrows=True)
    nx.draw_networkx_edges(g, pos, edgelist=on_path, edge_color="red", width=2.5, ax=ax, arrows=True)
    for name, (x, y) in pos.items():
        node = by_id[name]
        matched = node.get("matched") is not None
        ax.text(x, y, _label(node).replace("\\n", "\n"), ha="center", va="center", fontsize=11,
                bbox={"boxstyle": "round", "facecolor": _colour(_score(node) if matched else None),
                      "edgecolor": "black", "linewidth": 3 if node.get("origin") else 1,
                      "linestyle": "-" if matched else "--"})
    ax.set_axis_off()
    fig.tight_layout()
    return figure_bytes(fig, "svg").decode()
