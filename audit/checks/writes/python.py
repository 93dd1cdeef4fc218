"""Write sites in Python code (tree-sitter): frame writers, ``open``, ``Path.write_*``, copies, renames, shell strings.

A path held in a variable is resolved through the unit's assignments, keyword arguments,
parameter defaults, dictionary keys and ``argparse`` defaults (:class:`Bindings`), at most three
levels; resolved text is cut at :data:`MAX_RESOLVED_CHARS` characters.
"""

from __future__ import annotations

import functools
import re

import tree_sitter

from mleaudit.audit.checks.writes.shell import find_shell_write_sites
from mleaudit.audit.checks.writes.site import WriteSite
from mleaudit.audit.parsing import PathologicalTree, get_language, parse
from mleaudit.audit.units import CodeUnit

#: Resolved path text is cut at this many characters.
MAX_RESOLVED_CHARS = 4000

_PY_CALLS = """
(call function: (identifier) @name arguments: (argument_list) @args) @call
(call function: (attribute object: (_) @obj attribute: (identifier) @name) arguments: (argument_list) @args) @call
"""
_PY_BINDINGS = """
(assignment left: (identifier) @name right: (_) @value)
(assignment left: (attribute attribute: (identifier) @name) right: (_) @value)
(assignment left: (subscript subscript: (string) @key) right: (_) @value)
(pair key: (string) @key value: (_) @value)
(default_parameter name: (identifier) @name value: (_) @value)
(typed_default_parameter name: (identifier) @name value: (_) @value)
(keyword_argument name: (identifier) @name value: (_) @value)
"""

_FRAME_WRITERS = frozenset({"to_csv", "write_csv", "sink_csv", "savetxt"})
_PATH_WRITERS = frozenset({"write_text", "write_bytes"})
_COPIERS = frozenset({"copy", "copyfile", "copy2", "move", "copytree"})
_RENAMERS = frozenset({"rename", "replace"})
_SHELL_RUNNERS = frozenset({"system", "run", "call", "check_call", "check_output", "Popen", "getoutput",
                            "getstatusoutput", "popen"})
