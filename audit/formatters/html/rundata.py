"""Texts and fragments of a run's flagged pairs: one hidden data block per run, each text stored once."""

from __future__ import annotations

import base64
import gzip
import html
import json
from bisect import bisect_left
from typing import Any, Callable, Mapping

from mleaudit.audit.formatters.common import pair_agent_label, pair_fragments

__all__ = ["COMPRESS_OVER", "CONTEXT_LINES", "MAX_FULL_LINES", "RunData"]

#: Sources with more lines than this show only the lines near fragments (logs can be long).
MAX_FULL_LINES = 400
#: Lines of context kept around fragments in a shortened source.
CONTEXT_LINES = 12
#: A run's data block (texts and fragments, as JSON) longer than this is stored gzip-compressed
#: in base64 (a quarter of the size) and unpacked by the page's script.
COMPRESS_OVER = 256_000


def _utf16_offsets(text: str) -> Callable[[int], int]:
    """Map a character offset of ``text`` to the UTF-16 offset the page's script counts in."""
    astral = [i for i, ch in enumerate(text) if ord(ch) > 0xFFFF] if any(ord(ch) > 0xFFFF for ch in text) else []
    if not astral:
        return lambda offset: offset
    return lambda offset: offset + bisect_left(astral, offset)


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


class RunData:
    """The data block of one run: every text once (by number), and each flagged pair's fragments."""

    def __init__(self) -> None:
        self.texts: list[dict[str, Any]] = []
        self.pairs: dict[str, dict[str, Any]] = {}
        self._numbers: dict[tuple[str, str], int] = {}
        self._offsets: list[Callable[[int], int]] = []

    def text_number(self, side: str, path: str, info: Mapping[str, Any] | None) -> int | None:
        """The number of the text of ``path`` on ``side`` (``agent``/``reference``), added once."""
        if not isinstance(info, Mapping):
            return None
        key = (side, path)
        if key not in self._numbers:
            text = info.get("text")
            cells = [[_int(c.get("cell_index")), _int(c.get("start_line"), 1), _int(c.get("end_line"), 1)]
                     for c in info.get("cells") or [] if isinstance(c, Mapping)]
            record: dict[str, Any] = {"text": text if isinstance(text, str) else None, "cells": cells}
            if not isinstance(text, str):
                record["omitted"] = str(info.get("omitted") or "the report does not carry this file's text")
            self._numbers[key] = len(self.texts)
            self.texts.append(record)
            self._offsets.append(_utf16_offsets(text) if isinstance(text, str) else (lambda offset: offset))
        return self._numbers[key]

    def add_pair(self, pid: str, pair: Mapping[str, Any], sources: Mapping[str, Any]) -> int:
        """Record a flagged pair's fragments; returns how many there are."""
        kind, fragments = pair_fragments(pair)
        a = self.text_number("agent", pair["agent_path"], (sources.get("agent") or {}).get(pair["agent_path"]))
        b = self.text_number("reference", pair["reference_path"],
                             (sources.get("reference") or {}).get(pair["reference_path"]))

        def span(side: Mapping[str, Any], number: int | None) -> list[int]:
            shift = self._offsets[number] if number is not None else (lambda offset: offset)
            return [shift(_int(side.get("start_byte"), -1)), shift(_int(side.get("end_byte"), -1)),
                    _int(side.get("start_line")), _int(side.get("end_line"))]

        self.pairs[pid] = {
            "a": a, "b": b, "ap": pair_agent_label(pair), "bp": str(pair["reference_path"]), "k": kind,
            "f": [[span(f.get("agent") or {}, a), span(f.get("reference") or {}, b), _int(f.get("length"))]
                  for f in fragments],
        }
        return len(fragments)

    def block(self, prefix: str) -> str:
        """The hidden element holding the data, as JSON or (when large) gzip-compressed base64."""
        data = json.dumps({"texts": self.texts, "pairs": self.pairs, "full": MAX_FULL_LINES,
                           "context": CONTEXT_LINES}, separators=(",", ":"), ensure_ascii=True)
        if len(data) > COMPRESS_OVER:
            packed = base64.b64encode(gzip.compress(data.encode("ascii"), compresslevel=9, mtime=0)).decode("ascii")
            return (f'<div class="report-data" hidden data-run="{prefix}" data-encoding="gzip-base64">'
                    f"{packed}</div>")
        return f'<div class="report-data" hidden data-run="{prefix}" data-encoding="json">{html.escape(data, quote=False)}</div>'
