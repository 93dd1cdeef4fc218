"""Code an agent keeps in string literals: compared with the corpus as code of its own.

A kernel pasted into a string and run with ``exec`` is still a copy, but to the fingerprints
it is one string token, and split into one literal per line (a list joined with ``"\\n"``,
literals written side by side, ``src += "..."`` line after line) no k-gram of the kernel is
left. :func:`string_code_units` reassembles such text from the syntax tree of a Python unit,
without running anything:

- one literal, or literals written side by side (implicit concatenation);
- a list, tuple or set whose elements are all literals (joined by ``"\\n"`` unless the
  elements end their own lines);
- a run of statements ``name = "..."`` / ``name += "..."`` on one name in one block;
- every literal of the unit in source order, one per line (``lines.append("...")``,
  ``src = src + "..."``, dict values, lines in tuples).

A reassembled text becomes a unit when it reads as Python code
(:func:`mleaudit.audit.logs.keys.classify_text`) over at least :data:`MIN_CODE_LINES` lines; the unit
has the host's path, and its ``origin`` is the literal(s) in the host file.
"""

from __future__ import annotations

import ast
from typing import Iterator

from mleaudit.audit.logs.keys import classify_text
from mleaudit.audit.model import Span
from mleaudit.audit.parsing import ParsedFile, parse
from mleaudit.audit.units import CodeUnit, LogEventKind

__all__ = ["MAX_STRING_UNITS", "MIN_CODE_LINES", "string_code_units"]

#: Non-blank lines a reassembled text needs to be compared as code (a call in a string is not
#: a pasted kernel; the detector's evidence needs many lines anyway).
MIN_CODE_LINES = 3
#: Units taken from one host one by one (the largest texts first); the texts past them are
#: compared as one more unit, joined, so that decoys cannot push a copy out.
MAX_STRING_UNITS = 32

_STRINGS = ("string", "concatenated_string")
_CONTAINERS = ("list", "tuple", "set")


def _literal_value(parsed: ParsedFile, node) -> str | None:
    """The value a string literal spells (escapes decoded, as Python reads it; f-strings as written)."""
    text = parsed.node_text(node)
    if node.type == "concatenated_string":
        parts = [_literal_value(parsed, child) for child in node.named_children if child.type == "string"]
        return None if any(part is None for part in parts) else "".join(parts)  # type: ignore[arg-type]
    prefix = text[: len(text) - len(text.lstrip("rRbBuUfF"))].lower()
    if "f" in prefix:
        body = text[len(prefix):]
        quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
        return body[len(quote): len(body) - len(quote)] if body.endswith(quote) and len(body) >= 2 * len(quote) else None
    try:
        # Only literal syntax is read: ast.literal_eval evaluates no name, call or operator.
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value if isinstance(value, str) else None


def _joined(values: list[str]) -> str:
    return "".join(values) if any(v.endswith("\n") for v in values) else "\n".join(values)


def _assigned_string(parsed: ParsedFile, statement) -> tuple[str, str, str] | None:
    """``(name, operator, value)`` of ``name = "..."`` or ``name += "..."``, else ``None``."""
    if statement.type != "expression_statement" or statement.named_child_count != 1:
        return None
    node = statement.named_children[0]
    if node.type not in ("assignment", "augmented_assignment"):
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    operator = node.child_by_field_name("operator")
    if left is None or right is None or left.type != "identifier" or right.type not in _STRINGS:
        return None
    op = "=" if node.type == "assignment" else (parsed.node_text(operator) if operator is not None else "")
    if op not in ("=", "+="):
        return None
    value = _literal_value(parsed, right)
    return None if value is None else (parsed.node_text(left), op, value)


def _chains(parsed: ParsedFile, block) -> Iterator[tuple[int, int, str]]:
    """Runs of ``name = "..."; name += "..."`` on one name in one block: (start, end, text)."""
    name = None
    values: list[str] = []
    start = end = 0
    for statement in block.named_children:
        assigned = _assigned_string(parsed, statement)
        if assigned is not None and assigned[0] == name and assigned[1] == "+=":
            values.append(assigned[2])
            end = statement.end_byte
            continue
        if name is not None and len(values) > 1:
            yield start, end, "".join(values)
        name, values = None, []
        if assigned is not None:
            name, values = assigned[0], [assigned[2]]
            start, end = statement.start_byte, statement.end_byte
    if name is not None and len(values) > 1:
        yield start, end, "".join(values)


