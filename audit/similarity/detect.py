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
3. **Background model** (:class:`BackgroundModel`): how predictable each agent token is for code
   written *independently* of the reference: a Witten-Bell interpolated trigram model over the
   document frequencies of the reference corpus with the reference itself and its
   near-duplicates (forks) left out, backed off to a prior that charges literals by length.
   Code that many kernels of the corpus share (``train_test_split(X, y, test_size=0.2, ...)``,
   the usual column names) costs few bits; a file path or hyperparameter set found only in the
   reference costs many.
4. **Evidence** (:meth:`DetectionCorpus.evidence`): tiles are chained like local alignments:
   in the same order in both files, each reference token skipped between two tiles costing
   :data:`GAP_BITS` (a pasted block is contiguous in the kernel; code inserted between copied
   lines only widens gaps on the agent side, which are free). The evidence is the information
   (bits) of the best chain.
5. **Score** (:func:`score_from_bits`): ``1 - 2 ** (-bits / 100)``, in [0, 1), higher meaning
   more likely a copy of that reference. The decision threshold is policy and lives in
   ``rules/plagiarism/`` (a similarity rule ``when: {score: {gte: X}}``);
   :data:`DEFAULT_SCORE_THRESHOLD` is the documented fallback and equals the shipped rule.

The statistic has few free constants, each set by what it models rather than fitted: the
tile floor (one short statement), the trigram order, the literal prior (about 2 bits per
character of a string, 3.3 per digit), the near-duplicate bound (half the 8-grams), and the gap
cost. The threshold (160 bits) was chosen on the shared partial-copy cases as the round bit
count where the false-positive rate over unrelated (agent file, kernel) pairs falls to about
0.5 % (half the 1 % budget, a margin for competitions it has not seen; 0.53 % measured), and
checked with leave-one-competition-out; ``benchmarks/detection_quality.py`` prints the figures.

Naming: *bits* are ``-log2`` of a probability; a *tile* is a pair of equal token runs; the
*evidence* of a pair is the bits of its best chain of tiles.

References
----------
Wise, M. J. (1993). String similarity via greedy string tiling and running Karp-Rabin matching.
Department of Computer Science, University of Sydney (the tiling used by JPlag).
Witten, I. H., & Bell, T. C. (1991). The zero-frequency problem: estimating the probabilities of
novel events in adaptive text compression. *IEEE Transactions on Information Theory*, 37(4),
1085-1094.
Smith, T. F., & Waterman, M. S. (1981). Identification of common molecular subsequences.
*Journal of Molecular Biology*, 147(1), 195-197 (local alignment, here over tiles).
"""

from __future__ import annotations

import hashlib
import heapq
import keyword
import logging
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

__all__ = [
    "DEFAULT_SCORE_THRESHOLD",
    "EVIDENCE_SCALE_BITS",
    "GAP_BITS",
    "MIN_TILE_TOKENS",
    "BackgroundModel",
    "DetectionCorpus",
    "Evidence",
    "LexedCode",
    "Profile",
    "Tile",
    "bits_from_score",
    "find_tiles",
    "lex_code",
    "profile_code",
    "score_from_bits",
    "score_threshold_from_rules",
    "load_score_threshold",
]

logger = logging.getLogger(__name__)

#: Fallback decision threshold on ``score`` when the plagiarism rules cannot be read. It equals
#: the bound of ``rules/plagiarism/plag-kernel-containment.yaml`` (160 bits of evidence).
DEFAULT_SCORE_THRESHOLD = 0.67
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
#: column-by-column code) and seeds nothing; runs through it are still found from other seeds.
MAX_SEED_OCCURRENCES = 64
#: Order of the background n-gram model.
MODEL_ORDER = 3
#: Two references are near-duplicates (forks) when this share of one's sampled 8-grams is in the other.
NEAR_DUPLICATE_CONTAINMENT = 0.5
#: Per-token information is capped (one token can never carry a match on its own).
MAX_TOKEN_BITS = 40.0

_SEED = MIN_TILE_TOKENS
_NEAR_DUP_N = 8
_NEAR_DUP_SAMPLE = 4  # keep 8-grams whose hash is 0 mod this (a fixed sample of every file)

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


def _prior_bits(token: str) -> float:
    """Bits charged to a token the background has never seen: literals by length, else 12."""
    if token.startswith("S"):
        return 4.0 + 2.0 * (len(token) - 1)
    if token[:1].isdigit() or (token[:1] == "." and len(token) > 1):
        return 4.0 + 3.3 * len(token)
    return 12.0


# -- profiles --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Profile:
    """What the detector keeps of one file: its token ids and where each token is.

    Attributes
    ----------
    path : str
    ids : tuple of int
        Stable ids of the lexical tokens (see :func:`lex_code`).
    starts, ends : tuple of int
        Character offsets of each token in the file's text.
    priors : Mapping[int, float]
        Prior bits of each distinct token id (literals by length).
    """

    path: str
    ids: tuple[int, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    priors: Mapping[int, float]
    _cache: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    def seed_index(self) -> dict[tuple[int, ...], list[int]]:
        """Token :data:`MIN_TILE_TOKENS`-gram -> positions where it starts (built once)."""
        index = self._cache.get("seeds")
        if index is None:
            index = defaultdict(list)
            ids = self.ids
            for position in range(len(ids) - _SEED + 1):
                index[ids[position : position + _SEED]].append(position)
            index = dict(index)
            self._cache["seeds"] = index
        return index

    def ngrams(self) -> frozenset[tuple[int, ...]]:
        """The distinct token n-grams of orders 1 to :data:`MODEL_ORDER` (built once)."""
        grams = self._cache.get("ngrams")
        if grams is None:
            ids = self.ids
            found: set[tuple[int, ...]] = set()
            for n in range(1, MODEL_ORDER + 1):
                found.update(ids[i : i + n] for i in range(len(ids) - n + 1))
            grams = frozenset(found)
            self._cache["ngrams"] = grams
        return grams

    def sample(self) -> frozenset[int]:
        """A fixed sample of the file's token 8-gram hashes, for near-duplicate detection."""
        sample = self._cache.get("sample")
        if sample is None:
            ids = self.ids
            hashes = (hash(ids[i : i + _NEAR_DUP_N]) for i in range(len(ids) - _NEAR_DUP_N + 1))
            sample = frozenset(h for h in hashes if h % _NEAR_DUP_SAMPLE == 0)
            self._cache["sample"] = sample
        return sample


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
    return Profile(path=path, ids=ids, starts=lexed.starts, ends=lexed.ends, priors=priors)


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


