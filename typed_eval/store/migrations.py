"""Stored-format migrations: each takes one schema version's JSON to the next, so every old run still loads.

A version older than the typed-task format (2) was written when the program posed one suite only: that suite
declares how its runs read today (`Suite.formats`), and is found through its declaration, as every suite is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from typed_eval.contracts import SCHEMA_VERSION
from typed_eval.core.suite import StoredFormat, find_suites

__all__ = ["UnknownFormat", "migrate_record", "migrate_summary", "migrated_record", "stored_formats"]

JsonObject = dict[str, Any]


class UnknownFormat(Exception):
    """No installed suite declares how runs of a schema version read."""


def stored_formats() -> list[StoredFormat]:
    """Every earlier format the installed suites declare (a broken plug-in declares none)."""
    return [stored for found in find_suites(on_error=lambda _: None) for stored in found.suite.formats]


def _format(version: int, formats: Sequence[StoredFormat]) -> StoredFormat | None:
    return next((stored for stored in formats if stored.version == version), None)


def migrate_summary(data: JsonObject, version: int, formats: Sequence[StoredFormat] | None = None) -> JsonObject:
    """A summary of `version` as the current version's JSON."""
    return _migrate(data, version, formats, lambda stored: stored.summary)


def migrate_record(data: JsonObject, version: int, formats: Sequence[StoredFormat] | None = None) -> JsonObject:
    """A record of `version` as the current version's JSON."""
    return _migrate(data, version, formats, lambda stored: stored.record)


def _migrate(
    data: JsonObject,
    version: int,
    formats: Sequence[StoredFormat] | None,
    step: Callable[[StoredFormat], Callable[[JsonObject], JsonObject]],
) -> JsonObject:
    """`data` of `version` taken one declared format at a time to the current version."""
    from_version = version
    known = stored_formats() if formats is None else formats
    while (stored := _format(version, known)) is not None:
        data, version = step(stored)(data), version + 1
    if version == from_version and from_version < SCHEMA_VERSION:
        raise UnknownFormat(f"no installed suite reads schema version {from_version}")
    return data


def migrated_record(line: str, formats: Sequence[StoredFormat]) -> JsonObject | None:
    """A record line of an earlier format, as the current version's JSON; None for a line of none of them. A line
    that starts as one but does not hold one (an attempt that is not an object, a field missing) raises
    `ValueError` saying what the migration met, as a line that is not JSON does."""
    for stored in formats:
        if line.startswith(stored.record_start):
            data = json.loads(line)
            try:
                return migrate_record(data, stored.version, formats)
            except (LookupError, TypeError, AttributeError, ValueError) as exc:
                raise ValueError(f"not a version {stored.version} record: {type(exc).__name__}: {exc}") from None
    return None
