"""The fingerprint hashes of texts, as :class:`FingerprintIndex` selects them, in parallel.

The input of the all-pairs figures when only the figures are wanted: token hashes straight
from the syntax tree (no token strings, regions or fingerprint records), rolled and winnowed
with numpy. Tokenizing holds the interpreter lock, so many files are fingerprinted in forked
processes (:mod:`mleaudit.audit.similarity.allpairs.processes`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from mleaudit.audit.similarity.allpairs.occurrences import _EMPTY
from mleaudit.audit.similarity.allpairs.processes import _MAX_TASKS, _deal, _map_in_processes

__all__ = ["fingerprint_hashes", "fingerprint_texts"]


def fingerprint_hashes(text: str, language: str, *, kgram_length: int = 23, kgrams_in_window: int = 17) -> np.ndarray:
    """A text's fingerprint hashes in document order, as :class:`FingerprintIndex` selects them.

    Parameters
    ----------
    text : str
        Source code (untrusted: parsed, never run).
    language : str
        A grammar name from :data:`mleaudit.audit.parsing.LANGUAGES`, or ``"chars"``.
    kgram_length, kgrams_in_window : int
        Dolos's ``kgramLength`` (k, in tokens) and ``kgramsInWindow`` (the winnowing window).

    Returns
    -------
    numpy.ndarray
        int64 hashes, equal to ``[f.hash for f in FingerprintIndex(k, w).add_reference(
        tokenize_text(text, language, path)).fingerprints]``, without building the token
        strings, regions or :class:`~mleaudit.audit.similarity.winnow.Fingerprint` records.

    Raises
    ------
    KeyError
        If ``language`` is neither a known grammar nor ``"chars"``.
    ValueError
        If ``kgram_length`` or ``kgrams_in_window`` is below 1.
    """
    from mleaudit.audit.similarity.tokenize.hashes import _token_hash_array
    from mleaudit.audit.similarity.winnow.fingerprints import _kgram_fingerprints

    return _kgram_fingerprints(_token_hash_array(text, language), kgram_length, kgrams_in_window)


#: Parallel fingerprinting pays off from about this many characters of text: a forked process
#: costs a few milliseconds, tokenizing 100 000 characters some 30.
_MIN_PARALLEL_CHARS = 100_000


def _check_texts(texts: Sequence[tuple[str, str]], kgram_length: int, kgrams_in_window: int, jobs: int) -> None:
    """Raise before any work (and before any process is forked) on a bad argument."""
    from mleaudit.audit.parsing import LANGUAGES

    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if kgram_length < 1:
        raise ValueError(f"k-gram length must be >= 1, got {kgram_length}")
    if kgrams_in_window < 1:
        raise ValueError(f"window must be >= 1, got {kgrams_in_window}")
    for _, language in texts:
        if language != "chars" and language not in LANGUAGES:
            raise KeyError(f"unknown language {language!r}; known: chars, {', '.join(sorted(LANGUAGES))}")


def fingerprint_texts(
    texts: Sequence[tuple[str, str]],
    *,
    jobs: int = 1,
    kgram_length: int = 23,
    kgrams_in_window: int = 17,
) -> list[np.ndarray]:
    """:func:`fingerprint_hashes` of many ``(text, language)`` items, optionally in parallel.

    Identical items (a kernel copied verbatim) are fingerprinted once and share one array.

    Parameters
    ----------
    texts : sequence of (str, str)
        ``(source text, language)`` per file.
    jobs : int, default 1
        Processes, this one included. Parsing and walking syntax trees is CPU-bound work that
        holds the interpreter lock (py-tree-sitter parses without releasing it), so parallel
        tokenizing needs processes: ``jobs - 1`` are forked (where the platform forks and this
        process runs no other thread), inherit the loaded grammars and the texts, and take
        files, largest first, as they become free; only the hashes travel back. Inputs under
        :data:`_MIN_PARALLEL_CHARS` characters stay in this process, where a fork would cost
        more than it saves.
    kgram_length, kgrams_in_window : int
        As for :func:`fingerprint_hashes`.

    Returns
    -------
    list of numpy.ndarray
        In the order of ``texts``; identical inputs give the same (shared, not to be modified)
        array.

    Raises
    ------
    KeyError
        If a language is neither a known grammar nor ``"chars"``.
    ValueError
        If ``jobs``, ``kgram_length`` or ``kgrams_in_window`` is below 1.
    """
    _check_texts(texts, kgram_length, kgrams_in_window, jobs)
    position: dict[tuple[str, str], int] = {}
    unique: list[tuple[str, str]] = []
    source = []
    for item in texts:
        found = position.get(item)
        if found is None:
            found = position[item] = len(unique)
            unique.append(item)
        source.append(found)

    def fingerprint(items: Sequence[int]) -> list[np.ndarray]:
        return [fingerprint_hashes(*unique[u], kgram_length=kgram_length, kgrams_in_window=kgrams_in_window)
                for u in items]

    if jobs == 1 or len(unique) < 2 or sum(len(text) for text, _ in unique) < _MIN_PARALLEL_CHARS:
        hashes = fingerprint(range(len(unique)))
    else:
        # largest first: the last files to be handed out are the small ones, so the
        # processes finish together
        order = sorted(range(len(unique)), key=lambda u: -len(unique[u][0]))
        tasks = _deal(order, _MAX_TASKS)
        hashes = [_EMPTY] * len(unique)
        for task, found in zip(tasks, _map_in_processes(lambda t: fingerprint(tasks[t]), len(tasks), jobs)):
            for u, value in zip(task, found):
                hashes[u] = value
    return [hashes[u] for u in source]
