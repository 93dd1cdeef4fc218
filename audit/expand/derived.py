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


#: A Python interpreter by its command name (``python``, ``python3.11``, ``/usr/bin/python3``).
_PYTHON_NAME = re.compile(r"(?:.*/)?python[\d.]*")
#: What a backslash escapes inside a double-quoted bash string.
_DQ_ESCAPE = re.compile(r'\\([$`"\\\n])')


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
        One per ``-c`` argument of a ``python``/``python3``/``pythonX.Y`` command written as a
        word or a quoted string (a double-quoted one with its escapes undone; one with a ``$``
        expansion is taken as written), ``language="python"``; ``origin`` is the argument's text.
    """
    parsed = parse(unit.text, "bash")
    if parsed.pathological() is not None:
        return []
    units: list[CodeUnit] = []
    for command in _commands(parsed.root):
        name = command.child_by_field_name("name")
        if name is None or not _PYTHON_NAME.fullmatch(parsed.node_text(name)):
            continue
        arguments = [child for child in command.children if child.is_named and child != name]
        for flag, value in zip(arguments, arguments[1:]):
            if parsed.node_text(flag) != "-c" or value.type not in ("word", "raw_string", "string"):
                continue
            start, end = parsed.char_offset(value.start_byte), parsed.char_offset(value.end_byte)
            code = unit.text[start:end]
            if value.type != "word":
                start, end, code = start + 1, end - 1, code[1:-1]
            if value.type == "string":
                code = _DQ_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), code)
            if code.strip():
                units.append(CodeUnit(path=unit.path, language="python", text=code,
                                      origin=_sub_origin(unit, start, end, exact), source=unit.source,
                                      actor=unit.actor))
            break
    return units


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
    if "-c" in unit.text and "python" in unit.text:
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
