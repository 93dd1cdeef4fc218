"""Telling a run file's kind from its content when its name says nothing: :func:`classify_content`.

Archives and binary data by their leading bytes, scripts by a shebang or a coding declaration,
Python by parsing (:func:`python_by_content`, failing closed in the folders the agent writes),
and any other text as a log. How the kind was told is returned as a note.
"""

from __future__ import annotations

import functools
import re
from pathlib import PurePosixPath

from mleaudit.audit.run.decoding import (
    BINARY_INVALID_SHARE,
    MIN_PRINTABLE_SHARE,
    _utf16_without_bom,
    decode_text,
    printable_share,
)
from mleaudit.audit.run.kinds import ArtifactKind
from mleaudit.audit.run.unparsable import surely_a_syntax_error


#: Bytes of a file looked at to tell its kind from its content.
SNIFF_BYTES = 64 * 1024
#: Files this large or smaller are parsed as Python to tell whether text without a telling name
#: or shebang is Python source (larger ones are read as logs).
_PARSE_SNIFF_BYTES = 1024 * 1024
#: Archive and compressed formats by their leading bytes: ``(offset, magic, name)``.
_ARCHIVE_MAGIC = (
    (0, b"PK\x03\x04", "zip"), (0, b"PK\x05\x06", "zip"), (0, b"PK\x07\x08", "zip"),
    (0, b"\x1f\x8b", "gzip"), (0, b"\xfd7zXZ\x00", "xz"), (0, b"7z\xbc\xaf\x27\x1c", "7z"),
    (0, b"\x28\xb5\x2f\xfd", "zstd"), (0, b"Rar!\x1a\x07", "rar"), (257, b"ustar", "tar"),
)  # fmt: skip
_BZIP2 = re.compile(rb"BZh[1-9]1AY&SY")
#: Backups and editor copies of a code file: ``train.py_2024-02-04_14-26-56``, ``x.py.bak``,
#: ``x.py~``, ``x.py.orig``, ``run.sh.1``.
_BACKUP_NAME = re.compile(r"\.(py|pyw|sh|bash|ipynb)(?:[_.~-][^/]*|~)$", re.IGNORECASE)
_BACKUP_LANGUAGE = {"py": "python", "pyw": "python", "sh": "bash", "bash": "bash", "ipynb": None}
_SHEBANG = re.compile(r"#![ \t]*(?:\S*/)?(?:env[ \t]+(?:-\S+[ \t]+)*)?([A-Za-z]+)")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash"})
#: Statements that make parsed text Python source rather than text that happens to parse
#: (``key: value`` lines parse as annotations), at any depth (an import inside ``if``).
_PYTHON_STATEMENTS = frozenset({
    "import_statement", "import_from_statement", "future_import_statement", "function_definition",
    "class_definition", "decorated_definition",
})
#: A line only Python source has: an import or a definition. In a folder the agent writes, text
#: with one is read as Python even when tree-sitter finds a syntax error in it (a script whose
#: grammar tree-sitter lacks, or one broken on purpose), so that its code is not let through as a
#: log the code rules never see.
_PYTHON_LINE = re.compile(
    r"^[ \t\f]*(?:import[ \t]+[A-Za-z_][\w.]*|from[ \t]+\.*[\w.]*[ \t]+import\b|(?:async[ \t]+)?def[ \t]+\w+[ \t]*\(|"
    r"class[ \t]+\w+[ \t]*[:(])", re.MULTILINE)
#: Lone carriage returns, which Python and a terminal read as line ends and tree-sitter does not.
LONE_CR = re.compile(r"\r(?!\n)")


