"""An instance's validity as JSONSchemaBench judges it: the `jsonschema` library's verdict against the original schema.

The draft is the one the schema's `$schema` names (Draft 2020-12 when it names none, or one `jsonschema` does not
know); formats are checked (with `jsonschema`'s checkers and the libraries of its `format-nongpl` extra: date-time, uri,
hostname, duration..., `iri` and `iri-reference` with rfc3987-syntax2); a
`$ref` is resolved within the schema only: a registry that refuses every retrieval means a remote reference is never
fetched, and an instance whose check needs one is invalid, saying so. A schema is compiled once per `Validators`
while it is among the most recently used, however many replies it checks.

Checking is time-boxed, as `re` cannot be: a `pattern` (and a `patternProperties` key) is matched with the `regex`
module, which stops a match at a deadline, and the applicators look at the clock too, so an instance whose check takes
longer than `CHECK_SECONDS` (a pattern that backtracks without end, `^(a|aa)+$` on a long string) is the case's error,
`SchemaProblem`, never a hung run. A `$ref` cycle no instance can end (`{"$ref": "#"}`, `a` -> `b` -> `a` with no
keyword in between that descends into the instance) is found when the schema is compiled.
"""

from __future__ import annotations

import json
import re
import time
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, Literal
from urllib.parse import unquote

import regex
from jsonschema import (
    Draft3Validator,
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
    FormatChecker,
    SchemaError,
)
from jsonschema.exceptions import ValidationError, relevance
from jsonschema.protocols import Validator
from jsonschema.validators import extend
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable

from typed_eval.core.errors import CaseProblem

__all__ = [
    "CHECK_SECONDS",
    "MAX_IRI_CHARS",
    "MAX_PROBLEMS",
    "VALIDATORS_CHARS",
    "VALIDATORS_KEPT",
    "SchemaProblem",
    "Validators",
    "compile_schema",
    "draft_of",
    "pointer",
    "problems",
]

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


CHECK_SECONDS = 2.0
"""How long checking one instance may take (CPU seconds in a `pattern`) before the case is an error (median 0.02 ms)."""
_IN_PLACE = ("allOf", "anyOf", "oneOf")
"""Applicators whose subschemas apply to the instance itself (with `not`, `if`/`then`/`else`, `dependentSchemas`)."""

_deadline: ContextVar[tuple[float, float]] = ContextVar("schema_check_deadline", default=(float("inf"), 0.0))
"""When the instance being checked in this context must be done (monotonic seconds), and its budget."""


class SchemaProblem(CaseProblem):
    """A schema that cannot be posed or checked: the case's error, with its reason, never the run's (not a
    ValueError: pydantic would make it an invalid output, asked again)."""


def draft_of(schema: Any) -> type[Validator]:
    """The validator class of the draft `$schema` names (its scheme and a trailing `#` aside), else Draft 2020-12."""
    named = schema.get("$schema") if isinstance(schema, dict) else None
    if isinstance(named, str):
        key = re.sub(r"^https?://", "", named.strip()).rstrip("#")
        return _DRAFTS.get(key, Draft202012Validator)
    return Draft202012Validator


def _refuse(uri: str) -> Resource[Any]:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class: its stub lacks the field


def _overdue() -> SchemaProblem:
    return SchemaProblem(
        f"checking an instance took more than {_deadline.get()[1]:g} s (the schema's check is too costly)"
    )


def _search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches in `text` (as `re.search`), given up at the check's deadline."""
    remaining = _deadline.get()[0] - time.monotonic()
    if remaining <= 0:
        raise _overdue()
    try:
        return regex.search(pattern, text, timeout=remaining) is not None
    except TimeoutError:
        raise SchemaProblem(
            f"pattern {pattern!r} did not finish matching a {len(text):,}-character string in {_deadline.get()[1]:g} s "
            "(it backtracks without end)"
        ) from None
    except regex.error:  # a pattern `re` reads and `regex` does not: `re`, as jsonschema
        return re.search(pattern, text) is not None


Keyword = Callable[[Any, Any, Any, dict[str, Any]], Iterator[ValidationError]]


