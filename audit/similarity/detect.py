"""The copy detector: one decision statistic ``score`` per (agent file, reference kernel) pair.

Dolos's figures answer "how alike are two files"; a reviewer needs "did this agent file copy code
from this kernel", which must also hold when a few short pieces of a long notebook were pasted
into the agent's own script, with variables renamed and statements inserted between the copied
lines. Structural (node-type) k-grams are too generic for that: unrelated pandas scripts of one
competition share 40 % of their k = 23 fingerprints. The detector therefore measures *how
surprising* the shared code is, not how much of it there is:

1. **Lexical tokens** (:func:`lex_code`). Each line is lexed on its own (so a slice that starts
   inside a string, or breaks the syntax, still yields the tokens of its lines); identifiers
   become ``ID`` (renaming has no effect), keywords, operators and literal *values* stay
   (strings with their quotes normalised and f-string fields emptied, numbers as written);
   comments, layout, and IPython ``%``/``!`` lines are dropped.
2. **Tiles** (:func:`find_tiles`): maximal runs of at least :data:`MIN_TILE_TOKENS` equal
   tokens, chosen longest first and never overlapping on either side (greedy string tiling, as in
   JPlag), seeded by an index of the reference's token 6-grams.
3. **Background model** (:func:`token_bits`): how predictable each agent token is for code
   written *independently* of the reference: a Witten-Bell interpolated trigram model over the
   document frequencies of the corpus's token n-grams (:class:`NgramTable`) with the reference
   itself and its near-duplicates (forks) subtracted, backed off to a prior that charges
   literals by length. Code that many kernels share (``train_test_split(X, y, test_size=0.2,
   ...)``, the usual column names) costs few bits; a file path or hyperparameter set found only
   in the reference costs many. The corpus alone is a poor teacher of what ordinary ML code
   looks like (a competition may have a handful of kernels), so every pair's background also
   counts a shipped **background of ordinary code** (:class:`Background`,
   ``data/background.npz``, built by ``scripts/build_background.py`` from agent-style scripts
   written for it: reading ``./input``, splits, fits, metrics, plots, submission writing). Its
   trigram counts are added to the corpus's, and its model of whole statements (token 6-grams,
   :data:`IDIOM_ORDER`) can explain a token the trigrams find surprising. Three more rules
   keep what the data or the documentation dictates from reading as a copy: a string that
   reads as a name (a column such as ``'GarageArea'``) costs at most a closed-vocabulary
   token (:data:`NAME_LITERAL_BITS`); a string that other files hold costs at most
   ``-log2`` of the share of files holding it; the words of a docstring (a line of adjacent
   identifiers, :data:`PROSE_PAIRS`) cost nothing.
4. **Evidence** (:meth:`DetectionCorpus.evidence`): tiles are chained like local alignments, in
   the same order in both files. Each reference token skipped between two chained tiles costs
   :data:`GAP_BITS` (a pasted block is contiguous in the kernel); a jump of ``g`` agent tokens
   to the next tile costs ``2 log2(1 + g)`` bits, the length of a code for where the next copied
   piece starts (so code inserted between copied lines costs a few bits, while a chain of short
   generic matches scattered over a long agent file pays for every jump). The evidence is the
   information (bits) of the best chain.
5. **Score** (:func:`score_from_bits`): ``1 - 2 ** (-bits / 100)``, in [0, 1), higher meaning
   more likely a copy of that reference. The decision threshold is policy and lives in
   ``rules/plagiarism/`` (a similarity rule ``when: {score: {gte: X}}``);
   :data:`DEFAULT_SCORE_THRESHOLD` is the documented fallback and equals the shipped rule.

Calibration on real agent code: with the background, no pair of a clean real run (the shared
AIDE, AIDE-journal, AutoKaggle and MLAgentBench runs) against the 204 shared notebooks reaches
the shipped threshold (the highest scores 0.46), where before 66 pairs of 4 runs did, on generic
code (``train_test_split(..., random_state=42)``, ``np.sqrt(mean_squared_error(...))``) and on
lists of the data's columns; ``benchmarks/detection_quality.py --clean-runs`` prints them.

What one pair can tell, and what it cannot: the evidence that an agent file copied from a
kernel counts shared code only as far as the kernels outside that kernel's forks lack it. A
kernel holding part of a block that the agent copied from another family of kernels (Kaggle
kernels copy each other's cells) therefore scores low, the block being common code when seen
from it; and agent code written the canonical way (``train_test_split``, ``fit``, ``predict``,
``./input`` paths) can share long stretches with a kernel written the same way, which a corpus
of a handful of kernels cannot tell from a copy. ``benchmarks/detection_quality.py --list``
names each such pair of the shared cases.

The statistic has few free constants, each set by what it models rather than fitted: the
tile floor (one short statement), the trigram order, the prior of unseen tokens (about 2 bits
per character of a string, 3.3 per digit, uniform over the lexer's closed vocabulary for
anything else), the near-duplicate bound (half the sampled 8-grams), the reference gap cost
and the agent jump code. The threshold was chosen on the shared partial-copy cases (see
``rules/plagiarism/plag-kernel-containment.yaml``); ``benchmarks/detection_quality.py`` prints
the figures, with leave-one-competition-out.

Everything the background needs is a sum over documents: an n-gram's document frequency, a
context's total and its number of distinct continuations. A corpus index can therefore store
the corpus-level :class:`NgramTable` and each document's :class:`Profile`, and derive any
reference's leave-out background by subtraction (:mod:`mleaudit.audit.similarity.corpus_index`), with
the same figures as :class:`DetectionCorpus` over the same notebooks.

Naming: *bits* are ``-log2`` of a probability; a *tile* is a pair of equal token runs; the
*evidence* of a pair is the bits of its best chain of tiles; an n-gram's *key* is a 64-bit
hash of its token ids (:func:`gram_keys`).

References
----------
Wise, M. J. (1993). String similarity via greedy string tiling and running Karp-Rabin matching.
Department of Computer Science, University of Sydney (the tiling used by JPlag).
Witten, I. H., & Bell, T. C. (1991). The zero-frequency problem: estimating the probabilities of
novel events in adaptive text compression. *IEEE Transactions on Information Theory*, 37(4),
1085-1094.
Smith, T. F., & Waterman, M. S. (1981). Identification of common molecular subsequences.
*Journal of Molecular Biology*, 147(1), 195-197 (local alignment, here over tiles).
Elias, P. (1975). Universal codeword sets and representations of the integers. *IEEE
Transactions on Information Theory*, 21(2), 194-203 (the gamma code behind the jump cost).
"""

from __future__ import annotations

import hashlib
import heapq
import json
import keyword
import logging
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from mleaudit.audit.errors import ConfigError

__all__ = [
    "BACKGROUND_FORMAT",
    "BACKGROUND_PATH",
    "IDIOM_ORDER",
    "DEFAULT_SCORE_THRESHOLD",
    "AgentQuery",
    "Background",
    "EVIDENCE_SCALE_BITS",
    "GAP_BITS",
    "MIN_TILE_TOKENS",
    "MODEL_ORDER",
    "PROFILE_SCHEME",
    "DetectionCorpus",
    "Evidence",
    "LexedCode",
    "NgramTable",
    "Profile",
    "Tile",
    "bits_from_score",
    "boilerplate_mask",
    "find_tiles",
    "gram_keys",
    "idiom_grams",
    "jump_bits",
    "lex_code",
    "load_background",
    "default_background",
    "save_background",
    "near_duplicate_members",
    "profile_code",
    "reference_evidence",
    "score_from_bits",
    "score_threshold_from_rules",
    "load_score_threshold",
    "token_bits",
]

logger = logging.getLogger(__name__)

