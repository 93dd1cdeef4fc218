"""Reference code tokenized and profiled once per text, kept on disk between processes.

Tokenizing a public kernel for Dolos's fingerprints and lexing it for the copy detector's profile
is most of the time a fresh ``mleaudit audit --corpus DIR`` spends on the corpus, and a kernel
does not change between audits. The token stream (:class:`TokenizedFile`) and the profile
(:class:`Profile`) of a reference text are stored under the SHA-256 of the text, its language
and a salt of everything that decides them: this module's format, mleaudit's version, the
Python and Unicode versions, the tokenizer and detector schemes, the tree-sitter grammars'
versions and the source of the modules that parse, tokenize and lex. A hit is exactly what a
fresh read gives (the entry is checked against the text it is for, a digest covers its header
and arrays, every array's type and range is checked), any change of the text or of that code is
a miss, and a damaged entry is read again. Only public references are stored (:func:`~mleaudit.audit.similarity.comparison.compare`'s
``public_references``): an agent's code and a run's starter files are read afresh each time.

The entries live in ``$MLEAUDIT_CACHE_DIR/prepared`` (:mod:`mleaudit.audit.cachedir`;
``MLEAUDIT_CACHE_DIR=off`` turns them off): a JSON header and little-endian integer and float
arrays, read as data (nothing in an entry is unpickled or run); the ``chars`` tokenizer's
streams (one token per character) are not stored.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np

from mleaudit.audit.cachedir import cache_root, read_entry, write_entry
from mleaudit.audit.similarity.detect import Profile, profile_code
from mleaudit.audit.similarity.tokenize import TokenizedFile, tokenize_text
from mleaudit.audit.similarity.winnow.hashing import hash_token
from mleaudit.audit.units import CodeUnit

__all__ = ["cached_profile", "cached_tokens"]

#: Bumped whenever what an entry holds changes.
_FORMAT = 1
#: An entry larger than this is not read (a 1 MB kernel makes a few MB).
_MAX_ENTRY_BYTES = 64 << 20

_SALT: bytes | None = None
_SALT_LOCK = threading.Lock()


def _salt() -> bytes:
    global _SALT
    with _SALT_LOCK:
        if _SALT is None:
            from mleaudit.audit import __version__, parsing
            from mleaudit.audit.similarity import tokenize
            from mleaudit.audit.similarity.detect import lexing, profiles
            from mleaudit.audit.similarity.index.format import _fingerprint_scheme
            from mleaudit.audit.similarity.winnow import hashing

            # the lexer's regular expressions follow the Unicode tables of the running Python
            digest = hashlib.sha256(f"{_FORMAT}\0{__version__}\0{sys.version}\0{unicodedata.unidata_version}\0".encode())
            digest.update(json.dumps(_fingerprint_scheme(), sort_keys=True).encode())
            sources = sorted(Path(tokenize.__file__).parent.glob("*.py"))
            sources += [Path(m.__file__) for m in (lexing, profiles, hashing, parsing)]  # type: ignore[arg-type]
            for source in sources:
                digest.update(source.name.encode() + b"\0" + hashlib.sha256(source.read_bytes()).digest())
            _SALT = digest.digest()
        return _SALT


def _key(kind: str, language: str, text: str) -> str:
    digest = hashlib.sha256(_salt())
    for value in (kind, language):
        digest.update(value.encode() + b"\0")
    digest.update(hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).digest())
    return digest.hexdigest()


_MAGIC = b"mleaudit-prepared\n"
_DTYPES = {"i4": np.dtype("<i4"), "i8": np.dtype("<i8"), "f8": np.dtype("<f8")}


def _digest(header: dict[str, Any], payload: bytes) -> str:
    """SHA-256 of an entry's header (without its digest) and arrays: damage anywhere is a miss."""
    return hashlib.sha256(json.dumps(header, sort_keys=True).encode() + b"\0" + payload).hexdigest()


def _load(folder: Path, key: str, types: dict[str, str]) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """An entry's header and arrays (read-only views of its bytes), or ``None`` when it is
    missing, damaged (:func:`_digest` differs from the header's) or not an entry for ``key``
    holding exactly the arrays ``types`` names, of those types."""
    data = read_entry(folder / key[:2] / key, _MAX_ENTRY_BYTES)
    if data is None or not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 4:
        return None
    at = len(_MAGIC)
    size = int.from_bytes(data[at : at + 4], "little")
    body = at + 4 + size
    try:
        header = json.loads(data[at + 4 : body])
        if not isinstance(header, dict) or header.get("key") != key:
            return None
        if header.get("sha256") != _digest({k: v for k, v in header.items() if k != "sha256"}, data[body:]):
            return None
        listed = header["arrays"]
        if [name for name, _, _ in listed] != list(types) or any(types[name] != code for name, code, _ in listed):
            return None
        arrays, offset = {}, body
        for name, code, count in listed:
            dtype = _DTYPES[code]
            if type(count) is not int or count < 0 or offset + count * dtype.itemsize > len(data):
                return None
            arrays[name] = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
            offset += count * dtype.itemsize
    except (ValueError, KeyError, TypeError, RecursionError):
        return None
    return (header, arrays) if offset == len(data) else None


