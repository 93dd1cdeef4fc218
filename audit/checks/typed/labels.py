"""Label lists typed into code: a literal list or a split string with one label per test row, or enough labels to fill a submission."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import tree_sitter

from mleaudit.audit.checks.evidence import unit_evidence
from mleaudit.audit.checks.tables import CsvReadError, read_csv_head
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.match import Match
from mleaudit.audit.units import CodeUnit

#: A literal list is judged from this many of its items (its length counts them all).
MAX_LABEL_ITEMS = 20_000
#: Strings longer than this are not split into labels (a source file is at most 20 MB).
MAX_LITERAL_CHARS = 8 << 20
#: Fewest items a label list needs when its length equals the number of test rows.
MIN_ROW_MATCH = 20
#: A unit that writes a submission file (the same test as for id-to-label tables).
WRITES_SUBMISSION = re.compile(r"(?i)submission[\w.-]*\.csv|\bto_csv\(")
#: Methods that keep a string a string on its way to being split.
_STRING_METHODS = frozenset({"strip", "lstrip", "rstrip", "upper", "lower", "replace"})
#: Calls whose argument is iterated one character at a time when it is a string.
_ITERATING_CALLS = frozenset({"list", "tuple", "map", "iter", "enumerate", "zip", "fromiter", "filter"})

_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}


def _count_rows(path) -> int | None:
    """Data rows of a CSV file (lines after the header), or ``None`` when it cannot be read."""
    try:
        head = read_csv_head(path, max_lines=0)
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(size - 1, 0))
            ends_with_newline = handle.read(1) == b"\n"
    except (CsvReadError, OSError):
        return None
    rows = head.line_count - 1 + (0 if ends_with_newline else 1)
    return rows if rows > 0 else None


def test_rows(ctx: RunContext) -> frozenset[int]:
    """Row counts of the sample submission and of the submission, those that can be read."""
    def compute() -> frozenset[int]:
        paths = [p for p in (ctx.sample_submission_path, ctx.submission_path) if p is not None]
        return frozenset(n for n in (_count_rows(p) for p in paths) if n is not None)
    return ctx.memoize("typed:test-rows", compute)


def string_value(parsed, node: tree_sitter.Node) -> tuple[str, bool] | None:
    """The value of a plain string literal (simple escapes decoded) and whether it is bytes.

    ``None`` for f-strings with interpolations and for strings over :data:`MAX_LITERAL_CHARS`.
    """
    if node.type == "concatenated_string":
        parts = [string_value(parsed, c) for c in node.named_children if c.type == "string"]
        if not parts or any(part is None for part in parts):
            return None
        return "".join(part[0] for part in parts), any(part[1] for part in parts)
    if node.type != "string" or node.end_byte - node.start_byte > MAX_LITERAL_CHARS:
        return None
    prefix = ""
    chunks = []
    for child in node.named_children:
        if child.type == "interpolation":
            return None
        if child.type == "string_start":
            prefix = parsed.node_text(child).lower()
        elif child.type == "string_content":
            chunks.append(parsed.node_text(child))
    text = "".join(chunks)
    if "r" not in prefix and "\\" in text:
        text = re.sub(r"\\(.)", lambda m: _SIMPLE_ESCAPES.get(m.group(1), m.group(0)), text, flags=re.DOTALL)
    return text, "b" in prefix


def call_name(parsed, call: tree_sitter.Node) -> tuple[str, str]:
    """``(object, name)`` of a call's function: ``("zlib", "decompress")``, ``("", "list")``."""
    function = call.child_by_field_name("function")
    if function is None:
        return "", ""
    if function.type == "attribute":
        attribute = function.child_by_field_name("attribute")
        obj = function.child_by_field_name("object")
        return (parsed.node_text(obj) if obj is not None else "",
                parsed.node_text(attribute) if attribute is not None else "")
    return "", parsed.node_text(function)


def _outer(node: tree_sitter.Node) -> tree_sitter.Node:
    """``node`` with any parentheses around it."""
    while node.parent is not None and node.parent.type == "parenthesized_expression":
        node = node.parent
    return node


