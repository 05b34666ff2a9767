"""What corrective retries bought and cost, from a run's stored attempts: the score and the share of valid outputs had
at most r retries been allowed, what the requests after each sample's first cost, and what followed each invalid
output (fixed, the same kind again, another kind)."""

from __future__ import annotations

from dataclasses import dataclass, field

from typed_eval.contracts import Aggregate, SampleRecord, Scores, status_of
from typed_eval.core.counted_score import LEFT_OUT_STATUSES
from typed_eval.core.scoring import ScoreBook

__all__ = ["MAX_COUNTED_RETRIES", "RetryBook", "RetryEconomics", "with_retries_up_to"]

MAX_COUNTED_RETRIES = 10
"""`score_by_retries` goes up to this many retries (a run allowing more is counted up to it)."""


@dataclass
class RetryEconomics:
    score_by_retries: list[float | None]
    """Index r: the score had at most r corrective retries been allowed (a later first valid output: missing)."""
    valid_by_retries: list[float | None]
    """Index r: percent of answered samples with a valid output after at most r retries."""
    retry_requests: int
    retry_input_tokens: int | None
    """Tokens of the requests after each sample's first; None when some attempt's count is unknown."""
    retry_output_tokens: int | None
    retry_cost_usd: float | None
    """What those requests cost; None when some attempt's cost is unknown."""
    after_invalid: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    """Attempt number (1 = the first) -> invalid kind -> what the next attempt was: `fixed` (valid), `same` (the same
    kind again), `other` (another kind), `none` (no retry was left)."""


def with_retries_up_to(record: SampleRecord, r: int) -> SampleRecord:
    """The sample as it would have been with at most `r` corrective retries: unchanged when it used no more; else its
    answer is attempt r's, scored when that attempt holds a score (calls), else missing (an invalid output)."""
    attempts = record.attempts
    if r >= len(attempts) - 1 or record.status in LEFT_OUT_STATUSES:
        return record
    first_valid = next((k for k, attempt in enumerate(attempts) if attempt.valid), None)
    score = attempts[r].score
    if score is None and first_valid is None:
        return record  # every attempt invalid, none scored on its own: stored before attempts kept their score
    if score is None:
        return record.model_copy(update={"status": "missing", "score": None, "output": None, "score_details": None})
    return record.model_copy(update={"status": status_of(score), "score": score, "output": None, "score_details": None})


class RetryBook:
    """Fed a run's records one at a time (the leaderboard's one pass over them)."""

    def __init__(self, aggregate: Aggregate, retries_allowed: int) -> None:
        self._books = [ScoreBook(aggregate=aggregate) for _ in range(min(retries_allowed, MAX_COUNTED_RETRIES) + 1)]
        self._answered = 0
        self._valid_at = [0] * len(self._books)
        self._most_used = 0
        self._requests = 0
        self._tokens: list[int | None] = [0, 0]
        self._cost: float | None = 0.0
        self._after: dict[str, dict[str, dict[str, int]]] = {}
        self._sessions = False

    def add(self, record: SampleRecord) -> None:
        attempts = record.attempts
        if len(attempts) > record.corrective_retries + 1:  # several requests of their own (a session): no one
            self._sessions = True  # conversation whose retries could be told apart
        if self._sessions:
            return
        first_valid = next((k for k, attempt in enumerate(attempts) if attempt.valid), None)
        for r, book in enumerate(self._books):
            book.add(with_retries_up_to(record, r))
        if attempts:
            self._answered += 1
            for r in range(len(self._books)):
                self._valid_at[r] += first_valid is not None and first_valid <= r
        self._most_used = max(self._most_used, record.corrective_retries)
        self._requests += record.corrective_retries
        for attempt in attempts[1:]:
            for index, count in enumerate((attempt.input_tokens, attempt.output_tokens)):
                known = self._tokens[index]
                self._tokens[index] = None if known is None or count is None else known + count
            self._cost = None if self._cost is None or attempt.cost_usd is None else self._cost + attempt.cost_usd
        for k, attempt in enumerate(attempts):
            if attempt.valid or attempt.invalid_kind is None:
                continue
            following = attempts[k + 1] if k + 1 < len(attempts) else None
            what = (
                "none"
                if following is None
                else "fixed"
                if following.valid
                else "same"
                if following.invalid_kind == attempt.invalid_kind
                else "other"
            )
            kinds = self._after.setdefault(str(k + 1), {})
            counts = kinds.setdefault(attempt.invalid_kind, {"fixed": 0, "same": 0, "other": 0, "none": 0})
            counts[what] += 1

    def first_attempt(self) -> Scores | None:
        """The scores with no corrective retry, when some sample used one (else they are the run's own)."""
        if self._sessions or not self._most_used:
            return None
        return self._books[0].scores()

    def economics(self) -> RetryEconomics | None:
        """None for a task whose samples ask several times (a session): its attempts are not one conversation."""
        if self._sessions:
            return None
        shown = range(min(self._most_used, len(self._books) - 1) + 1)
        return RetryEconomics(
            score_by_retries=[self._books[r].scores().score for r in shown],
            valid_by_retries=[100 * self._valid_at[r] / self._answered if self._answered else None for r in shown],
            retry_requests=self._requests,
            retry_input_tokens=self._tokens[0],
            retry_output_tokens=self._tokens[1],
            retry_cost_usd=self._cost,
            after_invalid=self._after,
        )
