"""Rule documents already read, kept on disk by their bytes.

Reading a rule file costs more than checking it: PyYAML's pure-Python parser (the reference
reader for rules, see :mod:`mleaudit.grading.untrusted_yaml`) takes about half a second for the
shipped rules, on every command that loads them. A document that was read and passed the schema
is stored as JSON under the SHA-256 of its bytes, salted with everything that decides the read
(this module's format, the versions of mleaudit, PyYAML and jsonschema, the source of the bounded
YAML reader and the schema), so a hit returns exactly the data a fresh read would, and any change
to a file, the reader or a library is a miss. Only documents whose JSON round trip gives the same
values of the same types are stored (a YAML date, a non-string key or a NaN is read afresh every
time). The loader checks a hit against the schema again, as it checks a fresh read.

The cache lives in ``$MLEAUDIT_CACHE_DIR/rules`` (default: the user's cache directory,
``~/.cache/mleaudit/rules`` on Linux); ``MLEAUDIT_CACHE_DIR=off`` turns it off. A cache entry
that cannot be read, is not JSON, or does not name its own key is ignored and the file read
again (so is an entry that is not a regular file, over 1 MB, nested too deep, or not a mapping);
a cache that cannot be written, or a ``MLEAUDIT_CACHE_DIR`` that cannot be resolved, is not an
error. Like Python's own ``__pycache__``, the cache is trusted as much as the user's files: only
the user who runs mleaudit writes there (an audited run never does), nothing in an entry is
executed, and whoever can write there can as well edit the rules themselves.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from mleaudit.audit.cachedir import CACHE_ENV, cache_root, read_entry, write_entry

__all__ = ["CACHE_ENV", "RuleDocumentCache", "rule_cache_root"]

#: Bumped whenever what an entry holds, or what a hit skips, changes.
_FORMAT = 1
#: Entries larger than this are not read (the largest shipped rule is a few kB).
_MAX_ENTRY_BYTES = 1 << 20

logger = logging.getLogger(__name__)


def rule_cache_root() -> Path | None:
    """The folder of cached rule documents, or ``None`` when the cache is off."""
    return cache_root("rules")


def _same_json(data: Any, again: Any) -> bool:
    """``again`` (a JSON round trip of ``data``) holds the same values with the same types."""
    if type(data) is not type(again):
        return False
    if isinstance(data, dict):
        return data.keys() == again.keys() and all(_same_json(data[k], again[k]) for k in data)
    if isinstance(data, list):
        return len(data) == len(again) and all(_same_json(a, b) for a, b in zip(data, again))
    return data == again


class RuleDocumentCache:
    """Rule documents that were read (and passed the schema), by the SHA-256 of their bytes.

    Parameters
    ----------
    root : Path or None
        The cache folder (:func:`rule_cache_root`); ``None`` keeps nothing.
    schema : bytes
        The rule schema's bytes, part of every key.
    """

    def __init__(self, root: Path | None, schema: bytes) -> None:
        from importlib import metadata

        import yaml

        from mleaudit.audit import __version__
        from mleaudit.grading import untrusted_yaml

        try:
            validator_version = metadata.version("jsonschema")
        except metadata.PackageNotFoundError:  # pragma: no cover - a dependency
            validator_version = "?"
        self.root = root
        salt = hashlib.sha256()
        for part in (str(_FORMAT), __version__, yaml.__version__, validator_version):
            salt.update(part.encode("utf-8") + b"\0")
        # the bounded reader's own code: a stricter bound is a miss
        salt.update(hashlib.sha256(Path(untrusted_yaml.__file__).read_bytes()).digest())
        salt.update(hashlib.sha256(schema).digest())
        self._salt = salt.digest()

    def _key(self, raw: bytes) -> str:
        return hashlib.sha256(self._salt + raw).hexdigest()

    def get(self, raw: bytes) -> Any | None:
        """The stored document of a rule file's bytes, or ``None`` (not stored, or unusable)."""
        if self.root is None:
            return None
        key = self._key(raw)
        data = read_entry(self.root / f"{key}.json", _MAX_ENTRY_BYTES)
        if data is None:
            return None
        try:
            entry = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("document"), dict):
            return None
        return entry["document"]

    def put(self, raw: bytes, document: Any) -> None:
        """Store the document read from a rule file's bytes (after it passed the schema)."""
        if self.root is None:
            return
        key = self._key(raw)
        try:
            # ASCII: a lone surrogate of a YAML escape is written as its JSON escape
            text = json.dumps({"key": key, "document": document}, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            return  # a date, a non-string key ...: read afresh each time
        if not _same_json(document, json.loads(text)["document"]):
            return
        write_entry(self.root, f"{key}.json", text.encode("ascii"))
