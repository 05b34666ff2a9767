"""Case files: promptfoo's test-case format (YAML or JSON), scored by difficulty-weighted assertions (seed 003).

`python main.py run --suite cases.yaml` poses every test of the file (each rendered prompt: `prompts` x `tests`)
and judges the output by the test's assertions (`typed_eval.suites.case_files.assertions`). The `providers` section is
ignored: the model comes from `--model`. A test is answered in plain text, unless its `options` name a JSON
schema (`response_format`, OpenAI's shape, or `output_schema`, the schema itself): then it is posed in the run's
structured mode, validated against the schema and retried when invalid.

Scoring as seed 003 defines it: a test's difficulty D = reasoning (1, 2 or 4) + format (1, 2 or 3), from the
test's `metadata: {difficulty: {reasoning, format}}` (1 each when absent), + context, from the rendered prompt's
length (up to 2,000 characters 1, up to 5,000 2, longer 3). R is the weighted mean of the test's assertion
results; the case weighs D, so the run's score is sum(R x D) / sum(D) x 100 (the seed's total of 100).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

from typed_eval.core.attempts import added_cost, added_usage
from typed_eval.core.datasets import Dataset, dataset_from_cases
from typed_eval.core.errors import InputError, TaskError
from typed_eval.core.suite import AnswerLine, answer_lines, file_suite
from typed_eval.core.tasks import Score, Task, TextReader
from typed_eval.schemas import AnswerMode, Case, Cost, SampleRecord, TokenUsage
from typed_eval.suites.case_files.assertions import (
    Assertion,
    Output,
    Rubric,
    compile_assertion,
    json_text,
    judge_result,
    load_value_file,
    load_yaml,
    read_text,
)
from typed_eval.suites.case_files.checks import run_check
from typed_eval.suites.case_files.js import js_string, js_trim
from typed_eval.suites.case_files.json_schemas import SchemaProblem, compile_schema
from typed_eval.suites.case_files.yaml12 import YamlError
from typed_eval.suites.judge import Judge, judge_name, judged

__all__ = [
    "CASE_FILE",
    "CASE_FILE_SUFFIXES",
    "CaseFileGrader",
    "Difficulty",
    "context_level",
    "judge_name",
    "judged",
    "load_case_file",
    "render",
    "show_assertions",
    "with_judge",
]

CASE_FILE_SUFFIXES = (".yaml", ".yml", ".json")
REASONING_LEVELS = (1, 2, 4)
FORMAT_LEVELS = (1, 2, 3)
_REFUSED_OPTIONS = ("transform", "postprocess", "rubricPrompt")
"""Test options that change what is scored with JavaScript or another grading prompt: refused, never ignored."""
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def context_level(prompt: str) -> int:
    """Seed 003's context difficulty: 1 up to 2,000 characters, 2 up to 5,000, 3 beyond."""
    return 1 if len(prompt) <= 2000 else 2 if len(prompt) <= 5000 else 3


@dataclass(frozen=True)
class Difficulty:
    reasoning: int = 1
    format: int = 1
    context: int = 1

    @property
    def total(self) -> int:
        """D: what the test weighs in the score."""
        return self.reasoning + self.format + self.context

    def stored(self) -> dict[str, int]:
        return {"reasoning": self.reasoning, "format": self.format, "context": self.context, "total": self.total}


def _difficulty(metadata: Any, prompt: str, where: str) -> Difficulty:
    given = metadata.get("difficulty") if isinstance(metadata, Mapping) else None
    if given is None:
        return Difficulty(context=context_level(prompt))
    if not isinstance(given, Mapping) or set(given) - {"reasoning", "format"}:
        raise TaskError(f"{where}: metadata.difficulty takes reasoning (1, 2 or 4) and format (1, 2 or 3); "
                        "context is measured from the prompt")  # fmt: skip
    reasoning, form = given.get("reasoning", 1), given.get("format", 1)
    if reasoning not in REASONING_LEVELS or isinstance(reasoning, bool):
        raise TaskError(f"{where}: difficulty reasoning must be 1, 2 or 4, got {reasoning!r}")
    if form not in FORMAT_LEVELS or isinstance(form, bool):
        raise TaskError(f"{where}: difficulty format must be 1, 2 or 3, got {form!r}")
    return Difficulty(int(reasoning), int(form), context_level(prompt))