def _pattern(validator: Any, pattern: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(original: Keyword) -> Keyword:
    """`additionalProperties` beside `patternProperties`: the keys a pattern matches (matched here, time-boxed) are
    taken out, and jsonschema's own keyword judges the rest."""

    def additional(validator: Any, extra: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
        patterns = schema.get("patternProperties")
        if not isinstance(patterns, dict) or not validator.is_type(instance, "object"):
            yield from original(validator, extra, instance, schema)
            return
        named = schema.get("properties", {})
        matched = {k for k in instance if k not in named and any(_search(p, k) for p in patterns)}
        rest = {k: v for k, v in instance.items() if k not in matched}
        yield from original(validator, extra, rest, {k: v for k, v in schema.items() if k != "patternProperties"})

    return additional


def _timed(original: Keyword) -> Keyword:
    """An applicator that first looks at the clock: a check that branches without end stops at the deadline."""

    def timed(validator: Any, value: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
        if time.monotonic() > _deadline.get()[0]:
            raise _overdue()
        yield from original(validator, value, instance, schema)

    return timed


def _canonical(value: Any) -> Any:
    """A hashable form of a JSON value, equal for two values exactly when `jsonschema`'s `equal` finds them equal: a
    boolean is not the number it equals in Python (`true` is not `1`), `1` is `1.0`, an object's key order is not
    its own, at every depth."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list | tuple):
        return ("array", tuple(_canonical(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    return ("other", repr(value))


def _unique_items(validator: Any, unique: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    """`uniqueItems` in a time linear in the instance, where `jsonschema`'s comparison of every pair is quadratic (a
    200 kB array of objects: minutes): each item's canonical form into a set."""
    if not unique or not validator.is_type(instance, "array"):
        return
    if time.monotonic() > _deadline.get()[0]:
        raise _overdue()
    if len({_canonical(item) for item in instance}) < len(instance):
        yield ValidationError(f"{instance!r} has non-unique elements")


def _time_boxed(draft: type[Validator]) -> type[Validator]:
    """`draft`'s validator with its pattern keywords matched by `regex`, `uniqueItems` checked in linear time and its
    applicators looking at the clock."""
    own = draft.VALIDATORS
    keywords: dict[str, Keyword] = {"pattern": _pattern, "patternProperties": _pattern_properties}
    if "uniqueItems" in own:
        keywords["uniqueItems"] = _unique_items
    if "additionalProperties" in own:
        keywords["additionalProperties"] = _additional(own["additionalProperties"])
    for name in ("$ref", "$dynamicRef", "$recursiveRef", *_IN_PLACE, "items", "properties"):
        if name in own:
            keywords[name] = _timed(own[name])
    boxed: type[Validator] = extend(draft, keywords)  # type: ignore[no-untyped-call]  # untyped in the stub
    return boxed


_BOXED = {draft: _time_boxed(draft) for draft in _DRAFTS.values()}


MAX_IRI_CHARS = 1_000
"""The longest string checked as an `iri` or `iri-reference`: the IRI grammar's parser takes about half a
millisecond a character (1,000: 0.5 s; 150,000: minutes) and cannot be stopped; a longer one is the case's error."""


def _iri(term: Literal["iri", "iri_reference"]) -> Callable[[object], bool]:
    def check(instance: object) -> bool:
        import rfc3987_syntax2  # and its parser (lark): imported when an `iri` is first checked

        if not isinstance(instance, str):
            return True
        if len(instance) > MAX_IRI_CHARS:
            raise SchemaProblem(
                f"a {len(instance):,}-character string is too long to check as an {term.replace('_', '-')} within "
                f"{CHECK_SECONDS:g} s (the IRI grammar's parser checks at most {MAX_IRI_CHARS:,})"
            )
        return bool(rfc3987_syntax2.is_valid_syntax(term, instance))

    return check


def _format_checker(draft: type[Validator]) -> FormatChecker:
    """The draft's own format checker, `iri` and `iri-reference` checked from Draft 7 on by rfc3987-syntax2 (as
    `jsonschema` checks them with rfc3987-syntax, which builds its grammar as it is imported: a second of every
    start; rfc3987-syntax2 builds it on first use)."""
    checker = FormatChecker(formats=())
    checker.checkers = dict(draft.FORMAT_CHECKER.checkers)
    if draft not in (Draft3Validator, Draft4Validator, Draft6Validator):
        checker.checks("iri")(_iri("iri"))
        checker.checks("iri-reference")(_iri("iri_reference"))
    return checker


_FORMATS = {draft: _format_checker(draft) for draft in _DRAFTS.values()}


def pointer(root: Any, reference: str) -> Any:
    """What a local reference (`#/definitions/a`, `#`) names in `root`; SchemaProblem when nothing."""
    node = root
    for part in reference[1:].split("/")[1:] if reference != "#" else []:
        key = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise SchemaProblem(f"$ref {reference!r} names nothing in the schema")
    return node


def _in_place(node: dict[str, Any]) -> Iterator[Any]:
    """The subschemas of `node` that apply to the same instance as `node` (so a loop through them never descends)."""
    for name in _IN_PLACE:
        if isinstance(node.get(name), list):
            yield from node[name]
    for name in ("not", "if", "then", "else"):
        if name in node:
            yield node[name]
    if isinstance(node.get("dependentSchemas"), dict):
        yield from node["dependentSchemas"].values()


def _subschemas(schema: Any) -> list[dict[str, Any]]:
    """Every object in `schema`, walked without recursion."""
    found: list[dict[str, Any]] = []
    nodes: list[Any] = [schema]
    while nodes:
        node = nodes.pop()
        if isinstance(node, dict):
            found.append(node)
            nodes.extend(node.values())
        elif isinstance(node, list):
            nodes.extend(node)
    return found


_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
"""The keywords that apply another subschema in place, wherever they point."""


def _anchors(schema: Any) -> dict[str, dict[str, Any]]:
    """Every name a fragment may give a subschema: `$anchor`, `$dynamicAnchor`, and an `$id` that is a fragment
    alone (`"$id": "#node"`, Draft 6 and 7)."""
    found: dict[str, dict[str, Any]] = {}
    for node in _subschemas(schema):
        for keyword in ("$anchor", "$dynamicAnchor"):
            if isinstance(node.get(keyword), str):
                found.setdefault(node[keyword], node)
        named = node.get("$id")
        if isinstance(named, str) and named.startswith("#") and len(named) > 1:
            found.setdefault(named[1:], node)
    return found


def _local_target(schema: Any, anchors: dict[str, dict[str, Any]], base: str | None, reference: str) -> Any:
    """What a reference names within the schema, read as the cycle finder reads it: a JSON pointer, an anchor's name
    (a `$dynamicRef` as the anchor of its own resource), either after the root's `$id`; None for anything else."""
    if base is not None and reference.startswith(base.split("#")[0]) and base.split("#")[0]:
        reference = reference[len(base.split("#")[0]) :] or "#"
    if reference == "#" or reference.startswith("#/"):
        try:
            return pointer(schema, reference)
        except SchemaProblem:
            return None
    if reference.startswith("#"):
        return anchors.get(unquote(reference[1:]))
    return None


def _endless_ref(schema: Any) -> str | None:
    """A local `$ref` that leads back to where it is through subschemas applied in place (no base case: checking an
    instance that reaches it recurses without end), or None."""

    anchors = _anchors(schema)
    base = schema.get("$id") if isinstance(schema, dict) and isinstance(schema.get("$id"), str) else None

    def steps(node: dict[str, Any]) -> Iterator[tuple[str | None, dict[str, Any]]]:
        yield from ((None, n) for n in _in_place(node) if isinstance(n, dict))
        for keyword in _REFERENCES:
            reference = node.get(keyword)
            if isinstance(reference, str):
                target = _local_target(schema, anchors, base, reference)
                if isinstance(target, dict):
                    yield reference, target

    done: set[int] = set()
    for start in _subschemas(schema):
        if id(start) in done:
            continue
        on_path = {id(start)}
        stack = [(start, steps(start))]
        references: list[str | None] = []
        while stack:
            node, children = stack[-1]
            reference, target = next(children, (None, None))
            if target is None:
                stack.pop()
                on_path.discard(id(node))
                done.add(id(node))
                if references:
                    references.pop()
                continue
            if id(target) in on_path:
                return reference or next((r for r in reversed(references) if r), "#")
            if id(target) not in done:
                on_path.add(id(target))
                stack.append((target, steps(target)))
                references.append(reference)
    return None


def compile_schema(schema: Any) -> Validator:
    """A validator for `schema` in its draft, formats checked, time-boxed and nothing fetched; `SchemaProblem` when
    the schema is not valid JSON Schema of that draft or a `$ref` of it recurses without end."""
    if not isinstance(schema, dict | bool):
        raise SchemaProblem(f"a JSON Schema is an object or a boolean, not {type(schema).__name__}")
    draft = draft_of(schema)
    try:
        with warnings.catch_warnings():  # `re`'s FutureWarnings on the schema's patterns, said once per run otherwise
            warnings.simplefilter("ignore", FutureWarning)
            draft.check_schema(schema)  # type: ignore[arg-type]  # a boolean is a schema too
    except SchemaError as exc:
        where = "/".join(map(str, exc.absolute_path))
        raise SchemaProblem(f"not a valid JSON Schema ({draft.__name__}): {where or 'root'}: {exc.message}") from None
    except RecursionError:
        raise SchemaProblem("the schema is nested too deeply to check") from None
    endless = _endless_ref(schema)
    if endless is not None:
        raise SchemaProblem(f"$ref {endless!r} recurses without end (no keyword between that descends into the value)")
    registry: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]  # attrs field, untyped in stub
    return _BOXED[draft](schema, registry=registry, format_checker=_FORMATS[draft])


def problems(
    validator: Validator, instance: Any, limit: int = MAX_PROBLEMS, seconds: float = CHECK_SECONDS
) -> list[str]:
    """Why `instance` is not valid (`path: message`, the most relevant first), or [] when it is; SchemaProblem when
    it cannot be checked within `seconds`."""
    token = _deadline.set((time.monotonic() + seconds, seconds))
    try:
        found = sorted(validator.iter_errors(instance), key=relevance)
    except SchemaProblem:
        raise
    except Unresolvable as exc:
        return [f"the schema's $ref {getattr(exc, 'ref', '')!r} cannot be resolved (nothing is fetched)"]
    except RecursionError:
        return ["the instance is nested too deeply to be checked"]
    except Exception as exc:  # a format checker's own failure
        return [f"the instance cannot be checked: {type(exc).__name__}: {exc}"]
    finally:
        _deadline.reset(token)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in found[:limit]]


