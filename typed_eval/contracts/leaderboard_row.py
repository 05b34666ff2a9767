"""One leaderboard row per stored run: the data every table format is rendered from."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from typed_eval.contracts.record import AnswerMode
from typed_eval.contracts.summary import RunStatus

__all__ = ["Figure", "Figures", "LeaderboardRow", "PassK"]


class Figure(BaseModel):
    """What one of a suite's figures (a metric the tables show) is, said by the suite: the reports name it by its
    `header` and say what it measures once, in a legend, instead of showing its key bare."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    header: str
    """A short name for its column or line (`Recall`); the figures of one kind, one per group, share it."""
    about: str = Field(default="", exclude_if=lambda about: not about)
    """What it measures, for the legend under the table ("answers right over all cases posed")."""
    group: str | None = Field(default=None, exclude_if=lambda group: group is None)
    """The group (a `classes` key) the figure is of, shown beside that group's score; None: of the whole run."""
    score: bool = Field(default=False, exclude_if=lambda score: not score)
    """The headline score under the suite's own name: shown as the score, never again as a figure of its own."""


class Figures(dict[str, float | None]):
    """What a suite's `row_metrics` may return to say what its figures are: the figures, and by name their `Figure`
    (a figure without one is shown under its name). A plain dict still works: its figures are shown under their
    names."""

    def __init__(
        self, values: Mapping[str, float | None] | None = None, labels: Mapping[str, Figure] | None = None
    ) -> None:
        super().__init__(values or {})
        self.labels: dict[str, Figure] = dict(labels or {})

    def add(self, name: str, value: float | None, label: Figure) -> None:
        """The figure `name` with its value and what it is."""
        self[name] = value
        self.labels[name] = label


class PassK(BaseModel):
    """pass^k of a run or of one of its groups: the chance that k trials of a case all succeed (score 1), estimated
    per case as C(c, k) / C(n, k) from its n trials of which c succeeded, and averaged over the cases with k trials or
    more (`typed_eval.reports.pass_k`)."""

    model_config = ConfigDict(extra="forbid")

    k: int
    value: float
    """0-100."""
    ci95: list[float]
    """[low, high], 0-100: bootstrap over cases (groups kept), seeded."""
    tasks: int
    """The cases averaged over: those with k scored trials or more."""


