"""The HTML report's plots, drawn with matplotlib as inline SVG: score over cost per case, and what corrective
retries bought. Every label is text from a run, set as plain text (never parsed as math or markup)."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

from typed_eval.contracts import LeaderboardRow
from typed_eval.reports.formatting import money, money_tick
from typed_eval.reports.tables import retry_cost_share

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

__all__ = ["retries_figure", "scatter"]


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _label(row: LeaderboardRow) -> str:
    return f"{row.model} ({row.mode})"


def scatter(rows: Sequence[LeaderboardRow], index: int, chance: float | None) -> str:
    """Score over cost per case: whiskers for the 95% interval, the Pareto front as a step line. Runs with an
    unknown cost are listed under the plot, never drawn as free."""
    points = [(r, c) for r in rows if r.score is not None and (c := r.cost_per_case_usd) is not None]
    apart = {
        "unknown-cost": ("cost unknown", [r for r in rows if r.score is not None and r.cost_usd is None]),
        "partial-cost": (
            "cost only partly known",
            [r for r in rows if r.score is not None and r.cost_usd is not None and r.cost_per_case_usd is None],
        ),
        "no-score": ("no score", [r for r in rows if r.score is None]),
    }
    notes = [
        f'<p class="note {cls}">Not plotted, {why}: {", ".join(_e(_label(r)) for r in left)}.</p>'
        for cls, (why, left) in apart.items()
        if left
    ]
    if not points:
        return '<p class="note">No run with both a score and a known cost.</p>' + "".join(notes)
    return f'<div class="plot">{_scatter_svg(points, index, chance)}</div>' + "".join(notes)


def _scatter_svg(points: Sequence[tuple[LeaderboardRow, float]], index: int, chance: float | None) -> str:
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullLocator

    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.add_subplot()
    positive = [c for _, c in points if c > 0]
    log = len(positive) > 1 and max(positive) > 10 * min(positive)
    free = log and len(positive) < len(points)
    zero_at = min(positive) / 10 if log else 0.0  # a free (local) run sits one decade left of the cheapest paid one
    xs = [c if c > 0 else zero_at for _, c in points]
    ys = [r.score or 0.0 for r, _ in points]
    low = [max(0.0, y - r.score_ci95[0]) if r.score_ci95 else 0.0 for (r, _), y in zip(points, ys, strict=True)]
    high = [max(0.0, r.score_ci95[1] - y) if r.score_ci95 else 0.0 for (r, _), y in zip(points, ys, strict=True)]
    ax.errorbar(xs, ys, yerr=[low, high], fmt="none", ecolor="#9aa5b1", elinewidth=1.2, capsize=3, zorder=1)
    front = sorted((x, y) for (r, _), x, y in zip(points, xs, ys, strict=True) if r.pareto)
    if front:
        ax.step([x for x, _ in front], [y for _, y in front], where="post", color="#d9480f", lw=1.5, zorder=2)
    for (row, _), x, y in zip(points, xs, ys, strict=True):
        on_front = bool(row.pareto)
        ax.scatter(
            [x],
            [y],
            s=70 if on_front else 40,
            marker="D" if on_front else "o",
            facecolors=("#d9480f" if on_front else "#1c7ed6") if row.complete else "white",
            edgecolors="#d9480f" if on_front else "#1c7ed6",
            linewidths=1.5,
            zorder=3,
        )
    bottom = min([y - lo for y, lo in zip(ys, low, strict=True)] + ([] if chance is None else [chance]))
    if chance is not None:
        ax.axhline(chance, color="#868e96", lw=1, ls="--", zorder=0)
        ax.annotate(
            "chance",
            (1, chance),
            xycoords=("axes fraction", "data"),
            xytext=(0, 3),
            textcoords="offset points",
            ha="right",
            fontsize=8,
            color="#868e96",
        )
    _legend(ax, any(r.pareto for r, _ in points), not all(r.complete for r, _ in points))
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_minor_locator(NullLocator())
        if max(positive) < 300 * min(positive):  # two decades or less: 1, 2, 5 in each, or too few ticks
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.set_xlim(min(xs) / 2, max(xs) * 2)
        if free:  # "$0" then the decades, a dotted line between them: zero has no place on a log scale
            ax.set_xticks([zero_at, *(t for t in ax.get_xticks() if zero_at * 3 < t <= max(xs) * 2)])
            ax.axvline(zero_at * 3, color="#adb5bd", lw=1, ls=":")
    else:
        right = max(xs) * 1.15 or 1.0
        ax.set_xlim(-0.04 * right if max(xs) else -right, right)  # free runs are not drawn on the axis
        ax.xaxis.set_major_locator(MaxNLocator(5) if max(xs) else FixedLocator([0.0]))
    ax.xaxis.set_major_formatter(
        FuncFormatter(lambda value, _: "$0" if free and value == zero_at else money_tick(value))
    )
    top = max(y + h for y, h in zip(ys, high, strict=True))
    ax.set_ylim(max(-3.0, bottom - 8), min(103.0, top + 8))
    ax.set_yticks([t for t in ax.get_yticks() if 0 <= t <= 100])
    ax.set_xlabel("cost per case (USD" + (", log scale)" if log else ")"))
    ax.set_ylabel("score")
    ax.grid(True, color="#e9ecef", lw=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    _labels(
        fig, ax, [(_label(r) + ("" if r.complete else " *"), x, y) for (r, _), x, y in zip(points, xs, ys, strict=True)]
    )
    return _svg(fig, index)


def _legend(ax: Axes, front: bool, partial: bool) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color="#9aa5b1", marker="|", ls="none", markersize=10, label="95% interval")]
    if front:
        handles.append(Line2D([], [], color="#d9480f", marker="D", label="Pareto front"))
    if partial:
        handles.append(Line2D([], [], color="#1c7ed6", marker="o", mfc="white", ls="none", label="* partial run"))
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1), ncols=len(handles), fontsize=8, frameon=False)


def _labels(fig: Figure, ax: Axes, labels: Sequence[tuple[str, float, float]]) -> None:
    """Name each point, trying a few positions around it so that labels do not overlap each other."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()  # type: ignore[no-untyped-call]
    placed: list[Bbox] = []
    offsets = [(6, 4, "left", "bottom"), (6, -4, "left", "top"), (-6, 4, "right", "bottom"), (-6, -4, "right", "top")]
    for text, x, y in sorted(labels, key=lambda item: -item[2]):
        for attempt, (dx, dy, ha, va) in enumerate([*offsets, offsets[0]]):
            note = ax.annotate(
                text,
                (x, y),
                xytext=(dx, dy),
                textcoords="offset points",
                ha=ha,
                va=va,
                fontsize=8,
                color="#343a40",
                parse_math=False,
                annotation_clip=False,
            )
            box = note.get_window_extent(renderer)
            inside = fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1
            if attempt == len(offsets) or (inside and not any(box.overlaps(other) for other in placed)):
                break  # the last try is the first position again, kept even if it overlaps
            note.remove()
        placed.append(box)


