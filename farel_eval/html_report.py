"""The leaderboard as one self-contained HTML page: tables, plots and examples that open from disk offline.

Everything is inline (CSS, a small sorting script, matplotlib SVG), so the page makes no request at all; a
Content-Security-Policy says so to the browser too. Every piece of text from a run (model names, raw outputs,
feedback) is untrusted and escaped.
"""

from __future__ import annotations

import base64
import hashlib
import io
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

from farel_eval.errors import InputError
from farel_eval.schemas import LeaderboardRow, ModeComparison, SampleRecord
from farel_eval.tables import (
    MODE_HEADERS,
    PAIR_HEADERS,
    class_header,
    metric_columns,
    mode_table_lines,
    retry_cost_share,
    suite_title,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

__all__ = ["InvalidExample", "InvalidExamples", "invalid_examples", "render_html"]

MAX_TEXT = 2000
"""Characters of a raw output or feedback shown in full; the rest is cut with a visible marker."""


@dataclass(frozen=True)
class InvalidExample:
    """One rejected output of a run, as the page shows it: what the model sent and what it was told."""

    case_id: str
    repeat: int
    kind: str | None
    raw: str
    feedback: str | None


def _truncate(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return f"{text[:MAX_TEXT]}\n[… truncated: {len(text) - MAX_TEXT} more characters]"


class InvalidExamples:
    """The first `limit` invalid attempts of a run's records (in record order), gathered as the records go by: a few
    concrete failures say more about a model's format problems than the counts alone."""

    def __init__(self, limit: int = 3) -> None:
        self.limit = limit
        self.found: list[InvalidExample] = []

    def add(self, record: SampleRecord) -> None:
        for attempt in record.attempts:
            if len(self.found) >= self.limit:
                return
            if not attempt.valid:
                feedback = None if attempt.feedback is None else _truncate(attempt.feedback)
                example = InvalidExample(
                    record.case_id, record.repeat, attempt.invalid_kind, _truncate(attempt.raw), feedback
                )
                self.found.append(example)


def invalid_examples(records: Iterable[SampleRecord], limit: int = 3) -> list[InvalidExample]:
    """The first `limit` invalid attempts of a run's records."""
    examples = InvalidExamples(limit)
    for record in records:
        examples.add(record)
    return examples.found


def render_html(
    rows: Sequence[LeaderboardRow],
    examples: Mapping[str, Sequence[InvalidExample]],
    *,
    title: str = "Leaderboard",
    modes: Sequence[ModeComparison] = (),
) -> str:
    """One self-contained page; `examples` is keyed by LeaderboardRow.path. Sections per suite, as the
    terminal leaderboard: runs of different suites are never compared."""
    try:
        import matplotlib
    except ImportError:
        raise InputError("the HTML report needs matplotlib: pip install 'farel-eval[report]'") from None
    suites = sorted({r.suite for r in rows})
    # Text stays text in the SVG (half the bytes of paths); a browser without DejaVu Sans uses its own sans-serif.
    with matplotlib.rc_context({"svg.fonttype": "none", "font.size": 9, "font.sans-serif": ["DejaVu Sans", "Arial"]}):
        sections = [_suite_section(s, [r for r in rows if r.suite == s], examples, i) for i, s in enumerate(suites)]
    script = _SCRIPT.strip()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"
    summary = f"{len(rows)} run{'s' * (len(rows) != 1)} in {len(suites)} suite{'s' * (len(suites) != 1)}"
    nav = " · ".join(f'<a href="#suite-{i}">{_e(s)}</a>' for i, s in enumerate(suites)) if len(suites) > 1 else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<header><h1>{_e(title)}</h1><p class="muted">{summary}. Scores 0-100 with 95% intervals; click a column
header to sort.{f" Suites: {nav}" if nav else ""}</p></header>
{_modes_section(modes)}{"".join(sections)}
<script>{script}</script>
</body>
</html>
"""


def _modes_section(modes: Sequence[ModeComparison]) -> str:
    """The model x mode table: each model's modes side by side, then every pair of them on paired cases."""
    if not modes:
        return ""
    mode_lines: list[list[str]] = []
    pair_lines: list[list[str]] = []
    for comparison in modes:
        mine, pairs = mode_table_lines([comparison])
        mode_lines += [[comparison.suite, *line] for line in mine]
        pair_lines += [[comparison.suite, *line] for line in pairs]
    tables = []
    for headers, lines in ((("Suite", *MODE_HEADERS), mode_lines), (("Suite", *PAIR_HEADERS), pair_lines)):
        head = "".join(f'<th scope="col"><button type="button">{_e(h)}</button></th>' for h in headers)
        body = "".join("<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in line) + "</tr>" for line in lines)
        tables.append(_scroll_table("sortable", head, body))
    return f"""<section id="modes">
<h2>Answer modes <span class="muted">each model's modes on the same cases; pairs compared case by case (McNemar
exact, or the sign test), Holm-corrected over each model's pairs</span></h2>
{"".join(tables)}
</section>
"""


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _suite_section(
    suite: str, rows: Sequence[LeaderboardRow], examples: Mapping[str, Sequence[InvalidExample]], index: int
) -> str:
    chances = {round(r.chance, 1) for r in rows if r.chance is not None}
    chance = chances.pop() if len(chances) == 1 else None
    about = f"{len(rows)} run{'s' * (len(rows) != 1)}" + ("" if chance is None else f" · chance level {chance:.1f}")
    name = suite_title(suite, rows)
    return f"""<section id="suite-{index}">
<h2>{_e(name)} <span class="muted">{about}</span></h2>
{_table(rows)}
<div class="grid">
<figure class="card"><figcaption>Score vs cost per case</figcaption>{_scatter(rows, index, chance)}</figure>
<figure class="card"><figcaption>Format compliance</figcaption>{_compliance(rows)}</figure>
</div>
<figure class="card"><figcaption>Score per class</figcaption>{_heatmap(rows)}</figure>
{_retries_figure(rows, index)}
<h3>Runs</h3>
{"".join(_details(r, examples.get(r.path, ())) for r in rows)}
</section>
"""


def _num(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _usd(value: float | None) -> str:
    """Three significant digits, never scientific notation: $0.000123, $0.0123, $1.50."""
    if value is None:
        return ""
    if value == 0:
        return "$0"
    return f"${value:.{max(2, 2 - math.floor(math.log10(abs(value))))}f}"


def _key(value: float | int | str | None) -> str:
    return "" if value is None else _e(value)


def _cell(text: str, key: float | int | str | None, cls: str = "num") -> str:
    return f'<td class="{cls}" data-v="{_key(key)}">{text}</td>'


def _badges(row: LeaderboardRow) -> str:
    badges = []
    if not row.complete or row.status == "partial":
        done = f"{row.samples} samples of {row.cases} cases" + (f" x {row.repeats}" if row.repeats > 1 else "")
        badges.append(f'<span class="badge warn" title="partial or limited run: {_e(done)}">partial</span>')
    if row.status == "dnf":
        badges.append(f'<span class="badge bad" title="{_e(row.reason or "did not finish")}">DNF</span>')
    return "".join(badges)


_COLUMNS = [
    ("Rank", "rank; ★ = statistically tied with the best (paired test, Holm-corrected)"),
    ("Model", "model and answer mode; partial = fewer cases than the dataset"),
    ("Score", "headline score, 0-100, with its 95% bootstrap interval"),
    ("Fav. pos.", "what always choosing the option position this model chose most would score (#n, or last)"),
    ("Valid 1st", "percent of samples whose first output was valid"),
    ("Valid final", "percent valid after corrective retries"),
    ("Invalid", "invalid outputs (all attempts)"),
    ("Cost", "total cost in USD; ≥ when some samples have no known cost"),
    ("$/case", "cost per case"),
    ("$/correct", "cost per correct answer"),
    ("Score/$", "score divided by the cost per case"),
    ("Latency", "median / p95 seconds per case"),
    ("Samples", "samples scored / cases in the dataset"),
]


def _table(rows: Sequence[LeaderboardRow]) -> str:
    metrics = metric_columns(rows)
    shown = [(name, f"{name}: a figure the suite's task reports") for name in metrics]
    columns = _COLUMNS[:3] + shown + _COLUMNS[3:]
    head = "".join(
        f'<th scope="col" title="{_e(tip)}"><button type="button">{_e(name)}</button></th>' for name, tip in columns
    )
    body = "".join(_table_row(r, metrics) for r in rows)
    return _scroll_table("leaderboard sortable", head, body)


def _scroll_table(cls: str, head: str, body: str) -> str:
    return f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _table_row(r: LeaderboardRow, metrics: Sequence[str]) -> str:
    star = ' <span class="star" title="statistically tied with the best">★</span>' if r.rank_group == 1 else ""
    ci = f'<span class="ci">{r.score_ci95[0]:.1f}&ndash;{r.score_ci95[1]:.1f}</span>' if r.score_ci95 else ""
    score = "DNF" if r.status == "dnf" else _num(r.score)
    if r.cost_usd is None:
        cost = '<span class="muted">unknown</span>'
    else:
        cost = f"{'' if r.cost_complete else '≥'}{_usd(r.cost_usd)}"
    latency = "" if r.latency_median_s is None else f"{r.latency_median_s:.2f} / {_num(r.latency_p95_s, 2)}"
    samples = (
        f"{r.samples} / {r.cases}" + (f" &times;{r.repeats}" if r.repeats > 1 else "") if r.cases else str(r.samples)
    )
    cls = ' class="partial"' if not r.complete or r.status == "partial" else ""
    cells = [
        _cell(f"{'' if r.rank is None else r.rank}{star}", r.rank),
        _cell(
            f'<span class="model">{_e(r.model)}</span> <span class="mode">{_e(r.mode)}</span>{_badges(r)}',
            r.model,
            "text",
        ),
        _cell(f"<strong>{score}</strong>{ci}", r.score),
        *(_cell(_num(r.metrics.get(name), 2), r.metrics.get(name)) for name in metrics),
        _cell(_favourite(r), r.favourite_position_score),
        _cell(_num(r.valid_first_try), r.valid_first_try),
        _cell(_num(r.valid_after_retries), r.valid_after_retries),
        _cell(str(r.invalid_outputs), r.invalid_outputs),
        _cell(cost, r.cost_usd),
        _cell(_usd(r.cost_per_case_usd), r.cost_per_case_usd),
        _cell(_usd(r.cost_per_correct_usd), r.cost_per_correct_usd),
        _cell("" if r.score_per_usd is None else f"{r.score_per_usd:,.0f}", r.score_per_usd),
        _cell(latency, r.latency_median_s),
        _cell(samples, r.samples),
    ]
    return f"<tr{cls}>{''.join(cells)}</tr>"


def _favourite(row: LeaderboardRow) -> str:
    position = row.favourite_position
    if position is None or row.favourite_position_score is None:
        return ""
    where = "last" if position == "last" else f"#{position}"
    return f'{row.favourite_position_score:.1f} <span class="mode">{where}</span>'


def _label(row: LeaderboardRow) -> str:
    return f"{row.model} ({row.mode})"


def _scatter(rows: Sequence[LeaderboardRow], index: int, chance: float | None) -> str:
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
        ax.annotate("chance", (1, chance), xycoords=("axes fraction", "data"), xytext=(0, 3),
                    textcoords="offset points", ha="right", fontsize=8, color="#868e96")  # fmt: skip
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
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: "$0" if free and value == zero_at else _tick(value)))
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


def _tick(value: float) -> str:
    """A dollar tick: three significant digits, trailing zeros dropped ($0.0001, $0.0025, $1.5)."""
    if value <= 0:
        return "$0"
    text = f"{value:.{max(0, 2 - math.floor(math.log10(value)))}f}"
    return "$" + (text.rstrip("0").rstrip(".") if "." in text else text)


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
                text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, fontsize=8,
                color="#343a40", parse_math=False, annotation_clip=False,
            )  # fmt: skip
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
    with matplotlib.rc_context({"svg.hashsalt": f"farel-{index}"}):
        fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    svg = out.getvalue()
    svg = svg[svg.index("<svg") :]
    return re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.DOTALL)