# --- templates ------------------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_RAW_BLOCK = re.compile(r"\{%-?\s*raw\s*-?%\}(.*?)\{%-?\s*endraw\s*-?%\}", re.DOTALL)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
"""A var, or a dotted path into an object var (Nunjucks refuses `.1`: a list item is not reached so)."""


def _as_text(value: Any) -> str:
    """A var as Nunjucks writes it: null as nothing, the rest as JavaScript's String() (an object is
    `[object Object]`, a list its items joined by commas)."""
    return "" if value is None else js_string(value)


def _lookup(name: str, variables: Mapping[str, Any], where: str) -> str:
    placeholder = "{{" + name + "}}"
    if "{#" in name or not _NAME.fullmatch(name):
        raise TaskError(f"{where}: {placeholder} is not a {{{{name}}}} placeholder (filters and expressions are not "
                        "supported)")  # fmt: skip
    value: Any = variables
    for key in name.split("."):
        if isinstance(value, Mapping) and key in value:
            value = value[key]
        else:
            raise TaskError(f"{where}: {placeholder} names no var of this test")
    return _as_text(value)


def render(template: str, variables: Mapping[str, Any], where: str) -> str:
    """Fill `{{name}}` placeholders (dotted names reach into objects) from the vars, as promptfoo's Nunjucks does;
    `{% raw %}...{% endraw %}` is kept as written. Other Nunjucks tags and filters, and names no var has (Nunjucks
    would write nothing), are refused in one line."""
    pieces = _RAW_BLOCK.split(template)
    out: list[str] = []
    for index, piece in enumerate(pieces):
        if index % 2:
            out.append(piece)
            continue
        if "{%" in piece or "{#" in piece:
            raise TaskError(f"{where}: Nunjucks tags ({{% ... %}}) and comments ({{# ... #}}) are not supported, only "
                            "{{name}} placeholders")  # fmt: skip
        out.append(_PLACEHOLDER.sub(lambda m: _lookup(m.group(1).strip(), variables, where), piece))
    return "".join(out)


_TEMPLATE_NAMES = re.compile(r"\{\{\s*([^{}\s|]+)\s*(?:\|[^}]+)?\}\}")
_ROOT = re.compile(r"[A-Za-z_]\w*")