def assigned_to(parsed, node: tree_sitter.Node) -> str | None:
    """The plain name a literal is assigned to (``S = '...'``, ``S: str = '...'``), if any."""
    node = _outer(node)
    parent = node.parent
    if parent is not None and parent.type == "assignment" and parent.child_by_field_name("right") == node:
        left = parent.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            return parsed.node_text(left)
    return None


def _uses(parsed, node: tree_sitter.Node, names: dict[str, list[tree_sitter.Node]]) -> list[tree_sitter.Node]:
    """Where a literal's value is used: the literal itself, or the reads of the name it is assigned to."""
    name = assigned_to(parsed, node)
    if name is None:
        return [node]
    left = _outer(node).parent.child_by_field_name("left")
    return [n for n in names.get(name, ()) if n != left]


def _split_mode(parsed, use: tree_sitter.Node) -> tuple[str, str | None] | None:
    """How a string is cut into rows where it is used: ``("chars", None)``, ``("split", sep)``, ``("lines", None)``."""
    node = use
    for _ in range(8):  # a short chain of string methods: S.strip().upper().split(",")
        node = _outer(node)
        parent = node.parent
        if parent is None:
            return None
        if parent.type == "attribute" and parent.child_by_field_name("object") == node:
            call = parent.parent
            attribute = parent.child_by_field_name("attribute")
            if call is None or call.type != "call" or call.child_by_field_name("function") != parent or attribute is None:
                return None
            method = parsed.node_text(attribute)
            if method in _STRING_METHODS:
                node = call
                continue
            if method == "splitlines":
                return "lines", None
            if method in ("split", "rsplit"):
                arguments = call.child_by_field_name("arguments")
                positional = [a for a in (arguments.named_children if arguments is not None else ())
                              if a.type != "comment"]
                if not positional:
                    return "split", None
                value = string_value(parsed, positional[0]) if positional[0].type == "string" else None
                return ("split", value[0]) if value is not None and value[0] else None
            return None
        if parent.type == "argument_list" and parent.parent is not None and parent.parent.type == "call":
            return ("chars", None) if call_name(parsed, parent.parent)[1] in _ITERATING_CALLS else None
        if parent.type in ("for_statement", "for_in_clause") and parent.child_by_field_name("right") == node:
            return "chars", None
        if parent.type == "subscript" and parent.child_by_field_name("value") == node:
            index = parent.child_by_field_name("subscript")
            return ("chars", None) if index is not None and index.type == "identifier" else None
        return None
    return None


def _string_items(value: str, mode: tuple[str, str | None]) -> list[str] | None:
    """The rows a string is cut into, or ``None`` when it does not cut into label-like items."""
    kind, separator = mode
    if kind == "chars":
        text = value.strip()
        if any(c.isspace() for c in text):
            return None  # prose and formatted text, not one label a character
        return list(text)
    items = [item.strip() for item in (value.splitlines() if kind == "lines" else value.split(separator))]
    while items and not items[-1]:
        items.pop()
    while items and not items[0]:
        items.pop(0)
    return items


def _label_like(items: list[str], *, max_distinct: int, max_label_chars: int) -> bool:
    """Short, non-empty items with few distinct values, each repeated on average."""
    if not items or not all(0 < len(item) <= max_label_chars and "\n" not in item for item in items):
        return False
    distinct = len(set(items))
    return distinct <= max_distinct and 2 * distinct <= len(items)


def _counts(count: int, rows: frozenset[int], writes_submission: bool, min_labels: int) -> str | None:
    """Why ``count`` typed labels stand for the test rows, or ``None`` when they do not."""
    if rows:
        if count in rows and count >= min(min_labels, MIN_ROW_MATCH):
            return "one per test row"
        return None
    return "no row count known" if writes_submission and count >= min_labels else None


def walk(root: tree_sitter.Node, visit: Callable[[tree_sitter.Node], bool]) -> None:
    """Visit ``root`` and its descendants in document order, without recursion; entering a
    node's children only when ``visit`` returns True for it."""
    cursor = root.walk()
    while True:
        if visit(cursor.node) and cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


