"""Code units derived from other code: here-documents that feed Python, code given to ``python -c``,
IPython code read from a log
(its shell escapes as bash units), and the units of a log's CODE and COMMAND events.

A derived unit is located in its host file; when its parent's text is not a verbatim slice of the
host (decoded from a JSON string), it gets the parent's whole origin.
"""

from __future__ import annotations

import re

from mleaudit.audit.model import Span
from mleaudit.audit.notebooks import split_magics
from mleaudit.audit.parsing import LANGUAGES, parse
from mleaudit.audit.units import Actor, CodeUnit, LogEvent, LogEventKind


_HEREDOC = re.compile(r"<<(-?)[ \t]*(['\"]?)([A-Za-z_]\w*)\2")
_PYTHON_TARGET = re.compile(r"(?:\bpython[\d.]*\b|>>?[ \t]*\S+\.pyw?\b|\btee\b[^|;&\n]*\.pyw?\b)")


def _sub_origin(parent: CodeUnit, start: int, end: int, exact: bool) -> Span:
    """Where ``parent.text[start:end]`` lies in the host file.

    When ``parent``'s text is not a verbatim slice of its host (decoded from a JSON string),
    positions inside it cannot be mapped, so the whole of ``parent``'s origin is returned.
    """
    if parent.origin is not None and not exact:
        return parent.origin
    return parent.host_span(Span.from_offsets(parent.text, parent.path, start, end))


def heredoc_python_units(unit: CodeUnit, *, exact: bool = True) -> list[CodeUnit]:
    """Python units for the here-documents of a bash unit that feed Python.

    A here-document counts as Python when its command line runs ``python`` or writes a
    ``.py`` file (``cat > train.py <<'EOF'``, ``tee x.py <<EOF``, ``python - <<EOF``).

    Parameters
    ----------
    unit : CodeUnit
        A unit with ``language == "bash"``.
    exact : bool, optional
        Whether ``unit.text`` is a verbatim slice of its host at ``unit.origin``; when it is
        not (text decoded from JSON), each body's origin is ``unit.origin`` as a whole.

    Returns
    -------
    list of CodeUnit
        One per Python here-document, ``language="python"``, same ``path``, ``source`` and
        ``actor``; ``origin`` is the body's place in ``unit``'s host.
    """
    text = unit.text
    units: list[CodeUnit] = []
    pos = 0
    while True:
        match = _HEREDOC.search(text, pos)
        if match is None:
            return units
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.end())
        if line_end == -1:
            return units
        command_line = text[line_start : match.start()] + text[match.end() : line_end]
        delimiter, strip_tabs = match.group(3), match.group(1) == "-"
        body_start = line_end + 1
        scan = body_start
        body_end = len(text)
        end_of_doc = len(text)
        while scan <= len(text):
            nxt = text.find("\n", scan)
            nxt = len(text) if nxt == -1 else nxt
            line = text[scan:nxt]
            if (line.lstrip("\t") if strip_tabs else line).rstrip("\r") == delimiter:
                body_end = max(body_start, scan - 1)
                end_of_doc = nxt
                break
            scan = nxt + 1
        if _PYTHON_TARGET.search(command_line) and body_end > body_start:
            units.append(
                CodeUnit(
                    path=unit.path,
                    language="python",
                    text=text[body_start:body_end],
                    origin=_sub_origin(unit, body_start, body_end, exact),
                    source=unit.source,
                    actor=unit.actor,
                )
            )
        pos = max(end_of_doc, match.end())


#: A Python interpreter by its command name (``python``, ``python3.11``, ``/usr/bin/python3``, ``ipython``, ``pypy3``).
_PYTHON_NAME = re.compile(r"(?:.*/)?(?:i?python|pypy)[\d.]*")
#: Commands that run the command after them (their own options and values come first).
_WRAPPERS = frozenset({"env", "sudo", "doas", "timeout", "nohup", "exec", "time", "nice", "ionice", "stdbuf", "taskset",
                       "xargs", "srun", "command", "uv", "conda", "mamba", "micromamba", "poetry", "pipenv", "pixi",
                       "hatch", "pdm", "rye"})