def _maximal_runs(agent: Profile, reference: Profile) -> list[tuple[int, int, int, int]]:
    a, r = agent.ids, reference.ids
    n_a, n_r = len(a), len(r)
    index = reference.seed_index()
    runs = []
    for i in range(n_a - _SEED + 1):
        positions = index.get(a[i : i + _SEED])
        if not positions or len(positions) > MAX_SEED_OCCURRENCES:
            continue
        for j in positions:
            if i and j and a[i - 1] == r[j - 1]:
                continue  # not the start of a run: the run was (or will be) found from its start
            stop = _SEED
            while i + stop < n_a and j + stop < n_r and a[i + stop] == r[j + stop]:
                stop += 1
            runs.append((i, i + stop, j, j + stop))
    return runs


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
        Maximal equal runs, longest first when they compete for tokens, no token of either side
        in two tiles; sorted by agent position.

    Examples
    --------
    >>> a = profile_code("x = f(a, 'k')\\ny = 1\\nz = g(b, 'k') + 2\\n")
    >>> r = profile_code("q = f(c, 'k')\\nz = g(d, 'k') + 2\\n")
    >>> [(t.agent_start, t.length) for t in find_tiles(a, r)]
    [(0, 10), (13, 8)]
    """
    runs = [run for run in _maximal_runs(agent, reference) if run[1] - run[0] >= min_tokens]
    heap = [(-(run[1] - run[0]), run) for run in runs]
    heapq.heapify(heap)
    used_a = bytearray(len(agent.ids))
    used_r = bytearray(len(reference.ids))
    tiles: list[Tile] = []
    while heap:
        _, (a0, a1, r0, r1) = heapq.heappop(heap)
        length = a1 - a0
        if 1 not in used_a[a0:a1] and 1 not in used_r[r0:r1]:
            used_a[a0:a1] = b"\x01" * length
            used_r[r0:r1] = b"\x01" * length
            tiles.append(Tile(agent_start=a0, agent_stop=a1, reference_start=r0, reference_stop=r1))
            continue
        # Part of the run is taken by a longer tile: its free stretches compete again.
        x = 0
        while x < length:
            if used_a[a0 + x] or used_r[r0 + x]:
                x += 1
                continue
            y = x
            while y < length and not used_a[a0 + y] and not used_r[r0 + y]:
                y += 1
            if y - x >= min_tokens:
                heapq.heappush(heap, (-(y - x), (a0 + x, a0 + y, r0 + x, r0 + y)))
            x = y
    tiles.sort(key=lambda t: (t.agent_start, t.reference_start))
    return tiles


# -- background model ------------------------------------------------------------------------------


class BackgroundModel:
    """A Witten-Bell interpolated n-gram model of the reference corpus, queried leaving files out.

    Counts are document frequencies (how many references contain an n-gram), so one notebook
    that repeats a block does not make it common. :meth:`bits_function` leaves a set of
    references out of the counts, so that a reference never makes its own code look ordinary.

    Parameters
    ----------
    profiles : sequence of Profile
        The reference corpus.
    order : int
        n-gram order (default :data:`MODEL_ORDER`).

    References
    ----------
    Witten & Bell (1991), see the module docstring.
    """

    def __init__(self, profiles: Sequence[Profile], order: int = MODEL_ORDER) -> None:
        self.order = order
        self.profiles = list(profiles)
        counts: Counter[tuple[int, ...]] = Counter()
        for profile in self.profiles:
            counts.update(profile.ngrams())
        context_totals: Counter[tuple[int, ...]] = Counter()
        continuations: Counter[tuple[int, ...]] = Counter()
        for gram, value in counts.items():
            context_totals[gram[:-1]] += value
            continuations[gram[:-1]] += 1
        self._counts = counts
        self._context_totals = context_totals
        self._continuations = continuations
        self._left_out_tables: dict[int, tuple[Counter, Counter]] = {}

    def _tables(self, index: int) -> tuple[Counter, Counter]:
        """Per context: n-grams of reference ``index``, and those found in no other reference."""
        tables = self._left_out_tables.get(index)
        if tables is None:
            own: Counter[tuple[int, ...]] = Counter()
            unique: Counter[tuple[int, ...]] = Counter()
            for gram in self.profiles[index].ngrams():
                own[gram[:-1]] += 1
                if self._counts[gram] == 1:
                    unique[gram[:-1]] += 1
            tables = (own, unique)
            self._left_out_tables[index] = tables
        return tables

    def bits_function(self, leave_out: Iterable[int] = (), priors: Mapping[int, float] | None = None):
        """A function ``bits(ids, i)``: information of token ``ids[i]`` given the tokens before it.

        Parameters
        ----------
        leave_out : iterable of int
            Indices (into ``profiles``) of references whose counts are removed.
        priors : Mapping[int, float], optional
            Prior bits per token id for tokens the corpus lacks (default 12 bits).

        Returns
        -------
        callable
            ``bits(ids, i) -> float`` in ``(0, MAX_TOKEN_BITS]``, memoised on the n-gram.
        """
        left = [self.profiles[i].ngrams() for i in leave_out]
        tables = [self._tables(i) for i in leave_out]
        counts, totals, kinds = self._counts, self._context_totals, self._continuations
        priors = priors or {}
        order = self.order
        cache: dict[tuple[int, ...], float] = {}

        def count(gram: tuple[int, ...]) -> int:
            value = counts.get(gram, 0)
            return value - sum(1 for grams in left if gram in grams) if value else 0

        def context(h: tuple[int, ...]) -> tuple[int, int]:
            total = totals.get(h, 0) - sum(own.get(h, 0) for own, _ in tables)
            # Continuations seen only in left-out references disappear with them (exact for
            # one reference left out; with a cluster, n-grams shared only inside it stay).
            distinct = kinds.get(h, 0) - sum(unique.get(h, 0) for _, unique in tables)
            return total, distinct

        def probability(h: tuple[int, ...], token: int) -> float:
            if not h:
                total, _ = context(())
                prior = 2.0 ** -priors.get(token, 12.0)
                return (count((token,)) + prior) / (total + 1.0)
            lower = probability(h[1:], token)
            total, distinct = context(h)
            if total <= 0 or distinct <= 0:
                return lower
            return (count(h + (token,)) + distinct * lower) / (total + distinct)

        def bits(ids: Sequence[int], i: int) -> float:
            key = tuple(ids[max(0, i - order + 1) : i + 1])
            value = cache.get(key)
            if value is None:
                p = probability(key[:-1], key[-1])
                value = MAX_TOKEN_BITS if p <= 0 else min(MAX_TOKEN_BITS, -math.log2(p))
                cache[key] = value
            return value

        return bits


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
    >>> round(bits_from_score(0.67), 1)
    159.9
    """
    if score <= 0:
        return 0.0
    if score >= 1:
        return math.inf
    return -EVIDENCE_SCALE_BITS * math.log2(1.0 - score)


