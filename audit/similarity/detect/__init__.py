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
reference's leave-out background by subtraction (:mod:`mleaudit.audit.similarity.index`), with
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

Routine Listings
----------------
constants
    The constants above (tile floor, gap cost, model order, near-duplicate bounds, scheme).
lexing
    :func:`lex_code`: step 1.
profiles
    :class:`Profile`, :func:`profile_code`, :func:`gram_keys`.
tiles
    :class:`Tile`, :func:`find_tiles`: step 2.
ngrams
    :class:`NgramTable`: the document frequencies behind step 3.
background
    :class:`Background`: the shipped background of ordinary code (``data/background.npz``).
token_model
    :class:`AgentQuery`, :func:`token_bits`: step 3.
evidence
    :class:`Evidence`, :func:`reference_evidence`, :func:`score_from_bits`: steps 4 and 5.
detection_corpus
    :class:`DetectionCorpus` and :func:`near_duplicate_members` (forks left out of a background).
policy
    :func:`score_threshold_from_rules`: the threshold a ruleset states (read from the rules by
    :mod:`mleaudit.audit.score_threshold`).

The modules import one another in that order, downwards, and nothing of the package above them
(comparison, the corpus index, pairs); a change of what a stored profile or table means goes with
a new :data:`PROFILE_SCHEME`.
"""

from mleaudit.audit.similarity.detect.constants import (
    DEFAULT_SCORE_THRESHOLD,
    EVIDENCE_SCALE_BITS,
    GAP_BITS,
    MAX_NEAR_DUPLICATES,
    MAX_SAMPLE_HOLDERS,
    MIN_TILE_TOKENS,
    MODEL_ORDER,
    NEAR_DUPLICATE_CONTAINMENT,
    PROFILE_SCHEME,
)
from mleaudit.audit.similarity.detect.lexing import LexedCode, lex_code
from mleaudit.audit.similarity.detect.profiles import Profile, gram_keys, profile_code
from mleaudit.audit.similarity.detect.tiles import Tile, find_tiles
from mleaudit.audit.similarity.detect.ngrams import NgramTable
from mleaudit.audit.similarity.detect.background import (
    BACKGROUND_FORMAT,
    BACKGROUND_PATH,
    Background,
    IDIOM_ORDER,
    default_background,
    idiom_grams,
    load_background,
    save_background,
)
from mleaudit.audit.similarity.detect.token_model import AgentQuery, token_bits
from mleaudit.audit.similarity.detect.evidence import (
    Evidence,
    bits_from_score,
    boilerplate_mask,
    jump_bits,
    reference_evidence,
    score_from_bits,
)
from mleaudit.audit.similarity.detect.detection_corpus import DetectionCorpus, near_duplicate_members
from mleaudit.audit.similarity.detect.policy import score_threshold_from_rules

__all__ = [
    "AgentQuery",
    "BACKGROUND_FORMAT",
    "BACKGROUND_PATH",
    "Background",
    "DEFAULT_SCORE_THRESHOLD",
    "DetectionCorpus",
    "EVIDENCE_SCALE_BITS",
    "Evidence",
    "GAP_BITS",
    "IDIOM_ORDER",
    "LexedCode",
    "MAX_NEAR_DUPLICATES",
    "MAX_SAMPLE_HOLDERS",
    "MIN_TILE_TOKENS",
    "MODEL_ORDER",
    "NEAR_DUPLICATE_CONTAINMENT",
    "NgramTable",
    "PROFILE_SCHEME",
    "Profile",
    "Tile",
    "bits_from_score",
    "boilerplate_mask",
    "default_background",
    "find_tiles",
    "gram_keys",
    "idiom_grams",
    "jump_bits",
    "lex_code",
    "load_background",
    "near_duplicate_members",
    "profile_code",
    "reference_evidence",
    "save_background",
    "score_from_bits",
    "score_threshold_from_rules",
    "token_bits",
]
