"""YAML as promptfoo reads case files: YAML 1.2's core schema (js-yaml's), with merge keys, and bounded.

Why: PyYAML reads YAML 1.1, where `yes` is true, `017` is 15 and `1e3` is text; promptfoo (js-yaml) reads
them as the text `yes`, 17 and 1000. An unquoted date or timestamp (`2024-01-01`, `2024-01-01 10:00:00+02:00`)
becomes a JavaScript Date there (when it names a real day and time: js-yaml 5.4.1 reads `2024-02-30` as text),
and what promptfoo makes of it depends on where it is (measured with promptfoo 0.123.1): in a case file or a
tests file it reaches the tests as an empty object (`{}`: rendered `[object Object]`, JSON `{}`, whatever the
date); in a YAML var file it is JSON text, so JavaScript's `toISOString` (UTC, milliseconds:
`2024-01-01T08:00:00.000Z`); as a mapping key it makes promptfoo refuse the file. `dates` says which reading a
document gets; elsewhere (an asserted value's file, a schema) a date is refused, to be quoted. Aliases that expand
a small file into a huge one (a "billion laughs") are refused before anything is built.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = ["ALIAS_NODES_LIMIT", "DateReading", "YamlError", "js_date", "js_iso", "load", "load_lenient"]

ALIAS_NODES_LIMIT = 100_000
"""How many nodes aliases may add to a document by repeating what their anchors name."""


class YamlError(ValueError):
    """A document that is not YAML, or one refused here; the message is one line."""


_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
_DATE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?"
    r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?"
)


class _Core(yaml.SafeLoader):
    """YAML 1.2's core schema: null, true/false in three spellings, decimal/0o/0x integers, floats."""

    strict = True


_Core.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    ("tag:yaml.org,2002:null", re.compile(r"~|null|Null|NULL|"), ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", re.compile(r"true|True|TRUE|false|False|FALSE"), list("tTfF")),
    ("tag:yaml.org,2002:int", _INT, list("-+0123456789")),
    ("tag:yaml.org,2002:float", _FLOAT, list("-+.0123456789")),
    ("tag:yaml.org,2002:merge", re.compile(r"<<"), ["<"]),
    ("tag:yaml.org,2002:timestamp", _DATE, list("0123456789")),
):
    _Core.add_implicit_resolver(_tag, re.compile(rf"^(?:{_pattern.pattern})$"), _first)


def _int(loader: yaml.SafeLoader, node: ScalarNode) -> Any:
    text = str(loader.construct_scalar(node))
    if text.startswith(("0o", "0x")):
        value = int(text[2:], 8 if text[1] == "o" else 16)
    else:
        value = int(text)
        if value == 0 and text.startswith("-"):
            return -0.0
    return value if abs(value) <= 2**53 else float(value)  # JavaScript's numbers are doubles


def _float(loader: yaml.SafeLoader, node: ScalarNode) -> Any:
    text = str(loader.construct_scalar(node)).lower()
    if text.endswith(".inf"):
        return -math.inf if text.startswith("-") else math.inf
    if text.endswith(".nan"):
        return math.nan
    return float(text)


def _date(loader: yaml.SafeLoader, node: ScalarNode) -> Any:
    reading = getattr(loader, "dates", "refused")
    moment = js_date(str(node.value))
    if moment is None or reading == "text":  # not a real date: js-yaml reads it as text
        return str(node.value)
    if reading == "object":
        return {}
    if reading == "iso":
        return js_iso(moment)
    raise yaml.constructor.ConstructorError(
        None, None, f"{node.value} is a date to promptfoo (a JavaScript Date), not text: quote it", node.start_mark
    )


_DATE_ONLY = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:[Tt]|[ \t]+)([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]*))?"
    r"(?:[ \t]*(Z|([-+])([0-9]{1,2})(?::([0-9]{2}))?))?"
)
_MS_PER_DAY = 86_400_000


def js_date(text: str) -> int | None:
    """The milliseconds since 1970 of the Date js-yaml 5.4.1 (promptfoo's) makes of a YAML timestamp: its fields in
    UTC, less its zone's offset, the fraction cut to milliseconds; None for what it reads as text (no such day or
    time: `2024-02-30`, `24:00:00`, an offset past 23:59)."""
    found = _DATE_ONLY.fullmatch(text) or _TIMESTAMP.fullmatch(text)
    if found is None:
        return None
    year, month, day = (int(found.group(n)) for n in (1, 2, 3))
    if not (1 <= month <= 12 and 1 <= day <= _month_days(year, month)):
        return None
    moment = _days_from_civil(year, month, day) * _MS_PER_DAY
    if found.re is _DATE_ONLY:
        return moment
    hour, minute, second = (int(found.group(n)) for n in (4, 5, 6))
    if hour > 23 or minute > 59 or second > 59:
        return None
    millis = int((found.group(7) or "")[:3].ljust(3, "0"))
    moment += ((hour * 60 + minute) * 60 + second) * 1000 + millis
    if found.group(9):
        offset_hour, offset_minute = int(found.group(10)), int(found.group(11) or 0)
        if offset_hour > 23 or offset_minute > 59:
            return None
        offset = (offset_hour * 60 + offset_minute) * 60_000
        moment -= offset if found.group(9) == "+" else -offset
    return moment


