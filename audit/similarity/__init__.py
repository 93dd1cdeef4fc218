"""Code similarity between agent code and public kernels: Dolos's algorithm, copydetect's roles.

Pipeline: :func:`tokenize_text` (tree-sitter node-type tokens, ``tokenize/``) → fingerprints
(k-gram hashes and winnowing, ``winnow/``) → :class:`FingerprintIndex` (boilerplate, references,
agents; ignored hashes, ``fingerprint_index.py``) → :class:`PairReport` per agent × reference pair
(``pairs.py``). The figures Dolos reports (``similarity``, ``total_overlap``,
``longest_fragment``, covered and total fingerprints) are computed as Dolos 3.5.1 computes them,
so they can be checked against Dolos's own output; containment in both directions, fragments with
spans into notebook cells, boilerplate exclusion and a reference corpus are added on top.

The copy detector (``detect``) adds one decision statistic per pair, ``score`` in [0, 1)
(the information of the code the agent file shares with the reference, under a background model
of the other references), and ``flagged`` when it reaches the policy threshold, which lives in
``rules/plagiarism/`` (read by :func:`mleaudit.audit.score_threshold.load_score_threshold`).

Every pair is measured (both containments, the score), but a report keeps only the pairs a
reviewer is shown: per agent file its best pairs by score and by containment and every flagged
pair (``SimilarityOptions.max_pairs_per_agent``). Fragments, the costly part of a pair report,
are built for those alone, so time and memory stay in proportion to what is reported.

Naming: ``*_similarity`` and ``*_containment`` lie in [0, 1], higher meaning more alike; a
*k-gram* is a run of ``kgram_length`` tokens; a *fingerprint* is a k-gram hash kept by winnowing.

The package's names are loaded on first use (PEP 562), so that a command needing only part of
the engine (``mleaudit similarity pairs``: tokenize, winnow, all pairs) does not import the copy
detector, the corpus loader and the comparison code at start-up.

Routine Listings
----------------
The modules, from the bottom layer up; a module imports only from its own layer or below.

Tokens and fingerprints
    ``winnow/`` (Dolos's token hash, rolling hashes, winnowing, :class:`Fingerprint`);
    ``tokenize/`` (:class:`TokenizedFile`; tokens of a syntax tree, of characters, token hashes
    alone).
Pair figures
    ``fingerprint_index.py`` (files by role, ignored hashes); ``substring.py`` (the exact longest
    common substring); ``pair_metrics.py`` (:class:`DolosMetrics` of one pair);
    ``allpairs/`` (the same figures for every pair of many files, with numpy and forked
    processes); ``fragments.py`` (Dolos's fragments, :class:`Fragment`).
Copy detector
    ``detect`` (profiles, background model, :class:`Evidence`, ``score``); ``bounds.py`` (upper
    bounds that skip pairs the detector could not flag); ``evidence.py`` (its evidence as
    fragments).
Reports
    ``pairs.py`` (:class:`PairReport`, :func:`pair_report`); ``corpus.py`` (reference kernels read
    from folders); ``strings.py`` (code kept in string literals); ``comparison.py``
    (:func:`compare`, :class:`SimilarityReport`); ``options.py`` (:class:`SimilarityOptions`);
    ``measuring.py`` (the pairs each agent file keeps, in this process or forked workers).
Corpus index
    ``index/``: the reference corpus on disk (SQLite or Redis), searched without tokenizing
    every kernel, with the same figures as :func:`compare`.
Command line
    ``cli/`` (``mleaudit similarity``), ``corpus_cli.py`` (``mleaudit corpus``).

Notes
-----
A language with a tree-sitter grammar is added to :data:`mleaudit.audit.parsing.LANGUAGES` and
needs nothing here: the tokenizers read any grammar's node kinds. A tokenizer of another kind
(as character tokens are, for text without a grammar) goes in ``tokenize/``; its docstring says
where. A storage backend of the corpus index goes in ``index/``, beside the SQLite and Redis
ones, behind the backend protocol its docstring names. A name meant for callers of the package
is added to ``_ORIGIN`` below, with the module that defines it.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Where each exported name is defined.
_ORIGIN = {
    "CoverageTable": "mleaudit.audit.similarity.fingerprint_index",
    "DEFAULT_MAX_PAIRS_PER_AGENT": "mleaudit.audit.similarity.options",
    "DEFAULT_SCORE_THRESHOLD": "mleaudit.audit.similarity.detect",
    "DetectionCorpus": "mleaudit.audit.similarity.detect",
    "DolosMetrics": "mleaudit.audit.similarity.pair_metrics",
    "Evidence": "mleaudit.audit.similarity.detect",
    "Fingerprint": "mleaudit.audit.similarity.winnow.fingerprints",
    "FingerprintIndex": "mleaudit.audit.similarity.fingerprint_index",
    "Fragment": "mleaudit.audit.similarity.fragments",
    "IndexedFile": "mleaudit.audit.similarity.fingerprint_index",
    "PairReport": "mleaudit.audit.similarity.pairs",
    "Profile": "mleaudit.audit.similarity.detect",
    "ReferenceCorpus": "mleaudit.audit.similarity.corpus",
    "Role": "mleaudit.audit.similarity.fingerprint_index",
    "SimilarityOptions": "mleaudit.audit.similarity.options",
    "SimilarityReport": "mleaudit.audit.similarity.comparison",
    "TokenizedFile": "mleaudit.audit.similarity.tokenize.tokenized_file",
    "build_fragments": "mleaudit.audit.similarity.fragments",
    "compare": "mleaudit.audit.similarity.comparison",
    "containment": "mleaudit.audit.similarity.pairs",
    "dolos_metrics": "mleaudit.audit.similarity.pair_metrics",
    "evidence_fragments": "mleaudit.audit.similarity.evidence",
    "fingerprint_tokens": "mleaudit.audit.similarity.winnow.fingerprints",
    "hash_token": "mleaudit.audit.similarity.winnow.hashing",
    "load_reference_corpus": "mleaudit.audit.similarity.corpus",
    "pair_report": "mleaudit.audit.similarity.pairs",
    "profile_code": "mleaudit.audit.similarity.detect",
    "rolling_hashes": "mleaudit.audit.similarity.winnow.hashing",
    "score_from_bits": "mleaudit.audit.similarity.detect",
    "score_threshold_from_rules": "mleaudit.audit.similarity.detect",
    "tokenize_chars": "mleaudit.audit.similarity.tokenize.chars",
    "tokenize_text": "mleaudit.audit.similarity.tokenize.trees",
    "tokenize_tree": "mleaudit.audit.similarity.tokenize.trees",
    "tokenize_unit": "mleaudit.audit.similarity.reference_side",
    "winnow": "mleaudit.audit.similarity.winnow.fingerprints",
}

__all__ = sorted(_ORIGIN)


def __getattr__(name: str) -> Any:
    """Load an exported name from its module on first use (then cached here)."""
    module = _ORIGIN.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ORIGIN))