#: Data formats by their leading bytes: ``(magic, name)``. A file under a folder the agent writes
#: is taken as data, unread, only when it is one of these (or an archive, which is a gap).
_DATA_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "PNG"), (b"\xff\xd8\xff", "JPEG"), (b"\x93NUMPY", "npy"),
    (b"PAR1", "parquet"), (b"\x89HDF\r\n\x1a\n", "HDF5"),
)  # fmt: skip
_PICKLE = re.compile(rb"\x80[\x02-\x05]")
#: The folders a run layout gives the agent to write in.
_AGENT_FOLDERS = frozenset({"code", "working", "workspace", "submission"})
_UNKNOWN_BINARY = "neither text nor a known data format, in a folder the agent writes (by content); not read"
#: A PEP 263 coding cookie, on one of a file's first two lines.
_CODING_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def _data_format(head: bytes) -> str | None:
    """The data format ``head`` starts with (:data:`_DATA_MAGIC`, a pickle protocol header)."""
    for magic, name in _DATA_MAGIC:
        if head.startswith(magic):
            return name
    return "pickle" if _PICKLE.match(head) else None


@functools.lru_cache(maxsize=8192)
def in_agent_folder(path: str) -> bool:
    """Whether ``path`` lies under a folder the agent writes (:data:`_AGENT_FOLDERS`)."""
    return any(part in _AGENT_FOLDERS for part in PurePosixPath(path).parts[:-1])


def _script_by_header(head: bytes) -> tuple[ArtifactKind, str | None, str] | None:
    """``CODE`` when ``head`` starts with a shell or Python shebang, or declares a Python source
    encoding in its first two lines (PEP 263), looked at as bytes, before any test for binary
    content; else ``None``."""
    lines = head.split(b"\n", 2)[:2]
    if head.startswith(b"#!"):
        shebang = _SHEBANG.match(lines[0].decode("latin-1").strip())
        if shebang is not None:
            program = shebang.group(1).lower()
            if program.startswith("python"):
                return ArtifactKind.CODE, "python", "read as python by content (python shebang)"
            if program in _SHELLS:
                return ArtifactKind.CODE, "bash", f"read as bash by content ({program} shebang)"
    for line in lines:
        if _CODING_COOKIE.match(line):
            return ArtifactKind.CODE, "python", "read as python by content (coding declaration)"
        if line.strip() and not line.lstrip().startswith(b"#"):
            break
    return None


def _archive_format(head: bytes) -> str | None:
    for offset, magic, name in _ARCHIVE_MAGIC:
        if head[offset : offset + len(magic)] == magic:
            return name
    return "bzip2" if _BZIP2.match(head) else None


#: Where an import or a definition can start: at the start of the text or of a line, or after
#: ``;`` or ``:``, past blanks, tree-sitter's other blanks (BOM, zero-width space, word joiner)
#: and line continuations (a backslash before a line end or a NUL). A text without one cannot
#: pass :func:`_parses_as_python`, which spares parsing a long log that has none.
_MODULE_STATEMENT_START = re.compile(
    "(?:\\A|[;:\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029])[ \t\r\n\x0b\x0c\x00\ufeff\u2060\u200b\\\\]*"
    "(?:import|from|def|class|async|@)")
_STATEMENT_QUERY = "[" + " ".join(f"({name})" for name in sorted(_PYTHON_STATEMENTS)) + "] @statement (call) @call"


def _python_tree(text: str):
    """tree-sitter's Python tree of ``text``, lone carriage returns read as line ends as Python
    reads them (one character for one)."""
    from mleaudit.audit.parsing import get_parser

    if "\r" in text:
        text = LONE_CR.sub("\n", text)
    return get_parser("python").parse(text.encode("utf-8", errors="replace"))


@functools.cache
def _statement_query():
    import tree_sitter

    from mleaudit.audit.parsing import get_language

    return tree_sitter.Query(get_language("python"), _STATEMENT_QUERY)


def _python_nodes(root) -> dict:
    """The nodes of :data:`_PYTHON_STATEMENTS` (``"statement"``) and the calls (``"call"``) in
    the tree under ``root``, at any depth."""
    import tree_sitter

    return tree_sitter.QueryCursor(_statement_query()).captures(root)


def _parses_as_python(text: str) -> bool:
    """Whether ``text`` parses as Python without a syntax error and holds an import or a
    definition (at any depth; tree-sitter, the text is only parsed)."""
    if _MODULE_STATEMENT_START.search(text) is None:
        return False
    if surely_a_syntax_error(LONE_CR.sub("\n", text) if "\r" in text else text):
        return False  # the parse would find the error: it is spared
    root = _python_tree(text).root_node
    return not root.has_error and "statement" in _python_nodes(root)