def _colour(score: float) -> tuple[str, str]:
    """Background and text colour for a 0-100 score: white to deep blue, text white on the dark half."""
    t = min(1.0, max(0.0, score / 100))
    light, dark = (247, 251, 255), (8, 69, 148)
    rgb = "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(light, dark, strict=True))
    return f"#{rgb}", "#fff" if t > 0.55 else "#212529"


def _heatmap(rows: Sequence[LeaderboardRow]) -> str:
    """A table with coloured cells rather than an image: lighter, and readable by screen readers and search."""
    classes = list(dict.fromkeys(name for r in rows for name in r.classes))
    if not classes:
        return '<p class="note">No per-class scores.</p>'
    head = "".join(f'<th scope="col">{_e(class_header(c))}</th>' for c in classes)
    body = []
    for r in rows:
        cells = []
        for name in classes:
            value = r.classes.get(name)
            if value is None:
                cells.append('<td class="empty"></td>')
                continue
            bg, fg = _colour(value)
            ci = r.class_ci95.get(name)
            tip = f' title="{_e(name)}: {value:.1f}' + (f" (95%: {ci[0]:.1f}&ndash;{ci[1]:.1f})" if ci else "") + '"'
            cells.append(f'<td style="background:{bg};color:{fg}"{tip}>{value:.0f}</td>')
        label = f'<th scope="row">{_e(_label(r))}{_badges(r)}</th>'
        body.append(f"<tr>{label}{''.join(cells)}</tr>")
    return _scroll_table("heatmap", f"<th></th>{head}", "".join(body))