_STRING_PREFIX = re.compile(r"^[rRbBuUfF]{0,2}(\"\"\"|'''|\"|')")
_CHAIN = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)(\s*\()?")
_QUOTED = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'")
_FIELD = re.compile(r"\{([^{}]*)\}")
_MODULES = frozenset({"os", "sys", "np", "numpy", "pd", "pandas", "pl", "polars", "shutil", "pathlib", "Path",
                      "math", "re", "json", "io", "glob", "datetime", "time", "str", "f"})
_KEY = re.compile(r"\[\s*[rbuRBU]?(['\"])(\w+)\1\s*\]")


@functools.lru_cache(maxsize=None)
def _query(source: str) -> tree_sitter.Query:
    return tree_sitter.Query(get_language("python"), source)


def _matches(source: str, root: tree_sitter.Node) -> list[dict[str, list[tree_sitter.Node]]]:
    return [caps for _, caps in tree_sitter.QueryCursor(_query(source)).matches(root)]


def _unquote(text: str) -> str:
    match = _STRING_PREFIX.match(text)
    if not match:
        return text
    quote = match.group(1)
    body = text[match.end():]
    return body[: -len(quote)] if body.endswith(quote) else body


def python_calls(parsed) -> list[tuple[str, tree_sitter.Node | None, tree_sitter.Node, tree_sitter.Node]]:
    """Every call of a parsed Python text as ``(name, object or None, argument list, call node)``.

    ``name`` is the called identifier (``post`` for ``requests.post(...)``), in source order.
    """
    out = []
    for caps in _matches(_PY_CALLS, parsed.root):
        out.append((parsed.node_text(caps["name"][0]), caps.get("obj", [None])[0], caps["args"][0], caps["call"][0]))
    out.sort(key=lambda item: item[3].start_byte)
    return out


def _arguments(args: tree_sitter.Node) -> tuple[list[tree_sitter.Node], dict[str, tree_sitter.Node]]:
    positional: list[tree_sitter.Node] = []
    keywords: dict[str, tree_sitter.Node] = {}
    for child in args.named_children:
        if child.type == "keyword_argument":
            name, value = child.child_by_field_name("name"), child.child_by_field_name("value")
            if name is not None and value is not None:
                keywords[name.text.decode("utf-8", errors="replace")] = value
        elif child.type != "comment":
            positional.append(child)
    return positional, keywords


def _pick(positional: list, keywords: dict, index: int, *names: str):
    for name in names:
        if name in keywords:
            return keywords[name]
    return positional[index] if len(positional) > index else None


class Bindings:
    """What a Python unit assigns to names, for resolving expressions textually: ``NAME = value``, ``obj.NAME = value``, ``{"NAME": value}``,
    ``f(NAME=value)``, ``def f(NAME=value)`` and ``add_argument("--name", default=value)``."""

    def __init__(self, parsed) -> None:
        """Collect the bindings of ``parsed`` (a :class:`mleaudit.audit.parsing.ParsedFile` of Python)."""
        self.values: dict[str, list[str]] = {}
        for caps in _matches(_PY_BINDINGS, parsed.root):
            value = caps.get("value", [None])[0]
            if value is None:
                continue
            if "name" in caps:
                name = parsed.node_text(caps["name"][0])
            else:
                name = _unquote(parsed.node_text(caps["key"][0]))
            self._add(name, parsed.node_text(value))
        for caps in _matches(_PY_CALLS, parsed.root):
            if parsed.node_text(caps["name"][0]) != "add_argument":
                continue
            positional, keywords = _arguments(caps["args"][0])
            flags = [_unquote(parsed.node_text(n)) for n in positional if n.type == "string"]
            dest = keywords.get("dest")
            name = _unquote(parsed.node_text(dest)) if dest is not None else (
                max(flags, key=len).lstrip("-").replace("-", "_") if flags else "")
            if name and "default" in keywords:
                self._add(name, parsed.node_text(keywords["default"]))

    def _add(self, name: str, value: str) -> None:
        values = self.values.setdefault(name, [])
        if value not in values and len(values) < 8:
            values.append(value)

    def resolve(self, text: str, depth: int = 3) -> str:
        """``text`` followed by the values bound to the names it uses, recursively."""
        seen: set[str] = set()
        parts = [text]
        frontier = [text]
        for _ in range(depth):
            names = []
            for piece in frontier:
                names.extend(_names(piece))
                names.extend(m.group(2) for m in _KEY.finditer(piece))
            frontier = []
            for name in names:
                if name in seen or name not in self.values:
                    continue
                seen.add(name)
                frontier.extend(self.values[name])
            if not frontier:
                break
            parts.extend(frontier)
            if sum(len(p) for p in parts) > MAX_RESOLVED_CHARS:
                break
        return " ".join(parts)[:MAX_RESOLVED_CHARS]


def _names(text: str) -> list[str]:
    """Names worth resolving in an expression: variables and attribute names, not module
    functions (``os.path.join``) or called names (``Path(...)``)."""
    # Words inside string literals are not names, except f-string fields ({OUT}).
    text = _QUOTED.sub(lambda m: " " + " ".join(_FIELD.findall(m.group(0))) + " ", text)
    names = []
    for match in _CHAIN.finditer(text):
        parts = [p.strip() for p in match.group(1).split(".")]
        if parts[0] in _MODULES:
            continue
        if match.group(2):  # a call: its arguments are matched separately, its name is not a value
            parts = parts[:-1]
        names.extend(parts)
    return names


def _has_literal(text: str) -> bool:
    return "'" in text or '"' in text


def find_python_write_sites(unit: CodeUnit) -> list[WriteSite]:
    """Write sites of a Python unit (see the module docstring for what counts).

    Parameters
    ----------
    unit : CodeUnit
        A unit with ``language == "python"``.

    Returns
    -------
    list of WriteSite
        In source order.

    Raises
    ------
    mleaudit.audit.parsing.PathologicalTree
        The syntax tree is too deep or too wide to walk: the checks built on the write sites
        cannot judge this unit, which the engine reports as an evaluation error (never as
        "no write").
    """
    parsed = parse(unit.text, "python")
    shape = parsed.pathological()
    if shape is not None:
        raise PathologicalTree(f"{unit.path}: write sites not found: the syntax tree has {shape}")
    bindings = Bindings(parsed)
    sites: list[WriteSite] = []

    def site(call, kind: str, target_node, sources=()) -> None:
        target = parsed.node_text(target_node) if target_node is not None else ""
        resolved = bindings.resolve(target)
        sites.append(WriteSite(
            start=parsed.char_offset(call.start_byte), end=parsed.char_offset(call.end_byte), kind=kind,
            target=target, resolved=resolved, literal=_has_literal(resolved),
            sources=tuple(bindings.resolve(parsed.node_text(s)) for s in sources),
        ))

    for caps in _matches(_PY_CALLS, parsed.root):
        name = parsed.node_text(caps["name"][0])
        call = caps["call"][0]
        obj = caps.get("obj", [None])[0]
        obj_text = parsed.node_text(obj) if obj is not None else ""
        positional, keywords = _arguments(caps["args"][0])
        if name in _FRAME_WRITERS:
            target = _pick(positional, keywords, 0, "path_or_buf", "file", "path", "fname")
            if target is not None:
                site(call, "to_csv", target)
        elif name == "open" and obj_text in ("", "io", "codecs", "gzip", "bz2", "lzma"):
            mode = _pick(positional, keywords, 1, "mode")
            if mode is not None and mode.type == "string" and re.search(r"[wax+]", _unquote(parsed.node_text(mode))):
                site(call, "open", _pick(positional, keywords, 0, "file", "filename"))
        elif name == "open" and obj is not None:
            # Path(...).open("w")
            mode = _pick(positional, keywords, 0, "mode")
            if mode is not None and mode.type == "string" and re.search(r"[wax+]", _unquote(parsed.node_text(mode))):
                site(call, "open", obj)
        elif name in _PATH_WRITERS and obj is not None:
            site(call, "write_text", obj)
        elif name in _COPIERS and obj_text in ("shutil", ""):
            site(call, "move" if name == "move" else "copy", _pick(positional, keywords, 1, "dst"),
                 sources=[n for n in positional[:1]])
        elif name in _RENAMERS and (obj_text == "os" or obj_text.startswith(("Path(", "pathlib."))):
            if obj_text == "os":
                site(call, "move", _pick(positional, keywords, 1, "dst"), sources=positional[:1])
            else:
                site(call, "move", _pick(positional, keywords, 0, "target"), sources=[obj])
        elif name in _SHELL_RUNNERS and obj_text in ("os", "subprocess", "sp", "commands", ""):
            command = _pick(positional, keywords, 0, "args", "cmd", "command")
            if command is None:
                continue
            if command.type == "list":
                text = " ".join(_unquote(parsed.node_text(n)) for n in command.named_children if n.type == "string")
            elif command.type == "string":
                text = _unquote(parsed.node_text(command))
            else:
                text = bindings.resolve(parsed.node_text(command))
            start = parsed.char_offset(call.start_byte)
            end = parsed.char_offset(call.end_byte)
            for inner in find_shell_write_sites(CodeUnit(path=unit.path, language="bash", text=text)):
                sites.append(WriteSite(start=start, end=end, kind="shell", target=inner.target,
                                       resolved=inner.resolved, literal=True, sources=inner.sources))
    sites.sort(key=lambda s: (s.start, s.end))
    return sites


# --- shell ----------------------------------------------------------------------------------