def label_hits(unit: CodeUnit, parsed, rows: frozenset[int], *, min_labels: int, max_distinct: int,
                max_label_chars: int) -> list[Hit]:
    """Label lists and label strings of one unit (see the module docstring)."""
    floor = min([min_labels, *(max(r, MIN_ROW_MATCH) for r in rows)])
    writes_submission = bool(WRITES_SUBMISSION.search(unit.text))
    if not (writes_submission or rows):
        return []
    sequences: list[tree_sitter.Node] = []
    strings: list[tree_sitter.Node] = []
    names: dict[str, list[tree_sitter.Node]] = {}

    def visit(node: tree_sitter.Node) -> bool:
        if node.type in ("list", "tuple") and node.named_child_count >= floor:
            sequences.append(node)
            return False  # its items are judged with it
        if node.type in ("string", "concatenated_string"):
            if node.end_byte - node.start_byte >= floor and not (
                    node.parent is not None and node.parent.type in ("expression_statement", "concatenated_string")):
                strings.append(node)  # a bare string statement is a docstring; a part is judged with its whole
            return node.type == "concatenated_string"
        if node.type == "identifier":
            names.setdefault(parsed.node_text(node), []).append(node)
        return True

    walk(parsed.root, visit)
    matches = []
    for node in sequences:
        head = [node.named_child(i) for i in range(min(node.named_child_count, MAX_LABEL_ITEMS))]
        items_nodes = [c for c in head if c is not None and c.type != "comment"]
        count = node.named_child_count - (len(head) - len(items_nodes))  # comments past the head count as items
        if not all(c.type == "string" for c in items_nodes):
            continue
        values = [string_value(parsed, c) for c in items_nodes]
        if any(v is None for v in values):
            continue
        items = [v[0].strip() for v in values]
        why = _counts(count, rows, writes_submission, min_labels)
        if why is None or not _label_like(items, max_distinct=max_distinct, max_label_chars=max_label_chars):
            continue
        example = ", ".join(parsed.node_text(c) for c in items_nodes[:4])
        matches.append(_label_hit(parsed, node, f"label list, {why}", count, f"[{example}, ...]"))
    for node in strings:
        if node.type == "string" and node.parent is not None and node.parent.type == "concatenated_string":
            continue
        value = string_value(parsed, node)
        if value is None or value[1]:
            continue
        for use in _uses(parsed, node, names):
            mode = _split_mode(parsed, use)
            items = _string_items(value[0], mode) if mode is not None else None
            if items is None:
                continue
            why = _counts(len(items), rows, writes_submission, min_labels)
            if why is None or not _label_like(items, max_distinct=max_distinct, max_label_chars=max_label_chars):
                continue
            text = " ".join(parsed.node_text(node).split())
            example = text[:40] + ("..." if len(text) > 40 else "")
            how = {"chars": "one label a character", "split": "split into labels",
                   "lines": "one label a line"}[mode[0]]
            matches.append(_label_hit(parsed, node, f"label string, {how}, {why}", len(items), example))
            break
    return matches


@dataclass(frozen=True, slots=True)
class Hit:
    """A typed-prediction match in a unit's text: characters ``[start, end)``, the evidence label
    and the match's values. It depends on the text alone, so a text that many units share (a log
    showing the same script at every step) is searched once and its hits placed in each unit."""

    start: int
    end: int
    label: str
    values: dict


def _label_hit(parsed, node: tree_sitter.Node, shape: str, count: int, example: str) -> Hit:
    start, end = parsed.char_offset(node.start_byte), parsed.char_offset(node.end_byte)
    return Hit(start, end, "typed labels", {"shape": shape, "count": count, "example": example[:120]})


def hit_match(unit: CodeUnit, hit: Hit) -> Match:
    return Match(evidence=(unit_evidence(unit, hit.start, hit.end, hit.label),),
                 values={**hit.values, "actor": unit.actor.value})
