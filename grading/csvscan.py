"""Bounded pre-scan of a submission CSV, before pandas reads it.

A submission is written by the agent being graded, so its bytes may be built to make the
parser slow: pandas' cost grows faster than the file with the number of fields on a line (a
160 KB line of commas is 160,000 columns, a minute and a gigabyte to read), and a single field
or line may hold hundreds of megabytes. :func:`check_csv_limits` reads the raw bytes once, in
fixed-size chunks, and raises :class:`~mleaudit.grading.errors.InvalidSubmission` as soon as a record
has more fields than :attr:`CsvLimits.max_columns`, a field more bytes than
:attr:`CsvLimits.max_field_bytes` or a record more bytes than :attr:`CsvLimits.max_line_bytes`,
naming the line of the file (the header is line 1) and the cap. Its work and memory are
linear in the file and bounded per chunk, whatever the bytes.

The scan splits records and fields as pandas' C tokenizer does with its default dialect
(delimiter ``,``, quote ``"`` doubled inside quoted fields, no escape character, line ends
``\\n``, ``\\r\\n`` and a lone ``\\r``): a quote opens a quoted field only at the start of a
field, and after the closing quote the field goes on unquoted, its quotes literal. The
quoting state is found from the runs of quote bytes alone (an odd run toggles it when it
closes a quoted field, or opens one at a field start), with NumPy, so files with many quoted
fields cost no Python loop per field. Lengths leave out the delimiters and line ends; the
counts are pandas' own, except that pandas drops a delimiter right after a blank line ended by
a lone ``\\r``, which the scan counts (one field more, never fewer).

Most submissions are short lines of numbers and labels: a chunk with no quote in which every
aligned block of about half the smallest cap holds a line end cannot hold a line over the caps,
and is passed after a few ``memchr``-speed passes, so a million-row file costs a few
milliseconds more than pandas' own read.

The caps (:data:`DEFAULT_CSV_LIMITS`, :data:`TEXT_CSV_LIMITS`) are far above what any
MLE-bench competition's submissions need: the widest has 121 columns
(dog-breed-identification), and the longest cells are run-length encoded masks of whole-slide
images (hubmap-kidney-segmentation, vesuvius-challenge-ink-detection), a few megabytes each.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from mleaudit.grading.errors import InvalidSubmission

__all__ = [
    "CsvLimits",
    "DEFAULT_CSV_LIMITS",
    "TEXT_CSV_LIMITS",
    "check_csv_limits",
    "invalid_utf8_line",
    "record_line",
]

_MIB = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class CsvLimits:
    """Caps on the shape of a submission CSV.

    Attributes
    ----------
    max_columns : int
        Fields on one record (the header included).
    max_field_bytes : int
        Bytes of one field, quotes included.
    max_line_bytes : int
        Bytes of one record (a quoted field may span several lines of the file), delimiters
        included, its line end not.
    """

    max_columns: int
    max_field_bytes: int
    max_line_bytes: int

    def __post_init__(self) -> None:
        for name in ("max_columns", "max_field_bytes", "max_line_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"CsvLimits.{name} must be a positive integer, not {value!r}")


#: Caps for submissions of numbers, probabilities and labels.
DEFAULT_CSV_LIMITS = CsvLimits(max_columns=1024, max_field_bytes=1 * _MIB, max_line_bytes=4 * _MIB)
#: Caps for submissions whose targets are text (run-length encoded masks, box lists, sentences,
#: label lists), and for competitions graded by a custom grader.
TEXT_CSV_LIMITS = CsvLimits(max_columns=1024, max_field_bytes=64 * _MIB, max_line_bytes=128 * _MIB)


#: Bytes read and scanned at a time; a chunk's index arrays hold at most one int64 per byte.
CHUNK_BYTES = 1 * _MIB

_COMMA, _LF, _CR, _QUOTE = 0x2C, 0x0A, 0x0D, 0x22
_BOM = b"\xef\xbb\xbf"


class _OverCap(Exception):
    """A record over a cap: which cap, and the offset in the file where the record starts."""

    def __init__(self, kind: str, record_start: int) -> None:
        super().__init__(kind, record_start)
        self.kind = kind
        self.record_start = record_start


@dataclass(slots=True)
class _State:
    """What the scan carries from one chunk to the next (offsets are of the whole file)."""

    inside: bool = False  # within a quoted field
    prev_byte: int = -1  # the byte before the chunk; -1 at the start of the file
    pending: bool = False  # a run of quote bytes reached the last chunk's end ...
    pending_odd: bool = False  # ... its length so far is odd ...
    pending_capable: bool = False  # ... and it starts a field
    record_start: int = 0
    field_start: int = 0
    record_commas: int = 0  # delimiters seen in the open record


class _Scanner:
    """The scan's state and chunk passes; raises :class:`_OverCap`."""

    def __init__(self, limits: CsvLimits, start: int) -> None:
        self.limits = limits
        self.state = _State(record_start=start, field_start=start)
        # A line of at most `short` bytes cannot break a cap: it has at most short + 1 fields.
        self.short = min(limits.max_columns - 1, limits.max_field_bytes, limits.max_line_bytes)
        block = max(1, (self.short + 2) // 2)
        # Blocks of whole 8-byte words let the block test reduce words instead of bytes.
        self.block = block - block % 8 if block >= 8 else block
        self.equal = np.empty(CHUNK_BYTES, dtype=bool)

    def scan(self, blob: bytearray, offset: int, lookahead: int, final: bool) -> None:
        r"""Scan one chunk that starts at ``offset``; ``lookahead`` is the byte after it (-1 at the end)."""
        buf = np.frombuffer(blob, dtype=np.uint8)
        if not self._fast_chunk(blob, buf, offset, lookahead):
            self._exact_chunk(buf, offset, lookahead, final)
        self.state.prev_byte = int(buf[-1])

    def _fast_chunk(self, blob: bytearray, buf: np.ndarray, offset: int, lookahead: int) -> bool:
        r"""Pass a chunk of short unquoted lines; ``False`` (nothing done) if it is not one.

        If every aligned block of ``block`` bytes holds a ``\n``, consecutive line ends are at
        most ``2 * block - 1`` bytes apart and no line between them has more than ``short``
        bytes. The lines cut by the chunk's ends are measured directly.
        """
        st = self.state
        n = len(buf)
        if st.inside or st.pending or n < 2 * self.block or blob.find(b'"') != -1:
            return False
        first = blob.find(b"\n")
        last = blob.rfind(b"\n")
        if first < 0 or offset + first - st.record_start > self.short or n - 1 - last > self.short:
            return False
        cr = blob.find(b"\r", last + 1)
        crlf = cr == n - 1 and lookahead == _LF  # a \r\n cut by the chunk's end
        if cr != -1 and not crlf:
            return False  # a lone \r after the last \n ends a record: the exact pass places it
        whole = n - n % self.block
        equal = self.equal[:whole]
        np.equal(buf[:whole], _LF, out=equal)
        if self.block % 8 == 0:
            words = equal.view(np.uint64).reshape(-1, self.block // 8)
            if not np.bitwise_or.reduce(words, axis=1).all():
                return False
        elif not equal.reshape(-1, self.block).any(axis=1).all():
            return False
        if crlf:
            st.record_start = st.field_start = offset + n + 1
            st.record_commas = 0
        else:
            st.record_start = offset + last + 1
            st.field_start = offset + max(last, blob.rfind(b",", last + 1)) + 1
            st.record_commas = blob.count(b",", last + 1)
        return True

    def _toggles(self, buf: np.ndarray, inside: bool, final: bool) -> tuple[np.ndarray, bool]:
        """Chunk positions of the quote runs that open or close a quoted field, and ``inside`` at the chunk's start.

        A run of quotes of even length never changes the state: doubled quotes inside a quoted
        field, an empty quoted field at a field start, literal quotes elsewhere. A run of odd
        length inside a quoted field closes it; outside, it opens one when it starts a field
        (after a delimiter, a line end or at the start of the file) and is literal text
        otherwise. So every odd run toggles the state except those literal ones, and the
        literal ones are found without a loop: counting odd runs from the first one met
        outside, the first literal one has an even index, and each next one is the first run
        unable to open a field whose index has the other parity (between two of them every
        run toggles, so the state outside comes back at every second run).
        """
        st = self.state
        n = len(buf)
        quotes = np.flatnonzero(buf == _QUOTE)
        joined = st.pending and len(quotes) and quotes[0] == 0
        if st.pending and not joined:
            # The run that reached the last chunk's end ended there.
            if st.pending_odd:
                inside = False if inside else st.pending_capable
            st.pending = False
        if not len(quotes):
            return np.empty(0, dtype=np.intp), inside
        cut = np.flatnonzero(np.diff(quotes) != 1)
        starts = quotes[np.r_[0, cut + 1]]
        ends = quotes[np.r_[cut, len(quotes) - 1]] + 1
        del quotes, cut
        odd = ((ends - starts) & 1).astype(bool)
        before = np.where(starts > 0, buf[np.maximum(starts - 1, 0)].astype(np.int16), st.prev_byte)
        capable = (before == _COMMA) | (before == _LF) | (before == _CR) | (before == -1)
        del before
        if joined:
            odd[0] ^= st.pending_odd
            capable[0] = st.pending_capable
            st.pending = False
        if ends[-1] == n and not final:
            # The run may go on in the next chunk: its effect waits for its whole length.
            st.pending, st.pending_odd, st.pending_capable = True, bool(odd[-1]), bool(capable[-1])
            starts, odd, capable = starts[:-1], odd[:-1], capable[:-1]
        odd_starts = starts[odd]
        odd_capable = capable[odd]
        keep = np.ones(len(odd_starts), dtype=bool)
        first = 1 if inside else 0  # inside, the first odd run closes the field
        weak = np.flatnonzero(~odd_capable[first:])
        if len(weak):
            parity = weak & 1
            heads = weak[np.r_[True, parity[1:] != parity[:-1]]]
            keep[(heads[1:] if parity[0] else heads) + first] = False
        return odd_starts[keep], inside

    def _exact_chunk(self, buf: np.ndarray, offset: int, lookahead: int, final: bool) -> None:
        """Split a chunk into records and fields exactly, and check every one."""
        st = self.state
        limits = self.limits
        n = len(buf)
        toggles, inside = self._toggles(buf, st.inside, final)
        st.inside = inside ^ bool(len(toggles) & 1)
        end = offset + n

        if inside and not len(toggles):
            seps = np.empty(0, dtype=np.intp)  # the whole chunk is within one quoted field
        else:
            seps = np.flatnonzero((buf == _COMMA) | (buf == _LF) | (buf == _CR))
            if len(toggles) or inside:
                seps = seps[(np.searchsorted(toggles, seps) & 1) == int(inside)]
        if len(seps):
            values = buf[seps]
            previous = np.where(seps > 0, buf[np.maximum(seps - 1, 0)].astype(np.int16), st.prev_byte)
            lf_of_crlf = (values == _LF) & (previous == _CR)
            del previous
            if lf_of_crlf.any():
                seps, values = seps[~lf_of_crlf], values[~lf_of_crlf]
            del lf_of_crlf
        if len(seps):
            # Where the next field starts: after the separator, after both bytes of a \r\n.
            following = np.where(seps < n - 1, buf[np.minimum(seps + 1, n - 1)].astype(np.int16), lookahead)
            after = seps + (offset + 1) + ((values == _CR) & (following == _LF))
            del following
            spots = seps + offset
            ends_at = np.flatnonzero(values != _COMMA)
            del values, seps
            field_starts = np.empty(len(spots), dtype=np.int64)
            field_starts[0] = st.field_start
            field_starts[1:] = after[:-1]
            long_fields = np.flatnonzero(spots - field_starts > limits.max_field_bytes)
            del field_starts
            if len(ends_at):
                record_starts = np.empty(len(ends_at), dtype=np.int64)
                record_starts[0] = st.record_start
                record_starts[1:] = after[ends_at[:-1]]
                commas = np.empty(len(ends_at), dtype=np.int64)
                commas[0] = ends_at[0] + st.record_commas
                commas[1:] = np.diff(ends_at) - 1
                found = []
                wide = np.flatnonzero(commas >= limits.max_columns)
                if len(wide):
                    found.append((int(wide[0]), 0, "columns"))
                if len(long_fields):
                    found.append((int(np.searchsorted(ends_at, long_fields[0])), 1, "field"))
                long_lines = np.flatnonzero(spots[ends_at] - record_starts > limits.max_line_bytes)
                if len(long_lines):
                    found.append((int(long_lines[0]), 2, "line"))
                if found:
                    record, _, kind = min(found)
                    if record < len(ends_at):
                        raise _OverCap(kind, int(record_starts[record]))
                st.record_start = int(after[ends_at[-1]])
                st.record_commas = len(spots) - int(ends_at[-1]) - 1
            else:
                st.record_commas += len(spots)
            st.field_start = int(after[-1])
            if len(long_fields):
                raise _OverCap("field", st.record_start)  # in the record still open
        # The record still open at the chunk's end.
        if st.record_commas >= limits.max_columns:
            raise _OverCap("columns", st.record_start)
        if end - st.field_start > limits.max_field_bytes:
            raise _OverCap("field", st.record_start)
        if end - st.record_start > limits.max_line_bytes:
            raise _OverCap("line", st.record_start)


def _line_number(handle: BinaryIO, offset: int) -> int:
    r"""The line of the file (from 1) holding byte ``offset``.

    Lines end at ``\n``, ``\r\n`` and a lone ``\r``, as pandas reads them; the count is of the
    line ends before ``offset``.
    """
    handle.seek(0)
    ends = 0
    carry = b""  # the last byte of the last piece, for a \r\n cut in two
    position = 0
    while position <= offset:
        piece = handle.read(min(CHUNK_BYTES, offset + 1 - position))
        if not piece:
            break
        before = piece[: offset - position]
        # A \r\n is one line end: its \r and \n are counted, the pair taken off once.
        ends += before.count(b"\n") + before.count(b"\r") - (carry + piece).count(b"\r\n")
        carry = piece[-1:]
        position += len(piece)
    return ends + 1


def _over_cap_error(path: Path, kind: str, line: int, limits: CsvLimits) -> InvalidSubmission:
    if kind == "columns":
        detail = f"has more than {limits.max_columns:,} fields (a submission may have at most {limits.max_columns:,} columns)"
        counts = {"max_columns": limits.max_columns}
    elif kind == "field":
        detail = f"has a field of more than {limits.max_field_bytes:,} bytes (the cap on one cell of this submission)"
        counts = {"max_field_bytes": limits.max_field_bytes}
    else:
        detail = f"starts a row of more than {limits.max_line_bytes:,} bytes (the cap on one row of this submission)"
        counts = {"max_line_bytes": limits.max_line_bytes}
    return InvalidSubmission(f"Submission file '{path}' line {line} {detail}.", reason="too-large", line=line,
                             counts=counts)


def check_csv_limits(path: str | os.PathLike[str], limits: CsvLimits = DEFAULT_CSV_LIMITS) -> int:
    r"""Check that a CSV file's records, fields and rows are within ``limits``, before it is parsed.

    Parameters
    ----------
    path : path-like
        The submission file.
    limits : CsvLimits
        The caps.

    Returns
    -------
    int
        The file's size in bytes.

    Raises
    ------
    InvalidSubmission
        At the first record over a cap, naming the line of the file it starts on (the header
        is line 1) and the cap; or if the file cannot be read.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "ok.csv").write_bytes(b'id,label\n1,"a, b"\n')
    18
    >>> check_csv_limits(folder / "ok.csv")
    18
    >>> (folder / "wide.csv").write_bytes(b"id,label\n1,2\n" + b"," * 5000 + b"\n")
    5014
    >>> check_csv_limits(folder / "wide.csv")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    mleaudit.grading.errors.InvalidSubmission: Submission file '...wide.csv' line 3 has more than 1,024 fields (a submission may have at most 1,024 columns).
    """
    path = Path(path)
    try:
        with path.open("rb", buffering=0) as handle:
            start = len(_BOM) if handle.read(len(_BOM)) == _BOM else 0  # pandas skips a UTF-8 BOM
            handle.seek(start)
            scanner = _Scanner(limits, start)
            offset = start
            current, following = bytearray(CHUNK_BYTES), bytearray(CHUNK_BYTES)
            got = handle.readinto(current) or 0
            try:
                while got:
                    more = handle.readinto(following) or 0
                    chunk = current if got == len(current) else current[:got]
                    scanner.scan(chunk, offset, following[0] if more else -1, more == 0)
                    offset += got
                    current, following, got = following, current, more
            except _OverCap as over:
                line = _line_number(handle, over.record_start)
                raise _over_cap_error(path, over.kind, line, limits) from None
    except OSError as exc:
        raise InvalidSubmission(f"Submission file '{path}' cannot be read: {exc.strerror or exc}", reason="unreadable") from None
    return offset


def record_line(path: str | os.PathLike[str], record: int) -> int | None:
    r"""The line of the file (from 1) where CSV record ``record`` starts.

    pandas' parser errors number records, not lines: ``Expected 2 fields in line 6`` counts
    the header, each blank line and each record as one "line", however many lines of the file
    a quoted field spans (``EOF inside string starting at row 5`` counts the same from 0). The
    records are split here with the :mod:`csv` module (default dialect, which splits them as
    pandas' default dialect does), and the line of the file where the wanted one starts is
    returned.

    Parameters
    ----------
    path : path-like
        The submission file (already within the caps of :func:`check_csv_limits`).
    record : int
        The 1-based record, blank lines counted.

    Returns
    -------
    int or None
        The line (the header is line 1); ``None`` if the file has fewer records or cannot be
        read through.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "s.csv"
    >>> _ = path.write_bytes(b'id,label\n1,"a\nb"\n\n2,0,1\n')
    >>> record_line(path, 4)
    5
    """
    import csv

    if isinstance(record, bool) or not isinstance(record, int) or record < 1:
        return None
    previous = csv.field_size_limit()
    try:
        csv.field_size_limit(max(TEXT_CSV_LIMITS.max_line_bytes, previous))
        with Path(path).open("r", encoding="utf-8-sig", errors="replace", newline="") as handle:
            reader = csv.reader(handle)
            for _ in range(record - 1):
                if next(reader, None) is None:
                    return None
            line = reader.line_num + 1
            return line if next(reader, None) is not None else None
    except (csv.Error, OSError, ValueError):
        return None
    finally:
        csv.field_size_limit(previous)


def invalid_utf8_line(path: str | os.PathLike[str]) -> int | None:
    r"""The line of the file (from 1) holding its first byte that is not valid UTF-8.

    Parameters
    ----------
    path : path-like
        The file.

    Returns
    -------
    int or None
        The line (lines end at ``\n``, ``\r\n`` and a lone ``\r``); ``None`` if the whole file
        decodes, or it cannot be read.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "s.csv"
    >>> _ = path.write_bytes(b"id,label\r\n1,caf\xe9\r\n")
    >>> invalid_utf8_line(path)
    2
    """
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with Path(path).open("rb") as handle:
            offset = 0
            while True:
                piece = handle.read(CHUNK_BYTES)
                buffered = len(decoder.getstate()[0])
                try:
                    decoder.decode(piece, final=not piece)
                except UnicodeDecodeError as exc:
                    return _line_number(handle, offset - buffered + exc.start)
                if not piece:
                    return None
                offset += len(piece)
    except OSError:
        return None
