"""The detector's constants: tile floor, gap and jump costs, model order, near-duplicate bounds,
the profile scheme.

Each is set by what it models rather than fitted (see the package docstring).
"""

from __future__ import annotations

import keyword
import math


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
