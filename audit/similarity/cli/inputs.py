"""The ``.py`` and ``.ipynb`` files named on the command line, read as code units (never run)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import click

from mleaudit.audit.cli_options import InputError
from mleaudit.audit.model import Skipped
from mleaudit.audit.similarity.cli.output import _safe
from mleaudit.audit.units import CodeUnit

#: Suffixes read as code.
CODE_SUFFIXES = (".py", ".ipynb")


def _read_code(path: Path, shown: str, decodings: list | None = None) -> CodeUnit | Skipped:
    """A ``.py`` or ``.ipynb`` file as a code unit whose path is ``shown`` (never executed); how a
    file that was not plain UTF-8 was read is said on stderr and appended to ``decodings``."""
    from mleaudit.audit.similarity.corpus import MAX_REFERENCE_BYTES, decode_kernel_bytes
    from mleaudit.grading.untrusted_json import replace_surrogates

    if path.is_symlink():
        return Skipped(path=shown, reason="symbolic link (not followed)")
    size = path.stat().st_size
    if size > MAX_REFERENCE_BYTES:
        return Skipped(path=shown, reason=f"file too large ({size} bytes > {MAX_REFERENCE_BYTES})")
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Skipped(path=shown, reason=f"cannot read: {exc.strerror or exc}")
    # UTF-8 decoded as it is (Dolos keeps "\r\n" and a BOM, and so must the figures); any other
    # encoding as the audit reads it (cp1252, GBK, UTF-16 ...), the encoding said on stderr
    decoded = decode_kernel_bytes(data, shown, notebook=path.suffix.lower() == ".ipynb")
    if isinstance(decoded, Skipped):
        return decoded
    text, decoding = decoded
    if decoding.note is not None:
        click.echo(f"read {_safe(shown)} as {_safe(decoding.encoding)}: {_safe(decoding.note)}", err=True)
        if decodings is not None:
            # named as the pairs name the file (a name that is not UTF-8 shows U+FFFD there)
            decodings.append(decoding._replace(path=replace_surrogates(shown)))
    if path.suffix.lower() == ".py":
        return CodeUnit(path=shown, language="python", text=text, source="file")
    from mleaudit.audit.notebooks import NotebookError, read_notebook
    from mleaudit.audit.parsing import LANGUAGES

    try:
        notebook = read_notebook(text, shown)
    except NotebookError as exc:
        return Skipped(path=shown, reason=str(exc))
    if notebook.language not in LANGUAGES:
        return Skipped(path=shown, reason=f"kernel language {notebook.language!r} has no grammar")
    return CodeUnit(path=shown, language=notebook.language, text=notebook.text, cells=notebook.cells,
                    source="notebook")


def _collect(paths: Iterable[str], decodings: list | None = None) -> tuple[list[CodeUnit], list[Skipped]]:
    """Code units of the given files and folders (recursively), paths shown as given; the
    :class:`~mleaudit.audit.similarity.corpus.TextDecoding` of each file not in plain UTF-8 is appended
    to ``decodings``."""
    units: list[CodeUnit] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for given in paths:
        root = Path(given)
        if root.is_dir():
            base = given.rstrip("/") or "/"
            found = []
            for path in sorted(root.rglob("*")):
                relative = path.relative_to(root)
                if any(part.startswith(".") for part in relative.parts):
                    continue  # .git, .ipynb_checkpoints
                if path.suffix.lower() in CODE_SUFFIXES and (path.is_file() or path.is_symlink()):
                    found.append((path, f"{base}/{relative.as_posix()}" if base != "/" else f"/{relative.as_posix()}"))
        elif root.is_file() or root.is_symlink():
            if root.suffix.lower() not in CODE_SUFFIXES:
                raise InputError(f"{given}: not a .py or .ipynb file")
            found = [(root, given)]
        else:
            raise InputError(f"{given}: no such file or folder")
        for path, shown in found:
            if shown in seen:
                continue
            seen.add(shown)
            result = _read_code(path, shown, decodings)
            (skipped if isinstance(result, Skipped) else units).append(result)
    return units, skipped
