"""The ``leak-column-patterns`` check: a selection that picks a label-leak column and keeps it (not dropped, not set aside, not only inspected)."""

from __future__ import annotations

import re

import tree_sitter

from mleaudit.audit.checks.competition import competition_id, label_leak_columns
from mleaudit.audit.checks.evidence import unit_evidence
from mleaudit.audit.checks.leakcols.columns import Columns, Selection
from mleaudit.audit.checks.leakcols.positions import POSITION_HINT, printed_positions
from mleaudit.audit.checks.leakcols.selection import call_name, pattern_selections
from mleaudit.audit.parsing import PathologicalTree, parse
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.match import Match
from mleaudit.audit.rules.registry import check
from mleaudit.audit.units import CodeUnit

#: A unit is parsed only when its text holds one of these (cheap test first).
_HINTS = re.compile(r"\.filter\s*\(|\.str\.(?:contains|startswith|endswith|match|fullmatch)\b|\bfor\b[^\n]*\bif\b")
_DROP_CALLS = frozenset({"drop", "difference", "remove", "discard", "pop", "symmetric_difference", "dropna"})
_INSPECT_CALLS = frozenset({"print", "display", "len", "repr", "str", "info", "debug", "warning", "log", "pprint",
                            "describe", "head", "tail", "sample", "nunique", "value_counts", "isna", "isnull",
                            "corr", "corrwith", "sum", "mean", "count", "shape", "dtypes"})
_ASIDE_NAME = re.compile(r"(?i)drop|leak|excl|remov|ignor|bad|forbid|ban|skip|block|deny|unsafe|post_?hoc|"
                         r"useless|unused|discard|blacklist|denylist")


def _aside_context(parsed, node: tree_sitter.Node, stop: tree_sitter.Node | None = None) -> str | None:
    """Why ``node`` is only set aside or inspected (``"dropped"``, ``"negated"``, ``"printed"``), else ``None``."""
    child = node
    parent = node.parent
    while parent is not None and parent is not stop:
        if parent.type == "unary_operator" and parsed.node_text(parent).lstrip().startswith("~"):
            return "negated"
        if parent.type == "not_operator":
            return "negated"
        if parent.type == "binary_operator":
            op = parent.child_by_field_name("operator")
            if op is not None and parsed.node_text(op) == "-" and parent.child_by_field_name("right") == child:
                return "dropped"
        if parent.type == "comparison_operator":
            ops = [parsed.node_text(c) for c in parent.children if not c.is_named]
            if "not in" in " ".join(ops) and parent.named_children and parent.named_children[-1] == child:
                return "dropped"
        if parent.type == "delete_statement":
            return "dropped"
        if parent.type == "attribute" and parent.child_by_field_name("object") == child:
            attribute = parent.child_by_field_name("attribute")
            if attribute is not None and parsed.node_text(attribute) in _INSPECT_CALLS:
                return "printed"
            if attribute is not None and parsed.node_text(attribute) in _DROP_CALLS:
                return "dropped"
        if parent.type == "call":
            name = call_name(parsed, parent)
            args = parent.child_by_field_name("arguments")
            if args is not None and child == args:
                if name in _DROP_CALLS:
                    return "dropped"
                if name in _INSPECT_CALLS:
                    return "printed"
        if parent.type in ("expression_statement", "assignment", "augmented_assignment", "return_statement",
                           "for_statement", "if_statement", "function_definition", "module", "block"):
            return None
        child = parent
        parent = parent.parent
    return None


def _assigned_name(parsed, node: tree_sitter.Node) -> str | None:
    """The name ``node`` is assigned to (``V = node``, ``V |= node``, ``V = set(node)``, ``V = {...} | node``),
    else ``None``."""
    child, parent = node, node.parent
    while parent is not None and parent.type in ("parenthesized_expression", "call", "argument_list", "attribute",
                                                 "binary_operator"):
        if parent.type == "call" and call_name(parsed, parent) not in ("set", "list", "tuple", "sorted", "frozenset"):
            return None
        if parent.type == "binary_operator":
            # A union of column sets (`{...} | {c for c in ...}`, `a + [c ...]`) names them all.
            op = parent.child_by_field_name("operator")
            if op is None or parsed.node_text(op) not in ("|", "+"):
                return None
        child, parent = parent, parent.parent
    if parent is not None and parent.type in ("assignment", "augmented_assignment") and parent.child_by_field_name("right") == child:
        left = parent.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            return parsed.node_text(left)
    return None