def prompt_vars(variables: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The vars a prompt is rendered with: promptfoo renders each text var as a template first (with the vars),
    unless it names a var the test does not have. Assertion values and python's context get the vars unrendered."""
    out = dict(variables)
    for name, value in variables.items():
        if not isinstance(value, str):
            continue
        named = _TEMPLATE_NAMES.findall(re.sub(r"\{#.*?#\}", "", value, flags=re.DOTALL))
        roots = {found.group(0) for found in (_ROOT.match(n) for n in named) if found is not None}
        if any(root != "env" and root not in variables for root in roots):
            continue
        out[name] = render(value, variables, f"{where}, var {name}")
    return out


# --- structured outputs ---------------------------------------------------------------------------------------

_ERROR_TYPES = {"required": "missing", "additionalProperties": "extra_forbidden", "type": "type_error"}
"""jsonschema's failed keyword -> the pydantic error type our invalid-output kinds are read from."""


def schema_output(schema: dict[str, Any], where: str) -> type:
    """A JSON object type for pydantic-ai whose tool (or response format) schema is `schema`, validated by it."""
    if schema.get("type") != "object":
        raise TaskError(f"{where}: an output schema must be a JSON schema of type object")
    try:
        check = compile_schema(schema)
    except SchemaProblem as exc:
        raise TaskError(f"{where}: {exc}") from None
    shown = _inlined(schema, schema, (), where)  # pydantic cannot hand on a schema's own $defs

    def validate(value: dict[str, Any]) -> dict[str, Any]:
        found = sorted(check.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
        if found:
            problems = "; ".join(f"{'.'.join(map(str, e.absolute_path)) or 'output'}: {e.message}" for e in found[:3])
            kind = _ERROR_TYPES.get(str(found[0].validator), "value_error")
            raise PydanticCustomError(kind, "{problems}", {"problems": problems})
        return value

    class SchemaOutput(dict[str, Any]):
        __is_model_like__ = True

        @classmethod
        def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
            mapping = core_schema.dict_schema(
                keys_schema=core_schema.str_schema(), values_schema=core_schema.any_schema()
            )
            return core_schema.no_info_after_validator_function(validate, mapping)

        @classmethod
        def __get_pydantic_json_schema__(
            cls, core: core_schema.CoreSchema, handler: GetJsonSchemaHandler
        ) -> dict[str, Any]:
            return dict(shown)

    return SchemaOutput


def _inlined(node: Any, root: dict[str, Any], seen: tuple[str, ...], where: str) -> Any:
    """`node` with every local `$ref` (`#/$defs/...`, `#/definitions/...`) replaced by what it names; a recursive
    schema cannot be written out so, and is refused."""
    if isinstance(node, list):
        return [_inlined(item, root, seen, where) for item in node]
    if not isinstance(node, dict):
        return node
    reference = node.get("$ref")
    if isinstance(reference, str):
        if reference in seen:
            raise TaskError(f"{where}: a recursive output schema ({reference}) is not supported")
        target: Any = root
        for part in reference.removeprefix("#/").split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        if not reference.startswith("#/") or not isinstance(target, dict):
            raise TaskError(f"{where}: the output schema's {reference} names nothing in it")
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _inlined({**target, **rest}, root, (*seen, reference), where)
    dropped = ("$defs", "definitions") if node is root else ()
    return {k: _inlined(v, root, seen, where) for k, v in node.items() if k not in dropped}


def _output_schema(options: Mapping[str, Any], base: Path, where: str) -> tuple[dict[str, Any], str] | None:
    """The JSON schema a test's options name, with its name: `output_schema`, or OpenAI's `response_format`."""
    if "output_schema" in options:
        schema = options["output_schema"]
        if isinstance(schema, str) and schema.startswith("file://"):
            schema = load_value_file(schema, base, where)
        if not isinstance(schema, dict):
            raise TaskError(f"{where}: options.output_schema must be a JSON schema (an object) or file://schema.json")
        return schema, str(schema.get("title") or "final_result")
    form = options.get("response_format")
    if form is None:
        return None
    if isinstance(form, str) and form.startswith("file://"):
        form = load_value_file(form, base, where)
    if isinstance(form, Mapping) and form.get("type") == "json_object":
        return {"type": "object"}, "final_result"
    inner = form.get("json_schema") if isinstance(form, Mapping) and form.get("type") == "json_schema" else None
    if not isinstance(inner, Mapping) or not isinstance(inner.get("schema"), dict):
        raise TaskError(f"{where}: options.response_format must be {{type: json_schema, json_schema: {{name, schema}}}}"
                        " or {type: json_object}")  # fmt: skip
    return inner["schema"], str(inner.get("name") or "final_result")


def _tool_name(name: str) -> str:
    return name if _TOOL_NAME.fullmatch(name) else "final_result"


# --- the file -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Posed:
    """What grading one case needs beyond the Case: its compiled assertions and promptfoo's context."""

    assertions: tuple[Assertion, ...]
    variables: dict[str, Any]
    test: dict[str, Any]
    threshold: float | None = None


class CaseFileGrader:
    """The scorer of a case file's task: R, the weighted mean of the test's assertion results, with each result
    (and a judge's reason) in the details; an LLM judge's usage and cost are handed back with the score."""

    def __init__(self, name: str, posed: Mapping[str, _Posed], judge: Rubric | None = None) -> None:
        self.name = name
        self._posed = posed
        self.judge = judge

    @property
    def needs_judge(self) -> bool:
        return any(a.type == "llm-rubric" for p in self._posed.values() for a in p.assertions)

    test_verdict = None
    """The offline `test` model judges with pydantic-ai's made-up verdict."""

    def judged_by(self, judge: Rubric) -> CaseFileGrader:
        return CaseFileGrader(self.name, self._posed, judge)

    def judged_task(self, task: Task[Any], judge: Judge) -> Task[Any]:
        return with_judge(task, judge)

    async def __call__(self, case: Case, value: Any) -> Score:
        posed = self._posed.get(case.id)
        if posed is None:
            raise TaskError(f"case {case.id!r} is not a test of case file {self.name}")
        output = Output(value if isinstance(value, str) else json_text(value), value)
        results: list[dict[str, Any]] = []
        usage: TokenUsage | None = None
        cost: Cost | None = None
        for assertion in posed.assertions:
            context = {"prompt": case.prompt, "vars": posed.variables, "test": posed.test,
                       "config": assertion.spec.get("config", {})}  # fmt: skip
            if assertion.type == "llm-rubric":
                if self.judge is None:
                    raise TaskError(f"case {case.id}: llm-rubric needs a judge model", parameter="judge_model")
                graded = judge_result(await self.judge(str(assertion.spec["value"]), output.text), assertion.threshold)
            else:
                graded = await run_check(assertion.spec, output, context)
            if graded.usage is not None:
                usage = graded.usage if usage is None else added_usage(usage, graded.usage)
            if graded.cost is not None:
                cost = graded.cost if cost is None else added_cost(cost, graded.cost)
            passed = bool(graded.passed) or assertion.weight == 0  # promptfoo: weight 0 never fails a test
            results.append({"type": assertion.type, "weight": assertion.weight, "score": graded.score,
                            "pass": passed, "reason": graded.reason, **graded.extra})  # fmt: skip
        score, passed = test_result(results, posed.threshold)
        return Score(score, {"pass": passed, "assertions": results}, usage, cost)


def test_result(results: list[dict[str, Any]], threshold: float | None) -> tuple[float, bool]:
    """promptfoo's test result: the weighted mean of the assertion scores (0 when the weights add up to 0), computed
    exactly and rounded once, so it cannot overflow (promptfoo adds in doubles in the order its assertions finish,
    which varies from run to run in the last bit); it passes when every assertion passed, or, with a threshold,
    when the score reaches it."""
    total = sum((Fraction(r["weight"]) * Fraction(r["score"]) for r in results), Fraction(0))
    weights = sum((Fraction(r["weight"]) for r in results), Fraction(0))
    score = float(total / weights) if weights > 0 else 0.0
    if threshold is not None:
        return score, score >= threshold
    return score, all(r["pass"] for r in results)


@dataclass
class _Reader:
    """The parts of a case file being read, with where they came from (for one-line errors)."""

    path: Path

    @property
    def base(self) -> Path:
        return self.path.parent

    def where(self, what: str = "") -> str:
        return f"case file {self.path}" + (f": {what}" if what else "")

    def load(self, path: Path) -> Any:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read case file {path}: {getattr(exc, 'strerror', None) or exc}") from None
        try:
            return load_yaml(text)
        except YamlError as exc:
            raise InputError(f"case file {path} is not valid YAML: {exc}") from None

    def prompts(self, given: Any) -> list[str]:
        entries = given if isinstance(given, list) else [given]
        if given is None or not entries:
            raise TaskError(self.where("it needs prompts (templates with {{var}} placeholders, or file:// paths)"))
        return [self._prompt(entry, n) for n, entry in enumerate(entries, 1)]

    def _prompt(self, entry: Any, n: int) -> str:
        if isinstance(entry, Mapping):
            entry = entry.get("raw", entry.get("id"))
        if not isinstance(entry, str):
            raise TaskError(self.where(f"prompt {n} must be a string, a file:// path or {{raw: ...}}"))
        reference = entry.removeprefix("file://")
        legacy = entry == reference and re.fullmatch(r"\S+\.(txt|md|j2)", entry) and (self.base / entry).is_file()
        if entry == reference and not legacy:
            return entry
        if Path(reference).suffix in (".json", ".jsonl", ".py", ".js", ".yaml", ".yml"):
            raise TaskError(self.where(f"prompt {n}: only text prompt files are supported, not {reference}"))
        text = load_value_file("file://" + reference, self.base, self.where(f"prompt {n}"))
        return str(text)

    def tests(self, given: Any) -> list[Any]:
        entries = given if isinstance(given, list) else [given]
        if given is None or not entries:
            raise TaskError(self.where("it has no tests"))
        tests: list[Any] = []
        for entry in entries:
            if not isinstance(entry, str):
                tests.append(entry)
                continue
            path = self.base / entry.removeprefix("file://")
            if path.suffix not in CASE_FILE_SUFFIXES:
                raise TaskError(self.where(f"tests from {entry}: only YAML and JSON test files are supported"))
            loaded = dereferenced(self.load(path), f"case file {path}")
            tests.extend(loaded if isinstance(loaded, list) else [loaded])
        return tests

    def variables(self, given: Any, where: str) -> dict[str, Any]:
        """The vars as promptfoo hands them to prompts and assertions: `file://` ones read (YAML as its JSON, other
        text trimmed), one trailing newline cut from each string, then `{{name}}` in a var's text filled from
        the others (`resolved`)."""
        if given is None:
            return {}
        if not isinstance(given, Mapping):
            raise TaskError(f"{where}: vars must be a mapping")
        out: dict[str, Any] = {}
        for name, value in given.items():
            if isinstance(value, list):
                raise TaskError(f"{where}: var {name} is a list (promptfoo poses each value as its own test): "
                                "write one test per value")  # fmt: skip
            if isinstance(value, str) and value.startswith("file://"):
                value = self._var_file(value, f"{where}, var {name}")
            out[str(name)] = value
        for name, value in out.items():
            if isinstance(value, str) and value.endswith("\n"):
                out[name] = value[:-1]
        return resolved(out)

    def _var_file(self, reference: str, where: str) -> str:
        path = (self.base / reference.removeprefix("file://")).resolve()
        if path.suffix in (".py", ".js", ".mjs", ".cjs", ".ts", ".pdf") or path.suffix.lower() in _MEDIA:
            raise TaskError(f"{where}: {reference}: only text and YAML var files are supported")
        if path.suffix in (".yaml", ".yml"):
            return json_text(load_value_file(reference, self.base, where))
        return js_trim(read_text(path, reference, where))


_MEDIA = (
    ".jpg",
    ".jpeg",
    ".png",
    ".gif",
    ".bmp",
    ".webp",
    ".svg",
    ".tif",
    ".tiff",
    ".ico",
    ".avif",
    ".heic",
    ".heif",
    ".mp3",
    ".wav",
    ".m4a",
    ".ogg",
    ".flac",
    ".mp4",
    ".webm",
    ".mov",
    ".avi",
    ".mkv",
)
"""Var files promptfoo sends as base64 data: refused."""
_VAR_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}", re.ASCII)


def resolved(variables: dict[str, Any]) -> dict[str, Any]:
    """promptfoo's `resolveVariables`: up to five rounds in which each text var's first `{{name}}` naming a var
    is replaced by that var's text (JavaScript's String()); a first placeholder naming no var stops that var."""
    for _ in range(5):
        changed = False
        for key, value in variables.items():
            if not isinstance(value, str):
                continue
            found = _VAR_PLACEHOLDER.search(value)
            if found and found.group(1) in variables:
                start, end = found.span()
                filling = _js_replacement(js_string(variables[found.group(1)]), value, start, end)
                variables[key] = value[:start] + filling + value[end:]
                changed = True
        if not changed:
            break
    return variables


def _js_replacement(text: str, subject: str, start: int, end: int) -> str:
    """JavaScript's `replace` reads `$$`, `$&`, `` $` `` and `$'` in a replacement text as patterns."""
    patterns = {"$": "$", "&": subject[start:end], "`": subject[:start], "'": subject[end:]}
    return re.sub(r"\$([$&`'])", lambda m: patterns[m.group(1)], text)


_REF_NODES_LIMIT = 1_000_000
"""How many values a case file may hold once its $refs are written out."""


def dereferenced(document: Any, where: str) -> Any:
    """The document with every `{$ref: "#/pointer"}` replaced by what the pointer names in it, as promptfoo
    dereferences a case file (json-schema-ref-parser) before reading it: a pointer is read from the file's root,
    not from the schema it is in. References to other files or URLs, to nothing, to themselves, or with keys
    beside them are refused."""

    def target(pointer: str) -> Any:
        found: Any = document
        for raw in pointer.removeprefix("#").split("/")[1:]:
            key = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(found, Mapping) and key in found:
                found = found[key]
            elif isinstance(found, list) and key.isdigit() and int(key) < len(found):
                found = found[int(key)]
            else:
                raise TaskError(f"{where}: $ref {pointer!r} names nothing in the file (promptfoo reads it from "
                                "the file's root)")  # fmt: skip
        return found

    made = [0]

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        made[0] += 1
        if made[0] > _REF_NODES_LIMIT:
            raise TaskError(f"{where}: its $refs expand it beyond {_REF_NODES_LIMIT:,} nodes (refused: a $ref bomb)")
        if isinstance(node, list):
            return [walk(item, seen) for item in node]
        if not isinstance(node, Mapping):
            return node
        reference = node.get("$ref")
        if isinstance(reference, str):
            if not reference.startswith("#"):
                raise TaskError(f"{where}: $ref {reference!r}: only references into the file itself are supported")
            if len(node) > 1:
                raise TaskError(f"{where}: $ref {reference!r} with keys beside it is not supported")
            if reference in seen:
                raise TaskError(f"{where}: $ref {reference!r} refers to itself (a recursive schema is not supported)")
            return walk(target(reference), (*seen, reference))
        return {key: walk(value, seen) for key, value in node.items()}

    try:
        return walk(document, ())
    except RecursionError:
        raise TaskError(f"{where}: it is nested too deeply") from None


def _merged(default: Mapping[str, Any], test: Mapping[str, Any]) -> dict[str, Any]:
    """A test with `defaultTest` under it: vars, options and metadata merged, default assertions first."""
    merged = {**default, **test}
    for key in ("vars", "options", "metadata"):
        if isinstance(default.get(key), Mapping) or isinstance(test.get(key), Mapping):
            merged[key] = {**(default.get(key) or {}), **(test.get(key) or {})}
    merged["assert"] = [*(default.get("assert") or []), *(test.get("assert") or [])]
    return merged


def load_case_file(path: Path) -> tuple[Task[Any], Dataset]:
    """The file's task (posing, assertions, difficulty weights) and cases; anything wrong is a one-line error
    naming the test, before any request is sent."""
    if not path.is_file():
        raise InputError(f"no case file {path}")
    reader = _Reader(path)
    document = dereferenced(reader.load(path), reader.where())
    if not isinstance(document, Mapping):
        raise TaskError(reader.where("it must be a mapping with prompts and tests (promptfoo's format)"))
    prompts = reader.prompts(document.get("prompts"))
    default = document.get("defaultTest") or {}
    if not isinstance(default, Mapping):
        raise TaskError(reader.where("defaultTest must be a mapping"))
    tests = reader.tests(document.get("tests"))
    cases: list[Case] = []
    posed: dict[str, _Posed] = {}
    for number, raw in enumerate(tests, 1):
        ids = [f"test-{number:0{max(3, len(str(len(tests))))}d}" + (f".p{k}" if len(prompts) > 1 else "")
               for k in range(1, len(prompts) + 1)]  # fmt: skip
        for case, graded in _test_cases(reader, number, raw, default, prompts, ids):
            cases.append(case)
            posed[case.id] = graded
    task = _task(path.stem, CaseFileGrader(path.stem, posed))
    return task, dataset_from_cases(cases, suite=path.stem, source="file", path=str(path))


def _test_cases(
    reader: _Reader, number: int, raw: Any, default: Mapping[str, Any], prompts: list[str], ids: list[str]
) -> list[tuple[Case, _Posed]]:
    """One test, read and checked, as a case per prompt."""
    where = reader.where(f"test {number}")
    if not isinstance(raw, Mapping):
        raise TaskError(f"{where}: a test is a mapping with vars and assert")
    test = _merged(default, raw)
    options = test.get("options") or {}
    if not isinstance(options, Mapping):
        raise TaskError(f"{where}: options must be a mapping")
    for key in _REFUSED_OPTIONS:
        if key in options:
            raise TaskError(f"{where}: options.{key} is not supported (it changes what is scored)")
    variables = reader.variables(test.get("vars"), where)
    schema = _output_schema(options, reader.base, where)
    if schema is not None:
        schema_output(schema[0], where)  # a bad schema is refused now, not when the case is posed
    specs = test.get("assert")
    if not isinstance(specs, list) or not specs:
        raise TaskError(f"{where}: it has no assertions (assert: a list of type / value / weight)")

    def fill(text: str) -> str:
        return render(text, variables, where)

    assertions = tuple(
        compile_assertion(spec, render=fill, base=reader.base, where=f"{where}, assertion {k}")
        for k, spec in enumerate(specs, 1)
    )
    if not math.isfinite(sum(a.weight for a in assertions)):
        raise TaskError(f"{where}: its assertion weights add up to more than a double holds (promptfoo would score "
                        "the test 0): make them smaller")  # fmt: skip
    threshold = test.get("threshold")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int | float)
                                  or math.isnan(threshold)):  # fmt: skip
        raise TaskError(f"{where}: threshold must be a number, got {threshold!r}")
    graded = _Posed(assertions, variables, _plain(test), None if threshold is None else float(threshold))
    made: list[tuple[Case, _Posed]] = []
    filled = prompt_vars(variables, where)
    for k, (template, case_id) in enumerate(zip(prompts, ids, strict=True), 1):
        prompt = render(template, filled, f"{where}, prompt {k}")
        difficulty = _difficulty(test.get("metadata"), prompt, where)
        metadata: dict[str, Any] = {"difficulty": difficulty.stored()}
        if isinstance(test.get("description"), str):
            metadata["description"] = test["description"]
        if len(prompts) > 1:
            metadata["prompt"] = k
        if schema is not None:
            metadata["output_schema"], metadata["output_name"] = schema
        case = Case(id=case_id, prompt=prompt, expected=[a.spec for a in assertions],
                    group=f"format {difficulty.format}", metadata=metadata, weight=difficulty.total)  # fmt: skip
        made.append((case, graded))
    return made


