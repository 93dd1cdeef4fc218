"""Calls of the validation endpoint or its helper in code: :class:`CallSite`, in Python and in shell, with the loops around them.

A loop's iteration count is read where the code says it (``range(30)``, ``$(seq 1 50)``,
``{1..20}``, ``for ((i=0; i<9; i++))``) or through the unit's constants.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import tree_sitter

from mleaudit.audit.checks.writes import Bindings, python_calls, split_shell_commands
from mleaudit.audit.parsing import PathologicalTree, parse
from mleaudit.audit.units import CodeUnit

#: Call sites analysed per code unit (each further one would repeat the same evidence).
MAX_SITES_PER_UNIT = 1000

#: Text that reaches the endpoint or its helper.
ENDPOINT = re.compile(r"/validate\b|validate_submission")

HTTP_CALLS = frozenset({"post", "put", "request", "urlopen", "Request", "fetch", "send"})
SHELL_CALLS = frozenset({"system", "run", "call", "check_call", "check_output", "Popen", "getoutput",
                          "getstatusoutput", "popen"})
_LOOP_HEADER = re.compile(
    r"\b(?P<kw>for|while|until)\b(?P<head>\s*\(\([^)\n]*\)\)|[^\n;]*?)\s*(?:;|\n)\s*do\b", re.DOTALL)
_DO_DONE = re.compile(r"(?<![\w-])(?:do|done)(?![\w-])")
_SEQ = re.compile(r"\$\(\s*seq\s+(?:(-?\d+)\s+)?(?:(-?\d+)\s+)?(-?\d+)\s*\)")
_BRACE = re.compile(r"\{(-?\d+)\.\.(-?\d+)(?:\.\.(\d+))?\}")
_C_STYLE = re.compile(r"\(\(\s*\w+\s*=\s*(-?\d+)\s*;\s*\w+\s*(<=?)\s*(\d+)")


@dataclass(frozen=True, slots=True, kw_only=True)
class CallSite:
    """A place in code or a command that calls the validation endpoint.

    Attributes
    ----------
    unit : CodeUnit
        The code unit holding the call.
    start, end : int
        Character offsets of the call (or command) in ``unit.text``.
    calls : int or None
        Estimated calls from this site: 1 outside loops, the product of the enclosing loops'
        iteration counts inside them; ``None`` for an unbounded loop (``while True``).
    loop : str
        The enclosing loop as text (``"range(300)"``, ``"seq 200"``, ``"while True"``), or ``""``.
    """

    unit: CodeUnit
    start: int
    end: int
    calls: int | None
    loop: str = ""


def _int_value(node: tree_sitter.Node, parsed, bindings: Bindings) -> int | None:
    text = parsed.node_text(node).strip()
    if re.fullmatch(r"\d[\d_]*", text):
        return int(text.replace("_", ""))
    values = bindings.values.get(text, [])
    if len(values) == 1 and re.fullmatch(r"\d+", values[0].strip().replace("_", "")):
        return int(values[0].strip().replace("_", ""))
    return None


def loop_iterations(loop: tree_sitter.Node, parsed, bindings: Bindings) -> tuple[int | None, str, bool]:
    """``(count, text, known)`` of a loop node; ``count`` None with ``known`` True means unbounded."""
    if loop.type == "while_statement":
        condition = loop.child_by_field_name("condition")
        text = parsed.node_text(condition).strip() if condition is not None else ""
        if text in ("True", "1"):
            return None, "while True", True
        return None, f"while {text[:40]}", False
    right = loop.child_by_field_name("right")
    if right is None:
        return None, "loop", False
    text = parsed.node_text(right).strip()
    node = right
    if node.type == "call":
        function = node.child_by_field_name("function")
        name = parsed.node_text(function) if function is not None else ""
        args = node.child_by_field_name("arguments")
        if name in ("enumerate", "tqdm", "tqdm.tqdm", "list") and args is not None and args.named_children:
            node = args.named_children[0]
            function = node.child_by_field_name("function") if node.type == "call" else None
            name = parsed.node_text(function) if function is not None else ""
            args = node.child_by_field_name("arguments") if node.type == "call" else None
        if name == "range" and args is not None:
            values = [_int_value(a, parsed, bindings) for a in args.named_children]
            if values and all(v is not None for v in values):
                if len(values) == 1:
                    return max(values[0], 0), text, True
                step = values[2] if len(values) > 2 and values[2] else 1
                return max(math.ceil((values[1] - values[0]) / step), 0), text, True
    if node.type in ("list", "tuple", "set"):
        return len(node.named_children), text[:40], True
    return None, text[:40], False


def python_call_sites(unit: CodeUnit) -> list[CallSite]:
    parsed = parse(unit.text, "python")
    shape = parsed.pathological()
    if shape is not None:
        # Never "no validation call": the engine reports the rule as not evaluated on this run.
        raise PathologicalTree(f"{unit.path}: validation calls not found: the syntax tree has {shape}")
    bindings = Bindings(parsed)
    calls = python_calls(parsed)

    def reaches_endpoint(name: str, obj, args) -> bool:
        obj_text = parsed.node_text(obj) if obj is not None else ""
        if name in HTTP_CALLS or (name in SHELL_CALLS and obj_text in ("os", "subprocess", "sp", "")):
            return bool(ENDPOINT.search(bindings.resolve(parsed.node_text(args))))
        return False

    def function_of(node) -> tree_sitter.Node | None:
        node = node.parent
        while node is not None and node.type != "function_definition":
            node = node.parent
        return node

    def function_name(node) -> str:
        name = node.child_by_field_name("name") if node is not None else None
        return parsed.node_text(name) if name is not None else ""

    direct = [call for name, obj, args, call in calls if reaches_endpoint(name, obj, args)]
    # Helper functions that call the endpoint (two levels): calls to them are validation calls too.
    seen = {(c.start_byte, c.end_byte) for c in direct}
    helpers: set[str] = set()
    frontier = list(direct)
    for _ in range(2):
        new_helpers = {function_name(function_of(c)) for c in frontier} - {""} - helpers
        if not new_helpers:
            break
        helpers |= new_helpers
        frontier = [c for name, obj, args, c in calls
                    if obj is None and name in new_helpers and (c.start_byte, c.end_byte) not in seen]
        seen.update((c.start_byte, c.end_byte) for c in frontier)
        direct.extend(frontier)
    called_helpers = {name for name, obj, args, call in calls if obj is None and name in helpers}

    sites: list[CallSite] = []
    for call in sorted(direct, key=lambda c: c.start_byte)[:MAX_SITES_PER_UNIT]:
        if function_name(function_of(call)) in called_helpers:
            continue  # counted where the helper is called
        count: int | None = 1
        loops: list[str] = []
        node = call.parent
        while node is not None:
            if node.type in ("for_statement", "while_statement"):
                n, text, known = loop_iterations(node, parsed, bindings)
                loops.append(text)
                if known and n is None:
                    count = None
                elif count is not None:
                    count = count * n if n is not None else count * 2  # a loop of unknown length: at least 2
            elif node.type in ("list_comprehension", "generator_expression", "set_comprehension",
                               "dictionary_comprehension"):
                for clause in node.named_children:
                    if clause.type == "for_in_clause":
                        n, text, known = loop_iterations(clause, parsed, bindings)
                        loops.append(text)
                        if count is not None:
                            count = count * n if n is not None else count * 2
            if node.type == "function_definition":
                break
            node = node.parent
        sites.append(CallSite(unit=unit, start=parsed.char_offset(call.start_byte),
                              end=parsed.char_offset(call.end_byte), calls=count, loop="; ".join(loops)))
    return sites


def _shell_loops(text: str) -> list[tuple[int, int, re.Match]]:
    """``(body start, body end, header match)`` of every ``for/while/until ... do ... done`` loop.

    ``do``/``done`` words are paired with a stack in one pass, so nested loops pair correctly
    and the cost stays linear in the text.
    """
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for token in _DO_DONE.finditer(text):
        if token.group(0) == "do":
            stack.append(token.end())
        elif stack:
            pairs[stack.pop()] = token.start()
    loops = []
    for header in _LOOP_HEADER.finditer(text):
        end = pairs.get(header.end())
        if end is not None:
            loops.append((header.end(), end, header))
    return loops


def _loop_size(header: re.Match) -> tuple[int | None, str, bool]:
    """``(count, text, known)`` of a shell loop header, as ``loop_iterations`` for Python."""
    head = header.group("head").strip()
    keyword = header.group("kw")
    if keyword in ("while", "until"):
        if re.fullmatch(r"(?:true|:|\[\s*1\s*\]|\(\(\s*1\s*\)\))", head):
            return None, f"{keyword} {head}", True
        return None, f"{keyword} {head[:40]}", False
    if (m := _SEQ.search(head)) is not None:
        numbers = [int(g) for g in m.groups() if g is not None]
        first, last = (numbers[0], numbers[-1]) if len(numbers) > 1 else (1, numbers[0])
        step = abs(numbers[1]) if len(numbers) == 3 and numbers[1] else 1
        return max((last - first) // step + 1, 0), head[:40], True
    if (m := _BRACE.search(head)) is not None:
        first, last = int(m.group(1)), int(m.group(2))
        step = int(m.group(3)) if m.group(3) else 1
        return abs(last - first) // max(step, 1) + 1, head[:40], True
    if (m := _C_STYLE.search(head)) is not None:
        first, op, last = int(m.group(1)), m.group(2), int(m.group(3))
        return max(last - first + (1 if op == "<=" else 0), 0), head[:40], True
    if " in " in f" {head} ":
        items = head.split(" in ", 1)[1].split()
        if items and not any(c in head for c in "$`*?"):
            return len(items), head[:40], True
    return None, head[:40], False


def shell_call_sites(unit: CodeUnit) -> list[CallSite]:
    sites: list[CallSite] = []
    loops: list[tuple[int, int, re.Match]] | None = None
    for command in split_shell_commands(unit.text):
        if not any(ENDPOINT.search(word) for word, _, _ in command.words):
            continue
        if len(sites) >= MAX_SITES_PER_UNIT:
            break
        if loops is None:
            loops = _shell_loops(unit.text)
        # The loop keyword that may open the command (`do curl ...`) is not the call itself.
        start = next((w[1] for w in command.words if w[0] not in ("do", "then", "else", "!")), command.start)
        enclosing = [loop for loop in loops if loop[0] <= start < loop[1]]
        count: int | None = 1
        texts = []
        for _, _, header in enclosing:
            n, text, known = _loop_size(header)
            texts.append(text)
            if known and n is None:
                count = None
            elif count is not None:
                count = count * n if n is not None else count * 2  # a loop of unknown length: at least 2
        sites.append(CallSite(unit=unit, start=command.start, end=command.end, calls=count, loop="; ".join(texts)))
    return sites