def _retries_figure(rows: Sequence[LeaderboardRow], index: int) -> str:
    """Score and valid outputs against the corrective retries allowed, a line each per run: what retries bought."""
    shown = [r for r in rows if len(r.score_by_retries) > 1]
    if not shown:
        return ""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.4, 3.4))
    score_axes, valid_axes = fig.subplots(1, 2)
    for row in shown:
        steps = range(len(row.score_by_retries))
        score_axes.plot(steps, [v if v is not None else float("nan") for v in row.score_by_retries], marker="o",
                        label=_label(row))  # fmt: skip
        valid_axes.plot(steps, [v if v is not None else float("nan") for v in row.valid_by_retries], marker="o")
    for axes, name in ((score_axes, "score"), (valid_axes, "valid outputs, %")):
        axes.set_xlabel("corrective retries allowed")
        axes.set_ylabel(name)
        axes.set_ylim(0, 100)
        axes.xaxis.get_major_locator().set_params(integer=True)
    score_axes.legend(fontsize=7)
    fig.tight_layout()
    shares = "".join(
        f"<li>{_e(_label(r))}: {r.retry_requests} retries cost {_usd(r.retry_cost_usd) or 'an unknown amount'}"
        + (f" ({share:.1f}% of the run)" if (share := retry_cost_share(r)) else "")
        + "</li>"
        for r in shown
        if r.retry_requests is not None
    )
    return (f'<figure class="card"><figcaption>What corrective retries bought</figcaption>'
            f'<div class="plot">{_svg(fig, 1000 + index)}</div><ul class="note">{shares}</ul></figure>')  # fmt: skip