def _plain(test: Mapping[str, Any]) -> dict[str, Any]:
    """The test as promptfoo's python context carries it: plain JSON-like data."""
    loaded: dict[str, Any] = json.loads(json.dumps(test, default=str))
    return loaded


def _text_reply(text: str) -> str | None:
    """Every reply is graded as it is, an empty one as "" (as promptfoo grades it)."""
    return text


def _task(name: str, grader: CaseFileGrader) -> Task[Any]:
    """The file's task: each case posed as plain text, or as a JSON object of its schema in the run's mode."""
    text = Task[Any](name=name, output_type=str, score=grader, reader=TextReader(_text_reply), empty_reply=True)
    structured: dict[str, Task[Any]] = {}

    def pose_as(case: Case, mode: AnswerMode) -> tuple[Task[Any], AnswerMode]:
        schema = case.metadata.get("output_schema")
        if not isinstance(schema, dict):
            return text, "text"
        key = json.dumps([schema, case.metadata.get("output_name")], sort_keys=True)
        if key not in structured:
            tool = _tool_name(str(case.metadata.get("output_name") or "final_result"))
            structured[key] = Task[Any](name=name, output_type=schema_output(schema, f"case {case.id}"), score=grader,
                                        tool_name=tool)  # fmt: skip
        return structured[key], "text" if mode == "tag" else mode

    return Task[Any](name=name, output_type=str, score=grader, instructions=_no_instructions, pose_as=pose_as,
                     bounded_scores=False)  # fmt: skip