def _best_chain(weighted: list[tuple[Tile, float]]) -> tuple[float, list[Tile]]:
    """Local alignment over tiles: chained tiles are in order on both sides; reference tokens
    skipped between them cost :data:`GAP_BITS` each; agent-side gaps are free."""
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
                candidate = best[j] + bits - GAP_BITS * gap
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


class DetectionCorpus:
    """Reference kernels prepared for the detector: profiles, background model, near-duplicates.

    Parameters
    ----------
    references : sequence of Profile
        One per reference file (see :func:`profile_code`).
    boilerplate : sequence of Profile, optional
        Starter code: agent tokens inside a tile shared with a boilerplate file carry no bits.

    Examples
    --------
    >>> kernel = "df = read('train.csv')\\nmodel = Forest(trees=317, depth=9, seed=2024)\\n"
    >>> corpus = DetectionCorpus([profile_code(kernel, "k.py")])
    >>> agent = profile_code("import x\\nmodel = Forest(trees=317, depth=9, seed=2024)\\n", "a.py")
    >>> corpus.evidence(agent, 0).copied_tokens
    16
    """

    def __init__(self, references: Sequence[Profile], boilerplate: Sequence[Profile] = ()) -> None:
        self.references = list(references)
        self.boilerplate = list(boilerplate)
        self.background = BackgroundModel(self.references)
        self._clusters = self._near_duplicates()

    def _near_duplicates(self) -> list[tuple[int, ...]]:
        """For each reference: itself and the references that are near-duplicates of it."""
        samples = [p.sample() for p in self.references]
        holders: dict[int, list[int]] = defaultdict(list)
        for index, sample in enumerate(samples):
            for value in sample:
                holders[value].append(index)
        shared: list[Counter[int]] = [Counter() for _ in samples]
        for members in holders.values():
            if len(members) < 2 or len(members) > 512:
                continue  # 8-grams in very many files say nothing about forks
            for a in members:
                for b in members:
                    if a != b:
                        shared[a][b] += 1
        clusters = []
        for index, counts in enumerate(shared):
            members = {index}
            for other, common in counts.items():
                own, theirs = len(samples[index]), len(samples[other])
                if (own and common / own >= NEAR_DUPLICATE_CONTAINMENT) or (
                    theirs and common / theirs >= NEAR_DUPLICATE_CONTAINMENT
                ):
                    members.add(other)
            clusters.append(tuple(sorted(members)))
        return clusters

    def near_duplicates(self, index: int) -> tuple[int, ...]:
        """Indices of reference ``index`` and its near-duplicates (left out of its background)."""
        return self._clusters[index]

    def boilerplate_mask(self, agent: Profile) -> bytearray:
        """Agent tokens inside a tile shared with a boilerplate file (1) or not (0)."""
        mask = bytearray(len(agent.ids))
        for starter in self.boilerplate:
            for tile in find_tiles(agent, starter):
                mask[tile.agent_start : tile.agent_stop] = b"\x01" * tile.length
        return mask

    def evidence(self, agent: Profile, index: int, *, mask: bytearray | None = None) -> Evidence:
        """Evidence that ``agent`` copied code from reference ``index``.

        Parameters
        ----------
        agent : Profile
        index : int
            Position of the reference in ``references``.
        mask : bytearray, optional
            Agent tokens to ignore (1 = boilerplate); computed from ``boilerplate`` when omitted.

        Returns
        -------
        Evidence
            ``bits`` = information of the best chain of tiles (0 when nothing is shared).
        """
        reference = self.references[index]
        tiles = find_tiles(agent, reference)
        if not tiles:
            return Evidence(bits=0.0)
        if mask is None:
            mask = self.boilerplate_mask(agent) if self.boilerplate else bytearray(len(agent.ids))
        priors = dict(agent.priors)
        bits_of = self.background.bits_function(self.near_duplicates(index), priors)
        ids = agent.ids
        weighted = []
        for tile in tiles:
            bits = sum(bits_of(ids, i) for i in range(tile.agent_start, tile.agent_stop) if not mask[i])
            if bits > 0:
                weighted.append((tile, bits))
        if not weighted:
            return Evidence(bits=0.0)
        total, chain = _best_chain(weighted)
        return Evidence(bits=total, tiles=tuple(chain), copied_tokens=sum(t.length for t in chain))

    def evidence_all(self, agent: Profile) -> list[Evidence]:
        """:meth:`evidence` against every reference, in reference order."""
        mask = self.boilerplate_mask(agent) if self.boilerplate else bytearray(len(agent.ids))
        return [self.evidence(agent, i, mask=mask) for i in range(len(self.references))]


# -- the policy threshold ---------------------------------------------------------------------------


def score_threshold_from_rules(ruleset: Any) -> float | None:
    """The lowest ``score`` bound of the enabled similarity rules of a ruleset.

    Parameters
    ----------
    ruleset : audit.rules.loader.Ruleset

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
        :func:`audit.rules.loader.find_rules_root`).

    Returns
    -------
    float
        The rule's bound, or :data:`DEFAULT_SCORE_THRESHOLD` when the rules cannot be loaded or
        no similarity rule bounds the score (logged at warning level).
    """
    from audit.errors import AuditError
    from audit.rules.loader import find_rules_root, load_ruleset

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
