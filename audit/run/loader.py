"""``load_run``: reading a run from disk into a :class:`~mleaudit.audit.run.artifacts.Run`.

The folder is walked (:mod:`mleaudit.audit.run.walk`), the run metadata and the sandbox's cuts
are read, the submission is chosen, and every file is read by its name or, when its name says
nothing, by its content (:mod:`mleaudit.audit.run.sniffing`).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from mleaudit.audit.errors import RunLayoutError
from mleaudit.audit.model import Skipped
from mleaudit.audit.run.artifacts import Artifact, Run
from mleaudit.audit.run.kinds import ArtifactKind, _partly_readable, _sniffed_by_content, classify_path
from mleaudit.audit.run.layout import RunLayout, detect_layout
from mleaudit.audit.run.reading import _read_capped, _read_prefix, display_name, read_run_file
from mleaudit.audit.run.sniffing import classify_content
from mleaudit.audit.run.walk import _walk
from mleaudit.grading import untrusted_json


def _read_meta(root: Path, paths: set[str], skipped: list[Skipped]) -> dict[str, Any]:
    """Merge ``run.json`` then ``metadata.json`` (earlier names win) from the run root.

    The files are read without following links and decoded with bounded nesting
    (:func:`mleaudit.grading.untrusted_json.loads`); what cannot be read is listed in ``skipped``.
    """
    meta: dict[str, Any] = {}
    for name in reversed(RunLayout.RUN_META):
        if name not in paths:
            continue
        try:
            data = untrusted_json.loads_unique(read_run_file(root, name))
        except OSError as exc:
            skipped.append(Skipped(path=name, reason=f"run metadata not read: {exc.strerror or exc}"))
            continue
        except ValueError as exc:
            skipped.append(Skipped(path=name, reason=f"run metadata not read: {exc}"))
            continue
        if not isinstance(data, dict):
            skipped.append(Skipped(path=name, reason=f"run metadata is a JSON {type(data).__name__}, not an object"))
            continue
        if name == "run.json":
            skipped.extend(_sandbox_cuts(data))
        meta.update(data)
    return meta


#: ``log-truncated`` events of ``run.json`` turned into unread parts (more are not listed one by one).
_MAX_SANDBOX_CUTS = 100
_SAFE_RUN_PATH = re.compile(r"[A-Za-z0-9._+-]+(/[A-Za-z0-9._+-]+)*")


def _sandbox_cuts(record: Mapping[str, Any]) -> list[Skipped]:
    """The parts of run files the sandbox dropped before the audit saw them.

    ``mleaudit run`` caps what it keeps of the agent's output and records each cut in
    ``run.json`` as an event ``{"kind": "log-truncated", "path", "kept_bytes", "dropped_bytes"}``.
    The dropped bytes were never on disk for the audit to read, so each cut is listed as an
    unread part of its file (a gap of the audit). A ``path`` that is not a plain relative path
    is reported as ``run.log``.
    """
    events = record.get("events")
    if not isinstance(events, list):
        return []
    cuts: list[Skipped] = []
    for event in events:
        if not isinstance(event, dict) or event.get("kind") != "log-truncated":
            continue
        if len(cuts) == _MAX_SANDBOX_CUTS:
            cuts.append(Skipped(path=RunLayout.RUN_LOG, reason=(
                f"more than {_MAX_SANDBOX_CUTS} outputs capped by the sandbox; the rest are not listed one by one")))
            break
        path = event.get("path")
        if not (isinstance(path, str) and len(path) <= 255 and _SAFE_RUN_PATH.fullmatch(path)
                and ".." not in path.split("/")):
            path = RunLayout.RUN_LOG
        kept, dropped = (event.get(key) for key in ("kept_bytes", "dropped_bytes"))
        kept_text = f"{kept} bytes" if type(kept) is int else "an unrecorded size"
        dropped_text = f"{dropped} bytes were" if type(dropped) is int else "the rest was"
        cuts.append(Skipped(path=path, reason=(
            f"capped by the sandbox at {kept_text}; {dropped_text} dropped and never read")))
    return cuts


def _submission_choice(
    paths: set[str], skipped: list[Skipped], folders: set[str],
    candidates: Sequence[str] = RunLayout.SUBMISSION_CANDIDATES,
) -> tuple[str | None, Skipped | None]:
    """The submission path, or the refused candidate that stands in its way.

    Candidates are taken in order (:meth:`RunLayout.submission_candidates`). A candidate that
    was refused, itself or through a folder on its path (a symlink, a folder that could not be
    listed, a file over the cap), or that is a folder, ends the search: a later candidate is
    not taken in its place, since the refused one is the file the layout names.

    Returns
    -------
    (str or None, Skipped or None)
        The chosen path, else ``None`` and, when a candidate was refused, a
        :class:`Skipped` entry for the candidate's own path (``None`` when ``skipped``
        already names it).
    """
    refused = {item.path: item for item in skipped}
    for candidate in candidates:
        if candidate in paths:
            return candidate, None
        if candidate in folders:
            return None, Skipped(path=candidate, reason="a folder, not a file: not read as the submission")
        pieces = candidate.split("/")
        for depth in range(1, len(pieces) + 1):
            blocker = refused.get("/".join(pieces[:depth]))
            if blocker is None:
                continue
            if blocker.path == candidate:
                return None, None
            return None, Skipped(path=candidate, reason=f"its folder {blocker.path} was not read: {blocker.reason}")
    return None, None


def _meta_str(meta: Mapping[str, Any], key: str) -> str | None:
    value = meta.get(key)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _cut_log(rel: str, size: int, data: bytes) -> Skipped:
    """The entry that says only the first part of a log over the cap was read."""
    lines = data.count(b"\n")
    return Skipped(path=rel, reason=(
        f"log of {size} bytes: only the first {len(data)} bytes ({lines} lines) were read, the "
        f"{RunLayout.MAX_LOG_BYTES}-byte log cap; the rest was not audited"))


def _read_by_content(root: Path, rel: str, abs_path: Path, size: int, skipped: list[Skipped],
                     notes: list[Skipped]) -> Artifact | None:
    """Read a file whose name says nothing and tell its kind from its content (:func:`classify_content`).

    How it was told goes to ``notes``. Text is read like a log (up to ``MAX_LOG_BYTES``, the rest
    listed in ``skipped``) unless it is code, which the file cap applies to as for ``.py``
    files. Binary files are data (no artifact when over the cap: nothing reads them); archives
    are listed in ``skipped``, since they may hold code or logs that nothing read.
    """
    try:
        data = _read_prefix(abs_path, rel, RunLayout.MAX_LOG_BYTES, root=root)
    except OSError as exc:
        skipped.append(Skipped(path=rel, reason=f"cannot read: {exc.strerror or exc}"))
        return None
    kind, language, how = classify_content(rel, data)
    if kind is ArtifactKind.OTHER:
        skipped.append(Skipped(path=rel, reason=how))
        return None
    whole = len(data) >= size
    if kind is ArtifactKind.DATA and size > RunLayout.MAX_FILE_BYTES:
        notes.append(Skipped(path=rel, reason=f"{how}; {size} bytes, over the {RunLayout.MAX_FILE_BYTES}-byte cap"))
        return None
    notes.append(Skipped(path=rel, reason=how))
    truncated = False
    if kind is ArtifactKind.LOG:
        truncated = size > RunLayout.MAX_LOG_BYTES and not whole
        if truncated:
            skipped.append(_cut_log(rel, size, data))
    elif not whole:
        if size > RunLayout.MAX_FILE_BYTES:
            skipped.append(Skipped(path=rel, reason=(
                f"{size} bytes is over the {RunLayout.MAX_FILE_BYTES}-byte cap ({how})")))
            return None
        try:
            data = _read_capped(abs_path, rel, root=root)
        except OSError as exc:
            skipped.append(Skipped(path=rel, reason=f"cannot read: {exc.strerror or exc}"))
            return None
    return _artifact(rel, abs_path, kind, language, size, data, truncated, root, sniffed=how)


def _artifact(rel: str, abs_path: Path, kind: ArtifactKind, language: str | None, size: int, data: bytes,
              truncated: bool, root: Path, *, sniffed: str | None = None) -> Artifact:
    """The artifact of a file whose bytes (its first part, for a log over the cap) were read."""
    return Artifact(
        path=rel,
        abs_path=abs_path,
        kind=kind,
        language=language,
        size=size if truncated else len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        truncated=truncated,
        read_size=len(data) if truncated else None,
        root=root,
        sniffed=sniffed,
    )


def load_run(path: str | os.PathLike[str]) -> Run:
    """Read an agent run from disk.

    Parameters
    ----------
    path : str or path-like
        An MLE-bench run directory (``submission/submission.csv``, ``logs/``, ``code/``,
        ``run.log``, optional ``run.json``/``metadata.json``), a bare folder of code, notebooks
        and logs (AutoKaggle phase folders, an AIDE output dir), or a single file (a run of one
        artifact, rooted at the file's folder).

    Returns
    -------
    Run
        Artifacts sorted by path, each with its kind, language, size (bytes) and sha256.
        ``run_id``, ``competition_id`` and ``agent_id`` come from the run metadata; ``run_id``
        falls back to the folder name (the file stem for a single file) and ``competition_id``
        is ``None`` when the metadata does not say it (no guess is made from names).
        ``submission`` is the first of ``RunLayout.SUBMISSION_CANDIDATES`` that exists; when
        there is none, ``notes`` says so (a run may end without one), unless a candidate was
        refused, which ``skipped`` then lists. ``skipped`` lists
        symlinks, special files, files over ``RunLayout.MAX_FILE_BYTES``, the unread rest of
        logs over ``RunLayout.MAX_LOG_BYTES``, unreadable files and unreadable metadata, and
        what the sandbox dropped before the run was written (``log-truncated`` events of
        ``run.json``, :func:`_sandbox_cuts`). ``layout`` comes from :func:`detect_layout`.

    Raises
    ------
    RunLayoutError
        If ``path`` does not exist or is neither a directory nor a regular file.

    Notes
    -----
    Run contents are untrusted: symlinks (to files or folders) are never followed and are
    listed in ``skipped``; nothing outside the run root is read; every folder and file is
    opened relative to its parent with ``O_NOFOLLOW`` and files are read up to the size cap;
    dot-directories (``.git``) and ``__pycache__`` are not entered. A submission candidate
    that is refused (itself, or a folder on its path such as a symlinked ``submission/``)
    is listed in ``skipped`` under the candidate's path and no later candidate is taken in
    its place. Names that are not valid UTF-8 are read, with ``\\xNN`` escapes in their
    printed path and a note.
    """
    given = Path(path)
    if not os.path.lexists(given):
        raise RunLayoutError(f"run path does not exist: {given}")
    names: list[str] | None = None
    if given.is_dir():
        root = given.resolve()
        run_name = display_name(root.name)
    elif given.is_file() or given.is_symlink():
        root = given.parent.resolve()
        names = [given.name]
        run_name = display_name(given.stem)
    else:
        raise RunLayoutError(f"run path is neither a directory nor a regular file: {given}")

    walk = _walk(root, names)
    skipped = walk.skipped
    files = walk.files
    paths = {rel for rel, _, _ in files}
    meta = _read_meta(root, paths, skipped) if names is None else {}
    layout = detect_layout(paths, single_file=names is not None)
    candidates = RunLayout.submission_candidates(layout)
    submission_path, blocked = _submission_choice(paths, skipped, walk.folders, candidates)
    if blocked is not None:
        skipped.append(blocked)

    notes: list[Skipped] = list(walk.notes)
    artifacts: list[Artifact] = []
    for rel, abs_path, size in files:
        if rel != submission_path and _sniffed_by_content(rel):
            artifact = _read_by_content(root, rel, abs_path, size, skipped, notes)
            if artifact is not None:
                artifacts.append(artifact)
            continue
        kind, language = classify_path(rel)
        if rel == submission_path:
            kind, language = ArtifactKind.SUBMISSION, None
        text_log = kind is ArtifactKind.LOG and _partly_readable(rel)
        truncated = text_log and size > RunLayout.MAX_LOG_BYTES
        try:
            if text_log:
                data = _read_prefix(abs_path, rel, RunLayout.MAX_LOG_BYTES, root=root)
            else:
                data = _read_capped(abs_path, rel, root=root)
        except OSError as exc:
            skipped.append(Skipped(path=rel, reason=f"cannot read: {exc.strerror or exc}"))
            continue
        if truncated:
            skipped.append(_cut_log(rel, size, data))
        artifacts.append(_artifact(rel, abs_path, kind, language, size, data, truncated, root))
    submission = next((a for a in artifacts if a.kind is ArtifactKind.SUBMISSION), None)
    if names is None and submission is None and submission_path is None and not any(
        s.path in candidates for s in skipped
    ):
        looked = ", ".join(candidates)
        notes.append(Skipped(path=RunLayout.SUBMISSION_CANDIDATES[0],
                             reason=f"no submission file (looked for {looked}): submission checks and grading not run"))
    return Run(
        run_id=_meta_str(meta, "run_id") or run_name,
        root=root,
        competition_id=_meta_str(meta, "competition_id"),
        agent_id=_meta_str(meta, "agent_id"),
        artifacts=tuple(artifacts),
        submission=submission,
        meta=meta,
        skipped=tuple(sorted(skipped, key=lambda s: s.path)),
        notes=tuple(notes),
        layout=layout,
    )
