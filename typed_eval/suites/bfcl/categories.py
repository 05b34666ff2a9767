"""`-S categories=...`: BFCL's category names, and its collections `single_turn`, `multi_turn` and `all`."""

from __future__ import annotations

from typed_eval.core.errors import InputError
from typed_eval.suites.bfcl.data import SINGLE_TURN_CATEGORIES
from typed_eval.suites.bfcl.multi_turn.cases import CATEGORIES as MULTI_TURN_CATEGORIES

__all__ = ["COLLECTIONS", "MULTI_TURN_CATEGORIES", "SINGLE_TURN_CATEGORIES", "parse_categories"]

COLLECTIONS: dict[str, tuple[str, ...]] = {
    "all": SINGLE_TURN_CATEGORIES + MULTI_TURN_CATEGORIES,
    "single_turn": SINGLE_TURN_CATEGORIES,
    "multi_turn": MULTI_TURN_CATEGORIES,
}
"""Names that stand for several categories, as BFCL's own command line takes them."""


def parse_categories(text: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The single-turn and the multi-turn categories `text` names (comma-separated), each in BFCL's order; every
    one of them when it is not given."""
    asked: set[str] = set()
    for name in (part.strip() for part in (text or "all").split(",")):
        if not name:
            continue
        if name in COLLECTIONS:
            asked.update(COLLECTIONS[name])
        elif name in COLLECTIONS["all"]:
            asked.add(name)
        else:
            known = ", ".join([*COLLECTIONS, *COLLECTIONS["all"]])
            raise InputError(f"unknown BFCL category {name[:80]!r}; the categories are {known}")
    if not asked:
        return parse_categories("all")
    single = tuple(c for c in SINGLE_TURN_CATEGORIES if c in asked)
    return single, tuple(c for c in MULTI_TURN_CATEGORIES if c in asked)
