"""An instance's validity as JSONSchemaBench judges it: the `jsonschema` library's verdict against the original schema.

The draft is the one the schema's `$schema` names (Draft 2020-12 when it names none, or one `jsonschema` does not
know); formats are checked (those whose checkers `jsonschema` has with the packages installed); a `$ref` is resolved
within the schema only: a registry that refuses every retrieval means a remote reference is never fetched, and an
instance whose check needs one is invalid, saying so. A schema is compiled once per `Validators`, however many
replies it checks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from jsonschema import (
    Draft3Validator,
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
    SchemaError,
)
from jsonschema.exceptions import relevance
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable

__all__ = ["MAX_PROBLEMS", "SchemaProblem", "Validators", "compile_schema", "draft_of", "problems"]

MAX_PROBLEMS = 5
"""How many of an instance's errors are reported (the most relevant first): what a corrective retry is told."""

_DRAFTS: dict[str, type[Validator]] = {
    "json-schema.org/draft-03/schema": Draft3Validator,
    "json-schema.org/draft-04/schema": Draft4Validator,
    "json-schema.org/draft-06/schema": Draft6Validator,
    "json-schema.org/draft-07/schema": Draft7Validator,
    "json-schema.org/draft/2019-09/schema": Draft201909Validator,
    "json-schema.org/draft/2020-12/schema": Draft202012Validator,
}


class SchemaProblem(ValueError):
    """A schema that cannot be posed or checked: the case's error, with its reason, never the run's."""


def draft_of(schema: Any) -> type[Validator]:
    """The validator class of the draft `$schema` names (its scheme and a trailing `#` aside), else Draft 2020-12."""
    named = schema.get("$schema") if isinstance(schema, dict) else None
    if isinstance(named, str):
        key = re.sub(r"^https?://", "", named.strip()).rstrip("#")
        return _DRAFTS.get(key, Draft202012Validator)
    return Draft202012Validator


def _refuse(uri: str) -> Resource[Any]:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class: its stub lacks the field


def compile_schema(schema: Any) -> Validator:
    """A validator for `schema` in its draft, formats checked and nothing fetched; `SchemaProblem` when the schema is
    not valid JSON Schema of that draft."""
    if not isinstance(schema, dict | bool):
        raise SchemaProblem(f"a JSON Schema is an object or a boolean, not {type(schema).__name__}")
    draft = draft_of(schema)
    try:
        draft.check_schema(schema)  # type: ignore[arg-type]  # a boolean is a schema too
    except SchemaError as exc:
        where = "/".join(map(str, exc.absolute_path))
        raise SchemaProblem(f"not a valid JSON Schema ({draft.__name__}): {where or 'root'}: {exc.message}") from None
    except RecursionError:
        raise SchemaProblem("the schema is nested too deeply to check") from None
    registry: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]  # attrs field, untyped in stub
    return draft(schema, registry=registry, format_checker=draft.FORMAT_CHECKER)


def problems(validator: Validator, instance: Any, limit: int = MAX_PROBLEMS) -> list[str]:
    """Why `instance` is not valid (`path: message`, the most relevant first), or [] when it is."""
    try:
        found = sorted(validator.iter_errors(instance), key=relevance)
    except Unresolvable as exc:
        return [f"the schema's $ref {getattr(exc, 'ref', '')!r} cannot be resolved (nothing is fetched)"]
    except RecursionError:
        return ["the instance cannot be checked: the schema's references recurse without end"]
    except Exception as exc:  # a `pattern` Python cannot compile, a format checker's own failure
        return [f"the instance cannot be checked: {type(exc).__name__}: {exc}"]
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in found[:limit]]


@dataclass
class Validators:
    """Compiled validators by schema text, so each schema is compiled once for all its replies (a schema given as
    data is keyed by its canonical JSON)."""

    _compiled: dict[str, Validator | SchemaProblem] = field(default_factory=dict)

    def get(self, schema: Any) -> Validator:
        return self.for_text(json.dumps(schema, sort_keys=True, ensure_ascii=False), schema)

    def for_text(self, text: str, schema: Any = None) -> Validator:
        """The validator of the schema `text` is (parsed only the first time); SchemaProblem when it has none."""
        found = self._compiled.get(text)
        if found is None:
            try:
                found = compile_schema(json.loads(text) if schema is None else schema)
            except SchemaProblem as exc:
                found = exc
            self._compiled[text] = found
        if isinstance(found, SchemaProblem):
            raise found
        return found
