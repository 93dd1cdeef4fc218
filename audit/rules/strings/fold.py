""":func:`fold_strings`: every maximal string-valued expression of a unit, folded by its language's folder, cached by text."""

from __future__ import annotations

from mleaudit.audit.parsing import parse
from mleaudit.audit.rules.strings.bash import BashFolder
from mleaudit.audit.rules.strings.parts import FoldedString
from mleaudit.audit.rules.strings.python import PythonFolder
from mleaudit.audit.textcache import UNIT_ENTRIES, TextCache

_FOLDERS = {"python": PythonFolder, "bash": BashFolder}

#: Folds kept, by the size of their texts (see :mod:`mleaudit.audit.textcache`).
_FOLDS = TextCache(max_chars=48 * 1024 * 1024, max_entries=UNIT_ENTRIES)


def fold_strings(text: str, language: str) -> tuple[FoldedString, ...]:
    """Fold every maximal string-valued expression of ``text``.

    Parameters
    ----------
    text : str
        Source code of one unit (untrusted; parsed, never executed).
    language : str
        ``"python"`` or ``"bash"``; other languages have no folder and give ``()``.

    Returns
    -------
    tuple of FoldedString
        In source order. Only outermost expressions are returned (``"a" + "b" + c`` gives one
        value, not three); bare names are not (their constant is returned where it is written).
        Plain literals are included with ``composed=False``.

    Examples
    --------
    >>> [f.value for f in fold_strings('u = "https://api." + "example.com" + path', "python")]
    ['https://api.example.com{}']
    """
    folder_class = _FOLDERS.get(language)
    if folder_class is None or not text:
        return ()
    return _FOLDS.get_or_compute((text, language), len(text), lambda: _fold_uncached(text, language, folder_class))


def _fold_uncached(text: str, language: str, folder_class: type) -> tuple[FoldedString, ...]:
    parsed = parse(text, language)
    folder = folder_class(parsed.data, parsed.root)
    folder.collect()
    results: list[FoldedString] = []
    cursor = parsed.root.walk()
    while True:
        node = cursor.node
        part = folder.fold(node) if folder.emitted(node) else None
        if part is not None and part.literal:
            results.append(FoldedString(start=parsed.char_offset(node.start_byte), end=parsed.char_offset(node.end_byte),
                                        value=part.value, segments=part.segments, composed=part.composed))
            descend = False  # the outermost expression stands for its parts
        else:
            descend = True
        if descend and cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return tuple(results)
