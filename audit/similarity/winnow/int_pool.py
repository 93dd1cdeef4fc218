"""Shared int objects for the offsets and indices that token streams and fingerprints hold."""

from __future__ import annotations

import numpy as np

#: Offsets and token indices below this share one int object per value (see :func:`_int_objects`).
_POOL_LIMIT = 1 << 18
_pool: np.ndarray = np.array(range(1 << 12), dtype=object)


def _int_objects(values: np.ndarray) -> list[int]:
    """``values.tolist()``, with each value in ``[0, _POOL_LIMIT)`` one shared int object.

    Token streams keep two offsets per token and fingerprints three token indices; as separate
    int objects those dominate the memory of a corpus. Values from the shared pool cost one
    pointer each. The pool grows to the largest value seen (at most :data:`_POOL_LIMIT` ints,
    about 9 MB, kept for the life of the process).
    """
    global _pool
    if len(values) == 0:
        return []
    top = int(values.max())
    if top >= len(_pool) and len(_pool) < _POOL_LIMIT:
        size = len(_pool)
        while size <= top and size < _POOL_LIMIT:
            size *= 2
        _pool = np.array(range(min(size, _POOL_LIMIT)), dtype=object)
    pool = _pool
    bottom = int(values.min())
    if bottom >= 0 and top < len(pool):
        return pool[values].tolist()
    if bottom >= len(pool) or top < 0:
        return values.tolist()
    # partly inside the pool: shared objects where possible, new ints elsewhere
    outside = (values < 0) | (values >= len(pool))
    objects = pool[np.where(outside, 0, values)]
    objects[outside] = values[outside].tolist()
    return objects.tolist()