def js_iso(moment: int) -> str:
    """JavaScript's `Date.prototype.toISOString` of a time in milliseconds since 1970 (always UTC)."""
    days, rest = divmod(moment, _MS_PER_DAY)
    year, month, day = _civil_from_days(days)
    written = f"{year:04d}" if 0 <= year <= 9999 else f"{'+' if year > 0 else '-'}{abs(year):06d}"
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{written}-{month:02d}-{day:02d}T{hours:02d}:{minutes:02d}:{rest // 1000:02d}.{rest % 1000:03d}Z"


def _month_days(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    of_cycle = of_era * 365 + of_era // 4 - of_era // 100 + of_year
    return era * 146_097 + of_cycle - 719_468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian date `days` after 1970-01-01."""
    days += 719_468
    era = days // 146_097
    of_cycle = days - era * 146_097
    of_era = (of_cycle - of_cycle // 1460 + of_cycle // 36_524 - of_cycle // 146_096) // 365
    of_year = of_cycle - (365 * of_era + of_era // 4 - of_era // 100)
    shifted = (5 * of_year + 2) // 153
    day = of_year - (153 * shifted + 2) // 5 + 1
    month = shifted + (3 if shifted < 10 else -9)
    return of_era + era * 400 + (month <= 2), month, day


def _refused(loader: yaml.SafeLoader, node: Node) -> Any:
    raise yaml.constructor.ConstructorError(None, None, f"the tag {node.tag} is not supported", node.start_mark)


def _mapping(loader: yaml.SafeLoader, node: MappingNode) -> Any:
    """A mapping; a key written twice is an error, as in js-yaml (but in JSON-like text, where the last wins)."""
    if getattr(loader, "strict", True):
        loader.flatten_mapping(node)
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:timestamp" and js_date(str(key_node.value)) is not None:
                why = f"the key {key_node.value} is a date to promptfoo (a JavaScript Date), which it refuses as a key"
                raise yaml.constructor.ConstructorError(None, None, f"{why}: quote it", key_node.start_mark)
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, str | int | float | bool) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicated mapping key {key!r}", key_node.start_mark
                )
            seen.add(key if isinstance(key, str | int | float | bool) else id(key))
    return loader.construct_yaml_map(node)


_Core.add_constructor("tag:yaml.org,2002:int", _int)
_Core.add_constructor("tag:yaml.org,2002:float", _float)
_Core.add_constructor("tag:yaml.org,2002:timestamp", _date)
_Core.add_constructor("tag:yaml.org,2002:map", _mapping)
for _tag in ("binary", "set", "omap", "pairs"):
    _Core.add_constructor(f"tag:yaml.org,2002:{_tag}", _refused)


class _Lenient(_Core):
    """How promptfoo reads JSON-like text found in an output (contains-json): duplicate keys allowed, the last
    one kept, and a date kept as the text written."""

    strict = False
    dates = "text"


class _CaseFile(_Core):
    """A case file or a file of tests: a date is the empty object promptfoo's tests get."""

    dates = "object"


class _VarFile(_Core):
    """A YAML var file, which promptfoo hands on as JSON text: a date is its `toISOString`."""

    dates = "iso"


DateReading = Literal["refused", "object", "iso"]
_LOADERS: dict[str, type[_Core]] = {"refused": _Core, "object": _CaseFile, "iso": _VarFile}


def _added_by_aliases(root: Node) -> int:
    """How many nodes aliases add to the document once each is written out as the node it names."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            if sizes[key] - len(sizes) > ALIAS_NODES_LIMIT:
                return sizes[key] - len(sizes)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise YamlError("an alias refers to a node that contains it (a recursive document)")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    return sizes[id(root)] - len(sizes)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _load(text: str, loader_class: type[_Core]) -> Any:
    loader = loader_class(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        if _added_by_aliases(root) > ALIAS_NODES_LIMIT:
            raise YamlError(f"its aliases expand it by more than {ALIAS_NODES_LIMIT:,} nodes (refused: an alias bomb)")
        return loader.construct_document(root)
    except yaml.YAMLError as exc:
        raise YamlError(" ".join(str(exc).split())) from None
    except RecursionError:
        raise YamlError("nested too deeply to read") from None
    finally:
        loader.dispose()


def load(text: str, dates: DateReading = "refused") -> Any:
    """A case file's YAML (or JSON) as promptfoo reads it, its dates read as `dates` says; YamlError in one line."""
    return _load(text, _LOADERS[dates])


def load_lenient(text: str) -> Any:
    """JSON-like text found in a model's output, as promptfoo's contains-json reads it."""
    return _load(text, _Lenient)
