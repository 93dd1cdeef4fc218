"""The open corpus index, :class:`CorpusIndex`, and the three ways to get one: create, load, build.

``create_corpus_index`` writes an empty index (its options, grammar versions, boilerplate and
where its data lives); ``load_corpus_index`` opens one after checking that it is an index of a
readable version, made under this installation's fingerprint scheme; ``build_corpus_index`` is
create then :meth:`CorpusIndex.add` (``mleaudit corpus build``), removing the file if it fails.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from mleaudit.audit.errors import ConfigError
from mleaudit.audit.parsing import LANGUAGES
from mleaudit.audit.similarity import SimilarityOptions
from mleaudit.audit.similarity.corpus import MAX_REFERENCE_BYTES
from mleaudit.audit.similarity.index.adding import _Adding
from mleaudit.audit.similarity.index.comparing import _Comparing
from mleaudit.audit.similarity.index.fingerprinting import _boilerplate_fingerprints
from mleaudit.audit.similarity.index.format import (
    CORPUS_INDEX_FORMAT,
    CORPUS_INDEX_VERSION,
    READABLE_VERSIONS,
    CorpusIndexError,
    _fingerprint_scheme,
    _now,
)
from mleaudit.audit.similarity.index.redis_backend import _RedisBackend
from mleaudit.audit.similarity.index.sqlite_backend import (
    _SQLITE_HEADER,
    _SQLITE_TABLES,
    _check_schema,
    _connect,
    _SQLiteBackend,
)
from mleaudit.audit.similarity.index.storage import _Backend, _describe_storage, parse_storage
from mleaudit.audit.similarity.index.summaries import AddSummary


class CorpusIndex(_Adding, _Comparing):
    """An open corpus index. Get one from :func:`load_corpus_index` or :func:`create_corpus_index`.

    Use :meth:`compare` as a drop-in for :func:`mleaudit.audit.similarity.compare` over the whole corpus,
    :meth:`candidates` for retrieval alone, :meth:`add` to index more files, :meth:`info` for a
    summary. Close it (or use it as a context manager) when done.
    """


def create_corpus_index(
    path: str | Path,
    *,
    options: SimilarityOptions | None = None,
    storage: str | Mapping[str, Any] | None = None,
    boilerplate: Sequence[str | Path] = (),
) -> CorpusIndex:
    """Create an empty corpus index (then :meth:`CorpusIndex.add` kernels to it).

    Parameters
    ----------
    path : str or Path
        The index file to create; it must not exist.
    options : SimilarityOptions, optional
        Only ``kgram_length`` and ``kgrams_in_window`` are recorded (the others are query-time
        choices). Defaults to Dolos's 23 and 17.
    storage : str or dict, optional
        A storage URL for :func:`parse_storage` (``redis://HOST:PORT/DB``) or a datasketch
        ``storage_config`` of type ``redis``; ``None`` keeps everything in ``path``.
    boilerplate : sequence of folders, optional
        Starter code: its fingerprints never count as a match (as ``compare``'s boilerplate).

    Returns
    -------
    CorpusIndex
        Open for writing.

    Raises
    ------
    CorpusIndexError
        If ``path`` exists, the storage URL is bad or Redis cannot be reached.
    ConfigError
        If a boilerplate folder does not exist.
    """
    path = Path(path)
    options = options or SimilarityOptions()
    if path.exists() or path.is_symlink():
        raise CorpusIndexError(f"{path} already exists; add files with `mleaudit corpus add` or remove it first")
    if not path.parent.is_dir():
        raise CorpusIndexError(f"{path}: folder {path.parent} does not exist")
    config = parse_storage(storage) if isinstance(storage, (str, type(None))) else dict(storage)
    if config is not None and config.get("type") != "redis":
        raise CorpusIndexError(f"storage type {config.get('type')!r} is not supported (sqlite or redis)")
    described, hashes, boilerplate_profiles = _boilerplate_fingerprints(boilerplate, options)
    # Claimed atomically: of two builds of one path, the second stops here instead of writing
    # into (or, failing, deleting) the first one's file.
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except FileExistsError:
        raise CorpusIndexError(f"{path} already exists; add files with `mleaudit corpus add` or remove it first") from None
    except OSError as exc:
        raise CorpusIndexError(f"{path}: cannot create ({exc.strerror or exc})") from exc
    try:
        connection = _connect(path, create=True, writable=True)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    try:
        connection.execute("PRAGMA page_size = 8192")
        connection.execute("BEGIN IMMEDIATE")
        tables = _SQLITE_TABLES if config is None else {"meta": _SQLITE_TABLES["meta"]}
        for statement in tables.values():
            connection.execute(statement)
        local = _SQLiteBackend(connection, path)
        local.write_meta("format", CORPUS_INDEX_FORMAT)
        local.write_meta("format_version", CORPUS_INDEX_VERSION)
        basename = f"mleaudit:{uuid.uuid4().hex}"
        if config is not None:
            config = {"type": "redis", "redis": dict(config["redis"]), "basename": basename}
        local.write_meta("storage", config)
        connection.execute("COMMIT")
        backend: _Backend = local if config is None else _RedisBackend(config, basename, str(path))
        now = _now()
        from mleaudit.audit import __version__

        meta = {
            "options": {"kgram_length": options.kgram_length, "kgrams_in_window": options.kgrams_in_window},
            "fingerprint_scheme": _fingerprint_scheme(),
            "languages": sorted(LANGUAGES),
            "roots": [],
            "boilerplate": described,
            "corpus_digest": "",
            "created_at": now,
            "updated_at": now,
            "tool_version": __version__,
            "format": CORPUS_INDEX_FORMAT,
            "format_version": CORPUS_INDEX_VERSION,
            "posting_entries": 0,
            # every Python reference's tile seeds are in the postings (the bound of compare)
            "seed_postings": True,
        }
        backend.begin()
        backend.write_meta("index", meta)
        backend.write_meta("boilerplate_hashes", hashes)
        backend.write_meta("boilerplate_profiles", boilerplate_profiles)
        backend.commit()
    except BaseException:
        connection.close()
        path.unlink(missing_ok=True)
        raise
    index = CorpusIndex(path, connection, backend, writable=True)
    try:
        with index._writer():
            index._finish_add([])
    except BaseException:
        index.close()
        path.unlink(missing_ok=True)
        raise
    return index


def load_corpus_index(path: str | Path, *, writable: bool = False) -> CorpusIndex:
    """Open a corpus index made by :func:`create_corpus_index` / ``mleaudit corpus build``.

    Parameters
    ----------
    path : str or Path
        The index file.
    writable : bool, default False
        Open for :meth:`CorpusIndex.add`; otherwise the file is opened read-only.

    Returns
    -------
    CorpusIndex

    Raises
    ------
    CorpusIndexError
        If the file does not exist, is not a corpus index, has another format version, was
        built with another tokenizer or grammar version, or its Redis storage is unreachable.
    """
    path = Path(path)
    if not path.is_file():
        raise CorpusIndexError(f"{path}: no such corpus index file")
    with path.open("rb") as stream:
        header = stream.read(len(_SQLITE_HEADER))
    if header != _SQLITE_HEADER:
        raise CorpusIndexError(f"{path}: not a corpus index (not an SQLite file; build one with `mleaudit corpus build`)")
    connection = _connect(path, create=False, writable=writable)
    try:
        _check_schema(connection, path, {"meta"})
        local = _SQLiteBackend(connection, path)
        try:
            kind, version, storage = (local.read_meta(k) for k in ("format", "format_version", "storage"))
        except (sqlite3.Error, ValueError) as exc:
            raise CorpusIndexError(f"{path}: not a corpus index (unreadable meta table: {exc})") from exc
        if kind != CORPUS_INDEX_FORMAT:
            raise CorpusIndexError(f"{path}: not a corpus index (format {kind!r}, expected {CORPUS_INDEX_FORMAT!r})")
        if version not in READABLE_VERSIONS:
            why = " (version 1 holds no copy-detector data, so it could not give a copy score)" if version == 1 else ""
            raise CorpusIndexError(
                f"{path}: corpus index format version {version}, this mleaudit reads versions "
                f"{' and '.join(map(str, READABLE_VERSIONS))}{why}; rebuild the index with `mleaudit corpus build`"
            )
        if storage is None:
            _check_schema(connection, path, set(_SQLITE_TABLES))
            backend: _Backend = local
        else:
            if not isinstance(storage, dict) or storage.get("type") != "redis" or not isinstance(storage.get("redis"), dict):
                raise CorpusIndexError(f"{path}: unsupported storage {storage!r}")
            backend = _RedisBackend(storage, str(storage.get("basename", "")), str(path))
        meta = backend.read_meta("index")
        if not isinstance(meta, dict) or meta.get("format_version") != version:
            raise CorpusIndexError(f"{path}: the index data in {_describe_storage(storage)} is missing or of another version")
        scheme = meta.get("fingerprint_scheme", {})
        expected = _fingerprint_scheme()
        if scheme != expected:
            raise CorpusIndexError(
                f"{path}: fingerprints made with {json.dumps(scheme, sort_keys=True)}, this installation makes "
                f"{json.dumps(expected, sort_keys=True)}; rebuild the index"
            )
    except BaseException:
        connection.close()
        raise
    return CorpusIndex(path, connection, backend, writable=writable)


def build_corpus_index(
    directories: Sequence[str | Path],
    path: str | Path,
    *,
    boilerplate: Sequence[str | Path] = (),
    options: SimilarityOptions | None = None,
    storage: str | Mapping[str, Any] | None = None,
    jobs: int = 1,
    max_bytes: int = MAX_REFERENCE_BYTES,
    progress: Callable[[int, int], None] | None = None,
) -> AddSummary:
    """Create an index at ``path`` and add every kernel under ``directories`` (``mleaudit corpus build``).

    Parameters
    ----------
    directories : sequence of folders
        Corpus roots; keys are paths relative to each root (a path found under two roots is
        indexed once and listed as skipped the second time).
    path : str or Path
        The index file to create.
    boilerplate, options, storage
        As for :func:`create_corpus_index`.
    jobs, max_bytes, progress
        As for :meth:`CorpusIndex.add`.

    Returns
    -------
    AddSummary

    Raises
    ------
    CorpusIndexError, ConfigError
        If a folder does not exist, ``path`` exists, or storage fails. A failed build removes
        the partly written index file.
    """
    missing = [str(d) for d in directories if not Path(d).is_dir()]
    if missing:
        raise ConfigError(f"not a folder: {', '.join(missing)}")
    if not directories:
        raise ConfigError("no corpus folder given")
    index = create_corpus_index(path, options=options, storage=storage, boilerplate=boilerplate)
    try:
        return index.add(directories, jobs=jobs, max_bytes=max_bytes, progress=progress)
    except BaseException:
        index.close()
        for leftover in (Path(path), Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
            leftover.unlink(missing_ok=True)
        raise
    finally:
        index.close()
