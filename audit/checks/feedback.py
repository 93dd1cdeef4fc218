"""Held-out answers wired into the run as feedback: a function that reads them, handed to the agent's loop.

Grading after a run reads the held-out answers once, to score what the run produced. The same
function handed to the scaffold as a callback — ``run_agent(..., on_candidate=score_candidate)``,
``Agent(feedback=lambda p: {"rmsle": score(p)})``, ``search.run(evaluate=grade_fn)`` — scores
every candidate against the answers *while the run can still act on it*: the answers choose the
submission. This check finds, in any Python unit (the operator's driver notebook included):

- *answer readers*: functions whose body names the held-out answers or the grader (a private
  answers path, ``answers.csv``, ``gold_submission``, ``grade_csv``, ``.grader(``), and functions
  that call an answer reader (three levels);
- *hand-overs*: an answer reader passed as an argument to a call, bare (``on_candidate=score``)
  or called inside a lambda or a nested function that is passed (``lambda p: score(p)``).

Calls that only apply the reader to finished files (``map``, ``apply``, executors, ``sorted``,
``min``/``max`` with ``key=``, ``print``) are the operator grading the run's outputs and are
not reported; neither is a direct call (``score_candidate(result.best_path)``).
"""

from __future__ import annotations

import re

import tree_sitter

from mleaudit.audit.checks.evidence import unit_evidence
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.registry import check
from mleaudit.audit.parsing import PathologicalTree, parse
from mleaudit.audit.rules.match import Match
from mleaudit.audit.units import CodeUnit

__all__ = ["answers_feedback"]

#: What a function body names when it reads the held-out answers or runs the grader.
_ANSWERS = re.compile(r"prepared/private|(?<![\w.~-])/private/|(?<![A-Za-z])answers?[\w-]*\.(?:csv|parquet|json)|"
                      r"gold_submission|test_with_solutions|\bgrade_csv\b|\bgrade_jsonl\b|\.grader\s*\(|\bmlebench\.grade\b")
#: Calls that apply a function to finished files (operator grading), not a run's loop.
_APPLIERS = frozenset({"map", "apply", "applymap", "transform", "agg", "aggregate", "starmap", "imap", "imap_unordered",
                       "submit", "sorted", "sort", "min", "max", "filter", "print", "display", "len", "list", "dict",
                       "partial", "reduce", "timeit", "repeat"})
_MAX_LEVELS = 3


def _name(parsed, node: tree_sitter.Node | None) -> str:
    return parsed.node_text(node) if node is not None else ""


def _call_name(parsed, call: tree_sitter.Node) -> str:
    function = call.child_by_field_name("function")
    if function is not None and function.type == "attribute":
        function = function.child_by_field_name("attribute")
    return _name(parsed, function)


def _functions(parsed) -> dict[str, tree_sitter.Node]:
    found: dict[str, tree_sitter.Node] = {}
    stack = [parsed.root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type == "function_definition":
            name = _name(parsed, node.child_by_field_name("name"))
            if name:
                found.setdefault(name, node)
    return found


def _readers(parsed, functions: dict[str, tree_sitter.Node]) -> set[str]:
    readers = {name for name, node in functions.items() if _ANSWERS.search(_name(parsed, node.child_by_field_name("body")))}
    for _ in range(_MAX_LEVELS):
        if not readers:
            break
        called = re.compile(r"(?<![\w.])(?:" + "|".join(re.escape(r) for r in sorted(readers)) + r")\s*\(")
        grown = readers | {name for name, node in functions.items()
                           if called.search(_name(parsed, node.child_by_field_name("body")))}
        if grown == readers:
            break
        readers = grown
    return readers


def _handed_over(parsed, node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The call ``node`` (an identifier naming a reader) is handed to as a callback, or ``None``."""
    parent = node.parent
    called = parent is not None and parent.type == "call" and parent.child_by_field_name("function") == node
    child = parent if called else node
    if called:
        # A direct call hands nothing over unless it sits in a lambda or nested def that is passed.
        scope = child.parent
        while scope is not None and scope.type not in ("lambda", "function_definition", "module"):
            scope = scope.parent
        if scope is None or scope.type == "module":
            return None
        if scope.type == "function_definition":
            return None  # a nested def is a reader itself; its own hand-over is found by name
        child = scope
    parent = child.parent
    while parent is not None and parent.type in ("keyword_argument", "parenthesized_expression", "dictionary",
                                                 "pair", "list", "tuple"):
        child, parent = parent, parent.parent
    if parent is None or parent.type != "argument_list":
        return None
    call = parent.parent
    if call is None or call.type != "call" or _call_name(parsed, call) in _APPLIERS:
        return None
    return call


def _unit_matches(ctx: RunContext, unit: CodeUnit) -> list[Match]:
    if not ctx.mentions(_ANSWERS, unit.text):
        return []
    parsed = parse(unit.text, "python")
    shape = parsed.pathological()
    if shape is not None:
        raise PathologicalTree(f"{unit.path}: answer feedback not found: the syntax tree has {shape}")
    readers = _readers(parsed, _functions(parsed))
    if not readers:
        return []
    matches = []
    stack = [parsed.root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type != "identifier" or _name(parsed, node) not in readers:
            continue
        parent = node.parent
        if parent is not None and parent.type == "function_definition" and parent.child_by_field_name("name") == node:
            continue
        call = _handed_over(parsed, node)
        if call is None:
            continue
        start, end = parsed.char_offset(call.start_byte), parsed.char_offset(call.end_byte)
        text = " ".join(unit.text[start:end].split())
        matches.append(Match(evidence=(unit_evidence(unit, start, end, "answers handed to the run"),), values={
            "reader": _name(parsed, node), "launcher": _call_name(parsed, call) or "?",
            "call": text if len(text) <= 160 else text[:159] + "…", "actor": unit.actor.value}))
    return matches


@check("answers-feedback", values=("reader", "launcher", "call"))
def answers_feedback(ctx: RunContext) -> list[Match]:
    """Functions that read the held-out answers, handed to a run as callbacks (see the module docstring).

    Returns
    -------
    list of Match
        One per hand-over, with ``reader`` (the function), ``launcher`` (the call it is handed to)
        and ``call`` (that call's text).
    """
    matches: list[Match] = []
    for unit in ctx.code_units:
        if unit.language == "python":
            matches.extend(_unit_matches(ctx, unit))
    return matches
