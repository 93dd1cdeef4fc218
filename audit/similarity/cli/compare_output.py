"""``similarity compare``'s rows: their order, their TSV and JSON forms, spilled to disk until written.

The rows of every batch of agent files go to a temporary file as they come (:class:`_Spill`), so
that the output is the same sorted table or JSON document however many agent files are given.
"""

from __future__ import annotations

import json
import tempfile
from typing import Any, Iterator

import click

from mleaudit.audit.model import Skipped
from mleaudit.audit.similarity.cli.output import TOO_SHORT, _too_short, _warn_skipped

#: Column order of ``similarity compare``.
COMPARE_COLUMNS = ("agent", "reference", "similarity", "agent_containment", "reference_containment",
                   "longest_fragment", "total_overlap", "score", "flagged")


def _compare_order(pair) -> tuple:
    """Output order of ``similarity compare``: score, then agent containment (both descending),
    then agent path and reference path."""
    return (-pair.score, -pair.agent_containment, pair.agent_path, pair.reference_path)


def _kept_rows(pairs, top: int | None) -> list:
    """``pairs`` in output order, at most ``top`` per agent file."""
    ordered = sorted(pairs, key=_compare_order)
    if top is None:
        return ordered
    kept: dict[str, int] = {}
    rows = []
    for pair in ordered:
        if kept.get(pair.agent_path, 0) < top:
            kept[pair.agent_path] = kept.get(pair.agent_path, 0) + 1
            rows.append(pair)
    return rows



class _Spill:
    """Output rows written to a temporary file as they come and read back in output order.

    Only each row's sort key, offset and length stay in memory, so ``similarity compare`` writes
    the same sorted output as if it held every pair, in memory bounded by one batch of pairs.
    """

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()
        self._rows: list[tuple[tuple, int, int]] = []
        self._end = 0

    def add(self, key: tuple, text: str) -> None:
        data = text.encode("utf-8")
        self._file.write(data)
        self._rows.append((key, self._end, len(data)))
        self._end += len(data)

    def __len__(self) -> int:
        return len(self._rows)

    def texts(self) -> Iterator[str]:
        """The rows' texts in key order (ties: order of arrival)."""
        self._file.flush()
        for _, offset, length in sorted(self._rows, key=lambda row: row[0]):
            self._file.seek(offset)
            yield self._file.read(length).decode("utf-8")

    def close(self) -> None:
        self._file.close()


def _compare_record(pair) -> dict[str, Any]:
    """One pair of ``similarity compare``'s JSON output; figures of a too-short pair are ``null``."""
    data = pair.to_dict()
    data.update({"agent": pair.agent_path, "reference": pair.reference_path})
    if _too_short(pair.agent_total, pair.reference_total):
        data.update({"too_short": True, "note": TOO_SHORT, "similarity": None, "agent_containment": None,
                     "reference_containment": None})
    return data


def _compare_tsv_row(pair) -> list[str]:
    if _too_short(pair.agent_total, pair.reference_total):
        figures = [TOO_SHORT, "-", "-"]
    else:
        figures = [f"{pair.similarity:.6f}", f"{pair.agent_containment:.6f}", f"{pair.reference_containment:.6f}"]
    return [pair.agent_path, pair.reference_path, *figures, str(pair.longest_fragment), str(pair.total_overlap),
            f"{pair.score:.6f}", "true" if pair.flagged else "false"]


def _json_member(key: str, value: Any, *, last: bool = False) -> str:
    """``  "key": value`` as ``json.dumps(..., indent=2, sort_keys=True)`` writes a top-level member."""
    text = json.dumps(value, indent=2, sort_keys=True).replace("\n", "\n  ")
    return f"  {json.dumps(key)}: {text}{'' if last else ','}\n"



def _write_compare(spill: _Spill, fmt: str, *, threshold: float, options, digest: str,
                   skipped: list[Skipped], decodings: list) -> None:
    """Write the spilled rows: a TSV table, or the JSON document written member by member (the same
    text as ``json.dumps(document, indent=2, sort_keys=True)``), pairs one at a time; ``decodings``:
    the agent files and listed reference kernels that were not plain UTF-8."""
    def write(text: str) -> None:
        click.echo(text, nl=False)

    if fmt != "json":
        _warn_skipped(skipped)
        write("\t".join(COMPARE_COLUMNS) + "\n")
        for text in spill.texts():
            write(text)
        return
    write("{\n" + _json_member("corpus_digest", digest)
          + _json_member("decodings", [d.to_dict() for d in decodings]) + _json_member("options", options.to_dict()))
    if not len(spill):
        write('  "pairs": [],\n')
    else:
        write('  "pairs": [\n')
        for number, text in enumerate(spill.texts()):
            write(("" if number == 0 else ",\n") + "    " + text)
        write("\n  ],\n")
    write(_json_member("score_threshold", threshold)
              + _json_member("skipped", [s.to_dict() for s in skipped], last=True) + "}\n")
