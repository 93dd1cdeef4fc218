"""The files beside ``config.yaml``: ``checksums.yaml`` and the list of reference kernels."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from mleaudit.grading import untrusted_yaml
from mleaudit.grading.errors import ConfigError


_MD5 = re.compile(r"^[0-9a-f]{32}$")
#: A Kaggle notebook reference, ``owner/slug``.
_KERNEL_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*/[A-Za-z0-9][A-Za-z0-9_.\-]*$")


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        return untrusted_yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None


def load_checksums(path: Path) -> dict[str, dict[str, str]]:
    """Read a ``checksums.yaml``: MD5 hex digests of prepared (and raw) files.

    Parameters
    ----------
    path : pathlib.Path
        A YAML mapping with sections ``public`` and ``private`` (required) and ``raw``
        (optional), each mapping a file name to its MD5. MLE-bench's ``zip`` entry (the
        checksum of the downloaded Kaggle archive) is accepted and ignored.

    Returns
    -------
    dict
        ``{section: {file name: md5}}``.

    Raises
    ------
    ConfigError
        Naming the file and the entry at fault.
    """
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with 'public' and 'private' sections")
    result: dict[str, dict[str, str]] = {}
    for section, entries in data.items():
        if section == "zip":
            continue
        if section not in ("public", "private", "raw"):
            raise ConfigError(f"{path}: field '{section}': unknown section (expected public, private, raw)")
        if not isinstance(entries, dict):
            raise ConfigError(f"{path}: field '{section}': expected a mapping of file name to MD5")
        for name, digest in entries.items():
            if not isinstance(name, str) or "/" in name or not isinstance(digest, str) or not _MD5.match(digest):
                raise ConfigError(f"{path}: field '{section}.{name}': expected a file name mapped to a 32-digit MD5")
        result[section] = dict(entries)
    for section in ("public", "private"):
        if section not in result:
            raise ConfigError(f"{path}: field '{section}': missing section")
    return result


def load_kernel_refs(path: Path) -> tuple[str, ...]:
    """Read a kernels list: one Kaggle notebook ``owner/slug`` a line.

    Parameters
    ----------
    path : pathlib.Path
        A text file; blank lines and lines starting with ``#`` are skipped. A full notebook URL
        is not accepted: the list holds references, as ``kaggle kernels pull`` takes them.

    Returns
    -------
    tuple of str
        The references in file order (most voted first in the shipped lists).

    Raises
    ------
    ConfigError
        If the file cannot be read, or a line is not ``owner/slug`` or repeats an earlier one
        (the message names the file and the 1-based line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    refs: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        ref = line.strip()
        if not ref or ref.startswith("#"):
            continue
        if not _KERNEL_REF.match(ref):
            raise ConfigError(f"{path}: line {number}: {ref[:80]!r} is not a notebook reference 'owner/slug'")
        if ref in refs:
            raise ConfigError(f"{path}: line {number}: {ref!r} is listed twice")
        refs.append(ref)
    return tuple(refs)
