"""What the two HTML views (the report and the case viewer) share: their Jinja2 templates, autoescaped, so every
text from a run (model names, case ids, outputs, feedback) is escaped unless it is markup made here; their one
stylesheet; and one run's answer to one case as a cell of a case grid."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import TYPE_CHECKING, Any, get_args

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from typed_eval.core.suite import AnswerLine, AnswerMark, Suite, answer_lines
from typed_eval.reports.formatting import interval, metric, money, number, percent

if TYPE_CHECKING:
    from typed_eval.store.case_store import CaseCell

__all__ = ["CellView", "answer_html", "asset", "cell_view", "cut_text", "render"]

_STATUSES = frozenset({"correct", "partial", "mixed", "incorrect", "missing", "error", "unsupported"})
"""The statuses a cell is coloured by; another (a plug-in's) is class `st-other`."""


@functools.cache
def _environment() -> Environment:
    environment = Environment(
        loader=PackageLoader("typed_eval.reports", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters.update(cut=cut_text, number=number, money=money, interval=interval, percent=percent)
    environment.filters["metric"] = lambda value, name: metric(name, value)
    environment.globals["MARKS"] = frozenset(get_args(AnswerMark))
    return environment


def render(template: str, **context: Any) -> str:
    """The page (or piece) `template` made with `context`."""
    return _environment().get_template(template).render(**context)


@functools.cache
def asset(name: str) -> str:
    """A file the views ship (`style.css`, `report.js`, `viewer.js`): the report inlines it, the viewer serves it."""
    return files("typed_eval.reports").joinpath("assets", name).read_text(encoding="utf-8")


def cut_text(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and a visible count of the rest."""
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def answer_html(line: AnswerLine, limit: int) -> Markup:
    """One line of an answer (`Suite.show_answer`) as HTML, for the report's grid and the case viewer: its text
    escaped and cut at `limit`, its mark a class and a tag when it is a known one (a plug-in's other mark is not a
    class name)."""
    macro = _environment().get_template("macros.html").module.answer  # type: ignore[attr-defined]
    return Markup(macro(line, limit))


@dataclass(frozen=True)
class CellView:
    """One run's answer to one case as a grid shows it: its status line, answer lines (each with the characters it
    may show), how many lines are left out, and its facts (invalid kinds, retries, tokens, cost...)."""

    status: str
    head: str
    """The status line: the status, its score when it tells more, the repeats."""
    answers: Sequence[tuple[AnswerLine, int]]
    more: int
    facts: str
    data_status: bool = False
    """The cell says its status as `data-status` (the viewer's scripts and tests read it)."""

    @property
    def css(self) -> str:
        return self.status if self.status in _STATUSES else "other"

    @property
    def more_text(self) -> str:
        return f"… {self.more} more line{'s' * (self.more != 1)}"


def cell_view(
    cell: CaseCell,
    suite: Suite[Any] | None,
    *,
    head: str,
    facts: Sequence[str],
    lines: int,
    text: int,
    per_line: bool,
    data_status: bool = False,
) -> CellView:
    """`cell` as a grid shows it: at most `lines` answer lines and `text` characters, over the lines, or with
    `per_line` in each line."""
    found = [line for record in cell.records for line in answer_lines(suite, record)]
    answers: list[tuple[AnswerLine, int]] = []
    budget = text
    for line in found[:lines]:
        if budget <= 0:
            break
        answers.append((line, budget))
        if not per_line:
            budget -= len(line.text)
    return CellView(
        cell.status, head, answers, len(found) - len(answers), " · ".join(f for f in facts if f), data_status
    )
