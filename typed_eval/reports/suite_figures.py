"""A suite's own figures as every table shows them, each once under the name the suite gives it (`Figure`): a figure
of the whole run in the suite's own table, a figure per group as a line beside the group's score, the headline score
under another name not again, and a legend saying once what each is. A figure the suite says nothing of is shown
under its name. Nothing here names a suite."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from typed_eval.contracts import LeaderboardRow
from typed_eval.contracts.leaderboard_row import Figure
from typed_eval.reports.formatting import metric, number

__all__ = ["GroupLine", "Shown", "figure_legend", "group_lines", "line_groups", "run_figures", "shown_figures"]


@dataclass(frozen=True)
class Shown:
    """One of a suite's figures the tables show: its name among the row's metrics, and what the suite says it is."""

    name: str
    figure: Figure

    @property
    def header(self) -> str:
        """Its header where groups are not columns: a figure of a group says which (`easy Recall`)."""
        return self.figure.header if self.figure.group is None else f"{self.figure.group} {self.figure.header}"


def _labels(rows: Sequence[LeaderboardRow]) -> dict[str, Figure]:
    found: dict[str, Figure] = {}
    for row in rows:
        for name, figure in row.figures.items():
            found.setdefault(name, figure)
    return found


def _names(rows: Sequence[LeaderboardRow]) -> list[str]:
    """The metrics the rows' suite shows, in the order its runs name them."""
    return list(dict.fromkeys(name for row in rows for name in row.columns))


def shown_figures(rows: Sequence[LeaderboardRow]) -> list[Shown]:
    """The metrics the rows' suite shows, in the order its runs name them, each with what it is (its name as its
    header when the suite says nothing); the headline score under the suite's own name is left out, shown as the
    score."""
    labels = _labels(rows)
    shown = [Shown(name, labels.get(name, Figure(header=name))) for name in _names(rows)]
    return [one for one in shown if not one.figure.score]


def run_figures(rows: Sequence[LeaderboardRow]) -> list[Shown]:
    """The figures of the whole run (the suite's own table)."""
    return [one for one in shown_figures(rows) if one.figure.group is None]


@dataclass(frozen=True)
class GroupLine:
    """One figure of every group, a line per run in the table by group: the score of each group (`names` None), or
    the suite's figures of one kind, a figure per group."""

    label: str
    names: Mapping[str, str] | None = None
    """Group -> the name of the suite's figure of this kind for it."""

    def value(self, row: LeaderboardRow, group: str) -> str:
        """The line's figure for the group in this row, as the tables write it ("" when it has none)."""
        if row.status == "dnf":
            return ""
        if self.names is None:
            return number(row.classes.get(group)) if row.group_columns else ""
        name = self.names.get(group)
        return "" if name is None else metric(name, row.metrics.get(name))


def group_lines(rows: Sequence[LeaderboardRow]) -> list[GroupLine]:
    """The figures per group: the score of each group (named as the score is) when the suite shows its groups, then
    each kind of the suite's own figures per group, named as the suite names it."""
    lines = [GroupLine(rows[0].title)] if any(row.group_columns and row.classes for row in rows) else []
    kinds: dict[str, dict[str, str]] = {}
    for one in shown_figures(rows):
        if one.figure.group is not None:
            kinds.setdefault(one.figure.header, {})[one.figure.group] = one.name
    return lines + [GroupLine(label, names) for label, names in kinds.items()]


def line_groups(rows: Sequence[LeaderboardRow], lines: Sequence[GroupLine]) -> list[str]:
    """The groups the lines have figures for: the runs' groups in their order, then any only a suite figure names."""
    groups: dict[str, None] = {}
    if any(line.names is None for line in lines):
        groups.update(dict.fromkeys(name for row in rows if row.group_columns for name in row.classes))
    for line in lines:
        groups.update(dict.fromkeys(line.names or {}))
    return list(groups)


def figure_legend(rows: Sequence[LeaderboardRow]) -> str | None:
    """What each of the suite's figures is, once per name (the figures of the whole run, then those per group, then
    the score under the suite's own name), in one paragraph; None when the suite says nothing of them."""
    labels = _labels(rows)
    said = [labels[name] for name in _names(rows) if name in labels and labels[name].about]
    entries: dict[str, str] = {}
    for figure in sorted(said, key=lambda figure: (figure.score, figure.group is not None)):
        entries.setdefault(figure.header + (" (the score)" if figure.score else ""), figure.about)
    return " ".join(f"{header}: {about}." for header, about in entries.items()) or None