def _store(folder: Path, key: str, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Write an entry: :data:`_MAGIC`, the JSON header's length (4 bytes, little-endian), the
    header (``key``, each array's name, type and length, :func:`_digest`), the
    arrays' bytes. An entry too large to be read back is not written."""
    codes = {dtype: code for code, dtype in _DTYPES.items()}
    parts = [np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")) for array in arrays.values()]
    payload = b"".join(part.tobytes() for part in parts)
    described = {**header, "key": key,
                 "arrays": [[name, codes[array.dtype], int(array.size)] for name, array in zip(arrays, parts)]}
    head = json.dumps({**described, "sha256": _digest(described, payload)}).encode()
    entry = b"".join([_MAGIC, len(head).to_bytes(4, "little"), head, payload])
    if len(entry) <= _MAX_ENTRY_BYTES:
        write_entry(folder / key[:2], key, entry)


#: The arrays of each kind of entry and their types, in order.
_TOKEN_ARRAYS = {"codes": "i4", "starts": "i8", "ends": "i8"}
_PROFILE_ARRAYS = {"ids": "i8", "starts": "i8", "ends": "i8", "vocabulary": "i8", "bits": "f8",
                   "literals": "i8", "name_literals": "i8", "prose": "i8"}


def _tokens_from(header: dict[str, Any], arrays: dict[str, np.ndarray], unit: CodeUnit) -> TokenizedFile:
    """The stored token stream of ``unit`` (``ValueError``, ``KeyError`` or ``TypeError`` when it
    does not fit)."""
    table = header["names"]
    if not isinstance(table, list) or not all(isinstance(name, str) for name in table):
        raise ValueError("names")
    codes, starts, ends = arrays["codes"], arrays["starts"], arrays["ends"]
    if not codes.size == starts.size == ends.size:
        raise ValueError("lengths")
    if codes.size and (codes.min() < 0 or codes.max() >= len(table) or starts.min() < 0
                       or ends.max() > len(unit.text) or np.any(ends < starts)):
        raise ValueError("offsets")
    hashes = np.array([hash_token(name) for name in table], dtype=np.uint32)
    return TokenizedFile.from_arrays(
        path=unit.path, language=unit.language, text=unit.text,
        tokens=tuple(np.array(table, dtype=object)[codes].tolist()), starts=tuple(starts.tolist()),
        ends=tuple(ends.tolist()), has_error=header["has_error"] is True, token_hashes=hashes[codes])


def cached_tokens(unit: CodeUnit) -> TokenizedFile:
    """:func:`tokenize_text` of a reference unit, from the cache when it holds it (then stored).

    Raises
    ------
    KeyError
        If the unit's language has no grammar (as :func:`tokenize_text`).
    """
    folder = cache_root("prepared")
    if folder is None or unit.language == "chars":
        return tokenize_text(unit.text, unit.language, unit.path)
    key = _key("tokens", unit.language, unit.text)
    found = _load(folder, key, _TOKEN_ARRAYS)
    if found is not None:
        try:
            return _tokens_from(*found, unit)
        except (KeyError, ValueError, TypeError, IndexError):
            pass  # damaged or foreign: read again and store anew
    tokenized = tokenize_text(unit.text, unit.language, unit.path)
    table = sorted(set(tokenized.tokens))
    position = {name: i for i, name in enumerate(table)}
    _store(folder, key, {"names": table, "has_error": bool(tokenized.has_error)},
           {"codes": np.array([position[name] for name in tokenized.tokens], dtype="<i4"),
            "starts": np.asarray(tokenized.starts, dtype="<i8"), "ends": np.asarray(tokenized.ends, dtype="<i8")})
    return tokenized


def _profile_from(arrays: dict[str, np.ndarray], text: str, path: str) -> Profile:
    """The stored profile of ``text`` (``ValueError`` when it does not fit)."""
    ids, starts, ends = arrays["ids"], arrays["starts"], arrays["ends"]
    vocabulary, bits = arrays["vocabulary"], arrays["bits"]
    if bits.size != vocabulary.size or not ids.size == starts.size == ends.size:
        raise ValueError("lengths")
    if vocabulary.size and (vocabulary.min() < 0 or np.unique(vocabulary).size != vocabulary.size
                            or not np.isfinite(bits).all() or bits.min() < 0):
        raise ValueError("vocabulary")
    if ids.size and (starts.min() < 0 or ends.max() > len(text) or np.any(ends < starts)
                     or not np.isin(ids, vocabulary).all()):
        raise ValueError("offsets")
    literals, names, prose = arrays["literals"], arrays["name_literals"], arrays["prose"]
    if not (np.isin(literals, vocabulary).all() and np.isin(names, literals).all()
            and (not prose.size or (prose.min() >= 0 and prose.max() < ids.size))):
        raise ValueError("literals")
    return Profile(path=path, ids=tuple(ids.tolist()), starts=tuple(starts.tolist()), ends=tuple(ends.tolist()),
                   priors=dict(zip(vocabulary.tolist(), bits.tolist())),
                   literals=frozenset(arrays["literals"].tolist()), names=frozenset(arrays["name_literals"].tolist()),
                   prose=frozenset(arrays["prose"].tolist()))


def cached_profile(text: str, path: str = "") -> Profile:
    """:func:`profile_code` of a reference text, from the cache when it holds it (then stored)."""
    folder = cache_root("prepared")
    if folder is None:
        return profile_code(text, path)
    key = _key("profile", "python", text)
    found = _load(folder, key, _PROFILE_ARRAYS)
    if found is not None:
        try:
            return _profile_from(found[1], text, path)
        except (KeyError, ValueError, TypeError, IndexError):
            pass
    profile = profile_code(text, path)
    vocabulary = np.array(list(profile.priors), dtype="<i8")
    _store(folder, key, {}, {
        "ids": np.array(profile.ids, dtype="<i8"), "starts": np.array(profile.starts, dtype="<i8"),
        "ends": np.array(profile.ends, dtype="<i8"), "vocabulary": vocabulary,
        "bits": np.array([profile.priors[v] for v in vocabulary.tolist()], dtype="<f8"),
        "literals": np.array(sorted(profile.literals), dtype="<i8"),
        "name_literals": np.array(sorted(profile.names), dtype="<i8"),
        "prose": np.array(sorted(profile.prose), dtype="<i8")})
    return profile
