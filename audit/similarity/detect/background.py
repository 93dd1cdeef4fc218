"""The shipped background of ordinary ML code (``data/background.npz``): reading, writing and the
default instance every pair's background model counts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mleaudit.audit.errors import ConfigError
from mleaudit.audit.similarity.detect.constants import MIN_TILE_TOKENS, PROFILE_SCHEME
from mleaudit.audit.similarity.detect.ngrams import NgramTable
from mleaudit.audit.similarity.detect.profiles import Profile, gram_keys


# -- the background of ordinary ML code -------------------------------------------------------------

#: Version of the background file's layout; a file of another version is refused.
BACKGROUND_FORMAT = 1
#: The shipped background: document frequencies of the token n-grams of agent-style ML scripts,
#: built by ``scripts/build_background.py``.
BACKGROUND_PATH = Path(__file__).resolve().parent.parent / "data" / "background.npz"
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