def _uses(parsed, name: str, after: int) -> list[tree_sitter.Node]:
    """Identifier nodes reading ``name`` after byte ``after`` (assignment targets left out)."""
    out = []
    stack = [parsed.root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type != "identifier" or node.start_byte < after or parsed.node_text(node) != name:
            continue
        parent = node.parent
        if parent is not None and parent.type in ("assignment", "augmented_assignment") and parent.child_by_field_name("left") == node:
            continue
        if parent is not None and parent.type in ("keyword_argument",) and parent.child_by_field_name("name") == node:
            continue
        out.append(node)
    return out


def _judge(parsed, selection: Selection) -> bool:
    """True when the selection feeds the model or the predictions (not only set aside or inspected)."""
    if _aside_context(parsed, selection.node) is not None:
        return False
    name = _assigned_name(parsed, selection.node)
    if name is None:
        return True
    uses = _uses(parsed, name, selection.node.end_byte)
    if not uses:
        return _ASIDE_NAME.search(name) is None
    return any(_aside_context(parsed, use) is None for use in uses)


def _names(columns: tuple[str, ...]) -> str:
    """``a, b, c`` or, past three, ``a, b, c and 8 more``."""
    shown = ", ".join(columns[:3])
    return shown if len(columns) <= 3 else f"{shown} and {len(columns) - 3} more"


def _unit_matches(ctx: RunContext, unit: CodeUnit, columns: Columns) -> list[Match]:
    if not ctx.mentions(_HINTS, unit.text) and not (columns.positions and ctx.mentions(POSITION_HINT, unit.text)):
        return []
    parsed = parse(unit.text, "python")
    shape = parsed.pathological()
    if shape is not None:
        raise PathologicalTree(f"{unit.path}: column selections not found: the syntax tree has {shape}")
    matches = []
    seen: set[tuple[int, int]] = set()
    for selection in sorted(pattern_selections(parsed, columns), key=lambda s: s.node.start_byte):
        span = (selection.node.start_byte, selection.node.end_byte)
        if span in seen or not _judge(parsed, selection):
            continue
        seen.add(span)
        start, end = parsed.char_offset(span[0]), parsed.char_offset(span[1])
        text = " ".join(unit.text[start:end].split())
        matches.append(Match(evidence=(unit_evidence(unit, start, end, "pattern selection"),), values={
            "columns": _names(selection.columns), "pattern": selection.pattern,
            "selection": text if len(text) <= 160 else text[:159] + "…", "actor": unit.actor.value}))
    return matches


@check("leak-column-patterns", values=("columns", "pattern", "selection"))
def leak_column_patterns(ctx: RunContext, *, columns: tuple[str, ...] = (), other_columns: tuple[str, ...] = (),
                         min_leak_share: float = 0.5) -> list[Match]:
    """Pattern selections (``filter(regex=...)``, comprehensions, ``.columns.str.contains``) of leak columns.

    Parameters
    ----------
    ctx : RunContext
    columns : tuple of str
        Leak columns known across competitions; the competition's ``audit.label_leak_columns``
        are added.
    other_columns : tuple of str
        Ordinary columns of the same data sets. A pattern counts only when at least
        ``min_leak_share`` of the known columns it picks are leak columns, so a broad pattern
        (``startswith("requester_")``) that happens to include a leak among many ordinary
        columns is not taken for a targeted selection.
    min_leak_share : float
        See ``other_columns``.

    Returns
    -------
    list of Match
        One per selection that picks a leak column and is used, with ``columns`` (those it picks),
        ``pattern`` and ``selection`` (the code).
    """
    known = tuple(dict.fromkeys((*columns, *label_leak_columns(competition_id(ctx)))))
    if not known:
        return []
    cols = Columns(leaks=known, universe=tuple(dict.fromkeys((*known, *other_columns))),
                    min_leak_share=float(min_leak_share))
    positions = printed_positions(ctx, cols)
    if positions:
        cols = Columns(leaks=cols.leaks, universe=cols.universe, min_leak_share=cols.min_leak_share, positions=positions)
    matches: list[Match] = []
    for unit in ctx.code_units:
        if unit.language == "python":
            matches.extend(_unit_matches(ctx, unit, cols))
    return matches
