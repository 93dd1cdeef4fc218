"""Predictions set by hand in code: literal overrides of prediction rows (``preds[17] = 1``) and literal tables applied to them."""

from __future__ import annotations

import re

import tree_sitter

#: Names of arrays and frames that hold predictions or the submission.
_PREDICTION_NAME = re.compile(r"(?i)pred|prob|proba|sub|yhat|y_hat|final|answer|target|y_test|test_y|score|output|out_?$|result|label")
#: Names that hold parameters, not predictions (blend weights, sizes, settings).
_SETTING_NAME = re.compile(r"(?i)weight|coef|param|alpha|beta|\blr\b|rate|seed|size|shape|dim|conf|cfg|opt|thresh|bins|edges")
_LITERAL_TYPES = frozenset({"integer", "float", "true", "false", "string", "none"})
_APPLY_CALLS = frozenset({"map", "replace", "update", "Series", "DataFrame", "fillna", "where", "mask", "from_dict"})
HINT = re.compile(r"\]\s*=\s*[-+]?[\w.'\"]|\{\s*[-+]?\d|\{\s*[\"'][^\"'\n]*\d")


def _is_literal(parsed, node: tree_sitter.Node | None) -> bool:
    if node is None:
        return False
    if node.type == "unary_operator":
        operand = node.child_by_field_name("argument")
        return operand is not None and operand.type in ("integer", "float")
    if node.type == "string":
        return not any(c.type == "interpolation" for c in node.named_children)
    return node.type in _LITERAL_TYPES


def _literal_row(parsed, node: tree_sitter.Node | None) -> bool:
    """A short tuple or list of literals: one row's typed values (``(0, 0, 1, 0)``)."""
    return (node is not None and node.type in ("tuple", "list") and 0 < node.named_child_count <= 200
            and all(_is_literal(parsed, c) for c in node.named_children if c.type != "comment"))


def _int_value(parsed, node: tree_sitter.Node) -> int | None:
    text = parsed.node_text(node).replace("_", "")
    try:
        return int(text, 0)
    except ValueError:
        return None


def _row_index(parsed, index: tree_sitter.Node) -> bool:
    """Whether a subscript picks one row by a typed value (``17``, ``17, 1``, ``test.id == 1234``)."""
    if index.type == "integer":
        return True
    if index.type in ("tuple", "expression_list") and index.named_children:
        first = index.named_children[0]
        return first.type == "integer" and all(
            c.type in ("integer", "slice", "string") for c in index.named_children[1:])
    if index.type == "comparison_operator":
        operators = [parsed.node_text(c) for c in index.children if not c.is_named]
        operands = index.named_children
        return operators == ["=="] and len(operands) == 2 and _is_literal(parsed, operands[1]) and bool(
            re.search(r"(?i)id|index|key|name|row", parsed.node_text(operands[0])))
    return False


def override_groups(parsed) -> list[list[tree_sitter.Node]]:
    """Runs of typed row overrides, grouped by the array they set (in source order)."""
    by_name: dict[str, list[tree_sitter.Node]] = {}
    stack = [parsed.root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type != "assignment":
            continue
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or left.type != "subscript" or not _is_literal(parsed, right):
            continue
        value = left.child_by_field_name("value")
        index = left.child_by_field_name("subscript")
        if value is None or index is None or value.type not in ("identifier", "attribute"):
            continue
        name = parsed.node_text(value)
        if not _PREDICTION_NAME.search(name) or _SETTING_NAME.search(name):
            continue
        if re.search(r"\.(?:loc|at|iloc|iat)$", name):
            continue  # sub.loc[...] = ... edits are reported by sub-edit-sample-submission
        if _row_index(parsed, index):
            by_name.setdefault(name, []).append(node)
    return [sorted(nodes, key=lambda n: n.start_byte) for nodes in by_name.values()]


def literal_table(parsed, node: tree_sitter.Node, min_entries: int) -> bool:
    """Whether a dictionary literal maps typed row ids to typed labels (see the module docstring)."""
    pairs = [c for c in node.named_children if c.type == "pair"]
    if len(pairs) < min_entries or len(pairs) != len([c for c in node.named_children if c.type != "comment"]):
        return False
    keys = [p.child_by_field_name("key") for p in pairs]
    values = [p.child_by_field_name("value") for p in pairs]
    if not all(_is_literal(parsed, v) or _literal_row(parsed, v) for v in values):
        return False
    if all(k is not None and k.type == "integer" for k in keys):
        numbers = [_int_value(parsed, k) for k in keys]
        if None in numbers:
            return False
        ordered = sorted(numbers)
        consecutive = ordered == list(range(ordered[0], ordered[0] + len(ordered))) and ordered[0] in (0, 1)
        if consecutive:
            return False  # class decodings and class weights: 0..K-1 or 1..K
    elif all(k is not None and k.type == "string" for k in keys):
        texts = [parsed.node_text(k).strip("\"'rbuRBU") for k in keys]
        if not all(re.search(r"\d", t) and re.fullmatch(r"[\w.:/-]{1,64}", t) for t in texts):
            return False  # word keys: label encodings, hyperparameters, column maps
    else:
        return False
    texts = [parsed.node_text(v) for v in values]
    return len(set(texts)) < len(texts)  # labels repeat across rows; a decoding has distinct values


def _assigned_name(parsed, node: tree_sitter.Node) -> str | None:
    parent = node.parent
    if parent is not None and parent.type == "assignment" and parent.child_by_field_name("right") == node:
        left = parent.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            return parsed.node_text(left)
    return None


def applied(parsed, node: tree_sitter.Node, text: str) -> bool:
    """Whether a table is applied to predictions: passed to an applying call, or looped over."""
    parent = node.parent
    while parent is not None and parent.type in ("argument_list", "parenthesized_expression"):
        parent = parent.parent
    if parent is not None and parent.type == "call":
        function = parent.child_by_field_name("function")
        name = function.child_by_field_name("attribute") if function is not None and function.type == "attribute" else function
        if name is not None and parsed.node_text(name) in _APPLY_CALLS:
            return True
    name = _assigned_name(parsed, node)
    if name is None:
        return False
    calls = "|".join(sorted(_APPLY_CALLS))
    pattern = re.compile(rf"\b(?:{calls})\(\s*{re.escape(name)}\b|\bin\s+{re.escape(name)}\s*(?:\.items\(\)|\.keys\(\)|:)")
    return bool(pattern.search(text, parsed.char_offset(node.end_byte)))