def _compliance(rows: Sequence[LeaderboardRow]) -> str:
    """Stacked bars per run: valid on the first try, made valid by corrective retries, still invalid."""
    items = []
    for r in rows:
        label = f'<div class="bar-label">{_e(_label(r))}{_badges(r)}</div>'
        if r.valid_first_try is None:
            items.append(f'<li>{label}<div class="note">no answered samples</div></li>')
            continue
        first = r.valid_first_try
        final = max(first, r.valid_after_retries if r.valid_after_retries is not None else first)
        parts = [("first", first, "valid first try"), ("retry", final - first, "valid after retries"),
                 ("invalid", 100 - final, "still invalid")]  # fmt: skip
        bar = "".join(
            f'<span class="seg {cls}" style="width:{width:.2f}%" title="{tip}: {width:.1f}%"></span>'
            for cls, width, tip in parts
            if width > 0
        )
        kinds = ", ".join(
            f"{_e(kind)} {count}" for kind, count in sorted(r.invalid_by_kind.items(), key=lambda kv: -kv[1])
        )
        text = f"{first:.1f}% first try, {final:.1f}% after retries" + (f"; invalid: {kinds}" if kinds else "")
        bar = f'<div class="bar" role="img" aria-label="{text}">{bar}</div>'
        items.append(f'<li>{label}{bar}<div class="kinds">{text}</div></li>')
    legend = (
        '<div class="legend"><span class="seg first"></span>valid first try <span class="seg retry"></span>'
        'valid after retries <span class="seg invalid"></span>still invalid</div>'
    )
    return f'{legend}<ul class="bars">{"".join(items)}</ul>'