#: The option whose value is the code, alone or last of combined short options (``-c``, ``-uc``).
_CODE_FLAG = re.compile(r"-[A-Za-z]*c")
#: The interpreter's options that take a value (``-W ignore``, ``-X dev``).
_VALUED_OPTIONS = frozenset({"-W", "-X", "-Q"})
#: What a backslash escapes inside a double-quoted bash string.
_DQ_ESCAPE = re.compile(r'\\([$`"\\\n])')
#: The escapes of an ANSI-C quoted bash string (``$'a\nb'``).
_ANSI_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)", re.DOTALL)
_ANSI_CHARS = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b", "E": "\x1b"}
#: ``python -c 'CODE'`` found in the text, for a unit whose tree is too deep or broken to walk.
_INLINE_TEXT = re.compile(r"""(?<![\w/.-])(?:i?python|pypy)[\d.]*(?:[ \t]+-[A-Za-z]+)*[ \t]+-[A-Za-z]*c[ \t]*"""
                          r"""('[^']*'|"(?:[^"\\]|\\.)*")""")


def inline_python_units(unit: CodeUnit, *, exact: bool = True) -> list[CodeUnit]:
    """Python units for the code a bash unit gives an interpreter inline: ``python -c 'CODE'``.

    Parameters
    ----------
    unit : CodeUnit
        A unit with ``language == "bash"`` (parsed with tree-sitter-bash, never run).
    exact : bool, optional
        As for :func:`heredoc_python_units`.

    Returns
    -------
    list of CodeUnit
        One per ``-c`` argument (``-c CODE``, ``-cCODE``, ``-uc CODE``) of a ``python``/``ipython``/
        ``pypy`` command, also behind a wrapper (``env``, ``timeout 60``, ``uv run``), up to its first
        other argument (a script, ``-m``); the argument a word, a quoted or ANSI-C quoted string or
        several of them side by side, quotes and escapes undone (a ``$`` expansion is taken as
        written); ``language="python"``; ``origin`` is the argument as written. A unit whose tree is
        too deep or broken to walk is searched as text for ``python -c`` with a quoted argument.
    """
    parsed = parse(unit.text, "bash")
    found: list[tuple[int, int, str]] = []
    if parsed.pathological() is not None:
        for match in _INLINE_TEXT.finditer(unit.text):
            start, end = match.span(1)
            found.append((start + 1, end - 1, _decoded(match.group(1))))
    else:
        for command in _commands(parsed.root):
            argument = _inline_argument(parsed, command)
            if argument is not None:
                found.append(argument)
    return [CodeUnit(path=unit.path, language="python", text=code, origin=_sub_origin(unit, start, end, exact),
                     source=unit.source, actor=unit.actor)
            for start, end, code in found if code.strip()]


def _inline_argument(parsed, command) -> tuple[int, int, str] | None:
    """``(start, end, code)`` of the ``-c`` argument of an interpreter command, else ``None``."""
    words = [child for child in command.children if child.is_named and child.type != "variable_assignment"]
    if words and words[0].type == "command_name":
        words[0] = words[0].children[0] if words[0].children else words[0]
    texts = [parsed.node_text(word) for word in words]
    at = 0
    if texts and texts[0].rsplit("/", 1)[-1] in _WRAPPERS:
        at = next((i for i, text in enumerate(texts) if _PYTHON_NAME.fullmatch(text)), len(texts))
    if at >= len(texts) or not _PYTHON_NAME.fullmatch(texts[at]):
        return None
    rest = words[at + 1:]
    index = 0
    while index < len(rest):
        node, text = rest[index], parsed.node_text(rest[index])
        if node.type == "concatenation" and node.children and _CODE_FLAG.fullmatch(parsed.node_text(node.children[0])):
            pieces = node.children[1:]  # -c"CODE", -c'A'"B"
            return _pieces(parsed, pieces) if pieces else None
        if _CODE_FLAG.fullmatch(text):
            return _pieces(parsed, _parts(rest[index + 1])) if index + 1 < len(rest) else None
        if node.type == "word" and text.startswith("-c"):  # -cCODE
            start = parsed.char_offset(node.start_byte) + 2
            return start, parsed.char_offset(node.end_byte), text[2:]
        if not text.startswith("-") or text == "-" or text.startswith("-m"):
            return None  # a script, standard input or a module: what follows are its arguments
        index += 2 if text in _VALUED_OPTIONS else 1
    return None


