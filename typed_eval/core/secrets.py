"""Keep every secret the program knows out of what it stores and prints.

A server may echo the request in an error body: the `Authorization` header, a `?key=...` query, the
basic-auth userinfo of its URL. Those texts end up in a record's error, the run's reason and the screen,
so each is passed through a `Redactor` built from the secrets in play: the API key, the credentials and
query values of the URLs, and the model client's own key, in their plain, URL-encoded and base64 forms.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

from pydantic_core import PydanticSerializationError

from typed_eval.contracts import SampleRecord

__all__ = ["REDACTED", "Redactor", "redacted_record", "secrets_of_model", "secrets_of_url"]

REDACTED = "[REDACTED]"
_MIN_LENGTH = 4
"""Shorter values (a `?v=1` query) are not secrets worth hiding and would garble ordinary text."""
_MIN_ENV_LENGTH = 8
"""An environment variable named like a secret but holding `true` or `1` is a setting, not a key."""
_SECRET_VARIABLE = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)


def secrets_of_url(url: str | None) -> list[str]:
    """The user, password, `user:password` and query values of a URL."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return []
    found = [unquote(v) for v in (username, password) if v]
    if username and password:
        found.append(f"{unquote(username)}:{unquote(password)}")
    found += [value for _, value in parse_qsl(parts.query, keep_blank_values=False)]
    return found


def secrets_of_model(model: object) -> list[str]:
    """The API key and URL secrets held by a model's SDK client (OpenAI, Anthropic...), if it has one."""
    client = getattr(model, "client", None)
    key = getattr(client, "api_key", None)
    url = getattr(client, "base_url", None)
    return ([key] if isinstance(key, str) else []) + secrets_of_url(str(url) if url is not None else None)


def _variants(secret: str) -> set[str]:
    encoded = base64.b64encode(secret.encode()).decode()
    return {secret, quote(secret, safe=""), quote_plus(secret), encoded, encoded.rstrip("=")}


class Redactor:
    """Replaces each known secret (and its encoded forms) with `[REDACTED]`."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        variants: set[str] = set()
        for secret in secrets:
            if secret and len(secret) >= _MIN_LENGTH:
                variants |= _variants(secret)
        ordered = sorted(variants, key=len, reverse=True)  # the longest first, so no part of one is left
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._escaped_in_json = any(char in '"\\' or char < " " for variant in ordered for char in variant)
        """A secret has a character JSON escapes: a JSON text may then hold it unseen."""

    @classmethod
    def for_run(
        cls,
        *,
        api_key: str | None = None,
        urls: Iterable[str | None] = (),
        model: object = None,
        keys: Iterable[str | None] = (),
    ) -> Redactor:
        """The secrets a run knows: the keys given, the URLs' secrets, the model client's key, and every
        environment variable named like a key or token (what the providers read)."""
        found: list[str | None] = [api_key, *keys, *secrets_of_model(model)]
        for url in urls:
            found += secrets_of_url(url)
        found += [v for name, v in os.environ.items() if _SECRET_VARIABLE.search(name) and len(v) >= _MIN_ENV_LENGTH]
        return cls(found)

    @property
    def active(self) -> bool:
        """It knows a secret to hide."""
        return self._pattern is not None

    def __call__(self, text: str) -> str:
        return self._pattern.sub(REDACTED, text) if self._pattern is not None else text

    def may_be_in_json(self, text: str) -> bool:
        """Whether a string of this JSON text may hold a secret: one is found in the text (its keys and numbers
        included), or one has a character JSON escapes, which the text would hold escaped. False: redacting each
        string of it would change nothing."""
        if self._pattern is None:
            return False
        return self._escaped_in_json or self._pattern.search(text) is not None


def redacted_record(record: SampleRecord, redact: Redactor) -> SampleRecord:
    """The record with every secret in its texts redacted (a key a server or a model echoes in an answer), or the
    record itself when it holds none."""
    if not _may_hold_secret(record, redact):
        return record
    return SampleRecord.model_validate(_redacted(record.model_dump(mode="json"), redact))


def _may_hold_secret(record: SampleRecord, redact: Redactor) -> bool:
    """Whether redacting the record's texts may change it: its JSON (one pass of the pattern, where walking its texts
    takes one a text) holds a secret, or may hold one escaped; a record JSON cannot hold is walked as before."""
    if not redact.active:
        return False
    try:
        return redact.may_be_in_json(record.model_dump_json())
    except PydanticSerializationError:
        return True


def _redacted(value: Any, redact: Redactor) -> Any:
    """Every text in a record's JSON redacted (its numbers and structure left alone: a secret of digits is no
    reason to rewrite a number)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redacted(item, redact) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item, redact) for item in value]
    return value