def _details(row: LeaderboardRow, examples: Sequence[InvalidExample]) -> str:
    latency = f"median {_num(row.latency_median_s, 2)} s, p95 {_num(row.latency_p95_s, 2)} s"
    facts = [
        ("Run", row.run_id),
        ("Status", row.status + ("" if row.complete else " (partial: fewer cases than the dataset)")),
        ("Samples", f"{row.samples} of {row.cases} cases, {row.repeats} repeat{'s' * (row.repeats != 1)}"),
        ("Chance", _num(row.chance)),
        ("Favourite position", "" if row.favourite_position is None else
         f"{row.favourite_position} (always choosing it scores {_num(row.favourite_position_score)})"),
        ("Corrective retries", str(row.corrective_retries)),
        ("Invalid outputs", ", ".join(f"{k} {n}" for k, n in row.invalid_by_kind.items()) or str(row.invalid_outputs)),
        ("Latency", "" if row.latency_median_s is None else latency),
        ("Reason", row.reason or ""),
        ("File", row.path),
    ]  # fmt: skip
    dl = "".join(f"<dt>{name}</dt><dd>{_e(value)}</dd>" for name, value in facts if value)
    shown = "".join(
        f"""<div class="example"><div class="example-head">case <code>{_e(x.case_id)}</code>, repeat {x.repeat}:
<span class="badge bad">{_e(x.kind or "invalid")}</span></div>
<div class="pre-label">Raw output</div><pre>{_e(x.raw)}</pre>"""
        + ("" if x.feedback is None else f'<div class="pre-label">Feedback given</div><pre>{_e(x.feedback)}</pre>')
        + "</div>"
        for x in examples
    )
    if examples:
        shown = f"<h4>First invalid outputs</h4>{shown}"
    about = ("DNF" if row.status == "dnf" else f"score {_num(row.score)}") + f" · {row.invalid_outputs} invalid"
    return f"""<details class="run"><summary><span class="model">{_e(_label(row))}</span>{_badges(row)}
<span class="muted">{about} · {_e(row.run_id)}</span></summary><dl>{dl}</dl>{shown}</details>
"""


