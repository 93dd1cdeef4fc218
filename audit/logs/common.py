"""Helpers shared by the log adapters: fast spans, JSON value regions, code-language guesses.

Log adapters turn a log file's text into :class:`audit.units.LogEvent` records whose spans
point back into that text. Logs can be large (tens of MB, hundreds of thousands of lines), so
spans are built from a precomputed line index instead of counting newlines for every event,
and JSON logs are located with the standard decoder's ``raw_decode`` so a string value's
region in the file is exact without a second JSON parser.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from typing import Any

from audit.model import Span

__all__ = ["SpanMaker", "json_array_regions", "json_member_regions", "string_content", "guess_code_language"]


class SpanMaker:
    """Builds :class:`Span` records for one text; equal to ``Span.from_offsets`` but O(log n).

    Parameters
    ----------
    text : str
        The whole file text.
    path : str
        POSIX path of the file, relative to the run root.
    """

    __slots__ = ("text", "path", "_starts")

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        starts = [0]
        find = text.find
        pos = find("\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = find("\n", pos + 1)
        self._starts = starts

    def _point(self, offset: int) -> tuple[int, int]:
        index = bisect_right(self._starts, offset) - 1
        return index + 1, offset - self._starts[index] + 1

    def span(self, start: int, end: int) -> Span:
        """The span of characters ``[start, end)`` (clamped to the text)."""
        start = max(0, min(start, len(self.text)))
        end = max(start, min(end, len(self.text)))
        start_line, start_col = self._point(start)
        end_line, end_col = self._point(end)
        return Span(
            path=self.path,
            start_byte=start,
            end_byte=end,
            start_line=start_line,
            start_col=start_col,
            end_line=end_line,
            end_col=end_col,
        )

    def line_span(self, offset: int) -> Span:
        """The span of the whole line holding ``offset`` (without its newline)."""
        index = bisect_right(self._starts, max(0, min(offset, len(self.text)))) - 1
        start = self._starts[index]
        end = self.text.find("\n", start)
        return self.span(start, len(self.text) if end == -1 else end)


_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()


def json_array_regions(text: str, start: int) -> list[tuple[int, int, Any]]:
    """Elements of the JSON array whose ``[`` is at ``start``: ``(value_start, value_end, value)``.

    Raises
    ------
    ValueError
        If the text at ``start`` is not a well-formed JSON array.
    """
    if text[start : start + 1] != "[":
        raise ValueError(f"no JSON array at offset {start}")
    regions = []
    pos = _skip_ws(text, start + 1)
    if text[pos : pos + 1] == "]":
        return regions
    while True:
        value, end = _DECODER.raw_decode(text, pos)
        regions.append((pos, end, value))
        pos = _skip_ws(text, end)
        sep = text[pos : pos + 1]
        if sep == "]":
            return regions
        if sep != ",":
            raise ValueError(f"expected ',' or ']' at offset {pos}")
        pos = _skip_ws(text, pos + 1)


def json_member_regions(text: str, start: int) -> dict[str, tuple[int, int]]:
    """Top-level members of the JSON object whose ``{`` is at ``start``: key -> value region.

    The region ``(value_start, value_end)`` is half-open and includes a string's quotes.

    Raises
    ------
    ValueError
        If the text at ``start`` is not a well-formed JSON object.
    """
    if text[start : start + 1] != "{":
        raise ValueError(f"no JSON object at offset {start}")
    members: dict[str, tuple[int, int]] = {}
    pos = _skip_ws(text, start + 1)
    if text[pos : pos + 1] == "}":
        return members
    while True:
        key, pos = _DECODER.raw_decode(text, pos)
        if not isinstance(key, str):
            raise ValueError(f"object key is not a string at offset {pos}")
        pos = _skip_ws(text, pos)
        if text[pos : pos + 1] != ":":
            raise ValueError(f"expected ':' at offset {pos}")
        value_start = _skip_ws(text, pos + 1)
        _, value_end = _DECODER.raw_decode(text, value_start)
        members.setdefault(key, (value_start, value_end))
        pos = _skip_ws(text, value_end)
        sep = text[pos : pos + 1]
        if sep == "}":
            return members
        if sep != ",":
            raise ValueError(f"expected ',' or '}}' at offset {pos}")
        pos = _skip_ws(text, pos + 1)


def string_content(text: str, region: tuple[int, int] | None) -> tuple[int, int] | None:
    """The region inside the quotes when ``region`` holds a JSON string literal, else ``None``."""
    if region is None:
        return None
    start, end = region
    if end - start >= 2 and text[start] == '"' and text[end - 1] == '"':
        return start + 1, end - 1
    return None


#: Command words that start a shell script rather than Python (not followed by ``=``, ``(``,
#: ``.`` or ``[``, which would make them Python names).
SHELL_WORDS = (
    "apt", "apt-get", "awk", "bash", "cat", "cd", "chmod", "conda", "cp", "curl", "df", "du", "echo",
    "export", "find", "git", "grep", "head", "kaggle", "kill", "ls", "mkdir", "mv", "nohup",
    "nvidia-smi", "pip", "pip3", "pkill", "ps", "python", "python3", "rm", "sed", "sh", "source",
    "sudo", "tail", "tar", "tee", "timeout", "touch", "uv", "unzip", "wc", "wget",
)  # fmt: skip
_SHELL_START = re.compile(
    r"^[ \t]*(?:"
    + "|".join(re.escape(w) for w in sorted(SHELL_WORDS, key=len, reverse=True))
    + r")(?=[ \t;&|<>]|$)(?![ \t]*=)"
)
_SHEBANG = re.compile(r"^#![ \t]*(?:/usr)?/bin/(?:env[ \t]+)?(\w+)")


def guess_code_language(text: str) -> str:
    """``"bash"`` when a block of executed code is a shell script, else ``"python"``.

    Agents run shell scripts through the same "code" action as Python (``cat > f.py <<'EOF'``,
    ``cd /home/code && python train.py``). The first line that is not blank and not a comment
    decides: a shell shebang or a known command word (:data:`SHELL_WORDS`) means bash.

    Examples
    --------
    >>> guess_code_language("cd /home/code && python train.py")
    'bash'
    >>> guess_code_language("import pandas as pd\\ncat = pd.read_csv('x.csv')")
    'python'
    """
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        shebang = _SHEBANG.match(stripped)
        if shebang is not None:
            return "python" if shebang.group(1).startswith("python") else "bash"
        if stripped.startswith("#"):
            continue
        return "bash" if _SHELL_START.match(line) else "python"
    return "python"
