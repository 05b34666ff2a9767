"""Prompt-mode replies of the Java and JavaScript categories, read as BFCL's prompting handler reads them: parsed by
tree-sitter (the grammar versions BFCL pins), the first call kept, its keyword arguments' values as source text.

BFCL's verdicts there hinge on tree-sitter's error recovery (as Java `f(a=1)` does not parse but `f(a="x", b=42L)`
does, the missing `;` being recovered), which no hand-written parser reproduces: so tree-sitter itself parses, and
the walk over its tree follows BFCL's rules. A reply is refused when the tree's S-expression names an `ERROR` node
(BFCL's test: a node tree-sitter inserted as missing, such as the `;`, passes it), when an argument name repeats
(two bare names included), when BFCL's walk would stop on a part that is not there (`new int[3]` has no
initializer), or when the tree is too deep to walk. Only the Java walk goes down into values: strings lose their
quotes at the top level only, object and array creations are rebuilt from their parts (an anonymous class body,
`new ArrayList<>() {{ add(1); }}`, is left out as BFCL leaves it out), other nodes are their tokens joined without
spaces. JavaScript values are the argument's text, unquoted when it is one quoted string.

tree-sitter is an optional dependency (`pip install 'typed-eval[bfcl]'`), imported only here and only when a Java or
JavaScript reply is read; a run that needs it checks for it before its first request (`tree_sitter_needed`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, Literal

from typed_eval.core.errors import InputError

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = [
    "PINNED",
    "SourceLanguage",
    "TreeSitterMissing",
    "UnreadableSource",
    "read_source_calls",
    "source_language",
    "tree_sitter_needed",
]

SourceLanguage = Literal["java", "javascript"]

PINNED = {"tree-sitter": "0.21.3", "tree-sitter-java": "0.21.0", "tree-sitter-javascript": "0.21.4"}
"""The versions BFCL 2026.3.23 pins: its verdicts are those of these grammars' error recovery."""
MAX_DEPTH = 2_000
"""Deeper trees are refused: tree-sitter writes a tree's S-expression recursively (BFCL's test for an error) and
overflows the C stack near 20,000 levels, which would kill the process (BFCL's with it); no reply of calls comes near
this depth. A Java value a few hundred levels deep already exhausts Python's recursion, in BFCL's walk as here."""
JAVA_TEXT_NODES = ("identifier", "class_literal", "type_identifier", "method_invocation")
JAVA_QUOTED = ("string_literal", "character_literal")
JAVA_POSITIONAL = ("identifier", "class_literal")
JAVA_ARGUMENT_PUNCTUATION = (",", "(", ")")
JAVASCRIPT_POSITIONAL = ("identifier", "true")


class TreeSitterMissing(InputError):
    """tree-sitter, its Java or its JavaScript grammar is absent, or not at the version BFCL pins."""


class UnreadableSource(Exception):
    """The reply is not one BFCL's tree-sitter decoder would read."""


def _problem() -> str | None:
    """What keeps Java and JavaScript replies from being read as BFCL reads them: None, "" (not installed at all),
    or what is found instead of the pinned versions."""
    found: list[str] = []
    absent = 0
    for distribution, pinned in PINNED.items():
        try:
            importlib.import_module(distribution.replace("-", "_"))
            installed = version(distribution)
        except (ImportError, PackageNotFoundError):
            absent += 1
            found.append(f"no {distribution}")
            continue
        if installed != pinned:
            found.append(f"{distribution} {installed}")
    if absent == len(PINNED):
        return ""
    return ", ".join(found) or None


def tree_sitter_needed(categories: Iterable[str]) -> TreeSitterMissing | None:
    """The error a prompt-mode run of `categories` must stop with before its first request when tree-sitter cannot
    read its Java and JavaScript replies as BFCL does (None: it can, or no such category is posed)."""
    source = [c for c in dict.fromkeys(categories) if "java" in c]
    if not source:
        return None
    problem = _problem()
    return None if problem is None else _missing(problem, source)


def _missing(problem: str, categories: list[str]) -> TreeSitterMissing:
    wanted = "tree-sitter"
    if problem:
        pins = [f"{name} {pinned}" for name, pinned in PINNED.items()]
        wanted = f"{', '.join(pins[:-1])} and {pins[-1]} (found {problem})"
    return TreeSitterMissing(
        f"prompt mode decodes Java and JavaScript as BFCL does, with {wanted}: pip install 'typed-eval[bfcl]', "
        f"or leave out {', '.join(categories)}",
        parameter="mode",
    )


def source_language(category: str) -> SourceLanguage:
    """As BFCL tells them apart: a category naming "javascript" is JavaScript, any other naming "java" Java."""
    return "javascript" if "javascript" in category else "java"


def read_source_calls(source: str, category: str) -> Any:
    """BFCL's decoding of a reply of a Java or JavaScript category (its brackets already cut): `[{name: {param:
    text}}]` for the first call found, or what BFCL gives when none is (`{}` for Java, None for JavaScript), both of
    which its checker then finds in the wrong format. Raises `UnreadableSource` (or whatever BFCL's walk would raise
    on the same tree) when BFCL's decoder fails, `TreeSitterMissing` when tree-sitter cannot be imported."""
    language = source_language(category)
    try:
        from tree_sitter import Language, Parser

        grammar = importlib.import_module(f"tree_sitter_{language}")
    except ImportError:
        raise _missing("", [category]) from None
    parser = Parser()
    parser.set_language(Language(grammar.language(), language))
    root = parser.parse(source.encode("utf-8")).root_node
    if _deeper_than(root, MAX_DEPTH):
        raise UnreadableSource(f"nested deeper than {MAX_DEPTH} levels")
    if "ERROR" in root.sexp():
        raise UnreadableSource(f"tree-sitter found a syntax error in the {language} source")
    if language == "java":
        found = _first_java_call(root, source)
        return found if found else {}
    return _first_javascript_call(root)