VALIDATORS_KEPT = 4
"""Compiled validators a `Validators` keeps at most, the least recently used dropped, besides those still held
elsewhere (a case's task holds its own while the case is posed and scored, so a run compiles each schema once at any
concurrency); JSONSchemaBench's 9,557 all kept took hundreds of MB."""
VALIDATORS_CHARS = 250_000
"""And at most this many characters of schema text among them (each validator holds its schema parsed, a few times
the text's size; the one asked for is kept whatever its size): the benchmark's largest schema has 0.9 million."""


class Validators:
    """Compiled validators by schema text, so a schema is compiled once for all its replies while it is among the
    most recently used (`kept` of them, `chars` characters of text at most, the one asked for always kept) or held
    elsewhere; a schema given as data is keyed by its canonical JSON; `compiled` counts the compilations."""

    def __init__(self, kept: int = VALIDATORS_KEPT, chars: int = VALIDATORS_CHARS) -> None:
        self.kept, self.chars = kept, chars
        self.compiled = 0
        self._held: OrderedDict[str, Validator | SchemaProblem] = OrderedDict()
        self._held_chars = 0
        self._alive: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
        """Every validator (or problem) made that something still holds: a case's task, while the case is posed."""

    def __len__(self) -> int:
        return len(self._held)

    def get(self, schema: Any) -> Validator:
        return self.for_text(json.dumps(schema, sort_keys=True, ensure_ascii=False), schema)

    def for_text(self, text: str, schema: Any = None) -> Validator:
        """The validator of the schema `text` is (parsed only when compiled); SchemaProblem when it has none."""
        found = self._held.pop(text, None)
        if found is None:
            found = self._alive.get(text)
            if found is None:
                found = self._alive[text] = self._compile(text, schema)
            self._held_chars += len(text)
        self._held[text] = found
        while len(self._held) > max(1, self.kept) or (self._held_chars > self.chars and len(self._held) > 1):
            dropped, _ = self._held.popitem(last=False)
            self._held_chars -= len(dropped)
        if isinstance(found, SchemaProblem):
            raise found
        return found

    def _compile(self, text: str, schema: Any) -> Validator | SchemaProblem:
        self.compiled += 1
        try:
            return compile_schema(json.loads(text) if schema is None else schema)
        except SchemaProblem as exc:
            return exc
