"""Token hashes, rolling k-gram hashes and winnowing, exactly as Dolos 3.5.1 computes them.

A document's fingerprints are a sample of the hashes of its k-grams (runs of ``k`` consecutive
tokens): in every window of ``w`` consecutive k-gram hashes the minimum is selected, so any match
of at least ``w + k - 1`` tokens shares a fingerprint (the guarantee threshold) while matches
shorter than ``k`` tokens (the noise threshold) never do.

The constants and the arithmetic are Dolos's (``core/src/hashing``: ``TokenHash``,
``RollingHash``, ``WinnowFilter``), so the fingerprints, and every figure built on them, are the
same numbers Dolos reports:

- :func:`hash_token`: a polynomial string hash over the UTF-16 code units of the token, base
  747287, modulus 33554393 (the largest 26-bit prime, so the product of two hashes stays exact in
  the 53 bits of a double). Python's ``hash()`` is never used: it is salted per process.
- :func:`rolling_hashes`: Rabin-Karp k-gram hashes, base 4194301, the same modulus; the hash of
  tokens ``t[i..i+k-1]`` is ``sum(h(t[i+j]) * base**(k-1-j)) mod m``.
- :func:`winnow`: Schleimer et al.'s robust winnowing with Dolos's ring buffer. The rightmost
  minimum of a window is selected, with one Dolos detail kept on purpose: when the previous
  minimum leaves the window, the rescan starts from the newest hash and only replaces it by an
  *older* hash that is lower or equal, so on a tie between the newest hash and an older one the
  older is selected.

The arithmetic runs on numpy arrays (a corpus has millions of k-grams): the k-gram hashes as a
sum of ``k`` shifted, weighted copies of the token hashes, and winnowing as the changes of the
rightmost window minimum, with Dolos's loop followed only around the rare ties where its
selection differs (see ``selection._winnow_selected``). The results are those of Dolos's
position-by-position loop, which ``selection._winnow_reference`` keeps for checking.

All functions are pure.

Routine Listings
----------------
hashing
    :func:`hash_token`, :func:`rolling_hashes`; :data:`HASH_MOD`, :data:`TOKEN_HASH_BASE`,
    :data:`ROLLING_HASH_BASE`.
int_pool
    ``_int_objects``: shared int objects for offsets and indices (memory of a corpus).
selection
    ``_winnow_selected``: the positions Dolos's ``WinnowFilter`` selects.
fingerprints
    :class:`Fingerprint`, :func:`winnow`, :func:`fingerprint_tokens`; ``_kgram_selection`` and
    ``_kgram_fingerprints`` from token hashes.

Notes
-----
Every public name is re-exported here, and so are the private ones the fingerprint indexes
use (``_int_objects``, ``_fingerprints_at``, ``_kgram_selection``). Imports point down the listing above; nothing here imports another
module of :mod:`mleaudit.audit.similarity` (the tokenizers and indexes import this package, not
the reverse). Another hash (a new Dolos version) goes in ``hashing``, another selection of
k-grams in ``selection``, beside the reference loop it must equal.

References
----------
Schleimer, S., Wilkerson, D. S., & Aiken, A. (2003). Winnowing: local algorithms for document
fingerprinting. *Proceedings of the 2003 ACM SIGMOD International Conference on Management of
Data*, 76-85. https://doi.org/10.1145/872757.872770

Dolos 3.5.1 (``@dodona/dolos-lib`` 3.5.1, ``@dodona/dolos-core`` 1.2.1),
https://github.com/dodona-edu/dolos.
"""

from __future__ import annotations

from mleaudit.audit.similarity.winnow import fingerprints as _fingerprints
from mleaudit.audit.similarity.winnow import int_pool as _int_pool
from mleaudit.audit.similarity.winnow.fingerprints import Fingerprint, fingerprint_tokens, winnow
from mleaudit.audit.similarity.winnow.hashing import (
    HASH_MOD,
    ROLLING_HASH_BASE,
    TOKEN_HASH_BASE,
    hash_token,
    rolling_hashes,
)

__all__ = [
    "HASH_MOD",
    "TOKEN_HASH_BASE",
    "ROLLING_HASH_BASE",
    "Fingerprint",
    "hash_token",
    "rolling_hashes",
    "winnow",
    "fingerprint_tokens",
]

# Reached under this module's name though not in __all__ (the fingerprint indexes import them here).
_int_objects = _int_pool._int_objects
_fingerprints_at = _fingerprints._fingerprints_at
_kgram_selection = _fingerprints._kgram_selection

# Examples of the functions re-exported here run with this module's (``doctest.testmod``).
__test__ = {"hash_token": hash_token, "rolling_hashes": rolling_hashes, "winnow": winnow}
