"""The ``typed-prediction-overrides`` check: hand-set predictions and typed label lists, per code unit."""

from __future__ import annotations

import re

from mleaudit.audit.checks.typed.labels import MIN_ROW_MATCH, WRITES_SUBMISSION, Hit, hit_match, label_hits, test_rows
from mleaudit.audit.checks.typed.overrides import HINT, applied, literal_table, override_groups
from mleaudit.audit.parsing import PathologicalTree, parse
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.match import Match
from mleaudit.audit.rules.registry import check
from mleaudit.audit.units import CodeUnit


def parsed_unit(unit: CodeUnit, what: str):
    """The unit's syntax tree; :class:`PathologicalTree` when it is too deep or broken to walk."""
    parsed = parse(unit.text, "python")
    shape = parsed.pathological()
    if shape is not None:
        raise PathologicalTree(f"{unit.path}: {what} not found: the syntax tree has {shape}")
    return parsed


def _unit_hits(unit: CodeUnit, min_overrides: int, min_entries: int) -> list[Hit]:
    if not HINT.search(unit.text):
        return []
    parsed = parsed_unit(unit, "typed predictions")
    matches = []
    for run in override_groups(parsed):
        if len(run) < min_overrides:
            continue
        start, end = parsed.char_offset(run[0].start_byte), parsed.char_offset(run[-1].end_byte)
        first = " ".join(parsed.node_text(run[0]).split())
        matches.append(Hit(start, end, "typed rows", {"shape": "row overrides", "count": len(run),
                                                       "example": first[:120]}))
    writes_submission = bool(re.search(r"(?i)submission[\w.-]*\.csv|\bto_csv\(", unit.text))
    stack = [parsed.root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type != "dictionary" or not literal_table(parsed, node, min_entries):
            continue
        if not (applied(parsed, node, unit.text) or writes_submission):
            continue
        start, end = parsed.char_offset(node.start_byte), parsed.char_offset(node.end_byte)
        pairs = [c for c in node.named_children if c.type == "pair"]
        example = ", ".join(" ".join(parsed.node_text(p).split()) for p in pairs[:3])
        matches.append(Hit(start, end, "typed rows", {"shape": "id-to-label table", "count": len(pairs),
                                                       "example": f"{{{example}, ...}}"[:120]}))
    return matches


def check_counts(**params: object) -> None:
    for name, value in params.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def _may_hold_labels(text: str, floor: int) -> bool:
    """A cheap test that a unit may hold a literal of ``floor`` items: commas, a long line, a block string."""
    return (text.count(",") >= floor - 1 or '"""' in text or "'''" in text
            or re.search(rf"[^\n]{{{floor}}}", text) is not None)


@check("typed-prediction-overrides", values=("shape", "count", "example"))
def typed_prediction_overrides(ctx: RunContext, *, min_overrides: int = 3, min_entries: int = 5,
                               min_labels: int = 100, max_distinct: int = 64,
                               max_label_chars: int = 32) -> list[Match]:
    """Typed predictions: row overrides, id-to-label tables, label lists and label strings.

    See the module docstring for each shape.

    Parameters
    ----------
    ctx : RunContext
        Its code units are searched; the row counts of its sample submission and submission
        (when they can be read) are what a label list's length is compared with.
    min_overrides : int
        Typed overrides of one array needed in a unit.
    min_entries : int
        Entries an id-to-label table needs.
    min_labels : int
        Items a label list or label string needs when no row count is known (and the most it
        needs when one is: a list as long as the test rows counts from 20 items).
    max_distinct : int
        Most distinct values a label list may hold.
    max_label_chars : int
        Longest item of a label list, in characters.

    Returns
    -------
    list of Match
        One per run of overrides, table, label list or label string, with ``shape``, ``count``
        and ``example``.
    """
    check_counts(min_overrides=min_overrides, min_entries=min_entries, min_labels=min_labels,
                  max_distinct=max_distinct, max_label_chars=max_label_chars)
    matches: list[Match] = []
    units = [unit for unit in ctx.code_units if unit.language == "python"]
    rows = test_rows(ctx) if units else frozenset()
    floor = min([min_labels, *(max(r, MIN_ROW_MATCH) for r in rows)])
    found: dict[str, list[Hit]] = {}  # per distinct text
    for unit in units:
        hits = found.get(unit.text)
        if hits is None:
            hits = _unit_hits(unit, min_overrides, min_entries)
            if _may_hold_labels(unit.text, floor) and (rows or WRITES_SUBMISSION.search(unit.text)):
                hits += label_hits(unit, parsed_unit(unit, "typed labels"), rows, min_labels=min_labels,
                                    max_distinct=max_distinct, max_label_chars=max_label_chars)
            found[unit.text] = hits
        matches.extend(hit_match(unit, hit) for hit in hits)
    return matches