def _candidates(parsed: ParsedFile) -> Iterator[tuple[int, int, str, bool]]:
    """Reassembled string texts of a tree: (start byte, end byte, text, whether it is every literal).

    The walk visits every node (the run loader bounds a file's size); the last candidate is
    every literal of the unit in source order, one per line, which reassembles the forms no
    rule above names (``lines.append("...")``, ``src = src + "..."``, dict values, chains with
    other statements between their lines).
    """
    stack = [parsed.root]
    in_order: list[tuple[int, int, str]] = []
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in _STRINGS:
            value = _literal_value(parsed, node)
            if value is not None:
                in_order.append((node.start_byte, node.end_byte, value))
                yield node.start_byte, node.end_byte, value, False
            continue
        if kind in _CONTAINERS:
            elements = [child for child in node.named_children if child.type != "comment"]
            if len(elements) >= 2 and all(child.type in _STRINGS for child in elements):
                values = [_literal_value(parsed, child) for child in elements]
                if all(value is not None for value in values):
                    yield node.start_byte, node.end_byte, _joined(values), False  # type: ignore[arg-type]
                    continue
        if kind in ("module", "block"):
            yield from ((start, end, text, False) for start, end, text in _chains(parsed, node))
        stack.extend(reversed(node.children))
    if len(in_order) >= MIN_CODE_LINES:
        in_order.sort()
        yield (in_order[0][0], in_order[-1][1], "".join(v if v.endswith("\n") else v + "\n" for _, _, v in in_order),
               True)


#: Statements that make a text Python code (a bare name or string is not enough).
_STATEMENTS = frozenset({"import_statement", "import_from_statement", "function_definition", "class_definition",
                         "decorated_definition", "for_statement", "while_statement", "if_statement",
                         "with_statement", "try_statement", "return_statement"})
_EXPRESSIONS = frozenset({"assignment", "augmented_assignment", "call"})


def _adds_little(text: str, found: dict[str, tuple[int, int]]) -> bool:
    """Whether the lines of ``text`` are, but for a few, lines of the texts already found (the
    literals joined in order repeat what a list or a chain already reassembled)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    known = {line.strip() for other in found for line in other.splitlines() if line.strip()}
    return sum(1 for line in lines if line not in known) <= max(2, len(lines) // 10)


def _reads_as_code(text: str) -> bool:
    """At least :data:`MIN_CODE_LINES` lines that read as Python: by the log readers' classifier,
    or (a first line that looks like a shell command or a shebang, which is only a comment to
    Python) by parsing without error into two or more statements."""
    if sum(1 for line in text.splitlines() if line.strip()) < MIN_CODE_LINES:
        return False
    found = classify_text(text)
    if found is not None and found.kind is LogEventKind.CODE and found.language == "python":
        return True
    parsed = parse(text, "python")
    if parsed.has_error:
        return False
    statements = 0
    for node in parsed.root.named_children:
        if node.type in _STATEMENTS or (node.type == "expression_statement" and node.named_child_count == 1
                                        and node.named_children[0].type in _EXPRESSIONS):
            statements += 1
            if statements >= 2:
                return True
    return False


def string_code_units(unit: CodeUnit) -> list[CodeUnit]:
    """Python code held in the string literals of a Python unit, as units of their own.

    Parameters
    ----------
    unit : CodeUnit
        A unit of any language (only ``"python"`` units hold anything here). Never executed.

    Returns
    -------
    list of CodeUnit
        One per reassembled text that reads as code (see the module docstring), the longest
        first, :data:`MAX_STRING_UNITS` of them and then one holding all the others, joined;
        none repeated; ``path``, ``source`` and
        ``actor`` are the host's, ``origin`` the literal(s) in the host file, ``language``
        ``"python"``. Empty when the unit holds none.

    Examples
    --------
    >>> host = CodeUnit(path="run.py", language="python", text='exec("\\\\n".join([\\n'
    ...     '  "import pandas as pd",\\n  "df = pd.read_csv(\\'train.csv\\')",\\n  "print(df.shape)",\\n]))\\n')
    >>> [u.text for u in string_code_units(host)]
    ["import pandas as pd\\ndf = pd.read_csv('train.csv')\\nprint(df.shape)"]
    """
    if unit.language != "python" or ('"' not in unit.text and "'" not in unit.text):
        return []
    parsed = parse(unit.text, "python")
    found: dict[str, tuple[int, int]] = {}
    for start, end, text, every_literal in _candidates(parsed):
        if every_literal and _adds_little(text, found):
            continue
        if text not in found and text.strip() and _reads_as_code(text):
            found[text] = (start, end)
    ranked = sorted(found.items(), key=lambda item: (-len(item[0]), item[1]))
    kept = ranked[:MAX_STRING_UNITS]
    rest = sorted(ranked[MAX_STRING_UNITS:], key=lambda item: item[1])
    if rest:
        kept.append(("\n".join(text for text, _ in rest), (rest[0][1][0], max(end for _, (_, end) in rest))))
    units = []
    for text, (start, end) in kept:
        span = Span.from_offsets(parsed.text, unit.path, parsed.char_offset(start), parsed.char_offset(end))
        units.append(CodeUnit(path=unit.path, language="python", text=text, origin=unit.host_span(span),
                              source=unit.source, actor=unit.actor))
    return units
