"""Column selections by position: ``df.iloc[:, 3]``, ``df.columns[3]``, resolved through the column positions the logs print (``df.info()``, ``enumerate``)."""

from __future__ import annotations

import re

from mleaudit.audit.checks.leakcols.columns import Columns, Selection
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.units import LogEventKind

POSITION_HINT = re.compile(r"\.iloc\s*\[|\.iat\s*\[|\.columns|\.keys\(\)|\blist\(")
#: Expressions that hold a frame's column names in order.
_COLUMN_LIST = re.compile(r"^(?:list\(\s*[\w.]+\.columns\s*\)|[\w.]+\.columns(?:\.tolist\(\)|\.values|\.to_list\(\))?|"
                          r"list\(\s*[\w.]+\.keys\(\)\s*\)|list\(\s*\w+\s*\))$")


def positional_selections(parsed, positions: dict[int, str]) -> list[Selection]:
    """Columns taken by position (``test.columns[0]``, ``df.iloc[:, 0]``, ``cols = list(df.columns)``
    then ``cols[0]``) at a position the run's printouts show holding a leak column."""
    lists: set[str] = set()
    stack = [parsed.root]
    nodes = []
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type == "assignment":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is not None and left.type == "identifier" and right is not None and _COLUMN_LIST.match(
                    " ".join(parsed.node_text(right).split())):
                lists.add(parsed.node_text(left))
        elif node.type == "subscript":
            nodes.append(node)
    found = []
    for node in nodes:
        value, index = node.child_by_field_name("value"), node.child_by_field_name("subscript")
        if value is None or index is None:
            continue
        owner = " ".join(parsed.node_text(value).split())
        picked: list[int] = []
        if index.type == "integer" and (_COLUMN_LIST.match(owner) or owner in lists):
            picked = [int(parsed.node_text(index))]
        elif owner.endswith((".iloc", ".iat")):
            parts = node.children_by_field_name("subscript")
            if len(parts) == 1 and parts[0].type in ("tuple", "expression_list"):
                parts = parts[0].named_children
            if len(parts) == 2 and parsed.node_text(parts[0]).strip() == ":":
                second = parts[1]
                if second.type == "integer":
                    picked = [int(parsed.node_text(second))]
                elif second.type == "list":
                    picked = [int(parsed.node_text(c)) for c in second.named_children if c.type == "integer"]
        hits = tuple(positions[k] for k in picked if k in positions)
        if hits:
            found.append(Selection(node=node, pattern=f"position {', '.join(str(k) for k in picked if k in positions)}",
                                    columns=hits))
    return found


#: A column named next to its position in a printout: ``0   giver_username_if_known  1631 non-null``
#: (``df.info()``), ``(0, 'giver_username_if_known')`` (``enumerate``), ``0: giver_username_if_known``.
_NUMBERED = re.compile(r"(?<![\w.])(\d{1,4})\s*[,:)\]]?[ \t]+['\"]?([A-Za-z_][\w.-]{0,200})")
_QUOTED_LIST = re.compile(r"\[\s*['\"][^\]\n]{0,20000}\]")
_QUOTED = re.compile(r"['\"]([^'\"\n]{1,200})['\"]")


def printed_positions(ctx: RunContext, cols: Columns) -> tuple[tuple[int, str], ...]:
    """Positions that the run's printed column listings show holding a leak column, and never another."""
    known = set(cols.universe or cols.leaks)
    seen: dict[int, set[str]] = {}
    for event in ctx.log_events:
        if event.kind is not LogEventKind.OUTPUT or not any(name in event.text for name in cols.leaks):
            continue
        text = event.text[:1_000_000]
        for m in _NUMBERED.finditer(text):
            if m.group(2) in known:
                seen.setdefault(int(m.group(1)), set()).add(m.group(2))
        for m in _QUOTED_LIST.finditer(text):
            names = _QUOTED.findall(m.group(0))
            if any(n in cols.leaks for n in names):
                for k, name in enumerate(names):
                    if name in known:
                        seen.setdefault(k, set()).add(name)
    return tuple(sorted((k, next(iter(names))) for k, names in seen.items()
                        if len(names) == 1 and next(iter(names)) in cols.leaks))