class LeaderboardRow(BaseModel):
    """A run as the leaderboard shows it (and as `format_result.py --format json` prints it)."""

    model_config = ConfigDict(extra="forbid")

    rank: int | None
    """Rank within the row's suite (by score unless told otherwise), ties sharing the smallest rank; None for
    incomplete runs and for runs the ranking cannot place (no score; unknown cost in a cost ranking)."""
    suite: str
    task: str
    model: str
    mode: AnswerMode
    run_id: str
    status: RunStatus
    imported: bool
    score: float | None
    """The headline, 0-100: macro accuracy for multiple-choice suites, mean score x 100 for scored tasks."""
    title: str = "Score"
    """What the suite calls its score (the score column's header)."""
    classes: dict[str, float | None]
    """Group (a multiple-choice suite's class) name -> mean score (0-100)."""
    metrics: dict[str, float | None]
    """Task-specific figures (e.g. a graph's edge precision, recall and F1, or the score of each problem size); None
    for a figure that is not a finite number."""
    metrics_no_retry: dict[str, float | None] = Field(default_factory=dict, exclude_if=lambda metrics: not metrics)
    """The suite's figures had no corrective retry been allowed (what a benchmark that scores the first answer
    reports), when some sample used one; empty otherwise."""
    columns: list[str] = []
    """The metrics the suite shows as columns of the tables (its `Suite.columns`), in order."""
    figures: dict[str, Figure] = Field(default_factory=dict, exclude_if=lambda labels: not labels)
    """What the suite says its metrics are (`Figures`), by name: their headers and the legend's words; left out when
    the suite says nothing (its metrics are shown under their names)."""
    group_columns: bool = True
    """Whether the tables show a column per group (`classes`)."""
    relaxed_column: bool = False
    """Whether the tables show `score_relaxed` (the suite reads text replies a relaxed way too)."""
    samples: int
    correct: int
    partial: int
    incorrect: int
    missing: int
    errors: int
    unsupported: int = Field(default=0, exclude_if=lambda count: count == 0)
    """Samples whose schema the provider refused; left out when none."""
    ambiguous: int
    """Cases recorded but left out of the score (e.g. ambiguous quizzes)."""
    valid_first_try: float | None
    """Percent of answered samples whose first output was valid."""
    corrective_retries: int
    invalid_outputs: int
    requests: int
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    """None when unknown; a lower bound when `cost_complete` is False."""
    cost_complete: bool
    cost_sources: list[str]
    batch: bool = False
    """Sent through the provider's batch API (`--batch`), so priced at its batch price: compare costs knowingly."""
    wall_s: float
    dataset_md5: str
    reason: str | None = None
    path: str
    cases: int = 0
    """How many cases the run's dataset has (a run that scored fewer is not complete)."""
    complete: bool = True
    """False for a run that scored fewer cases (x repeats) than its dataset has: limited, stopped, or with failed
    calls (which also leaves a group short)."""
    repeats: int = 1
    """How many times each case was posed; scores are means over repeats."""
    consistency: float | None = None
    """With repeats: percent of cases whose repeats all gave the same output."""
    score_ci95: list[float] | None = None
    """[low, high], 0-100: stratified bootstrap over cases (groups kept), seeded."""
    class_ci95: dict[str, list[float]] = {}
    """Group -> [low, high], 0-100: Wilson interval of the group's accuracy."""
    rank_group: int | None = None
    """Among complete runs on the same cases: 1 for the best and every run statistically tied with it (paired test
    at 0.05, Holm-corrected), else 2; None for runs not compared."""
    chance: float | None = None
    """The score of answering at random: mean of 1/options per group, aggregated as the score is."""
    positions: dict[str, int] = {}
    """Option number ("1" = first) -> how many answers chose it; "last" -> how many chose the last option."""
    favourite_position: str | None = None
    """The position most answers chose: an option number, or "last" (quizzes with different numbers of options)."""
    favourite_position_score: float | None = None
    """The score of always choosing the model's favourite position."""
    cost_per_case_usd: float | None = None
    """None when the cost is unknown or only partly known."""
    cost_per_correct_usd: float | None = None
    """Cost per correct answer (scored tasks: per score point x 100); None when cost is unknown."""
    score_per_usd: float | None = None
    """The score divided by the cost of one case; None when that cost is unknown or zero."""
    pareto: bool | None = None
    """On the (cost per case, score) Pareto frontier of its suite's complete runs; None when cost is unknown or
    the run is not complete."""
    latency_median_s: float | None = None
    """Seconds per case, from the first request to the final output, waits for capacity left out."""
    latency_p95_s: float | None = None
    rate_limited: int | None = None
    """Responses the provider answered HTTP 429 (waited out); None when the run was not paced (imported, older)."""
    wait_s: float | None = None
    """Seconds requests waited for capacity or for an outage to end, added up: reported apart from latency."""
    valid_after_retries: float | None = None
    invalid_by_kind: dict[str, int] = {}
    score_by_retries: list[float | None] = []
    """Index r: the score had at most r corrective retries been allowed (a sample whose first valid output came
    later counts as missing), r = 0 .. the most any sample used; empty without records."""
    valid_by_retries: list[float | None] = []
    """Index r: percent of answered samples with a valid output after at most r corrective retries."""
    retry_requests: int | None = None
    """The corrective retries (requests after each sample's first); None without records."""
    retry_input_tokens: int | None = None
    """Tokens of those requests (each resends the conversation so far); None when unknown (runs stored before
    attempts kept their own usage, imports)."""
    retry_output_tokens: int | None = None
    retry_cost_usd: float | None = None
    """What those requests cost; None when unknown."""
    after_invalid: dict[str, dict[str, dict[str, int]]] = {}
    """Attempt number (1 = the first) -> invalid kind -> what followed it: `fixed`, `same` (the same kind again),
    `other` (another kind), `none` (no retry left)."""
    score_relaxed: float | None = None
    """Text modes: the score with the suite's relaxed reading counted (a missing reply that states its answer
    another way scores what it states), as the suite's original benchmark counts it; None in other modes."""
    pass_k: list[PassK] = Field(default_factory=list, exclude_if=lambda figures: not figures)
    """With repeats: pass^1 .. pass^K (K: the fewest trials of a case, as the metric's authors set it), each over
    every case; empty (and left out) for a run that poses each case once or was stored without its records."""
    pass_k_groups: dict[str, list[PassK]] = Field(default_factory=dict, exclude_if=lambda groups: not groups)
    """With repeats: group -> its pass^1 .. pass^K, over its own cases."""