#: Fallback decision threshold on ``score`` when the plagiarism rules cannot be read. It equals
#: the bound of ``rules/plagiarism/plag-kernel-containment.yaml`` (100 bits of evidence).
DEFAULT_SCORE_THRESHOLD = 0.5
#: ``score = 1 - 2 ** (-bits / EVIDENCE_SCALE_BITS)``: 100 bits of evidence give a score of 0.5.
EVIDENCE_SCALE_BITS = 100.0
#: Shortest tile, in lexical tokens (``x = f(a)`` is 6 tokens).
MIN_TILE_TOKENS = 6
#: Cost of each reference token skipped between two chained tiles, in bits.
GAP_BITS = 10.0
#: Chained tiles lie at most this many reference tokens apart (further gaps cost more than any
#: chain short of a wholesale copy could gain).
MAX_GAP_TOKENS = 64
#: A seed k-gram found more often than this in one reference is a repetition (lists of strings,
#: column-by-column code) and seeds nothing; a run through it is cut there.
MAX_SEED_OCCURRENCES = 64
#: Order of the background n-gram model.
MODEL_ORDER = 3
#: Two references are near-duplicates (forks) when this share of one's sampled 8-grams is in the other.
NEAR_DUPLICATE_CONTAINMENT = 0.5
#: A sampled 8-gram held by more files than this says nothing about forks (imports, read_csv).
MAX_SAMPLE_HOLDERS = 512
#: At most this many near-duplicates are left out of a reference's background: the closest
#: forks. It bounds the work of a pair on a corpus where a kernel has hundreds of forks (in the
#: shared notebooks a kernel has at most 17), where the rest of the family reads as common code.
MAX_NEAR_DUPLICATES = 32
#: Most bits a name-like string literal (``'GarageArea'``) carries: a closed-vocabulary token's prior.
NAME_LITERAL_BITS = math.log2(len(keyword.kwlist) + 1 + 45 + 2)
#: Most bits each further name of a list of three or more names (``'MSZoning', 'Street',
#: 'Alley'``) carries. A list of the data's columns is read off the data's header, which every
#: writer of the competition has: what is left to choose per name is whether to keep or skip
#: the next column.
LISTED_NAME_BITS = 1.0
#: Per-token information is capped (one token can never carry a match on its own).
MAX_TOKEN_BITS = 40.0
#: Key of the empty context (the context of a unigram).
EMPTY_CONTEXT = 0
#: What a stored profile or n-gram table depends on; a corpus index made under another scheme
#: must be rebuilt.
PROFILE_SCHEME = "lexical-tokens-1/priors-2/blake2b-64/splitmix64-grams/order-3/sample-8-mod-4-25bit"

_SEED = MIN_TILE_TOKENS
_NEAR_DUP_N = 8
_SAMPLE_MODULUS = 4  # keep 8-grams whose key is 0 mod this (a fixed sample of every file)
_SAMPLE_BITS = 25  # sampled 8-gram values are 25-bit (they share posting lists with fingerprints)

_KEYWORDS = frozenset(keyword.kwlist) | {"print"}  # Python 2 notebooks use print statements
_LEXEME = re.compile(
    r"""
     (?P<str>[rRbBuUfF]{0,2}(?:'''|\"\"\"|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"))
    |(?P<num>(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][-+]?\d+)?[jJ]?)
    |(?P<name>[^\W\d]\w*)
    |(?P<comment>\#.*)
    |(?P<op>\*\*=?|//=?|>>=?|<<=?|->|:=|[-+*/%&|^@=!<>]=|[()\[\]{}.,:;@=+\-*/%&|^~<>])
    |(?P<space>\s+|\\)
    |(?P<other>.)
    """,
    re.VERBOSE,
)
_FIELD = re.compile(r"\{[^{}]*\}")
#: A string literal's content that reads as a name (a column of the data, a dict key): at most
#: 40 letters, digits and ``_``, with at least one letter (``'2ndFlrSF'`` is a column, ``'2020'`` not).
_NAME_LITERAL = re.compile(r"(?=[0-9_]*[A-Za-z])[A-Za-z0-9_]{1,40}")


# -- lexing ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LexedCode:
    """A code text as the detector's lexical tokens.

    Attributes
    ----------
    tokens : tuple of str
        ``ID`` for identifiers; keywords and operators as written; ``S<text>`` for a string
        literal's content; numbers as written; ``\"\"\"`` for a triple-quote delimiter.
    starts, ends : tuple of int
        Character offsets ``[start, end)`` of each token in the text (same length as ``tokens``).
    """

    tokens: tuple[str, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]


def _literal(text: str) -> str:
    body = text.lstrip("rRbBuUfF")
    prefix = text[: len(text) - len(body)].lower()
    if body in ("'''", '"""'):
        return '"""'
    content = body[1:-1]
    if "f" in prefix:
        # Names inside f-string fields are identifiers: renaming must not change the token.
        content = _FIELD.sub("{}", content)
    return "S" + content


def lex_code(text: str) -> LexedCode:
    """Lex Python code line by line into the detector's tokens.

    Parameters
    ----------
    text : str
        Python source, or the joined code cells of a notebook. Never executed.

    Returns
    -------
    LexedCode
        Tokens with their character offsets. Lines whose first non-blank character is ``%`` or
        ``!`` (IPython magics and shell escapes) and comments yield no token.

    Examples
    --------
    >>> lex_code("total = f(x, 'a.csv')  # note\\n%time g()\\n").tokens
    ('ID', '=', 'ID', '(', 'ID', ',', 'Sa.csv', ')')
    >>> lex_code('print(f"acc {value:.2f}")').tokens == lex_code("print(f'acc {score:.2f}')").tokens
    True
    """
    tokens: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    offset = 0
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped[:1] not in ("%", "!"):
            for match in _LEXEME.finditer(line):
                kind = match.lastgroup
                if kind in ("space", "comment"):
                    continue
                value = match.group()
                if kind == "str":
                    value = _literal(value)
                elif kind == "name" and value not in _KEYWORDS:
                    value = "ID"
                tokens.append(value)
                starts.append(offset + match.start())
                ends.append(offset + match.end())
        offset += len(line) + 1
    return LexedCode(tokens=tuple(tokens), starts=tuple(starts), ends=tuple(ends))


_TOKEN_IDS: dict[str, int] = {}


def _token_id(token: str) -> int:
    # A stable id (not Python's salted str hash), so profiles mean the same in every process.
    value = _TOKEN_IDS.get(token)
    if value is None:
        digest = hashlib.blake2b(token.encode("utf-8", errors="surrogatepass"), digest_size=8).digest()
        value = int.from_bytes(digest, "big") >> 1
        if len(_TOKEN_IDS) < 1_000_000:
            _TOKEN_IDS[token] = value
    return value


_COMMA_ID = np.uint64(_token_id(","))


#: Keywords, operators and punctuation the lexer keeps, plus ``ID`` and the triple quote: the
#: closed part of its vocabulary.
_CLOSED_VOCABULARY = len(_KEYWORDS) + 45 + 2
#: Prior bits of a token of the closed vocabulary: uniform over it (about 6.4 bits).
_CLOSED_BITS = math.log2(_CLOSED_VOCABULARY)


def _prior_bits(token: str) -> float:
    """Bits charged to a token the background has never seen: literals by length (about 2 bits
    per character of a string, 3.3 per digit, plus 4), anything else uniform over the closed
    vocabulary (so syntax alone never looks rare, even with no background at all)."""
    if token.startswith("S"):
        return 4.0 + 2.0 * (len(token) - 1)
    if token[:1].isdigit() or (token[:1] == "." and len(token) > 1):
        return 4.0 + 3.3 * len(token)
    return _CLOSED_BITS


