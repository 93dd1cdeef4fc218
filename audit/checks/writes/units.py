"""Over one code unit, whatever its language: :func:`find_write_sites` (cached by text) and :func:`scripts_run`."""

from __future__ import annotations

import hashlib

from mleaudit.audit.checks.writes.python import find_python_write_sites
from mleaudit.audit.checks.writes.shell import (
    INTERPRETERS,
    SCRIPT_SUFFIX,
    find_shell_write_sites,
    split_positional,
    split_shell_commands,
    strip_wrappers,
)
from mleaudit.audit.checks.writes.site import WriteSite
from mleaudit.audit.textcache import UNIT_ENTRIES, TextCache
from mleaudit.audit.units import CodeUnit

#: Write sites by (sha256 of the text, language), bounded by the characters of the texts.
_SITES = TextCache(max_chars=48 * 1024 * 1024, max_entries=UNIT_ENTRIES)


def find_write_sites(unit: CodeUnit) -> list[WriteSite]:
    """Write sites of a Python or shell unit; other languages give none.

    Parameters
    ----------
    unit : CodeUnit

    Returns
    -------
    list of WriteSite
        In text order.
    """
    if unit.language not in ("python", "bash"):
        return []
    # Several checks ask for the same unit's sites, and a log shows the same script at many
    # steps: the sites depend on the text alone (offsets are the text's), so they are kept by
    # content. A tree too deep to walk raises each time, naming each unit.
    key = (hashlib.sha256(unit.text.encode("utf-8", errors="surrogatepass")).digest(), unit.language)
    finder = find_python_write_sites if unit.language == "python" else find_shell_write_sites
    return list(_SITES.get_or_compute(key, len(unit.text), lambda: tuple(finder(unit))))


def scripts_run(unit: CodeUnit) -> list[str]:
    """Base names of the script files a shell unit runs (``python x.py``, ``bash run.sh``,
    ``jupyter nbconvert --execute nb.ipynb``, ``./train.py``).

    Parameters
    ----------
    unit : CodeUnit
        A shell unit; other languages give an empty list.

    Returns
    -------
    list of str
        In text order, without duplicates.
    """
    if unit.language != "bash":
        return []
    names: list[str] = []
    for command in split_shell_commands(unit.text):
        words = strip_wrappers(list(command.words))
        if not words:
            continue
        first = words[0][0]
        candidates: list[str] = []
        if INTERPRETERS.match(first.rsplit("/", 1)[-1]):
            positional, options = split_positional(words[1:], {"-c", "-m", "-e", "--to", "--output", "-p"})
            if "-c" not in options and "-m" not in options:
                candidates = [p for p in positional if SCRIPT_SUFFIX.search(p)][:1]
        elif SCRIPT_SUFFIX.search(first) and ("/" in first):
            candidates = [first]
        for candidate in candidates:
            base = candidate.rsplit("/", 1)[-1]
            if base and base not in names:
                names.append(base)
    return names