def _svg(fig: Figure, index: int) -> str:
    """The figure as an inline <svg>: no XML prolog, deterministic ids (unique per figure in the page)."""
    import matplotlib

    out = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"figure-{index}"}):
        fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    svg = out.getvalue()
    svg = svg[svg.index("<svg") :]
    return re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.DOTALL)


def retries_figure(rows: Sequence[LeaderboardRow], index: int) -> str:
    """Score and valid outputs against the corrective retries allowed, a line each per run: what retries bought."""
    shown = [r for r in rows if len(r.score_by_retries) > 1]
    if not shown:
        return ""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.4, 3.4))
    score_axes, valid_axes = fig.subplots(1, 2)
    for row in shown:
        steps = range(len(row.score_by_retries))
        score_axes.plot(
            steps, [v if v is not None else float("nan") for v in row.score_by_retries], marker="o", label=_label(row)
        )
        valid_axes.plot(steps, [v if v is not None else float("nan") for v in row.valid_by_retries], marker="o")
    for axes, name in ((score_axes, "score"), (valid_axes, "valid outputs, %")):
        axes.set_xlabel("corrective retries allowed")
        axes.set_ylabel(name)
        axes.set_ylim(0, 100)
        axes.xaxis.get_major_locator().set_params(integer=True)
    score_axes.legend(fontsize=7)
    fig.tight_layout()
    shares = "".join(
        f"<li>{_e(_label(r))}: {r.retry_requests} retries cost {money(r.retry_cost_usd) or 'an unknown amount'}"
        + (f" ({share:.1f}% of the run)" if (share := retry_cost_share(r)) else "")
        + "</li>"
        for r in shown
        if r.retry_requests is not None
    )
    return (
        f'<figure class="card"><figcaption>What corrective retries bought</figcaption>'
        f'<div class="plot">{_svg(fig, 1000 + index)}</div><ul class="note">{shares}</ul></figure>'
    )
