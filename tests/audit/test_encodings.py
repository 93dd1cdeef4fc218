"""Text in any encoding is read as the characters it holds; binary data is not taken for text.

Every sample is written here, in the encoding named, from text chosen for the test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mleaudit.audit.expand import expand_run
from mleaudit.audit.run import ArtifactKind, decode_text, load_run, printable_share

GBK_PY = "# 训练模型\nimport pandas as pd\n\ndf = pd.read_csv('train.csv')  # 读取数据\nprint('完成')\n"
CP1252_LOG = "$ python train.py\nr\u00e9sultat: pr\u00e9cision 0.91 \u2014 \u201cbon\u201d mod\u00e8le\n"
LATIN1_LOG = "Stra\u00dfe, M\u00fcnchen: Gr\u00f6\u00dfe der Daten \u00fcberpr\u00fcft, se\u00f1or.\n"


@pytest.mark.parametrize(
    ("text", "encoding", "note"),
    [
        (GBK_PY, "gbk", "not valid UTF-8: decoded as gb18030 (detected)"),
        (CP1252_LOG, "cp1252", "not valid UTF-8: decoded as cp1252 (detected)"),
        # latin-1 text is cp1252 text (they differ only where latin-1 has control characters).
        (LATIN1_LOG, "latin-1", "not valid UTF-8: decoded as cp1252 (detected)"),
        ("Привет, мир! Загрузка данных и обучение модели.\n", "cp1251",
         "not valid UTF-8: decoded as cp1251 (detected)"),
        ("データを読み込みます。モデルを学習します。\n", "shift_jis", "not valid UTF-8: decoded as cp932 (detected)"),
        # Half-width katakana (cp932) and Korean johab read this with no mess the detector sees.
        ("训练模型 import pandas as pd\n" * 50, "gbk", "not valid UTF-8: decoded as gb18030 (detected)"),
        ("訓練模型，讀取資料完成\n", "big5", "not valid UTF-8: decoded as big5 (detected)"),
        ("안녕하세요 세계. 데이터를 로드합니다.\n", "euc_kr", "not valid UTF-8: decoded as cp949 (detected)"),
        # The detector's first pass does not try koi8_r here: the common code pages are tried alone.
        ("Привет, мир! Загрузка данных и обучение модели.\n", "koi8_r",
         "not valid UTF-8: decoded as koi8_r (detected)"),
        ("Veri yüklendi, doğruluk ölçüldü, şimdi çıktı.\n", "cp1254", "not valid UTF-8: decoded as cp1254 (detected)"),
        (GBK_PY, "utf-16", "UTF-16 text (decoded as such)"),
        (GBK_PY, "utf-32", "UTF-32 text (decoded as such)"),
        ("print('hello')\n# plain ASCII\n", "utf-16-le", "UTF-16 text without a byte-order mark (decoded as utf-16-le)"),
        ("print('hello')\n# plain ASCII\n", "utf-16-be", "UTF-16 text without a byte-order mark (decoded as utf-16-be)"),
        (GBK_PY, "utf-8", None),
        (GBK_PY, "utf-8-sig", None),
    ],
)
def test_text_in_any_encoding_is_decoded(text, encoding, note):
    assert decode_text(text.encode(encoding)) == (text, note)


def test_damaged_utf8_keeps_utf8_and_counts_the_bad_bytes():
    data = ("r\u00e9sum\u00e9 " * 10).encode() + b"\xff\xfe" + " fin \u00e9t\u00e9\n".encode()
    text, note = decode_text(data)
    assert text == "r\u00e9sum\u00e9 " * 10 + "\ufffd\ufffd fin \u00e9t\u00e9\n"
    assert note == f"not valid UTF-8: 2 byte(s) replaced with U+FFFD, the first at byte {len(('résumé ' * 10).encode())}"


@pytest.mark.parametrize(
    "data",
    [os.urandom(8192), bytes(range(256)) * 16, bytes(range(128, 256)) * 16, b"\x00" * 10 + b"\x80\x81" * 50,
     b"\x89PNG\r\n\x1a\n" + os.urandom(2000)],
    ids=["random", "all-bytes", "high-bytes", "nul-and-high", "png"],
)
def test_binary_is_not_decoded_as_some_code_page(data):
    text, note = decode_text(data)
    assert note is not None and note.startswith("not valid UTF-8: ") and "replaced with U+FFFD" in note
    # What comes back is junk by either measure the loaders use.
    assert "\x00" in text or text.count("\ufffd") > 0.1 * len(text) or printable_share(text) < 0.97


def test_printable_share():
    assert printable_share("") == 1.0
    assert printable_share("a\tb\n") == 1.0
    assert printable_share("ab\x00\x01") == 0.5


def _write(root: Path, files: dict[str, bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return root


def test_a_run_in_legacy_encodings_is_read_as_its_characters(tmp_path):
    root = _write(tmp_path / "run", {
        "code/train.py": GBK_PY.encode("gbk"),
        "logs/agent.log": CP1252_LOG.encode("cp1252"),
        "logs/latin1.log": LATIN1_LOG.encode("latin-1"),
        "logs/wide.log": "$ ls /home/data\n".encode("utf-16"),
        "logs/junk.log": os.urandom(4096).replace(b"\x00", b"\x01"),
        "notes": "r\u00e9sum\u00e9 du mod\u00e8le\n".encode("cp1252"),
    })
    run = load_run(root)
    assert {a.path: a.kind for a in run.artifacts}["notes"] is ArtifactKind.LOG
    units = expand_run(run)
    by_path = {u.path: u.text for u in units.code_units if u.source == "file"}
    assert by_path["code/train.py"] == GBK_PY
    assert [u.text for u in units.code_units if u.path == "logs/agent.log"] == ["python train.py"]
    assert [u.text for u in units.code_units if u.path == "logs/wide.log"] == ["ls /home/data"]
    assert any("pr\u00e9cision" in e.text for e in units.events_of("logs/agent.log"))
    assert any("M\u00fcnchen" in e.text for e in units.events_of("logs/latin1.log"))
    notes = {n.path: n.reason for n in units.notes}
    assert notes["code/train.py"] == "not valid UTF-8: decoded as gb18030 (detected)"
    assert notes["logs/agent.log"] == notes["logs/latin1.log"] == "not valid UTF-8: decoded as cp1252 (detected)"
    assert notes["logs/wide.log"] == "UTF-16 text (decoded as such)"
    skipped = {s.path: s.reason for s in units.skipped}
    assert set(skipped) == {"logs/junk.log"} and skipped["logs/junk.log"].startswith("binary content")


def test_a_declared_source_encoding_still_wins(tmp_path):
    code = "# -*- coding: latin-1 -*-\nname = 'Gr\u00f6\u00dfe'\n"
    units = expand_run(load_run(_write(tmp_path / "run", {"solve.py": code.encode("latin-1")})))
    assert [u.text for u in units.code_units] == [code]


def test_near_equal_mess_goes_to_the_common_code_page(monkeypatch) -> None:
    """French read as cp1257 (Baltic) can show a hair less mess than as cp1252 (0.004 against
    0.006): such differences are noise, and the code page Western text is written in wins."""
    import charset_normalizer

    from mleaudit.audit.run import decoding

    class Match:
        def __init__(self, encoding: str, chaos: float, coherence: float, text: str) -> None:
            self.encoding, self.chaos, self.coherence, self._text = encoding, chaos, coherence, text
            self.could_be_from_charset = [encoding]

        def __str__(self) -> str:
            return self._text

    data = "modèle écrit à Genève".encode("cp1252")
    matches = [Match("cp1257", 0.004, 0.643, data.decode("cp1257")),
               Match("cp1252", 0.0057, 0.684, data.decode("cp1252"))]
    monkeypatch.setattr(charset_normalizer, "from_bytes", lambda sample, **options: matches)
    assert decoding._detect_encoding(data) == "cp1252"
    # a clearly smaller mess still wins
    matches[0].chaos = 0.0
    matches[1].chaos = 0.05
    assert decoding._detect_encoding(data) == "cp1257"