_CSS = """
:root{--fg:#212529;--muted:#6c757d;--line:#dee2e6;--bg:#f8f9fa;--accent:#1c7ed6}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1240px;padding:24px 28px 48px;color:var(--fg);background:#fff;
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:36px 0 12px;padding-top:12px;border-top:1px solid var(--line)}
h3{font-size:16px;margin:24px 0 8px}h4{font-size:13px;margin:12px 0 6px;color:var(--muted);text-transform:uppercase}
.muted{color:var(--muted);font-weight:normal}.note{color:var(--muted);font-size:12.5px;margin:6px 4px}
a{color:var(--accent)}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
.leaderboard{width:100%;font-size:13px}
.leaderboard th,.leaderboard td{padding:6px 7px;border-bottom:1px solid var(--line);white-space:nowrap}
.leaderboard td.text{white-space:normal;min-width:16em}
.leaderboard thead th{background:var(--bg);border-bottom:2px solid var(--line);text-align:right;vertical-align:bottom}
.leaderboard thead th:nth-child(2){text-align:left}
.leaderboard th button{all:unset;cursor:pointer;font-weight:600}
.leaderboard th button:focus-visible{outline:2px solid var(--accent)}
.leaderboard th[aria-sort=ascending] button::after{content:" ▲"/"";font-size:10px}
.leaderboard th[aria-sort=descending] button::after{content:" ▼"/"";font-size:10px}
.leaderboard tbody tr:hover{background:#f1f3f5}
td.num{text-align:right}td.text{text-align:left}
tr.partial td{background:#fff9db}
.ci{display:block;color:var(--muted);font-size:11px}
.star{color:#f59f00}
.model{font-weight:600}.mode{color:var(--muted);font-size:12px}
.badge{display:inline-block;margin-left:6px;padding:0 6px;border-radius:9px;font-size:11px;font-weight:600;
vertical-align:1px}
.badge.warn{background:#ffe066;color:#5c3c00}.badge.bad{background:#ffe3e3;color:#c92a2a}
.grid{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:16px;margin-top:16px}
@media (max-width:900px){.grid{grid-template-columns:1fr}}
.card{margin:16px 0 0;padding:12px 14px;border:1px solid var(--line);border-radius:8px}
.grid .card{margin:0}
figcaption{font-weight:600;margin-bottom:8px}
.plot svg{width:100%;height:auto;display:block}
.heatmap{font-size:12.5px}
.heatmap th,.heatmap td{padding:5px 8px;text-align:center;border:2px solid #fff}
.heatmap thead th{font-weight:600;color:var(--muted);font-size:12px}
.heatmap tbody th{text-align:left;font-weight:normal;white-space:nowrap}
.heatmap td{min-width:56px}.heatmap td.empty{background:var(--bg)}
.bars{list-style:none;margin:0;padding:0}.bars li{margin:0 0 10px}
.bar-label{font-size:12.5px}
.bar{display:flex;height:14px;border-radius:3px;overflow:hidden;background:var(--bg)}
.seg{display:inline-block;height:100%}
.seg.first{background:#2f9e44}.seg.retry{background:#b2f2bb}.seg.invalid{background:#e03131}
.kinds{font-size:11.5px;color:var(--muted)}
.legend{font-size:11.5px;color:var(--muted);margin-bottom:10px}
.legend .seg{width:12px;height:10px;margin:0 4px 0 10px;border-radius:2px;vertical-align:-1px}
.legend .seg:first-child{margin-left:0}
details.run{border:1px solid var(--line);border-radius:8px;margin:8px 0;padding:8px 12px}
details.run summary{cursor:pointer}details.run summary .muted{margin-left:8px;font-size:12px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:10px 0;font-size:13px}
dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere}
.example{margin:8px 0 14px}.example-head{font-size:13px;margin-bottom:4px}
.pre-label{font-size:11px;color:var(--muted);margin-top:4px}
pre{margin:2px 0;padding:8px 10px;background:var(--bg);border:1px solid var(--line);border-radius:6px;
white-space:pre-wrap;overflow-wrap:anywhere;font-size:12px;max-height:320px;overflow:auto}
"""

_SCRIPT = """
document.querySelectorAll("table.sortable").forEach((table) => {
  const heads = Array.from(table.tHead.rows[0].cells);
  heads.forEach((th, col) => {
    th.querySelector("button").addEventListener("click", () => {
      const dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
      heads.forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", dir);
      const body = table.tBodies[0];
      const key = (row) => row.cells[col].dataset.v;
      const rows = Array.from(body.rows).sort((a, b) => {
        const x = key(a), y = key(b);
        if (x === "" || y === "") return (x === "") - (y === "");
        const nx = Number(x), ny = Number(y);
        const c = isNaN(nx) || isNaN(ny) ? x.localeCompare(y, undefined, {numeric: true}) : nx - ny;
        return dir === "ascending" ? c : -c;
      });
      rows.forEach((row) => body.appendChild(row));
    });
  });
});
"""