def python_by_content(text: str, agent_folder: bool, top: bool = False) -> str | None:
    """Why ``text``, in a file whose name says nothing, is Python source, or ``None`` if it is not.

    Anywhere: it parses without a syntax error and holds an import or a definition. In a folder
    the agent writes, where a script may be saved without its extension, fail closed: it is
    Python also when it parses and calls something, or when a line imports or defines something
    (:data:`_PYTHON_LINE`) though tree-sitter finds a syntax error or the text is too large to
    parse here. At the top of the run (``top``; a bare folder of files is the agent's too) it is
    Python when it parses and calls something; a scaffold's log there may echo a script, so a
    telling line alone is not enough. Text longer than :data:`_PARSE_SNIFF_BYTES` characters is
    not parsed.
    """
    if "\r" in text:
        text = LONE_CR.sub("\n", text)
    small = len(text) <= _PARSE_SNIFF_BYTES
    calls = agent_folder or top
    # A text whose first lines rule out an error-free parse is spared the parse (unparsable): it
    # would find a syntax error, as surely_a_syntax_error tells it would.
    if small and (calls or _MODULE_STATEMENT_START.search(text) is not None) and not surely_a_syntax_error(text):
        root = _python_tree(text).root_node
        if not root.has_error:
            nodes = _python_nodes(root)
            if "statement" in nodes:
                return "parses as Python source"
            if calls and "call" in nodes:
                where = _IN_AGENT_FOLDER if agent_folder else ", at the top of the run"
                return f"parses as Python source with calls{where}"
            return None
    if agent_folder and _PYTHON_LINE.search(text) is not None:
        why = "with syntax errors" if small else "too large to parse when telling its kind"
        return f"Python imports or definitions, {why}{_IN_AGENT_FOLDER}"
    return None


_IN_AGENT_FOLDER = ", in a folder the agent writes"


