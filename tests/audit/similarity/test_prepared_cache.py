"""Reference code kept tokenized and profiled on disk: a hit is exactly a fresh read, anything else
is read again."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from mleaudit.audit.similarity.detect import profile_code
from mleaudit.audit.similarity.prepared_cache import cached_profile, cached_tokens
from mleaudit.audit.similarity.tokenize import tokenize_text
from mleaudit.audit.units import CodeUnit

_TEXTS = [
    "import pandas as pd\ntrain = pd.read_csv('./input/train.csv')\nprint(train.shape)  # größe\n",
    'def f(x):\n    """Smooth the counts: a docstring in prose, with words in a row."""\n    return [v * 2 for v in x]\n',
    "x = (1,\n",  # broken code: the parser recovers
    "s = '\\ud800 and \U0001F600 and \x00'\n",
    "",
    "#!/bin/bash\nfor f in *.csv; do wc -l \"$f\"; done\n",
]


def _entries(root: Path) -> list[Path]:
    return sorted(p for p in (root / "prepared").rglob("*") if p.is_file())


def _same_profile(a, b) -> None:
    for field in ("path", "ids", "starts", "ends", "priors", "literals", "names", "prose"):
        assert getattr(a, field) == getattr(b, field), field
    assert list(a.priors) == list(b.priors)  # in the same order too
    assert a.content_key() == b.content_key()


def _same_tokens(a, b) -> None:
    for field in ("path", "language", "text", "tokens", "starts", "ends", "has_error", "_lines", "_ordered"):
        assert getattr(a, field) == getattr(b, field), field
    assert (a._hashes is None and b._hashes is None) or list(a._hashes) == list(b._hashes)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("MLEAUDIT_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("text", _TEXTS)
def test_a_hit_is_exactly_a_fresh_read(cache, text):
    language = "bash" if text.startswith("#!") else "python"
    unit = CodeUnit(path="kernels/a.py", language=language, text=text)
    fresh = tokenize_text(text, language, "kernels/a.py")
    _same_tokens(cached_tokens(unit), fresh)  # a miss, stored
    assert _entries(cache)
    _same_tokens(cached_tokens(unit), fresh)  # a hit
    # another path for the same text: the entry is the text's, the spans name the unit
    moved = dataclasses.replace(unit, path="other/b.py")
    _same_tokens(cached_tokens(moved), tokenize_text(text, language, "other/b.py"))
    if language == "python":
        expected = profile_code(text, "kernels/a.py")
        for _ in range(2):
            _same_profile(cached_profile(text, "kernels/a.py"), expected)


def test_damaged_or_foreign_entries_are_read_again(cache):
    text = _TEXTS[0]
    unit = CodeUnit(path="k.py", language="python", text=text)
    cached_tokens(unit)
    cached_profile(text, "k.py")
    entries = _entries(cache)
    assert len(entries) == 2
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:-3])  # truncated
    _same_tokens(cached_tokens(unit), tokenize_text(text, "python", "k.py"))
    _same_profile(cached_profile(text, "k.py"), profile_code(text, "k.py"))
    # an entry holding another text's data under this text's name is not used
    other = _TEXTS[1]
    cached_tokens(CodeUnit(path="o.py", language="python", text=other))
    stored = {p.name: p.read_bytes() for p in _entries(cache)}
    for entry in _entries(cache):
        for name, data in stored.items():
            if name != entry.name:
                entry.write_bytes(data)
                break
    _same_tokens(cached_tokens(unit), tokenize_text(text, "python", "k.py"))
    _same_tokens(cached_tokens(CodeUnit(path="o.py", language="python", text=other)),
                 tokenize_text(other, "python", "o.py"))


def test_off_stores_nothing_and_chars_are_never_stored(tmp_path, monkeypatch):
    monkeypatch.setenv("MLEAUDIT_CACHE_DIR", "off")
    unit = CodeUnit(path="k.py", language="python", text=_TEXTS[0])
    _same_tokens(cached_tokens(unit), tokenize_text(unit.text, "python", "k.py"))
    _same_profile(cached_profile(unit.text, "k.py"), profile_code(unit.text, "k.py"))
    monkeypatch.setenv("MLEAUDIT_CACHE_DIR", str(tmp_path))
    chars = CodeUnit(path="notes.txt", language="chars", text="a\x00b")
    _same_tokens(cached_tokens(chars), tokenize_text(chars.text, "chars", "notes.txt"))
    assert not (tmp_path / "prepared").exists()


def test_an_unwritable_cache_is_no_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("MLEAUDIT_CACHE_DIR", str(blocker))
    unit = CodeUnit(path="k.py", language="python", text=_TEXTS[1])
    _same_tokens(cached_tokens(unit), tokenize_text(unit.text, "python", "k.py"))
    _same_profile(cached_profile(unit.text, "k.py"), profile_code(unit.text, "k.py"))


def test_an_unknown_language_raises_as_the_tokenizer_does(cache):
    with pytest.raises(KeyError):
        cached_tokens(CodeUnit(path="k.cob", language="cobol", text="DISPLAY 'X'."))


def test_only_public_references_are_stored(cache):
    from mleaudit.audit.similarity import compare
    from mleaudit.audit.similarity.reference_side import clear_prepared

    agent = CodeUnit(path="run/solution.py", language="python", text=_TEXTS[0] + "y = 2\n")
    kernels = [CodeUnit(path=f"kernels/k{i}.py", language="python", text=text) for i, text in enumerate(_TEXTS[:3])]
    starter = [CodeUnit(path="run/starter.py", language="python", text="import os\nprint(os.listdir('.'))\n")]
    clear_prepared()
    kept = compare([agent], kernels, boilerplate=starter, public_references=False)
    assert not _entries(cache)  # a batch's runs compared with each other: nothing of theirs stored
    clear_prepared()
    again = compare([agent], kernels, boilerplate=starter)
    assert len(_entries(cache)) == 2 * len(kernels)  # each kernel's tokens and profile; no agent, no starter
    clear_prepared()
    assert compare([agent], kernels, boilerplate=starter).pairs == again.pairs == kept.pairs


def _rewrite_entry(entry: Path, change) -> None:
    """Rewrite an entry's header and arrays through ``change(header, arrays)``, with a digest
    that fits (a forged or mistyped entry, not a damaged one)."""
    import json

    from mleaudit.audit.similarity import prepared_cache as pc

    data = entry.read_bytes()
    at = len(pc._MAGIC)
    size = int.from_bytes(data[at : at + 4], "little")
    header = json.loads(data[at + 4 : at + 4 + size])
    arrays, offset = {}, at + 4 + size
    for name, code, count in header["arrays"]:
        dtype = pc._DTYPES[code]
        arrays[name] = np.frombuffer(data, dtype=dtype, count=count, offset=offset).copy()
        offset += count * dtype.itemsize
    change(header, arrays)
    header.pop("sha256")
    parts = [np.ascontiguousarray(a) for a in arrays.values()]
    header["arrays"] = [[name, next(c for c, d in pc._DTYPES.items() if d == a.dtype), int(a.size)]
                        for name, a in zip(arrays, parts)]
    payload = b"".join(a.tobytes() for a in parts)
    head = json.dumps({**header, "sha256": pc._digest(header, payload)}).encode()
    entry.write_bytes(pc._MAGIC + len(head).to_bytes(4, "little") + head + payload)


@pytest.mark.parametrize("change", [
    lambda h, a: a.update(ids=-a["ids"], vocabulary=-a["vocabulary"]),
    lambda h, a: a.update(starts=a["starts"].astype("<f8"), ends=a["ends"].astype("<f8")),
    lambda h, a: a.update(ids=a["ids"].astype("<f8")),
    lambda h, a: a.update(bits=a["bits"] * float("nan")),
    lambda h, a: a.update(prose=np.append(a["prose"], len(a["ids"]) + 5)),  # past the last token
    lambda h, a: a.update(literals=np.append(a["literals"], 12345)),  # not a token of the text
])
def test_a_mistyped_or_inconsistent_profile_entry_is_read_again(cache, change):
    text = _TEXTS[0]
    cached_profile(text, "k.py")
    (entry,) = _entries(cache)
    _rewrite_entry(entry, change)
    _same_profile(cached_profile(text, "k.py"), profile_code(text, "k.py"))


def test_a_flipped_bit_is_a_miss(cache):
    text = _TEXTS[1]
    unit = CodeUnit(path="k.py", language="python", text=text)
    cached_tokens(unit)
    (entry,) = _entries(cache)
    data = bytearray(entry.read_bytes())
    data[-9] ^= 1  # inside the arrays, past the digest
    entry.write_bytes(bytes(data))
    _same_tokens(cached_tokens(unit), tokenize_text(text, "python", "k.py"))
    _rewrite_entry(entry, lambda h, a: None)  # a sound entry again
    _same_tokens(cached_tokens(unit), tokenize_text(text, "python", "k.py"))
    data = entry.read_bytes()
    assert b'"has_error": false' in data
    entry.write_bytes(data.replace(b'"has_error": false', b'"has_error": true '))  # the header is under the digest too
    _same_tokens(cached_tokens(unit), tokenize_text(text, "python", "k.py"))


def test_an_entry_too_large_to_read_back_is_not_written(cache, monkeypatch):
    from mleaudit.audit.similarity import prepared_cache

    monkeypatch.setattr(prepared_cache, "_MAX_ENTRY_BYTES", 2000)
    big = "x = [" + "1, " * 2000 + "]\n"
    _same_tokens(cached_tokens(CodeUnit(path="k.py", language="python", text=big)), tokenize_text(big, "python", "k.py"))
    _same_profile(cached_profile(big, "k.py"), profile_code(big, "k.py"))
    assert not _entries(cache)


def test_an_unusable_cache_variable_is_warned_about_once(monkeypatch, caplog):
    import logging

    from mleaudit.audit.cachedir import cache_root

    monkeypatch.setenv("MLEAUDIT_CACHE_DIR", "~no-such-user-anywhere/cache")
    with caplog.at_level(logging.WARNING):
        assert cache_root("prepared") is None and cache_root("rules") is None
        _same_tokens(cached_tokens(CodeUnit(path="k.py", language="python", text=_TEXTS[0])),
                     tokenize_text(_TEXTS[0], "python", "k.py"))
    assert sum("nothing is cached" in r.getMessage() for r in caplog.records) <= 1


def test_select_positions_outside_the_list_are_refused():
    from mleaudit.audit.similarity import compare

    agent = CodeUnit(path="a.py", language="python", text=_TEXTS[0])
    kernel = CodeUnit(path="k.py", language="python", text=_TEXTS[0])
    with pytest.raises(ValueError, match="select chose position -1"):
        compare([agent], [kernel], select=lambda measured: [-1])
    assert len(compare([agent], [kernel], select=lambda measured: [0]).pairs) == 1