def _parts(node) -> list:
    return list(node.children) if node.type == "concatenation" else [node]


def _pieces(parsed, nodes: list) -> tuple[int, int, str] | None:
    """The code that bash makes of side-by-side words and strings, and where it is written."""
    code = []
    for node in nodes:
        text = parsed.node_text(node)
        if node.type == "raw_string":
            code.append(text[1:-1])
        elif node.type == "string":
            code.append(_decoded(text))
        elif node.type == "ansi_c_string":
            code.append(_ANSI_ESCAPE.sub(_ansi_char, text[2:-1]))
        elif node.type in ("word", "number"):
            code.append(text)
        else:
            return None
    if not nodes:
        return None
    start, end = parsed.char_offset(nodes[0].start_byte), parsed.char_offset(nodes[-1].end_byte)
    if len(nodes) == 1 and nodes[0].type in ("raw_string", "string"):
        start, end = start + 1, end - 1
    return start, end, "".join(code)


def _decoded(quoted: str) -> str:
    """A quoted bash string's text: single quotes as written, double quotes with escapes undone."""
    body = quoted[1:-1]
    if quoted.startswith("'"):
        return body
    return _DQ_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), body)


def _ansi_char(match: re.Match[str]) -> str:
    escape = match.group(1)
    if escape[0] == "x":
        return chr(int(escape[1:], 16))
    if escape[0] in "01234567":
        return chr(int(escape, 8) & 0xFF)
    return _ANSI_CHARS.get(escape, escape)


def _commands(root) -> list:
    """Every ``command`` node under ``root``, in source order (an explicit stack: no recursion limit)."""
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.type == "command":
            found.append(node)
        stack.extend(reversed(node.children))
    return found


def _with_heredocs(unit: CodeUnit, exact: bool = True) -> list[CodeUnit]:
    if unit.language != "bash":
        return [unit]
    derived = heredoc_python_units(unit, exact=exact) if "<<" in unit.text else []
    if "python" in unit.text or "pypy" in unit.text:
        derived += inline_python_units(unit, exact=exact)
    return [unit, *derived]


def _python_with_magics(path: str, text: str, origin: Span, exact: bool,
                        actor: Actor = Actor.UNKNOWN) -> list[CodeUnit]:
    """A Python unit from IPython code in a log, plus bash units for its shell escapes."""
    clean, commands = split_magics(text)
    unit = CodeUnit(path=path, language="python", text=text, origin=origin, source="log", actor=actor)
    units = [CodeUnit(path=path, language="python", text=clean, origin=origin, source="log", actor=actor)]
    for command in commands:
        shell = CodeUnit(
            path=path,
            language="bash",
            text=command.text,
            origin=_sub_origin(unit, command.start, command.end, exact),
            source="log",
            actor=actor,
        )
        units.extend(_with_heredocs(shell, exact))
    return units


def _log_units(events: list[LogEvent], host: str) -> list[CodeUnit]:
    units: list[CodeUnit] = []
    for event in events:
        if event.kind not in (LogEventKind.CODE, LogEventKind.COMMAND):
            continue
        span = event.span
        exact = (span.end_byte - span.start_byte == len(event.text)
                 and host[span.start_byte : span.end_byte] == event.text)
        language = "bash" if event.kind is LogEventKind.COMMAND else event.language
        language = language if language in LANGUAGES else "python"
        if language == "python":
            units.extend(_python_with_magics(span.path, event.text, span, exact, event.actor))
        else:
            unit = CodeUnit(path=span.path, language=language, text=event.text, origin=span, source="log",
                            actor=event.actor)
            units.extend(_with_heredocs(unit, exact))
    return units