def classify_content(path: str, data: bytes) -> tuple[ArtifactKind, str | None, str]:
    """The kind of a run file whose name says nothing, from its content.

    Parameters
    ----------
    path : str
        POSIX path relative to the run root (a backup name such as ``train.py_2024-02-04`` is
        a hint).
    data : bytes
        The file's first bytes (untrusted; only :data:`SNIFF_BYTES` are looked at for binary
        content, all of it up to 1 MiB is parsed to tell Python from other text).

    Returns
    -------
    (ArtifactKind, str or None, str)
        The kind, the grammar name for code and a note saying how the kind was found:

        - an archive (zip, gzip, tar, bzip2, xz, 7z, zstd, rar by its leading bytes):
          ``OTHER`` (not read: it may hold code or logs, so it stays a gap);
        - binary content (a NUL byte, or text that decodes to under
          :data:`MIN_PRINTABLE_SHARE` printable characters in any encoding): ``DATA``;
        - a notebook backup (``x.ipynb~`` holding JSON): ``NOTEBOOK``;
        - Python: a backup of a ``.py`` file (``train.py_<timestamp>``, ``x.py.bak``, ``x.py~``),
          a Python shebang, text that parses as Python with an import or a definition (lone
          carriage returns read as line ends), or, in a folder the agent writes or at the top
          of the run, text that parses and calls something or has a line that imports or
          defines something (:func:`python_by_content`): ``CODE`` ``"python"``;
        - a shell script (a ``sh``/``bash`` shebang, a backup of a ``.sh`` file): ``CODE``
          ``"bash"``;
        - any other text (JSON, JSONL, YAML, HTML, Markdown, transcripts): ``LOG``.

    Examples
    --------
    >>> classify_content("backup/train.py_2024-02-04_14-26-56", b"import os\\n")[:2]
    (<ArtifactKind.CODE: 'code'>, 'python')
    >>> classify_content("agent_log/main_log", b"Step 0:\\nAction: List Files\\n")
    (<ArtifactKind.LOG: 'log'>, None, 'read as a log by content (text)')
    >>> classify_content("blob", b"\\x89PNG\\r\\n\\x1a\\n\\x00\\x00")
    (<ArtifactKind.DATA: 'data'>, None, 'binary file, not read (by content: NUL bytes)')
    """
    head = data[:SNIFF_BYTES]
    archive = _archive_format(head)
    if archive is not None:
        return ArtifactKind.OTHER, None, f"{archive} archive (by content), not read: it may hold code or logs"
    # A shebang or a coding cookie makes the file a script whatever follows: it is read as code,
    # so that NUL bytes or control characters in it are a gap when it is expanded, never "data".
    script = _script_by_header(head)
    if script is not None:
        return script
    # Under a folder the agent writes, binary content is data only in a known data format.
    data_format = _data_format(head)
    agents = in_agent_folder(path) and data_format is None
    if not head.startswith((b"\xff\xfe", b"\xfe\xff")) and b"\x00" in head and _utf16_without_bom(data) is None:
        if agents:
            return ArtifactKind.OTHER, None, _UNKNOWN_BINARY + " (NUL bytes)"
        return ArtifactKind.DATA, None, "binary file, not read (by content: NUL bytes)"
    if len(data) > len(head):
        # Decode whole lines only, so a character cut at the sample's end is not counted as junk.
        line_end = head.rfind(b"\n")
        head = head[: line_end + 1] if line_end > 0 else head
    sample, _ = decode_text(head)
    if len(sample) >= 64 and sample.count("\ufffd") > BINARY_INVALID_SHARE * len(sample):
        if agents:
            return ArtifactKind.OTHER, None, _UNKNOWN_BINARY + " (not text in any encoding)"
        return ArtifactKind.DATA, None, "binary file, not read (by content: not text in any encoding)"
    if printable_share(sample) < MIN_PRINTABLE_SHARE:
        # Control characters in a comment or a string do not stop Python from running the file
        # (nor does a leading data magic such as ``PAR1``): Python among them is a gap wherever
        # it lies, as any such file in a folder the agent writes is.
        text = sample if len(data) == len(head) else decode_text(data)[0]
        if agents or python_by_content(text, agent_folder=True) is not None:
            what = _UNKNOWN_BINARY if agents else "Python source among control characters (by content); not read"
            return ArtifactKind.OTHER, None, what + " (control characters)"
        return ArtifactKind.DATA, None, "binary file, not read (by content: control characters)"
    stripped = sample.lstrip()
    backup = _BACKUP_NAME.search(PurePosixPath(path).name)
    if backup is not None:
        extension = backup.group(1).lower()
        if extension == "ipynb":
            if stripped.startswith("{"):
                return ArtifactKind.NOTEBOOK, None, "read as a notebook by content (a copy of a .ipynb file)"
        else:
            language = _BACKUP_LANGUAGE[extension]
            return ArtifactKind.CODE, language, f"read as {language} by content (a copy of a .{extension} file)"
    first_line = sample.split("\n", 1)[0].strip()
    shebang = _SHEBANG.match(first_line)
    if shebang is not None:
        program = shebang.group(1).lower()
        if program.startswith("python"):
            return ArtifactKind.CODE, "python", "read as python by content (python shebang)"
        if program in _SHELLS:
            return ArtifactKind.CODE, "bash", f"read as bash by content ({program} shebang)"
    # JSON parses as Python (a dict, a list) with no call or import in it, and Python may start
    # with a bracket too: the Python test comes first.
    agent_folder, top = in_agent_folder(path), "/" not in path
    json_like = stripped[:1] in ("{", "[")
    if len(data) <= _PARSE_SNIFF_BYTES or agent_folder:
        text = sample if len(data) == len(head) else decode_text(data)[0]
        why = python_by_content(text, agent_folder, top)
        if why is not None:
            return ArtifactKind.CODE, "python", f"read as python by content ({why})"
    if json_like:
        return ArtifactKind.LOG, None, "read as a log by content (JSON)"
    return ArtifactKind.LOG, None, "read as a log by content (text)"