def _no_instructions(_: AnswerMode) -> str | None:
    return None


# --- the judge ------------------------------------------------------------------------------------------------


def with_judge(task: Task[Any], judge: Rubric) -> Task[Any]:
    """A case file's task whose llm-rubric assertions are graded by `judge` (e.g. `suites.judge.Judge`)."""
    grader = task.score
    if not isinstance(grader, CaseFileGrader):
        raise TaskError(f"task {task.name!r} is not a case file's: it has no llm-rubric assertions to judge")
    return replace(task, score=grader.judged_by(judge))


# --- the case viewer -------------------------------------------------------------------------------------------


def show_assertions(record: SampleRecord) -> list[AnswerLine]:
    """The reply as the assertions read it (a structured one as JSON.stringify writes it), then each assertion's type
    and reason, passed or failed: why the test scored what it did. Details of another shape: the default view."""
    results = (record.score_details or {}).get("assertions")
    if not isinstance(results, list):
        return answer_lines(None, record)
    lines: list[AnswerLine] = []
    for result in results:
        if not isinstance(result, dict):
            return answer_lines(None, record)
        kind, passed, reason = result.get("type"), result.get("pass"), result.get("reason")
        if not (isinstance(kind, str) and isinstance(passed, bool) and isinstance(reason, str)):
            return answer_lines(None, record)
        lines.append(AnswerLine(f"{kind}: {reason}", "pass" if passed else "fail"))
    try:
        text = record.output if isinstance(record.output, str) else json_text(record.output)
    except ValueError:  # NaN or an infinity: JSON.stringify would write null, JSON text has no way to say it
        return answer_lines(None, record)
    return [AnswerLine(text), *lines]


CASE_FILE = file_suite(
    "case-file", load_case_file,
    "a case file in promptfoo's format, scored by difficulty-weighted assertions (--suite FILE.yaml)",
    CASE_FILE_SUFFIXES, show_answer=show_assertions,
)  # fmt: skip
