"""The propagation graph drawn: DOT text, and an SVG for the HTML report.

Nodes are coloured by their error: green within tolerance (score <= 1),
orange at a violation's edge through red (score 10^4 and above), grey without
a value; the origin is drawn with a thick black border, values that could not
be matched are grey and dashed, and the edges on a path from the origin to a
violating output are red and thick. The SVG lays the graph out in layers of
dependency depth, top down, in columns of at most ``LAYERS_PER_COLUMN`` layers
(a transformer block's chain would be metres tall), the drawing filling its
figure: no margin above or below.
"""

from __future__ import annotations

import math

from ..base.numbers import from_json_number
from .plot import figure_bytes, new_figure


def _score(node) -> float | None:
    value = node.get("score")
    if value is None:
        return None
    value = from_json_number(value)
    return float("inf") if math.isnan(value) else value


def _colour(score) -> str:
    """A hex colour for a score: within tolerance (<= 1) green; a violation
    orange just above 1, red at 1e4 and above (log scale); no value grey."""
    if score is None:
        return "#cccccc"
    import matplotlib

    if score <= 1:
        at = 0.15  # green
    else:  # never green: from orange (0.62) to red (1.0) on RdYlGn_r
        at = 0.62 + 0.38 * (min(1.0, math.log10(score) / 4.0) if math.isfinite(score) else 1.0)
    r, g, b, _ = matplotlib.colormaps["RdYlGn_r"](at)
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


LAYERS_PER_COLUMN = 14  # a longer chain is wrapped into columns, read left to right
LAYER_INCHES, NODE_INCHES = 0.9, 2.9  # one layer's height, one node's width


def layout(graph: dict) -> tuple:
    """({node id: (x, y)} in node widths and layer heights, columns' width,
    rows): each node's layer is its dependency depth; layers fill columns of
    at most LAYERS_PER_COLUMN, top down, then the next column to the right."""
    users: dict = {n["id"]: [] for n in graph["nodes"]}
    preds: dict = {n["id"]: [] for n in graph["nodes"]}
    for edge in graph["edges"]:
        users[edge["src"]].append(edge["dst"])
        preds[edge["dst"]].append(edge["src"])
    depth: dict = {}
    for node in graph["nodes"]:  # in execution order: arguments first
        depth[node["id"]] = max((depth[p] + 1 for p in preds[node["id"]] if p in depth), default=0)
    layers: dict = {}
    for name, d in depth.items():
        layers.setdefault(d, []).append(name)
    count = max(layers) + 1
    columns = -(-count // LAYERS_PER_COLUMN)
    rows = -(-count // columns)
    width = max(len(v) for v in layers.values())
    pos = {}
    for d, names in layers.items():
        column, row = divmod(d, rows)
        for i, name in enumerate(names):
            pos[name] = (column * (width + 0.4) + (width - 1) / 2 + i - (len(names) - 1) / 2, -row)
    return pos, columns * (width + 0.4) - 0.4, rows


def _skips(pos: dict, src: str, dst: str) -> bool:
    """Does the edge pass a layer (or go to the next column)? Drawn straight it would cross the boxes between."""
    return pos[dst][1] - pos[src][1] != -1


def propagation_svg(graph: dict) -> str:
    """The graph as an inline SVG document (empty string for an empty graph)."""
    if not graph["nodes"]:
        return ""
    import networkx as nx

    pos, span, rows = layout(graph)
    g = nx.DiGraph()
    g.add_nodes_from(pos)
    g.add_edges_from((e["src"], e["dst"]) for e in graph["edges"])
    fig, ax = new_figure((NODE_INCHES * span, LAYER_INCHES * rows), 80)
    fig.subplots_adjust(0, 0, 1, 1)
    by_id = {n["id"]: n for n in graph["nodes"]}
    for on_path, colour, width in ((False, "#999999", 1.0), (True, "red", 2.5)):
        for bent in (False, True):  # an edge past a layer bends, not to run through the boxes between
            edges = [(e["src"], e["dst"]) for e in graph["edges"]
                     if bool(e.get("on_path")) == on_path and _skips(pos, e["src"], e["dst"]) == bent]
            nx.draw_networkx_edges(g, pos, edgelist=edges, edge_color=colour, width=width, ax=ax, arrows=True,
                                   node_size=1800, connectionstyle="arc3,rad=0.25" if bent else "arc3")
    for name, (x, y) in pos.items():
        node = by_id[name]
        matched = node.get("matched") is not None
        ax.text(x, y, _label(node).replace("\\n", "\n"), ha="center", va="center", fontsize=10,
                bbox={"boxstyle": "round", "facecolor": _colour(_score(node) if matched else None),
                      "edgecolor": "black", "linewidth": 3 if node.get("origin") else 1,
                      "linestyle": "-" if matched else "--"})
    ax.set_xlim(-0.5, span - 0.5)
    ax.set_ylim(-rows + 0.5, 0.5)
    ax.set_axis_off()
    return figure_bytes(fig, "svg").decode()
