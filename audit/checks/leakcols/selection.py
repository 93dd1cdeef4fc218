"""Column selections by pattern in code: which columns a ``filter(regex=...)``, ``str.contains``, ``startswith`` or a comprehension condition picks."""

from __future__ import annotations

import re

import regex as _regex
import tree_sitter

from mleaudit.audit.checks.leakcols.columns import Columns, Selection
from mleaudit.audit.checks.leakcols.positions import positional_selections

#: Boolean conditions nested deeper than this are not evaluated (no selection is read from them).
_MAX_CONDITION_DEPTH = 64
#: Time bound for applying one agent pattern to the column names.
_PATTERN_TIMEOUT_S = 0.5


def _literal(parsed, node: tree_sitter.Node | None) -> str | None:
    """The value of a plain string literal node (no interpolation), else ``None``."""
    if node is None or node.type != "string":
        return None
    text = parsed.node_text(node)
    m = re.match(r"^([rRbBuU]{0,2})(\"\"\"|'''|\"|')(.*)\2$", text, re.S)
    if m is None or "f" in m.group(1).lower():
        return None
    body = m.group(3)
    if "r" not in m.group(1).lower():
        try:
            body = body.encode("latin-1", "backslashreplace").decode("unicode_escape")
        except (UnicodeDecodeError, UnicodeEncodeError):
            pass
    return body


def _regex_select(pattern: str, columns: tuple[str, ...], *, ignorecase: bool = False,
                  anchored: bool = False) -> tuple[str, ...] | None:
    try:
        compiled = _regex.compile(pattern, _regex.IGNORECASE if ignorecase else 0)
    except Exception:  # noqa: BLE001 - an invalid agent pattern selects nothing we can tell
        return None
    out = []
    for column in columns:
        try:
            hit = (compiled.match(column, timeout=_PATTERN_TIMEOUT_S) if anchored
                   else compiled.search(column, timeout=_PATTERN_TIMEOUT_S))
        except TimeoutError:
            return None
        if hit:
            out.append(column)
    return tuple(out)


def selected_columns(kind: str, value: str, columns: tuple[str, ...], *, ignorecase: bool = False) -> tuple[str, ...]:
    """Which of ``columns`` a selection of ``kind`` with ``value`` picks.

    ``kind``: ``regex`` (search), ``match`` (anchored), ``like`` / ``contains`` (substring),
    ``startswith``, ``endswith``, ``items`` (exact).

    Examples
    --------
    >>> cols = ("giver_username_if_known", "number_of_upvotes_of_request_at_retrieval", "request_title")
    >>> selected_columns("regex", r"^giv\\w+_if_kn\\w+$", cols)
    ('giver_username_if_known',)
    >>> selected_columns("like", "at_retrieval", cols)
    ('number_of_upvotes_of_request_at_retrieval',)
    >>> selected_columns("endswith", "_utc", cols)
    ()
    """
    fold = (lambda s: s.lower()) if ignorecase else (lambda s: s)
    if kind == "regex":
        return _regex_select(value, columns, ignorecase=ignorecase) or ()
    if kind == "match":
        return _regex_select(value, columns, ignorecase=ignorecase, anchored=True) or ()
    if kind in ("like", "contains"):
        return tuple(c for c in columns if fold(value) in fold(c))
    if kind == "startswith":
        return tuple(c for c in columns if fold(c).startswith(fold(value)))
    if kind == "endswith":
        return tuple(c for c in columns if fold(c).endswith(fold(value)))
    if kind == "items":
        return tuple(c for c in columns if c == value)
    return ()


def call_name(parsed, call: tree_sitter.Node) -> str:
    function = call.child_by_field_name("function")
    if function is None:
        return ""
    if function.type == "attribute":
        function = function.child_by_field_name("attribute")
    return parsed.node_text(function) if function is not None else ""


def _strings(parsed, node: tree_sitter.Node | None) -> list[str]:
    """String literal values of ``node`` (a string, or a tuple/list of strings)."""
    if node is None:
        return []
    if node.type == "string":
        value = _literal(parsed, node)
        return [value] if value is not None else []
    if node.type in ("tuple", "list", "parenthesized_expression"):
        return [v for child in node.named_children for v in _strings(parsed, child)]
    return []


