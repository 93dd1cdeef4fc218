"""Dolos's pair figures for every pair of a set of files at once, with numpy.

:func:`mleaudit.audit.similarity.pair_metrics.dolos_metrics` computes one pair in Python; an
all-pairs analysis (Dolos's ``analyze`` over a folder, ``mleaudit similarity pairs``) has
``F (F - 1) / 2`` pairs, and the per-pair work dominates. :func:`all_pair_metrics` computes the
same figures, to the last bit, for all pairs together:

- **Covered counts.** Occurrences are grouped by (hash, file) into *blocks*; every two blocks
  of one hash in two files add their sizes to the two files' covered counts (Dolos's
  ``leftCovered`` / ``rightCovered``). Work: one sort of all fingerprints, plus one step per
  (pair, shared distinct hash).
- **Longest fragment.** Dolos's ``longestCommonSubstring`` (see
  :func:`mleaudit.audit.similarity.pair_metrics.longest_common_run`) is the length of the longest
  common substring of two sequences: the *long* side's shared fingerprints, in order with the
  others left out, and the *short* side's whole fingerprint sequence (its unshared fingerprints
  never match, so they only break runs). A run of ``r`` matches holds ``r - 1`` *bigram
  matches*: two consecutive shared fingerprints of the long side equal to two consecutive
  fingerprints of the short side. So per short file, the long sides' bigrams are looked up
  among the short file's bigrams; the bigram matches are sorted by (pair, diagonal, position)
  and the longest chain of consecutive ones, plus one, is the longest fragment (one when the
  files share a hash but no bigram). Dolos instead pairs every occurrence of a shared hash with
  every other, which is quadratic in a hash's repetitions; bigram matches are far fewer.
- **Repetitive pairs.** A pair whose bigram matches still exceed
  :data:`MAX_BIGRAM_MATCHES_PER_OCCURRENCE` per fingerprint (code repeating one statement
  thousands of times) gets its longest fragment from :func:`longest_common_substring`, exact in
  ``O(n log^2 n)`` whatever the repetitions.
- **Processes.** Parsing and the walk over syntax trees hold the interpreter lock, so the work
  is spread over processes forked after the imports (``processes._map_in_processes``): files
  are fingerprinted largest first by whichever process is free, the longest fragments of a
  large analysis are computed per short file, and several analyses at once (one per
  competition, :func:`all_pair_metrics_of_texts`) go out one group per task. Task numbers
  travel through a pipe, results come back pickled; the figures never depend on the number of
  processes.

Exactness is tested against Dolos 3.5.1's output on every golden pair and against
:func:`~mleaudit.audit.similarity.pair_metrics.dolos_metrics` on random sequences.

Naming: a file's *fingerprints* are its winnowed k-gram hashes in document order (Dolos's
"kgrams"); a *pair* is two files ``left`` < ``right`` in input order.

Routine Listings
----------------
processes
    ``_map_in_processes``: tasks over forked processes, results in task order.
occurrences
    ``_Corpus``: all files' fingerprints as dense hash ids, with an inverted index.
covered
    ``_covered``: the covered counts of every ordered pair.
longest
    ``_longest_with_short``: the longest fragments of one short file with its partners;
    :data:`MAX_BIGRAM_MATCHES_PER_OCCURRENCE`.
table
    :class:`PairTable`: the figures as columns.
fingerprints
    :func:`fingerprint_hashes`, :func:`fingerprint_texts`: texts to fingerprint hashes.
metrics
    :func:`all_pair_metrics`, :func:`all_pair_metrics_by_group`, :func:`all_pair_metrics_of_texts`,
    :func:`default_jobs`, :func:`idle_jobs`.

Notes
-----
Every public name is re-exported here, so callers import from
``mleaudit.audit.similarity.allpairs``. Imports point down the listing above: a module imports
only modules listed before it, plus :mod:`mleaudit.audit.similarity.substring` and
:mod:`mleaudit.audit.similarity.pair_metrics` (numpy only, no index, no detector); tokenizing and
winnowing are imported where texts are fingerprinted, on first use, so that the all-pairs path
loads no grammar at import time. A new figure of all pairs is computed in its own module beside
``covered`` and ``longest``, set on :class:`PairTable` and on
:class:`~mleaudit.audit.similarity.pair_metrics.DolosMetrics`, and filled in by
:func:`all_pair_metrics`.
"""

from __future__ import annotations

from mleaudit.audit.similarity.allpairs.fingerprints import fingerprint_hashes, fingerprint_texts
from mleaudit.audit.similarity.allpairs.longest import MAX_BIGRAM_MATCHES_PER_OCCURRENCE
from mleaudit.audit.similarity.allpairs.metrics import (
    all_pair_metrics,
    all_pair_metrics_by_group,
    all_pair_metrics_of_texts,
    default_jobs,
    idle_jobs,
)
from mleaudit.audit.similarity.allpairs.table import PairTable
from mleaudit.audit.similarity.substring import longest_common_substring

__all__ = [
    "MAX_BIGRAM_MATCHES_PER_OCCURRENCE",
    "PairTable",
    "all_pair_metrics",
    "all_pair_metrics_by_group",
    "all_pair_metrics_of_texts",
    "default_jobs",
    "fingerprint_hashes",
    "idle_jobs",
    "fingerprint_texts",
    "longest_common_substring",
]

# Examples of the functions re-exported here run with this module's (``doctest.testmod``).
__test__ = {name: globals()[name] for name in ("all_pair_metrics", "all_pair_metrics_by_group",
                                               "all_pair_metrics_of_texts", "longest_common_substring")}
