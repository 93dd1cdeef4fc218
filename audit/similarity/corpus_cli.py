"""``mleaudit corpus``: build, extend and inspect a reference corpus index.

Thin click commands over :mod:`mleaudit.audit.similarity.index`; every library error becomes an
:class:`mleaudit.audit.cli_options.InputError` (exit code 2) with the library's message.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from mleaudit.audit.cli_options import InputError
from mleaudit.audit.cli_options import jobs_option as shared_jobs_option
from mleaudit.audit.errors import AuditError

__all__ = ["corpus"]

#: Skipped files listed after build/add; the rest are counted (``corpus info --skipped`` lists all).
_SHOW_SKIPPED = 20


def _progress(done: int, total: int) -> None:
    click.echo(f"\r{done}/{total} files", nl=done == total, err=True)


def _progress_keys(done: int, total: int) -> None:
    click.echo(f"\r{done}/{total} fingerprints", nl=done == total, err=True)


def _echo_summary(summary, index_path: Path, verb: str) -> None:
    rate = summary.files / summary.seconds if summary.seconds > 0 else 0.0
    click.echo(
        f"{verb} {index_path}: {summary.added} added, {summary.replaced} replaced, {summary.unchanged} unchanged, "
        f"{summary.removed} removed, {len(summary.skipped)} skipped ({summary.files} files in "
        f"{summary.seconds:.1f} s, {rate:.0f} files/s)"
    )
    if summary.compacted is not None:
        click.echo(f"  postings merged: {summary.compacted.keys} fingerprints ({summary.compacted.entries} entries) "
                   f"in {summary.compacted.seconds:.1f} s")
    for item in summary.skipped[:_SHOW_SKIPPED]:
        click.echo(f"  skipped {item.path}: {item.reason}", err=True)
    if len(summary.skipped) > _SHOW_SKIPPED:
        click.echo(f"  ... and {len(summary.skipped) - _SHOW_SKIPPED} more (mleaudit corpus info "
                   f"{index_path} --skipped)", err=True)


jobs_option = shared_jobs_option("read and fingerprint the kernels")


@click.group("corpus")
def corpus() -> None:
    """Index reference notebooks once, then compare agent code against all of them quickly.

    An index stores every kernel's fingerprints (an inverted index for candidate retrieval,
    and what exact scoring needs); `mleaudit similarity compare --index INDEX` uses it. Per
    agent file it reports the 5 references of highest agent containment and, with the copy
    detector, every reference it flags: references are scored when an upper bound of their
    evidence (from the stored tile seeds) reaches the threshold, so an index flags what
    brute force over the same kernels flags, up to a budget per file: a search cut by it is
    named (a note of `similarity compare`, a `similarity-incomplete` gap of `audit`; `--all`
    and `--index-exhaustive` check every reference). `remove` and `sync` keep it in step with
    a corpus folder.

    Example:

        mleaudit corpus build kernels/spaceship-titanic -o titanic.index

        mleaudit corpus info titanic.index
    """


@corpus.command("build")
@click.argument("directories", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", "index_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Index file to create (it must not exist).")
@click.option("--boilerplate", multiple=True, type=click.Path(path_type=Path),
              help="Folder of starter code whose fingerprints never count as a match (repeatable).")
@jobs_option
@click.option("--storage", default=None, metavar="URL",
              help="Where the index data lives: 'sqlite' (default, in the index file) or redis://HOST:PORT/DB "
                   "to share one index between machines (password from MLEAUDIT_REDIS_PASSWORD).")
@click.option("--kgram-length", type=click.IntRange(min=1), default=23, show_default=True,
              help="Tokens per k-gram (Dolos kgramLength).")
@click.option("--window", type=click.IntRange(min=1), default=17, show_default=True,
              help="Winnowing window in k-grams (Dolos kgramsInWindow).")
def build_command(directories: tuple[Path, ...], index_path: Path, boilerplate: tuple[Path, ...], jobs: int,
                  storage: str | None, kgram_length: int, window: int) -> None:
    """Create an index of every .py and .ipynb kernel under DIRECTORIES.

    Keys are paths relative to each folder. Files that cannot be used (broken notebooks, R
    kernels, binary or oversized files) are listed as skipped with the reason.

    Example:

        mleaudit corpus build kernels/ -o kernels.index --boilerplate starter/ --jobs 2

        mleaudit corpus build kernels/ -o shared.index --storage redis://10.0.0.5:6379/0
    """
    from mleaudit.audit.similarity import SimilarityOptions
    from mleaudit.audit.similarity.index import build_corpus_index

    try:
        summary = build_corpus_index(
            list(directories),
            index_path,
            boilerplate=list(boilerplate),
            options=SimilarityOptions(kgram_length=kgram_length, kgrams_in_window=window),
            storage=storage,
            jobs=jobs,
            progress=_progress,
        )
    except AuditError as exc:
        raise InputError(str(exc)) from exc
    _echo_summary(summary, index_path, "built")


@corpus.command("add")
@click.argument("index_path", metavar="INDEX", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Corpus root the keys are relative to (default: the build folder that contains the path).")
@jobs_option
def add_command(index_path: Path, paths: tuple[Path, ...], root: Path | None, jobs: int) -> None:
    """Add kernel files or folders to an existing index without rebuilding it.

    New files are added, changed files (by sha256) replace their entry, unchanged files are left
    alone, so running the same add twice changes nothing.

    Example:

        mleaudit corpus add kernels.index kernels/author/new-kernel.ipynb

        mleaudit corpus add kernels.index more-kernels/ --root more-kernels
    """
    from mleaudit.audit.similarity.index import load_corpus_index

    try:
        with load_corpus_index(index_path, writable=True) as index:
            summary = index.add(list(paths), root=root, jobs=jobs, progress=_progress)
    except AuditError as exc:
        raise InputError(str(exc)) from exc
    _echo_summary(summary, index_path, "updated")


@corpus.command("remove")
@click.argument("index_path", metavar="INDEX", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("paths", nargs=-1, required=True)
def remove_command(index_path: Path, paths: tuple[str, ...]) -> None:
    """Take kernels out of an index.

    Each PATH is an indexed key (owner/slug.ipynb, relative to its corpus root), a folder of
    keys (every key under it), or a file or folder path under a recorded corpus root (the file
    may be deleted already). A PATH that names nothing indexed is an error and nothing is
    removed.

    Example:

        mleaudit corpus remove kernels.index author/old-kernel.ipynb

        mleaudit corpus remove kernels.index kernels/author
    """
    from mleaudit.audit.similarity.index import load_corpus_index

    try:
        with load_corpus_index(index_path, writable=True) as index:
            summary = index.remove(list(paths))
    except AuditError as exc:
        raise InputError(str(exc)) from exc
    click.echo(f"updated {index_path}: {summary.removed} removed in {summary.seconds:.1f} s")


@corpus.command("sync")
@click.argument("index_path", metavar="INDEX", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("directory", type=click.Path(path_type=Path))
@jobs_option
def sync_command(index_path: Path, directory: Path, jobs: int) -> None:
    """Make an index hold what a corpus folder holds now.

    Kernels indexed under DIRECTORY whose file is gone leave the index, new files are added,
    changed files (by sha256) are indexed again, unchanged ones are left alone. Keys are
    relative to the recorded root that contains DIRECTORY, else to DIRECTORY itself.

    Example:

        mleaudit corpus sync kernels.index kernels/
    """
    from mleaudit.audit.similarity.index import load_corpus_index

    try:
        with load_corpus_index(index_path, writable=True) as index:
            summary = index.sync(directory, jobs=jobs, progress=_progress)
    except AuditError as exc:
        raise InputError(str(exc)) from exc
    _echo_summary(summary, index_path, "synced")


@corpus.command("compact")
@click.argument("index_path", metavar="INDEX", type=click.Path(dir_okay=False, path_type=Path))
def compact_command(index_path: Path) -> None:
    """Merge each fingerprint's postings into one entry, so queries read one row per hash.

    `build` and `add` do this by themselves once a fingerprint may have more than a few
    entries (one per batch of 8,192 kernels added); run it after many small adds, or on an
    index made by an older mleaudit (it then becomes format version 3). Query results do not
    change.

    Example:

        mleaudit corpus compact kernels.index
    """
    from mleaudit.audit.similarity.index import load_corpus_index

    try:
        with load_corpus_index(index_path, writable=True) as index:
            summary = index.compact(progress=_progress_keys)
            entries = index.info().posting_entries
    except AuditError as exc:
        raise InputError(str(exc)) from exc
    click.echo(f"compacted {index_path}: merged the postings of {summary.keys} fingerprints ({summary.entries} "
               f"entries, {summary.bitmaps} now bitmaps) in {summary.seconds:.1f} s; at most {entries} "
               f"entr{'y' if entries == 1 else 'ies'} per fingerprint")


@corpus.command("info")
@click.argument("index_path", metavar="INDEX", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Output format.")
@click.option("--skipped", "list_skipped", is_flag=True, help="List every skipped file with its reason.")
def info_command(index_path: Path, fmt: str, list_skipped: bool) -> None:
    """Show an index's format, options, storage and counts.

    Example:

        mleaudit corpus info kernels.index

        mleaudit corpus info kernels.index --format json --skipped
    """
    from mleaudit.audit.similarity.index import load_corpus_index

    try:
        with load_corpus_index(index_path) as index:
            info = index.info()
            skipped = index.skipped() if list_skipped else ()
    except AuditError as exc:
        raise InputError(str(exc)) from exc
    if fmt == "json":
        data = info.to_dict()
        if list_skipped:
            data["skipped_files"] = [s.to_dict() for s in skipped]
        click.echo(json.dumps(data, indent=2, sort_keys=True))
        return
    size = f"{info.size_bytes / 1e6:.1f} MB" if info.size_bytes is not None else "n/a (data in Redis)"
    grammars = ", ".join(f"{k} {v}" for k, v in sorted(info.fingerprint_scheme.get("grammars", {}).items()))
    lines = [
        f"index:          {info.path}",
        f"format version: {info.format_version}",
        f"storage:        {info.storage}",
        f"size:           {size}",
        f"references:     {info.references} ({', '.join(info.languages) or 'none'})",
        f"skipped files:  {info.skipped}",
        f"segments:       {info.segments} (at most {info.posting_entries} postings "
        f"entr{'y' if info.posting_entries == 1 else 'ies'} per fingerprint)",
        f"n-grams:        {info.ngrams} (copy detector background)",
        f"k-gram length:  {info.options['kgram_length']}, window {info.options['kgrams_in_window']}",
        f"tokenizer:      {info.fingerprint_scheme.get('tokenizer', '')} ({grammars})",
        f"roots:          {', '.join(info.roots) or '-'}",
        f"boilerplate:    {len(info.boilerplate)} file(s)",
        f"corpus digest:  {info.corpus_digest}",
        f"created:        {info.created_at} (mleaudit {info.tool_version}), updated {info.updated_at}",
    ]
    click.echo("\n".join(lines))
    for item in skipped:
        click.echo(f"skipped {item.path}: {item.reason}")