# -- n-gram keys -----------------------------------------------------------------------------------

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on a uint64 array (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def gram_keys(ids: np.ndarray, order: int) -> list[np.ndarray]:
    """Keys of the token n-grams ending at each position, for n = 1 .. ``order``.

    Parameters
    ----------
    ids : ndarray of uint64
        Token ids of a file (see :func:`profile_code`).
    order : int

    Returns
    -------
    list of ndarray of int64
        ``keys[n - 1][i]`` is the key of ``ids[i - n + 1 : i + 1]``; positions ``i < n - 1``
        hold no n-gram (their values are meaningless). The context of that n-gram is
        ``keys[n - 2][i - 1]`` (:data:`EMPTY_CONTEXT` for a unigram). Keys are 64-bit hashes
        (SplitMix64 over the previous order's key and the token id), the same in every process.
    """
    out: list[np.ndarray] = []
    with np.errstate(over="ignore"):
        current = _mix(ids ^ _GOLDEN)
        out.append(current.view(np.int64))
        for n in range(2, order + 1):
            shifted = np.empty_like(current)
            shifted[0] = 0
            shifted[1:] = current[:-1]
            current = _mix(shifted * _GOLDEN + ids + np.uint64(n))
            out.append(current.view(np.int64))
    return out


# -- profiles --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Profile:
    """What the detector keeps of one file: its token ids and where each token is.

    Attributes
    ----------
    path : str
    ids : tuple of int
        Stable ids of the lexical tokens (see :func:`lex_code`), 63-bit.
    starts, ends : tuple of int
        Character offsets of each token in the file's text.
    priors : Mapping[int, float]
        Prior bits of each distinct token id (literals by length).
    literals : frozenset of int
        Ids of the string-literal tokens (empty for a profile read back from a corpus index,
        where only the agent side needs them).
    names : frozenset of int
        Ids of the string literals that read as a name (:data:`_NAME_LITERAL`: a column or key
        such as ``'GarageArea'`` or ``"pickup_latitude"``), a subset of ``literals``.
    prose : frozenset of int
        Positions of the tokens on prose lines (a docstring's text, lexed as words): they carry
        no evidence.
    """

    path: str
    ids: tuple[int, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    priors: Mapping[int, float]
    literals: frozenset = frozenset()
    names: frozenset = frozenset()
    prose: frozenset = frozenset()
    _cache: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    def content_key(self) -> tuple:
        """What the detector's evidence against a reference depends on: the tokens and what is
        known of them, not the path nor where each token lies in the text (two files that differ
        only in comments, blank lines or spacing have one key)."""
        key = self._cache.get("content_key")
        if key is None:
            key = (self.ids, frozenset(self.priors.items()), self.literals, self.names, self.prose)
            self._cache["content_key"] = key
        return key

    def id_array(self) -> np.ndarray:
        """The token ids as a uint64 array (built once)."""
        array = self._cache.get("ids")
        if array is None:
            array = np.array(self.ids, dtype=np.uint64)
            self._cache["ids"] = array
        return array

    def prior_array(self) -> np.ndarray:
        """Prior bits of each token, aligned with ``ids`` (built once)."""
        array = self._cache.get("priors")
        if array is None:
            array = np.array([self.priors.get(i, _CLOSED_BITS) for i in self.ids], dtype=np.float64)
            self._cache["priors"] = array
        return array

    def literal_array(self) -> np.ndarray:
        """Whether each token is a string literal, aligned with ``ids`` (built once)."""
        array = self._cache.get("literals")
        if array is None:
            array = np.array([i in self.literals for i in self.ids], dtype=bool)
            self._cache["literals"] = array
        return array

    def name_array(self) -> np.ndarray:
        """Whether each token is a name-like string literal, aligned with ``ids`` (built once)."""
        array = self._cache.get("names")
        if array is None:
            array = np.array([i in self.names for i in self.ids], dtype=bool)
            self._cache["names"] = array
        return array

    def keys(self) -> list[np.ndarray]:
        """:func:`gram_keys` of the file up to :data:`MODEL_ORDER` (built once)."""
        keys = self._cache.get("keys")
        if keys is None:
            keys = gram_keys(self.id_array(), MODEL_ORDER) if self.ids else [np.zeros(0, np.int64)] * MODEL_ORDER
            self._cache["keys"] = keys
        return keys

    def grams(self) -> tuple[np.ndarray, np.ndarray]:
        """The file's distinct n-grams of orders 1 to :data:`MODEL_ORDER`: sorted keys and their
        context keys (what the file adds to an :class:`NgramTable`)."""
        grams = self._cache.get("grams")
        if grams is None:
            keys = self.keys()
            parts, contexts = [], []
            for n in range(1, MODEL_ORDER + 1):
                if len(self.ids) < n:
                    continue
                parts.append(keys[n - 1][n - 1 :])
                if n == 1:
                    contexts.append(np.full(len(self.ids), EMPTY_CONTEXT, dtype=np.int64))
                else:
                    contexts.append(keys[n - 2][n - 2 : -1])
            if parts:
                all_keys = np.concatenate(parts)
                all_contexts = np.concatenate(contexts)
                unique, first = np.unique(all_keys, return_index=True)
                grams = (unique, all_contexts[first])
            else:
                grams = (np.zeros(0, np.int64), np.zeros(0, np.int64))
            self._cache["grams"] = grams
        return grams

    def context_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted context keys of the file's distinct n-grams and how many n-grams each has."""
        counts = self._cache.get("contexts")
        if counts is None:
            counts = np.unique(self.grams()[1], return_counts=True)
            self._cache["contexts"] = counts
        return counts

    def sample(self) -> np.ndarray:
        """A fixed sample of the file's token 8-grams, as sorted distinct 25-bit values, for
        near-duplicate detection (the same for a file in every process and corpus)."""
        sample = self._cache.get("sample")
        if sample is None:
            if len(self.ids) < _NEAR_DUP_N:
                sample = np.zeros(0, np.int64)
            else:
                keys = gram_keys(self.id_array(), _NEAR_DUP_N)[-1][_NEAR_DUP_N - 1 :].view(np.uint64)
                kept = keys[keys % np.uint64(_SAMPLE_MODULUS) == 0] >> np.uint64(64 - _SAMPLE_BITS)
                sample = np.unique(kept.astype(np.int64))
            self._cache["sample"] = sample
        return sample

    def seed_keys(self) -> np.ndarray:
        """Keys of the token :data:`MIN_TILE_TOKENS`-grams, by start position (built once)."""
        keys = self._cache.get("seeds")
        if keys is None:
            if len(self.ids) < _SEED:
                keys = np.zeros(0, np.int64)
            else:
                keys = gram_keys(self.id_array(), _SEED)[-1][_SEED - 1 :]
            self._cache["seeds"] = keys
        return keys


def profile_code(text: str, path: str = "") -> Profile:
    """The detector's :class:`Profile` of a code text.

    Parameters
    ----------
    text : str
        Python code (a file, or a notebook's joined code cells).
    path : str
        Recorded on the profile.

    Returns
    -------
    Profile
    """
    lexed = lex_code(text)
    ids = tuple(_token_id(t) for t in lexed.tokens)
    priors = {i: _prior_bits(t) for i, t in zip(ids, lexed.tokens)}
    prose = frozenset(_prose_positions(lexed, text))
    literals = frozenset(i for i, t in zip(ids, lexed.tokens) if t.startswith("S"))
    names = frozenset(i for i, t in zip(ids, lexed.tokens) if t.startswith("S") and _NAME_LITERAL.fullmatch(t, 1))
    return Profile(path=path, ids=ids, starts=lexed.starts, ends=lexed.ends, priors=priors, literals=literals,
                   names=names, prose=prose)


#: A line with at least this many pairs of adjacent identifiers is prose, not code.
PROSE_PAIRS = 2


def _prose_positions(lexed: LexedCode, text: str) -> list[int]:
    """Positions of the tokens on prose lines: lines of a docstring or multi-line string that the
    line-by-line lexer reads as words. Two identifiers in a row are not Python (soft keywords
    such as ``match x:`` make one such pair), so a line with :data:`PROSE_PAIRS` of them is text."""
    if not lexed.tokens:
        return []
    newlines = np.flatnonzero(np.frombuffer(text.encode("utf-32-le", errors="surrogatepass"), dtype=np.uint32) == 10)
    lines = np.searchsorted(newlines, np.asarray(lexed.starts), side="right")
    word = np.array([t == "ID" for t in lexed.tokens], dtype=bool)
    pairs = word[:-1] & word[1:] & (lines[:-1] == lines[1:])
    per_line = np.bincount(lines[:-1][pairs], minlength=int(lines[-1]) + 1) if pairs.any() else None
    if per_line is None:
        return []
    prose_lines = per_line >= PROSE_PAIRS
    return np.flatnonzero(prose_lines[lines]).tolist()


# -- tiles -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Tile:
    """Equal token runs ``agent[agent_start:agent_stop]`` and ``reference[reference_start:reference_stop]``."""

    agent_start: int
    agent_stop: int
    reference_start: int
    reference_stop: int

    @property
    def length(self) -> int:
        return self.agent_stop - self.agent_start


_ONES = b"\x01" * 4096


def _maximal_runs(agent: Profile, reference: Profile, min_tokens: int = MIN_TILE_TOKENS
                  ) -> list[tuple[int, int, int, int, int]]:
    """Maximal equal runs of at least ``min_tokens`` tokens, as ``(-length, a0, a1, r0, r1)``,
    longest first (ties: by agent start, then reference start).

    Seeds are the token 6-grams both files share (by key); a seed found more than
    :data:`MAX_SEED_OCCURRENCES` times in the reference is a repetition and seeds nothing.
    Consecutive seeds on one diagonal (the same offset between the files) make one run.
    """
    seeds_a, seeds_r = agent.seed_keys(), reference.seed_keys()
    if not seeds_a.size or not seeds_r.size:
        return []
    order = np.argsort(seeds_r, kind="stable")
    sorted_r = seeds_r[order]
    low = np.searchsorted(sorted_r, seeds_a, side="left")
    high = np.searchsorted(sorted_r, seeds_a, side="right")
    found = high - low
    keep = (found > 0) & (found <= MAX_SEED_OCCURRENCES)
    if not keep.any():
        return []
    counts = found[keep]
    agent_at = np.repeat(np.flatnonzero(keep), counts)
    # position of each pair in `sorted_r`: the group's first index plus a running offset
    firsts = np.repeat(low[keep], counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    reference_at = order[firsts + offsets]
    diagonal = agent_at - reference_at
    by = np.lexsort((agent_at, diagonal))
    agent_at, diagonal = agent_at[by], diagonal[by]
    breaks = np.flatnonzero((np.diff(diagonal) != 0) | (np.diff(agent_at) != 1)) + 1
    starts = np.concatenate(([0], breaks))
    stops = np.concatenate((breaks, [agent_at.size])) - 1
    a0 = agent_at[starts]
    a1 = agent_at[stops] + _SEED
    r0 = a0 - diagonal[starts]
    r1 = a1 - diagonal[starts]
    long_enough = (a1 - a0) >= min_tokens
    a0, a1, r0, r1 = a0[long_enough], a1[long_enough], r0[long_enough], r1[long_enough]
    # longest first; ties by agent start, then reference start
    by = np.lexsort((r1, r0, a1, a0, a0 - a1))
    return list(zip((a0 - a1)[by].tolist(), a0[by].tolist(), a1[by].tolist(), r0[by].tolist(), r1[by].tolist()))


def find_tiles(agent: Profile, reference: Profile, min_tokens: int = MIN_TILE_TOKENS) -> list[Tile]:
    """Greedy string tiling of two token streams.

    Parameters
    ----------
    agent, reference : Profile
    min_tokens : int
        Shortest tile kept (at least :data:`MIN_TILE_TOKENS`, the seed length).

    Returns
    -------
    list of Tile
        Maximal equal runs, longest first when they compete for tokens (ties: the earlier in the
        agent file, then in the reference), no token of either side in two tiles; sorted by
        agent position.

    Examples
    --------
    >>> a = profile_code("x = f(a, 'k')\\ny = 1\\nz = g(b, 'k') + 2\\n")
    >>> r = profile_code("q = f(c, 'k')\\nz = g(d, 'k') + 2\\n")
    >>> [(t.agent_start, t.length) for t in find_tiles(a, r)]
    [(0, 10), (13, 8)]
    """
    return _greedy_tiles(_maximal_runs(agent, reference, min_tokens), len(agent.ids), len(reference.ids), min_tokens)


def _greedy_tiles(runs: list[tuple[int, int, int, int, int]], n_agent: int, n_reference: int,
                  min_tokens: int = MIN_TILE_TOKENS) -> list[Tile]:
    used_a = bytearray(n_agent)
    used_r = bytearray(n_reference)
    tiles: list[Tile] = []
    pending: list[tuple[int, int, int, int, int]] = []  # free stretches of runs, a heap
    at, count = 0, len(runs)
    while at < count or pending:
        if pending and (at >= count or pending[0] < runs[at]):
            _, a0, a1, r0, r1 = heapq.heappop(pending)
        else:
            _, a0, a1, r0, r1 = runs[at]
            at += 1
        if used_a.find(1, a0, a1) < 0 and used_r.find(1, r0, r1) < 0:
            length = a1 - a0
            used_a[a0:a1] = _ONES[:length] if length <= len(_ONES) else b"\x01" * length
            used_r[r0:r1] = _ONES[:length] if length <= len(_ONES) else b"\x01" * length
            tiles.append(Tile(agent_start=a0, agent_stop=a1, reference_start=r0, reference_stop=r1))
            continue
        # Part of the run is taken by a longer tile: its free stretches compete again.
        x, length = 0, a1 - a0
        while x < length:
            if used_a[a0 + x] or used_r[r0 + x]:
                x += 1
                continue
            y = x
            while y < length and not used_a[a0 + y] and not used_r[r0 + y]:
                y += 1
            if y - x >= min_tokens:
                heapq.heappush(pending, (-(y - x), a0 + x, a0 + y, r0 + x, r0 + y))
            x = y
    tiles.sort(key=lambda t: (t.agent_start, t.reference_start))
    return tiles


# -- background model ------------------------------------------------------------------------------


class NgramTable:
    """Document frequencies of token n-grams over a corpus, with per-context sums.

    For each n-gram key: how many files contain it (its document frequency, so one notebook that
    repeats a block does not make it common). For each context key (an n-gram one token
    shorter, or :data:`EMPTY_CONTEXT`): the sum of the document frequencies of its continuations
    (``total``) and how many distinct continuations it has (``kinds``). All three are sums over
    files, which is what lets a corpus index keep them up to date and subtract any file.

    Parameters
    ----------
    keys, counts : ndarray of int64
        n-gram keys (sorted, distinct) and their document frequencies.
    context_keys, totals, kinds : ndarray of int64
        Context keys (sorted, distinct) and their sums.

    Notes
    -----
    A table may hold only the rows a query needs (the corpus index fetches those of one agent
    file): lookups of absent keys answer 0, which is right when every key the query asks for was
    fetched.
    """

    __slots__ = ("keys", "counts", "context_keys", "totals", "kinds")

    def __init__(self, keys: np.ndarray, counts: np.ndarray, context_keys: np.ndarray, totals: np.ndarray,
                 kinds: np.ndarray) -> None:
        self.keys = np.asarray(keys, dtype=np.int64)
        self.counts = np.asarray(counts, dtype=np.int64)
        self.context_keys = np.asarray(context_keys, dtype=np.int64)
        self.totals = np.asarray(totals, dtype=np.int64)
        self.kinds = np.asarray(kinds, dtype=np.int64)

    @classmethod
    def from_profiles(cls, profiles: Sequence[Profile]) -> "NgramTable":
        """The table of a corpus given as profiles."""
        return cls.from_grams([p.grams() for p in profiles])

    @classmethod
    def from_grams(cls, grams: Sequence[tuple[np.ndarray, np.ndarray]]) -> "NgramTable":
        """The table of a corpus given as each document's distinct n-gram keys and their context
        keys (:meth:`Profile.grams`, or :func:`idiom_grams`)."""
        grams = list(grams)
        if not grams or not sum(len(k) for k, _ in grams):
            empty = np.zeros(0, np.int64)
            return cls(empty, empty, empty, empty, empty)
        keys = np.concatenate([k for k, _ in grams])
        contexts = np.concatenate([c for _, c in grams])
        unique, first, counts = np.unique(keys, return_index=True, return_counts=True)
        context_of = contexts[first]
        context_keys, inverse = np.unique(context_of, return_inverse=True)
        totals = np.bincount(inverse, weights=counts, minlength=context_keys.size).astype(np.int64)
        kinds = np.bincount(inverse, minlength=context_keys.size).astype(np.int64)
        return cls(unique, counts.astype(np.int64), context_keys, totals, kinds)

    @staticmethod
    def _lookup(keys: np.ndarray, table_keys: np.ndarray, *values: np.ndarray) -> list[np.ndarray]:
        if not table_keys.size:
            return [np.zeros(len(keys), np.int64) for _ in values]
        at = np.searchsorted(table_keys, keys)
        at[at >= table_keys.size] = 0
        found = table_keys[at] == keys
        return [np.where(found, v[at], 0) for v in values]

    def count(self, keys: np.ndarray) -> np.ndarray:
        """Document frequency of each n-gram key (0 when absent)."""
        return self._lookup(keys, self.keys, self.counts)[0]

    def context(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(totals, kinds)`` of each context key (0 when absent)."""
        totals, kinds = self._lookup(keys, self.context_keys, self.totals, self.kinds)
        return totals, kinds


# -- the background of ordinary ML code -------------------------------------------------------------

#: Version of the background file's layout; a file of another version is refused.
BACKGROUND_FORMAT = 1
#: The shipped background: document frequencies of the token n-grams of agent-style ML scripts,
#: built by ``scripts/build_background.py``.
BACKGROUND_PATH = Path(__file__).resolve().parent / "data" / "background.npz"
_BACKGROUND_ARRAYS = ("keys", "counts", "context_keys", "totals", "kinds")
#: Order of the background's idiom model: token n-grams as long as the shortest tile (one short
#: statement), predicted from the n - 1 tokens before them.
IDIOM_ORDER = MIN_TILE_TOKENS


def idiom_grams(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """A file's distinct token :data:`IDIOM_ORDER`-grams (sorted keys) and their contexts (the
    keys of the n - 1 tokens before the last), what it adds to a background's idiom table."""
    n = IDIOM_ORDER
    if len(profile.ids) < n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    keys = profile._cache.get("idioms")
    if keys is None:
        keys = gram_keys(profile.id_array(), n)
        profile._cache["idioms"] = keys
    grams, contexts = keys[n - 1][n - 1 :], keys[n - 2][n - 2 : -1]
    unique, first = np.unique(grams, return_index=True)
    return unique, contexts[first]


@dataclass(frozen=True, slots=True, kw_only=True)
class Background:
    """What ordinary ML code looks like: an :class:`NgramTable` of code written independently of
    any reference, added to every pair's background model (see :func:`token_bits`).

    Attributes
    ----------
    table : NgramTable
        Document frequencies of the background documents' token n-grams, orders 1 to
        :data:`MODEL_ORDER` (added to the corpus's).
    idioms : NgramTable or None
        Document frequencies of their token :data:`IDIOM_ORDER`-grams (:func:`idiom_grams`):
        a longer model of ordinary code, which can explain an agent token that the trigram
        model finds surprising (a whole ``train_test_split(...)`` statement), never the reverse.
    documents : int
        Number of documents the table counts.
    source : str
        How the table was built (script, inputs, digest of the corpus).
    path : str
        The file it was read from (empty when built in memory).
    """

    table: NgramTable
    documents: int
    idioms: NgramTable | None = None
    source: str = ""
    path: str = ""

    @classmethod
    def empty(cls) -> "Background":
        """No background: the corpus alone models ordinary code (the detector before the
        background existed; for comparisons)."""
        zero = np.zeros(0, np.int64)
        return cls(table=NgramTable(zero, zero, zero, zero, zero), documents=0, idioms=None, source="empty")


def save_background(path: str | Path, table: NgramTable, *, idioms: NgramTable, documents: int, source: str) -> None:
    """Write a background file (``.npz``, no pickled objects).

    Parameters
    ----------
    path : str or Path
    table : NgramTable
        A whole table (every n-gram of the background documents, orders 1 to :data:`MODEL_ORDER`).
    idioms : NgramTable
        Their :data:`IDIOM_ORDER`-gram table (``NgramTable.from_grams`` over :func:`idiom_grams`).
    documents : int
        How many documents they count.
    source : str
        How it was built, recorded in the file.
    """
    meta = json.dumps({"format": BACKGROUND_FORMAT, "scheme": PROFILE_SCHEME, "documents": int(documents),
                       "source": source}, sort_keys=True)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as handle:
        arrays = {name: getattr(table, name) for name in _BACKGROUND_ARRAYS}
        arrays.update({f"idiom_{name}": getattr(idioms, name) for name in _BACKGROUND_ARRAYS})
        np.savez_compressed(handle, meta=np.array(meta), **arrays)


def load_background(path: str | Path | None = None) -> Background:
    """Read a background file.

    Parameters
    ----------
    path : str or Path, optional
        Default :data:`BACKGROUND_PATH` (the one shipped with the package).

    Returns
    -------
    Background

    Raises
    ------
    ConfigError
        When the file is missing or unreadable, is not a background file, was written in another
        format version or under another :data:`PROFILE_SCHEME` (rebuild it with
        ``scripts/build_background.py``), or its arrays are inconsistent.
    """
    where = Path(path) if path is not None else BACKGROUND_PATH
    rebuild = "rebuild it with `python scripts/build_background.py`"
    if not where.is_file():
        raise ConfigError(f"copy-detector background {where}: no such file; {rebuild}")
    try:
        with np.load(where, allow_pickle=False) as data:
            names = (*_BACKGROUND_ARRAYS, *(f"idiom_{name}" for name in _BACKGROUND_ARRAYS))
            missing = [name for name in ("meta", *names) if name not in data.files]
            if missing:
                raise ConfigError(f"copy-detector background {where}: not a background file "
                                  f"(missing {', '.join(missing)}); {rebuild}")
            meta = json.loads(str(data["meta"]))
            arrays = {name: np.asarray(data[name]) for name in names}
    except ConfigError:
        raise
    except Exception as exc:  # zip, npy and JSON errors all mean a damaged file
        raise ConfigError(f"copy-detector background {where}: unreadable ({type(exc).__name__}: {exc}); "
                          f"{rebuild}") from exc
    if not isinstance(meta, dict):
        raise ConfigError(f"copy-detector background {where}: its metadata is not a JSON object; {rebuild}")
    if meta.get("format") != BACKGROUND_FORMAT:
        raise ConfigError(f"copy-detector background {where}: format {meta.get('format')!r}, this version reads "
                          f"format {BACKGROUND_FORMAT}; {rebuild}")
    if meta.get("scheme") != PROFILE_SCHEME:
        raise ConfigError(f"copy-detector background {where}: built under token scheme {meta.get('scheme')!r}, "
                          f"this version uses {PROFILE_SCHEME!r}; {rebuild}")
    documents = meta.get("documents")
    problems = []
    if not isinstance(documents, int) or isinstance(documents, bool) or documents < 0:
        problems.append(f"documents must be a count, got {documents!r}")
    for name, array in arrays.items():
        if array.ndim != 1 or array.dtype.kind not in "iu":
            problems.append(f"{name} must be a 1-D integer array, got {array.dtype} of shape {array.shape}")
    for prefix in ("", "idiom_") if not problems else ():
        if arrays[f"{prefix}keys"].size != arrays[f"{prefix}counts"].size:
            problems.append(f"{prefix}keys and {prefix}counts differ in length")
        if not (arrays[f"{prefix}context_keys"].size == arrays[f"{prefix}totals"].size
                == arrays[f"{prefix}kinds"].size):
            problems.append(f"{prefix}context_keys, {prefix}totals and {prefix}kinds differ in length")
        for name in (f"{prefix}keys", f"{prefix}context_keys"):
            if arrays[name].size > 1 and not bool(np.all(np.diff(arrays[name].astype(np.int64)) > 0)):
                problems.append(f"{name} must be sorted and distinct")
        if any(int(arrays[f"{prefix}{n}"].min(initial=0)) < 0 for n in ("counts", "totals", "kinds")):
            problems.append(f"{prefix}counts, {prefix}totals and {prefix}kinds must be >= 0")
    if problems:
        raise ConfigError(f"copy-detector background {where}: " + "; ".join(problems) + f"; {rebuild}")
    table = NgramTable(*(arrays[name].astype(np.int64) for name in _BACKGROUND_ARRAYS))
    idioms = NgramTable(*(arrays[f"idiom_{name}"].astype(np.int64) for name in _BACKGROUND_ARRAYS))
    return Background(table=table, idioms=idioms, documents=documents, source=str(meta.get("source", "")),
                      path=str(where))


_DEFAULT_BACKGROUND: list[Background] = []


def default_background() -> Background:
    """The shipped background (:data:`BACKGROUND_PATH`), read once per process.

    Raises
    ------
    ConfigError
        When the shipped file is missing or damaged (see :func:`load_background`).
    """
    if not _DEFAULT_BACKGROUND:
        _DEFAULT_BACKGROUND.append(load_background(BACKGROUND_PATH))
    return _DEFAULT_BACKGROUND[0]


def _resolve_background(background: "Background | None | str") -> Background | None:
    if background == "default":
        return default_background()
    return background  # type: ignore[return-value]


class AgentQuery:
    """An agent file's n-gram lookups, shared by every reference it is compared with.

    :func:`token_bits` reads, at each agent position and for each order, the table row of the
    n-gram ending there and of its context, minus the left-out files' share of those rows. Both
    are cached here: the table's rows once per table, each left-out file's share once per file.

    Parameters
    ----------
    agent : Profile

    Attributes
    ----------
    grams, contexts : tuple of ndarray of int64
        ``grams[n - 1][i]``: key of the n-gram ending at position ``i``; ``contexts[n - 1][i]``:
        key of its context (positions ``i < n - 1`` hold none).
    """

    def __init__(self, agent: Profile) -> None:
        self.agent = agent
        keys = agent.keys()
        contexts = [np.full(len(agent.ids), EMPTY_CONTEXT, dtype=np.int64)]
        for n in range(2, MODEL_ORDER + 1):
            context = np.empty(len(agent.ids), dtype=np.int64)
            if len(agent.ids):
                context[0] = EMPTY_CONTEXT
                context[1:] = keys[n - 2][:-1]
            contexts.append(context)
        self.grams: tuple[np.ndarray, ...] = tuple(keys)
        self.contexts: tuple[np.ndarray, ...] = tuple(contexts)
        self._shares: dict[int, tuple[Profile, tuple[np.ndarray, ...], tuple[np.ndarray, ...]]] = {}
        self._rows: tuple[NgramTable, list[np.ndarray], list[np.ndarray], list[np.ndarray]] | None = None
        self._background_rows: tuple[NgramTable, list[np.ndarray], list[np.ndarray], list[np.ndarray]] | None = None

    def keys(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct n-gram keys and context keys whose table rows the agent file reads (a
        corpus index fetches exactly these)."""
        if not len(self.agent.ids):
            return np.zeros(0, np.int64), np.array([EMPTY_CONTEXT], np.int64)
        return np.unique(np.concatenate(self.grams)), np.unique(np.concatenate(self.contexts))

    def rows(self, table: NgramTable) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
        """The table's counts, context totals and kinds at every agent position, by order."""
        if self._rows is None or self._rows[0] is not table:
            counts = [table.count(g) for g in self.grams]
            contexts = [table.context(c) for c in self.contexts]
            self._rows = (table, counts, [t for t, _ in contexts], [k for _, k in contexts])
        return self._rows[1], self._rows[2], self._rows[3]

    def idiom_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """Per agent position, the key of the :data:`IDIOM_ORDER`-gram ending there and of its
        context (positions before ``IDIOM_ORDER - 1`` hold none)."""
        found = self.agent._cache.get("idiom_query")
        if found is None:
            n = len(self.agent.ids)
            keys = gram_keys(self.agent.id_array(), IDIOM_ORDER)
            context = np.empty(n, dtype=np.int64)
            if n:
                context[0] = EMPTY_CONTEXT
                context[1:] = keys[IDIOM_ORDER - 2][:-1]
            found = (keys[IDIOM_ORDER - 1], context)
            self.agent._cache["idiom_query"] = found
        return found

    def background_rows(self, table: NgramTable) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
        """:meth:`rows` of the background's table (cached apart from the corpus's rows)."""
        if self._background_rows is None or self._background_rows[0] is not table:
            counts = [table.count(g) for g in self.grams]
            contexts = [table.context(c) for c in self.contexts]
            self._background_rows = (table, counts, [t for t, _ in contexts], [k for _, k in contexts])
        return self._background_rows[1], self._background_rows[2], self._background_rows[3]

    def share(self, profile: Profile) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
        """What one corpus file adds to the rows the agent reads: per order, 1 where it holds
        the agent's n-gram, and its number of n-grams in the agent's context."""
        found = self._shares.get(id(profile))
        if found is None:
            keys, _ = profile.grams()
            context_keys, context_counts = profile.context_counts()
            ones = np.ones(keys.size, np.int64)
            grams = tuple(NgramTable._lookup(g, keys, ones)[0] for g in self.grams)
            contexts = tuple(NgramTable._lookup(c, context_keys, context_counts)[0] for c in self.contexts)
            found = (profile, grams, contexts)  # the profile is kept so its id stays its own
            self._shares[id(profile)] = found
        return found[1], found[2]

    def left_out(self, members: Sequence[Profile]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The summed :meth:`share` of ``members``."""
        n = len(self.agent.ids)
        grams = [np.zeros(n, np.int64) for _ in range(MODEL_ORDER)]
        contexts = [np.zeros(n, np.int64) for _ in range(MODEL_ORDER)]
        for member in members:
            member_grams, member_contexts = self.share(member)
            for k in range(MODEL_ORDER):
                grams[k] += member_grams[k]
                contexts[k] += member_contexts[k]
        return grams, contexts


def token_bits(agent: Profile, table: NgramTable, left_out: Sequence[Profile] = (), *,
               query: AgentQuery | None = None, background: Background | None | str = "default") -> np.ndarray:
    """Information of each agent token under the background model, in bits.

    Parameters
    ----------
    agent : Profile
    table : NgramTable
        The corpus's table (or only its rows for this agent's keys, see :meth:`AgentQuery.keys`).
    left_out : sequence of Profile
        Files of the corpus whose contribution is subtracted (the reference and its
        near-duplicates): their n-grams no longer count.
    query : AgentQuery, optional
        The agent's lookups, to share between references (made here when omitted).
    background : Background, None or "default", default "default"
        Ordinary ML code written independently of any reference (:func:`default_background`,
        the shipped one, by default; ``None`` for none): its documents count as documents of the
        corpus that are never left out. A context's number of distinct continuations is then
        the sum of the corpus's and the background's (an upper bound: a continuation found in
        both counts twice, which gives the lower orders slightly more weight).

    Returns
    -------
    ndarray of float64
        ``bits[i] = -log2 P(token i | the two tokens before it)`` in ``(0, MAX_TOKEN_BITS]``, by
        Witten-Bell interpolation of the trigram, bigram and unigram estimates, the unigram
        backed off to the prior of :func:`profile_code` (a literal's length) with the weight
        Witten-Bell gives unseen tokens. A context's number of distinct continuations is the
        corpus's (leaving files out would remove only those continuations found in no other
        file; the difference is small and it keeps the subtraction to sums).

    References
    ----------
    Witten & Bell (1991), see the module docstring.
    """
    n = len(agent.ids)
    if not n:
        return np.zeros(0)
    query = query if query is not None else AgentQuery(agent)
    own_grams, own_contexts = query.left_out(left_out)
    counts, totals, all_kinds = query.rows(table)
    extra = _resolve_background(background)
    if extra is not None and extra.table.keys.size:
        more_counts, more_totals, more_kinds = query.background_rows(extra.table)
        counts = [a + b for a, b in zip(counts, more_counts)]
        totals = [a + b for a, b in zip(totals, more_totals)]
        all_kinds = [a + b for a, b in zip(all_kinds, more_kinds)]
    positions = np.arange(n)
    prior = np.exp2(-agent.prior_array())
    probability = prior
    documents = 0
    for k in range(MODEL_ORDER):
        count = counts[k] - own_grams[k]
        total = totals[k] - own_contexts[k]
        kinds = all_kinds[k]
        if k == 0:
            # Unigrams: Witten-Bell with the prior as the distribution of unseen tokens.
            usable = (total + kinds) > 0
            probability = np.where(usable, (count + kinds * prior) / np.maximum(total + kinds, 1), prior)
            unigram_df = count
            # Every code file holds `=` or `(`: the agent's most widespread token is in about
            # every document of the background, a lower bound of their number.
            documents = int(count.max(initial=0))
            continue
        usable = (positions >= k) & (total > 0) & (kinds > 0)
        mixed = (count + kinds * probability) / np.maximum(total + kinds, 1)
        probability = np.where(usable, mixed, probability)
    if extra is not None and extra.idioms is not None and extra.idioms.keys.size and n >= IDIOM_ORDER:
        # The background's idiom model explains what it can (Witten-Bell over the trigram
        # estimate, one order of n-grams as long as a statement); it never makes a token rarer.
        grams, contexts = query.idiom_keys()
        idiom_counts = extra.idioms.count(grams)
        idiom_totals, idiom_kinds = extra.idioms.context(contexts)
        usable = (positions >= IDIOM_ORDER - 1) & (idiom_totals > 0)
        explained = (idiom_counts + idiom_kinds * probability) / np.maximum(idiom_totals + idiom_kinds, 1)
        probability = np.where(usable, np.maximum(probability, explained), probability)
    literal = agent.literal_array()
    if documents > 0 and literal.any():
        # A string found in other files (a column name of the competition's data, a metric's
        # name) says little about *which* file was copied, in whatever order it comes: it costs
        # at most the information of "a file holds it", -log2(df / documents).
        held = literal & (unigram_df > 0)
        bag = np.where(held, np.minimum(unigram_df, documents) / documents, 0.0)
        probability = np.where(held, np.maximum(probability, bag), probability)
    with np.errstate(divide="ignore"):
        bits = -np.log2(probability)
    bits = np.minimum(np.where(probability > 0, bits, MAX_TOKEN_BITS), MAX_TOKEN_BITS)
    # A name in quotes (a column of the competition's data) is dictated by the data, as an
    # identifier's spelling is chosen by its writer: it costs at most what any token of the
    # closed vocabulary costs, so that listing the data's columns is not taken for a copy.
    names = agent.name_array()
    bits = np.where(names, np.minimum(bits, NAME_LITERAL_BITS), bits)
    if n > 2 and names.any():
        # A name that follows a name and a comma continues a list of names; from three names on
        # (two are a call's arguments as often, ``.replace('Mlle', 'Miss')``) it is a list of the
        # data's columns, and the comma before each further name is the list's layout.
        follows = np.zeros(n + 2, dtype=bool)
        follows[2:n] = names[2:] & names[:-2] & (agent.id_array()[1:-1] == _COMMA_ID)
        listed = follows[:n] & (np.concatenate(([False, False], follows[: n - 2])) | follows[2 : n + 2])
        listed[1:-1] |= listed[2:]
        bits = np.where(listed, np.minimum(bits, LISTED_NAME_BITS), bits)
    if agent.prose:
        # Shared prose (a docstring's sentences) is documentation, not copied code.
        bits[np.fromiter(agent.prose, dtype=np.int64, count=len(agent.prose))] = 0.0
    return bits


# -- near-duplicates -------------------------------------------------------------------------------


def near_duplicate_members(index: int, sample: np.ndarray, holders: Callable[[np.ndarray], Mapping[int, np.ndarray]],
                           sample_sizes: Callable[[np.ndarray], np.ndarray]) -> tuple[int, ...]:
    """A file and the files that are near-duplicates (forks) of it.

    Parameters
    ----------
    index : int
        The file's id.
    sample : ndarray of int64
        Its sorted distinct sampled 8-gram values (:meth:`Profile.sample`).
    holders : callable
        ``holders(values) -> {value: ids of the files whose sample holds it}``, over the whole
        corpus (values no file holds may be left out).
    sample_sizes : callable
        ``sample_sizes(ids)``: how many values each of these files' samples has (an array).

    Returns
    -------
    tuple of int
        Sorted ids: ``index`` and every file ``o`` sharing at least
        :data:`NEAR_DUPLICATE_CONTAINMENT` of either file's sample, counting only values held by
        2 to :data:`MAX_SAMPLE_HOLDERS` files (values in very many files say nothing about forks);
        at most the :data:`MAX_NEAR_DUPLICATES` files sharing the most values (then the lower id).
    """
    if not sample.size:
        return (index,)
    held = [files for files in holders(sample).values() if 2 <= len(files) <= MAX_SAMPLE_HOLDERS]
    if not held:
        return (index,)
    others, common = np.unique(np.concatenate(held), return_counts=True)
    keep = others != index
    others, common = others[keep], common[keep]
    theirs = np.asarray(sample_sizes(others), dtype=np.int64)
    near = (common >= NEAR_DUPLICATE_CONTAINMENT * sample.size) | (
        (theirs > 0) & (common >= NEAR_DUPLICATE_CONTAINMENT * theirs))
    others, common = others[near], common[near]
    if others.size > MAX_NEAR_DUPLICATES:
        # the closest forks: most shared sample values, then the lower id
        order = np.lexsort((others, -common))[:MAX_NEAR_DUPLICATES]
        others = others[order]
    return tuple(sorted([index, *others.tolist()]))


# -- evidence --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """How much of an agent file is surprising code shared with one reference.

    Attributes
    ----------
    bits : float
        Information of the best chain of tiles, in bits (>= 0; higher = stronger evidence).
    tiles : tuple of Tile
        The chain, in order.
    copied_tokens : int
        Agent tokens in the chain's tiles.
    """

    bits: float
    tiles: tuple[Tile, ...] = ()
    copied_tokens: int = 0

    @property
    def score(self) -> float:
        return score_from_bits(self.bits)


def score_from_bits(bits: float) -> float:
    """Map evidence in bits to the decision statistic ``score = 1 - 2 ** (-bits / 100)``.

    Examples
    --------
    >>> score_from_bits(0.0), score_from_bits(100.0), round(score_from_bits(160.0), 3)
    (0.0, 0.5, 0.67)
    """
    if bits <= 0:
        return 0.0
    return 1.0 - 2.0 ** (-bits / EVIDENCE_SCALE_BITS)


def bits_from_score(score: float) -> float:
    """Inverse of :func:`score_from_bits` (``inf`` for a score of 1).

    Examples
    --------
    >>> round(bits_from_score(0.63), 1)
    143.4
    """
    if score <= 0:
        return 0.0
    if score >= 1:
        return math.inf
    return -EVIDENCE_SCALE_BITS * math.log2(1.0 - score)


def jump_bits(tokens: int) -> float:
    """Bits to say where the next copied piece starts, ``tokens`` agent tokens after the last
    one: ``2 log2(1 + tokens)``, about the length of Elias's gamma code for the jump.

    Examples
    --------
    >>> jump_bits(0), jump_bits(1), jump_bits(255)
    (0.0, 2.0, 16.0)
    """
    return 2.0 * math.log2(1 + tokens) if tokens > 0 else 0.0


def _best_chain(weighted: list[tuple[Tile, float]]) -> tuple[float, list[Tile]]:
    """Local alignment over tiles: chained tiles are in order on both sides; reference tokens
    skipped between them cost :data:`GAP_BITS` each, agent tokens :func:`jump_bits`."""
    weighted.sort(key=lambda item: (item[0].reference_start, item[0].agent_start))
    best: list[float] = []
    back: list[int] = []
    top, top_at = 0.0, -1
    for i, (tile, bits) in enumerate(weighted):
        value, previous = bits, -1
        j = i - 1
        while j >= 0:
            other = weighted[j][0]
            gap = tile.reference_start - other.reference_stop
            if gap > MAX_GAP_TOKENS:
                break  # tiles never overlap in the reference: earlier ones end earlier still
            if gap >= 0 and other.agent_stop <= tile.agent_start:
                candidate = best[j] + bits - GAP_BITS * gap - jump_bits(tile.agent_start - other.agent_stop)
                if candidate > value:
                    value, previous = candidate, j
            j -= 1
        best.append(value)
        back.append(previous)
        if value > top:
            top, top_at = value, i
    chain: list[Tile] = []
    while top_at >= 0:
        chain.append(weighted[top_at][0])
        top_at = back[top_at]
    chain.reverse()
    return top, chain


def boilerplate_mask(agent: Profile, boilerplate: Sequence[Profile]) -> bytearray:
    """Agent tokens inside a tile shared with a boilerplate file (1) or not (0)."""
    mask = bytearray(len(agent.ids))
    for starter in boilerplate:
        for tile in find_tiles(agent, starter):
            mask[tile.agent_start : tile.agent_stop] = b"\x01" * tile.length
    return mask


def reference_evidence(agent: Profile, reference: Profile, table: NgramTable, left_out: Sequence[Profile], *,
                       mask: bytearray | None = None, query: AgentQuery | None = None,
                       background: Background | None | str = "default", bits: np.ndarray | None = None) -> Evidence:
    """Evidence that ``agent`` copied code from ``reference``, under a given background.

    Parameters
    ----------
    agent, reference : Profile
    table : NgramTable
        The corpus's n-gram table (it counts ``reference`` and ``left_out``).
    left_out : sequence of Profile
        The reference and its near-duplicates, subtracted from ``table``.
    mask : bytearray, optional
        Agent tokens that carry no bits (1 = boilerplate).
    query : AgentQuery, optional
        The agent's lookups, shared between references.
    background : Background, None or "default", default "default"
        Ordinary ML code added to the background model (see :func:`token_bits`).
    bits : ndarray of float64, optional
        :func:`token_bits` of ``agent`` under ``table``, ``left_out`` and ``background``, when
        already known (with nothing left out they are the same for every reference).

    Returns
    -------
    Evidence
        ``bits`` = information of the best chain of tiles (0 when nothing is shared).
    """
    runs = _maximal_runs(agent, reference)
    if not runs:
        return Evidence(bits=0.0)
    tiles = _greedy_tiles(runs, len(agent.ids), len(reference.ids))
    if bits is None:
        bits = token_bits(agent, table, left_out, query=query, background=background)
    if mask is not None and any(mask):
        bits = np.where(np.frombuffer(bytes(mask), dtype=np.uint8) > 0, 0.0, bits)
    cumulative = np.concatenate(([0.0], np.cumsum(bits))).tolist()
    weighted = []
    for tile in tiles:
        value = cumulative[tile.agent_stop] - cumulative[tile.agent_start]
        if value > 0:
            weighted.append((tile, value))
    if not weighted:
        return Evidence(bits=0.0)
    total, chain = _best_chain(weighted)
    return Evidence(bits=total, tiles=tuple(chain), copied_tokens=sum(t.length for t in chain))


class DetectionCorpus:
    """Reference kernels prepared for the detector: profiles, n-gram table, near-duplicates.

    Parameters
    ----------
    references : sequence of Profile
        One per reference file (see :func:`profile_code`).
    boilerplate : sequence of Profile, optional
        Starter code: agent tokens inside a tile shared with a boilerplate file carry no bits.
    background : Background, None or "default", default "default"
        Ordinary ML code added to every pair's background model (:func:`default_background`,
        read when the corpus is made; ``None`` for the corpus alone).

    Raises
    ------
    ConfigError
        When the shipped background is asked for and cannot be read.

    Examples
    --------
    >>> kernel = "df = read('train.csv')\\nmodel = Forest(trees=317, depth=9, seed=2024)\\n"
    >>> corpus = DetectionCorpus([profile_code(kernel, "k.py")])
    >>> agent = profile_code("import x\\nmodel = Forest(trees=317, depth=9, seed=2024)\\n", "a.py")
    >>> corpus.evidence(agent, 0).copied_tokens
    16
    """

    def __init__(self, references: Sequence[Profile], boilerplate: Sequence[Profile] = (),
                 background: Background | None | str = "default") -> None:
        self.references = list(references)
        self.boilerplate = list(boilerplate)
        self.background = _resolve_background(background)
        self.table = NgramTable.from_profiles(self.references)
        self._clusters = self._near_duplicates()

    def _near_duplicates(self) -> list[tuple[int, ...]]:
        samples = [p.sample() for p in self.references]
        holders: dict[int, list[int]] = defaultdict(list)
        for index, sample in enumerate(samples):
            for value in sample.tolist():
                holders[value].append(index)
        arrays = {value: np.array(files, dtype=np.int64) for value, files in holders.items()}

        def lookup(values: np.ndarray) -> dict[int, np.ndarray]:
            return {v: arrays[v] for v in values.tolist() if v in arrays}

        sizes = np.array([sample.size for sample in samples], dtype=np.int64)

        def size(ids: np.ndarray) -> np.ndarray:
            return sizes[ids]

        return [near_duplicate_members(i, samples[i], lookup, size) for i in range(len(samples))]

    def near_duplicates(self, index: int) -> tuple[int, ...]:
        """Indices of reference ``index`` and its near-duplicates (left out of its background)."""
        return self._clusters[index]

    def boilerplate_mask(self, agent: Profile) -> bytearray:
        """Agent tokens inside a tile shared with a boilerplate file (1) or not (0)."""
        return boilerplate_mask(agent, self.boilerplate)

    def evidence(self, agent: Profile, index: int, *, mask: bytearray | None = None,
                 query: AgentQuery | None = None) -> Evidence:
        """Evidence that ``agent`` copied code from reference ``index``.

        Parameters
        ----------
        agent : Profile
        index : int
            Position of the reference in ``references``.
        mask : bytearray, optional
            Agent tokens to ignore (1 = boilerplate); computed from ``boilerplate`` when omitted.
        query : AgentQuery, optional
            The agent's lookups, shared between references (:meth:`evidence_all` passes one).

        Returns
        -------
        Evidence
            ``bits`` = information of the best chain of tiles (0 when nothing is shared).
        """
        if mask is None:
            mask = self.boilerplate_mask(agent) if self.boilerplate else None
        members = [self.references[i] for i in self.near_duplicates(index)]
        return reference_evidence(agent, self.references[index], self.table, members, mask=mask, query=query,
                                  background=self.background)

    def evidence_all(self, agent: Profile, wanted: Sequence[bool] | None = None) -> list[Evidence | None]:
        """:meth:`evidence` against every reference, in reference order.

        Parameters
        ----------
        agent : Profile
        wanted : sequence of bool, optional
            Per reference, whether to score it (``None`` in its place otherwise); all by default.

        Returns
        -------
        list of Evidence or None
        """
        mask = self.boilerplate_mask(agent) if self.boilerplate else None
        query = AgentQuery(agent)
        return [self.evidence(agent, i, mask=mask, query=query) if wanted is None or wanted[i] else None
                for i in range(len(self.references))]


# -- the policy threshold ---------------------------------------------------------------------------


def score_threshold_from_rules(ruleset: Any) -> float | None:
    """The lowest ``score`` bound of the enabled similarity rules of a ruleset.

    Parameters
    ----------
    ruleset : mleaudit.audit.rules.loader.Ruleset

    Returns
    -------
    float or None
        The smallest ``gte``/``gt`` bound on ``score`` in a ``similarity`` rule's ``when``, or
        ``None`` when no rule bounds the score.
    """
    bounds = []
    for rule in getattr(ruleset, "rules", ()):
        spec = getattr(rule, "spec", rule)
        when = getattr(spec, "when", None)
        if when is None:
            continue
        for condition in getattr(when, "conditions", ()):
            if getattr(condition, "field", None) == "score" and getattr(condition, "op", None) in ("gte", "gt"):
                bounds.append(float(condition.value))
    return min(bounds) if bounds else None


def load_score_threshold(rules_root: Any = None) -> float:
    """The shipped decision threshold on ``score``, read from the plagiarism rules.

    Parameters
    ----------
    rules_root : path-like, optional
        Rules folder (default: ``--rules``/``MLEAUDIT_RULES``/the checkout's ``rules/``, see
        :func:`mleaudit.audit.rules.loader.find_rules_root`).

    Returns
    -------
    float
        The rule's bound, or :data:`DEFAULT_SCORE_THRESHOLD` when the rules cannot be loaded or
        no similarity rule bounds the score (logged at warning level).
    """
    from mleaudit.audit.errors import AuditError
    from mleaudit.audit.rules.loader import find_rules_root, load_ruleset

    try:
        ruleset = load_ruleset([find_rules_root(rules_root)])
    except (AuditError, OSError) as exc:
        logger.warning("cannot read the plagiarism rules (%s); using the default score threshold %.2f",
                       exc, DEFAULT_SCORE_THRESHOLD)
        return DEFAULT_SCORE_THRESHOLD
    value = score_threshold_from_rules(ruleset)
    if value is None:
        logger.warning("no similarity rule bounds `score`; using the default threshold %.2f", DEFAULT_SCORE_THRESHOLD)
        return DEFAULT_SCORE_THRESHOLD
    return value