def _deeper_than(root: Node, limit: int) -> bool:
    """Whether the tree has more than `limit` levels, looking only into subtrees large enough to have them."""
    pending = [(root, 0)]
    while pending:
        node, depth = pending.pop()
        if depth + node.descendant_count <= limit:  # the count includes the node: it bounds the levels below it
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in node.children)
    return False


def _java_text(node: Node, source: str) -> str:
    """A node's text as BFCL takes it: the reply's characters at the node's byte offsets (so text after a
    non-ASCII character is shifted, as in BFCL)."""
    return source[node.start_byte : node.end_byte]


def _first_java_call(node: Node, source: str) -> list[dict[str, dict[str | None, str]]] | None:
    """The first method invocation in document order that has arguments: `[{object.name: arguments}]`. An
    invocation without an argument list stops the search below it, not beside it."""
    if node.type == "method_invocation":
        name = _java_text(_field(node, "name"), source)
        receiver = node.child_by_field_name("object")
        if receiver is not None:
            name = f"{_java_text(receiver, source)}.{name}"
        arguments = node.child_by_field_name("arguments")
        if arguments is None:
            return None
        return [{name: _java_arguments(arguments, source)}]
    for child in node.children:
        found = _first_java_call(child, source)
        if found:
            return found
    return None


def _java_arguments(node: Node, source: str) -> dict[str | None, str]:
    """`name=value` assignments by name; a bare identifier or class literal under None (the key BFCL's checker then
    finds unexpected); other positional values dropped."""
    arguments: dict[str | None, str] = {}
    for child in node.children:
        if child.type == "assignment_expression":
            key: str | None = _java_text(child.children[0], source)
            value = _java_value(child.children[2], source, nested=False)
        elif child.type in JAVA_POSITIONAL:
            key, value = None, _java_value(child, source, nested=False)
        else:
            continue
        _add(arguments, key, value)
    return arguments


def _java_value(node: Node, source: str, *, nested: bool) -> str:
    """A Java value's text as BFCL rebuilds it."""
    kind = node.type
    if kind in JAVA_QUOTED:
        text = _java_text(node, source)
        return text if nested else text[1:-1]
    if kind in JAVA_TEXT_NODES:
        return _java_text(node, source)
    if kind == "array_creation_expression":
        element = _java_value(_field(node, "type"), source, nested=True)
        values = _java_value(_field(node, "value"), source, nested=True)  # `new int[3]` has none: BFCL fails
        return f"new {element}[]{values}"
    if kind == "object_creation_expression":
        created = _java_value(_field(node, "type"), source, nested=True)
        arguments = node.child_by_field_name("arguments")
        if arguments is None:
            return f"new {created}()"
        parts = [
            _java_value(child, source, nested=True)
            for child in arguments.children
            if child.type not in JAVA_ARGUMENT_PUNCTUATION
        ]
        return f"new {created}({', '.join(parts)})"
    if node.child_count > 0:
        return "".join(_java_value(child, source, nested=True) for child in node.children)
    return _java_text(node, source)


def _field(node: Node, name: str) -> Node:
    """A node's field that BFCL's walk reads without checking: its absence fails the decoding there too."""
    found = node.child_by_field_name(name)
    if found is None:
        raise UnreadableSource(f"a {node.type} without its {name}")
    return found


def _first_javascript_call(root: Node) -> list[dict[str, dict[str | None, str]]] | None:
    """The first call that is directly a top-level expression statement (a call inside `a, b` or `x = f()` is not
    one): `[{callee: arguments}]`."""
    for statement in root.children:
        if statement.type != "expression_statement":
            continue
        for expression in statement.children:
            if expression.type == "call_expression":
                callee, arguments = expression.children[0], expression.children[1]
                return [{_utf8(callee): _javascript_arguments(arguments)}]
    return None


def _javascript_arguments(node: Node) -> dict[str | None, str]:
    """`name=value` assignments by name, the value's text unquoted when it is wholly quoted; a bare identifier or
    `true` under None; other positional values dropped."""
    arguments: dict[str | None, str] = {}
    for child in node.children:
        if child.type == "assignment_expression":
            key: str | None = _utf8(child.children[0])
            value = _utf8(child.children[2])
            if value[:1] == value[-1:] and value[:1] in ("'", '"'):
                value = value[1:-1]
        elif child.type in JAVASCRIPT_POSITIONAL:
            key, value = None, _utf8(child)
        else:
            continue
        _add(arguments, key, value)
    return arguments


def _utf8(node: Node) -> str:
    return (node.text or b"").decode("utf-8")


def _add(arguments: dict[str | None, str], key: str | None, value: str) -> None:
    if key in arguments:
        raise UnreadableSource("Multiple arguments with the same name are not supported.")
    arguments[key] = value
