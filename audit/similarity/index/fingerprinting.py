"""Fingerprinting references for the index: what ``add`` stores of each file, made in worker processes.

A worker reads, hashes, decodes, tokenizes and winnows a chunk of files (:func:`_index_chunk`)
and returns per file its record, its distinct hashes and counts and, for a Python reference, its
detector data (profile, sampled 8-grams, tile seeds); the chunk's n-grams are summed before they
reach the parent (:func:`_sum_grams`). Boilerplate folders are fingerprinted here too
(:func:`_boilerplate_fingerprints`), once, when an index is created.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Sequence

import numpy as np

from mleaudit.audit.model import Skipped
from mleaudit.audit.similarity import SimilarityOptions
from mleaudit.audit.similarity.corpus import (
    TextDecoding,
    decode_reference_recorded,
    load_reference_corpus,
    read_reference_bytes,
)
from mleaudit.audit.similarity.detect import Profile, profile_code
from mleaudit.audit.similarity.index.blobs import _encode_profile, _encode_record
from mleaudit.audit.similarity.tokenize import tokenize_text
from mleaudit.audit.similarity.winnow import _kgram_selection, fingerprint_tokens
from mleaudit.audit.units import CodeUnit

logger = logging.getLogger(__name__)

#: What a worker returns per file: ("indexed", key, sha256, text_sha256, language,
#: n_fingerprints, record, unique hashes (int64 bytes), their counts (int64 bytes), detector
#: data), ("unchanged", key) or ("skipped", key, reason). The detector data of a Python reference
#: is (profile record, its sampled 8-grams (int64 bytes)); other languages have None. The
#: references' n-grams are not in the results: a worker sums them over its chunk of files
#: (:func:`_index_chunk`).
_Result = tuple


def _seed_values(profile: Profile) -> np.ndarray:
    """The distinct 25-bit values of a profile's tile seeds (its token 6-grams,
    :meth:`~mleaudit.audit.similarity.detect.Profile.seed_keys`): the top bits of each key, so two seeds
    may share a value (a reference then reads as holding a seed it lacks: a looser bound, never a
    wrong one)."""
    keys = profile.seed_keys()
    if not keys.size:
        return np.zeros(0, np.int64)
    return np.unique((keys.view(np.uint64) >> np.uint64(64 - 25)).astype(np.int64))


def _detector_data(unit: CodeUnit, key: str) -> tuple[bytes, bytes, bytes, np.ndarray, np.ndarray] | None:
    """What the copy detector stores of one reference (Python only; it lexes Python): its
    profile record, its sampled 8-grams and its seed values (int64 bytes), and its distinct
    n-gram keys with their context keys (for the corpus's n-gram table)."""
    if unit.language != "python":
        return None
    profile = profile_code(unit.text, key)
    grams, contexts = profile.grams()
    return (_encode_profile(profile, len(unit.text)), profile.sample().astype(np.int64).tobytes(),
            _seed_values(profile).tobytes(), grams.astype(np.int64), contexts.astype(np.int64))


def _fingerprint_unit(unit: CodeUnit, k: int, w: int, decoding: TextDecoding | None = None
                      ) -> tuple[bytes, np.ndarray, int]:
    """Tokenize and winnow one reference: its record, fingerprint hashes (document order) and count."""
    tokens = tokenize_text(unit.text, unit.language, unit.path)
    # The tokenizer's own token hashes and the array form of winnowing: what
    # FingerprintIndex.add_reference selects for brute force, without building a Fingerprint
    # object per k-gram or hashing the token strings again.
    positions, values = _kgram_selection(tokens.token_hashes, k, w)
    hashes = np.asarray(values, dtype=np.int64)
    starts, ends = tokens.starts, tokens.ends
    # The tokenizer already knows whether its regions are in document order and where lines
    # start; ask it rather than redo the work on every reference.
    ordered = tokens.ordered_regions
    record = _encode_record(
        language=unit.language,
        source=unit.source,
        hashes=hashes,
        kgram_starts=np.asarray(positions, dtype=np.int64),
        span_starts=np.array([starts[s] for s in positions], dtype=np.int64),
        span_ends=np.array([ends[s + k - 1] for s in positions], dtype=np.int64),
        lines=tokens.line_offsets,
        cells=unit.cells,
        # Regions out of document order: a fragment's span is then the min/max over its tokens,
        # which needs every token's offsets.
        token_starts=None if ordered else starts,
        token_ends=None if ordered else ends,
        decoding=decoding,
    )
    return record, hashes, len(positions)


def _index_file(path: str, key: str, max_bytes: int, k: int, w: int, known_sha: str
                ) -> tuple[_Result, tuple[np.ndarray, np.ndarray] | None]:
    """Read, hash, decode and fingerprint one file (``known_sha``: sha256 of the indexed
    version, or ""): its result and, for a Python reference, its distinct n-grams and their
    contexts."""
    data = read_reference_bytes(path, key, max_bytes=max_bytes)
    if isinstance(data, Skipped):
        return ("skipped", key, data.reason), None
    sha = hashlib.sha256(data).hexdigest()
    if sha == known_sha:
        return ("unchanged", key), None
    unit, decoding = decode_reference_recorded(data, key)
    if isinstance(unit, Skipped):
        return ("skipped", key, unit.reason), None
    try:
        record, hashes, n = _fingerprint_unit(unit, k, w, decoding)
        detector = _detector_data(unit, key)
    except Exception as exc:  # noqa: BLE001 - one hostile file must not stop a corpus build
        logger.warning("cannot fingerprint %s: %s", key, exc)
        return ("skipped", key, f"cannot tokenize ({type(exc).__name__}: {str(exc)[:200]})"), None
    unique, counts = np.unique(hashes, return_counts=True)
    result = ("indexed", key, sha, _text_sha256(unit.text), unit.language, n, record,
              unique.astype(np.int64).tobytes(), counts.astype(np.int64).tobytes(),
              None if detector is None else detector[:3])
    return result, None if detector is None else detector[3:]


def _sum_grams(keys: Sequence[np.ndarray], contexts: Sequence[np.ndarray], deltas: Sequence[np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Document-frequency changes summed per n-gram key.

    Parameters
    ----------
    keys, contexts, deltas : sequences of int64 arrays
        Aligned parts: n-gram keys, the context key of each, and the change of its document
        frequency (+1 per file that adds it, -1 per file that takes it out, or sums of these).

    Returns
    -------
    tuple of ndarray
        Sorted distinct keys whose change is not zero, their contexts and their changes.
    """
    if not keys:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    all_keys = np.concatenate(keys)
    all_contexts = np.concatenate(contexts)
    all_deltas = np.concatenate(deltas)
    order = np.argsort(all_keys, kind="stable")
    sorted_keys = all_keys[order]
    first = np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1]))) if sorted_keys.size else \
        np.zeros(0, np.int64)
    summed = np.add.reduceat(all_deltas[order], first) if first.size else np.zeros(0, np.int64)
    unique = sorted_keys[first]
    # An n-gram's key is a hash of its context's key and its last token: one context per key.
    context = all_contexts[order][first]
    changed = summed != 0
    return unique[changed], context[changed], summed[changed].astype(np.int64)


def _index_chunk(task: tuple) -> tuple[list[_Result], bytes, bytes, bytes]:
    """Worker: index a chunk of files (``task`` = ((path, key, sha256 of the indexed version or
    ""), ...), max_bytes, k, window, the index's languages). Returns the files' results in
    order and the n-grams of the chunk's Python references summed (keys, contexts, counts as
    int64 bytes), so the parent merges one small table per chunk rather than one per file."""
    files, max_bytes, k, w, languages = task
    results: list[_Result] = []
    keys: list[np.ndarray] = []
    contexts: list[np.ndarray] = []
    for path, key, known_sha in files:
        result, grams = _index_file(path, key, max_bytes, k, w, known_sha)
        results.append(result)
        # A reference in a language the index was not built for is skipped by the parent.
        if grams is not None and result[4] in languages:
            keys.append(grams[0])
            contexts.append(grams[1])
    unique, context, counts = _sum_grams(keys, contexts, [np.ones(g.size, np.int64) for g in keys])
    return results, unique.tobytes(), context.tobytes(), counts.tobytes()


def _text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def _boilerplate_fingerprints(directories: Sequence[str | Path], options: SimilarityOptions
                              ) -> tuple[list[dict], list[int], list[dict]]:
    """Boilerplate files: their description, their fingerprint hashes, and the detector profiles
    of the Python ones (hex of :func:`_encode_profile`)."""
    described: list[dict] = []
    profiles: list[dict] = []
    hashes: set[int] = set()
    for directory in directories:
        units, skipped = load_reference_corpus(directory)
        for item in skipped:
            logger.warning("boilerplate %s skipped: %s", item.path, item.reason)
        for unit in units:
            tokens = tokenize_text(unit.text, unit.language, unit.path)
            hashes.update(f.hash for f in fingerprint_tokens(tokens.tokens, options.kgram_length, options.kgrams_in_window))
            described.append({"path": unit.path, "language": unit.language, "text_sha256": _text_sha256(unit.text)})
            if unit.language == "python":
                blob = _encode_profile(profile_code(unit.text, unit.path), len(unit.text))
                profiles.append({"path": unit.path, "profile": blob.hex()})
    return described, sorted(hashes), profiles