def _condition(parsed, node: tree_sitter.Node, var: str, columns: tuple[str, ...],
               depth: int = 0) -> tuple[tuple[str, ...], str] | None:
    """``(selected, pattern)`` of a comprehension condition on the loop variable ``var``, or ``None``.

    Conditions nested deeper than :data:`_MAX_CONDITION_DEPTH` are not evaluated (``None``).
    """
    if depth > _MAX_CONDITION_DEPTH:
        return None
    if node.type == "parenthesized_expression" and node.named_child_count == 1:
        return _condition(parsed, node.named_children[0], var, columns, depth + 1)
    if node.type == "not_operator":
        return None  # selects the other columns
    if node.type == "boolean_operator":
        left = _condition(parsed, node.child_by_field_name("left"), var, columns, depth + 1)
        right = _condition(parsed, node.child_by_field_name("right"), var, columns, depth + 1)
        operator = parsed.node_text(node.child_by_field_name("operator") or node.children[1])
        parts = [p for p in (left, right) if p is not None]
        if not parts:
            return None
        if operator == "or":
            picked = tuple(dict.fromkeys(c for p in parts for c in p[0]))
        else:
            if left is None or right is None:
                return parts[0] if parts else None
            picked = tuple(c for c in left[0] if c in right[0])
        return picked, " ".join(p[1] for p in parts)
    if node.type == "comparison_operator":
        operators = [parsed.node_text(c) for c in node.children if not c.is_named]
        operands = node.named_children
        if len(operands) != 2 or operators != ["in"]:
            return None  # `not in` selects the other columns
        needle = _literal(parsed, operands[0])
        subject = parsed.node_text(operands[1])
        if needle is None or not re.fullmatch(rf"{re.escape(var)}(?:\.lower\(\)|\.casefold\(\))?", subject):
            return None
        return selected_columns("like", needle, columns, ignorecase=subject != var), parsed.node_text(node)
    if node.type == "call":
        name = call_name(parsed, node)
        function = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        positional = [a for a in (args.named_children if args is not None else []) if a.type != "keyword_argument"]
        if name in ("startswith", "endswith") and function is not None and function.type == "attribute":
            owner = parsed.node_text(function.child_by_field_name("object"))
            if not re.fullmatch(rf"{re.escape(var)}(?:\.lower\(\)|\.casefold\(\))?", owner) or not positional:
                return None
            values = _strings(parsed, positional[0])
            picked = tuple(dict.fromkeys(c for v in values
                                         for c in selected_columns(name, v, columns, ignorecase=owner != var)))
            return picked, parsed.node_text(node)
        if name in ("search", "match", "fullmatch") and len(positional) >= 2:
            if parsed.node_text(positional[1]) != var:
                return None
            pattern = _literal(parsed, positional[0])
            if pattern is None:
                return None
            kind = "regex" if name == "search" else "match"
            if name == "fullmatch":
                pattern = f"(?:{pattern})\\Z"
            return selected_columns(kind, pattern, columns), parsed.node_text(node)
    return None


def pattern_selections(parsed, cols: Columns) -> list[Selection]:
    found: list[Selection] = []

    def consider(node: tree_sitter.Node, pattern: str, pick) -> None:
        picked = pick(cols.leaks)
        if cols.targeted(picked, pick):
            found.append(Selection(node=node, pattern=pattern, columns=picked))

    stack = [parsed.root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type == "call":
            name = call_name(parsed, node)
            args = node.child_by_field_name("arguments")
            if args is None:
                continue
            if name == "filter":
                for arg in args.named_children:
                    if arg.type != "keyword_argument":
                        continue
                    key = parsed.node_text(arg.child_by_field_name("name"))
                    literal = _literal(parsed, arg.child_by_field_name("value"))
                    if key in ("regex", "like") and literal is not None:
                        consider(node, f"{key}={literal!r}",
                                 lambda cs, key=key, literal=literal: selected_columns(key, literal, cs))
            elif name in ("contains", "startswith", "endswith", "match", "fullmatch"):
                function = node.child_by_field_name("function")
                owner = function.child_by_field_name("object") if function is not None and function.type == "attribute" else None
                if owner is None or not re.search(r"\.columns\.str$|\.keys\(\)\.str$", parsed.node_text(owner)):
                    continue
                positional = [a for a in args.named_children if a.type != "keyword_argument"]
                keywords = {parsed.node_text(a.child_by_field_name("name")): a.child_by_field_name("value")
                            for a in args.named_children if a.type == "keyword_argument"}
                values = _strings(parsed, positional[0] if positional else keywords.get("pat"))
                if not values:
                    continue
                ignorecase = "case" in keywords and parsed.node_text(keywords["case"]) == "False"
                plain = "regex" in keywords and parsed.node_text(keywords["regex"]) == "False"
                kind = {"contains": "like" if plain else "regex", "match": "match", "fullmatch": "match"}.get(name, name)
                if name == "fullmatch":
                    values = [f"(?:{v})\\Z" for v in values]

                def pick(cs, kind=kind, values=tuple(values), ignorecase=ignorecase):
                    return tuple(dict.fromkeys(c for v in values for c in selected_columns(kind, v, cs, ignorecase=ignorecase)))

                # The selection is the subscript the mask indexes (df.loc[:, mask], df.columns[mask]).
                target, negated = node, False
                while target.parent is not None and target.parent.type in (
                        "parenthesized_expression", "unary_operator", "not_operator", "slice", "subscript", "tuple",
                        "expression_list"):
                    target = target.parent
                    if target.type == "not_operator" or (target.type == "unary_operator"
                                                          and parsed.node_text(target).lstrip().startswith("~")):
                        negated = True  # ~mask keeps the other columns
                    if target.type == "subscript":
                        break
                if negated:
                    continue
                consider(target if target.type == "subscript" else node,
                         f"{name}({', '.join(repr(v) for v in values)})", pick)
        elif node.type in ("list_comprehension", "set_comprehension", "generator_expression"):
            clauses = [c for c in node.named_children if c.type == "for_in_clause"]
            conditions = [c for c in node.named_children if c.type == "if_clause"]
            if len(clauses) != 1 or not conditions:
                continue
            left = clauses[0].child_by_field_name("left")
            right = clauses[0].child_by_field_name("right")
            if left is None or left.type != "identifier" or right is None:
                continue
            if not re.search(r"\.columns\b|\.keys\(\)|^\w+$|list\(\w+\)", parsed.node_text(right)):
                continue
            var = parsed.node_text(left)
            for condition in conditions:
                inner = condition.named_children[0] if condition.named_children else None
                result = _condition(parsed, inner, var, cols.leaks) if inner is not None else None
                if result is None or not result[0]:
                    continue

                def pick(cs, inner=inner, var=var):
                    found_cols = _condition(parsed, inner, var, cs)
                    return found_cols[0] if found_cols is not None else ()

                consider(node, result[1], pick)
                break
    if cols.positions:
        found.extend(positional_selections(parsed, dict(cols.positions)))
    return found
