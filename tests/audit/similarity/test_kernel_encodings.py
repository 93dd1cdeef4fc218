"""Kernels and agent files in any text encoding: read as the audit reads run files, encoding recorded.

Old Kaggle kernels saved on Windows are in cp1252 or GBK, some editors write UTF-16 with a
byte-order mark: copies of them must be found like copies of UTF-8 kernels. UTF-8 itself is
read exactly as Dolos reads it (byte-order mark and CRLF kept). Bytes that are no text in any
encoding are skipped with a reason that says so; a few damaged bytes in a text are replaced and
counted in the recorded note, never dropped silently.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from mleaudit.audit.similarity import compare, load_reference_corpus
from mleaudit.audit.similarity.cli import similarity
from mleaudit.audit.similarity.corpus import TextDecoding, decode_kernel_bytes, decode_reference_recorded
from mleaudit.audit.units import CodeUnit

#: A kernel with French comments and strings (cp1252 has every character) ...
FRENCH = """# Prévision des ventes : modèle de base, données nettoyées
import pandas as pd
from sklearn.linear_model import Ridge

ventes = pd.read_csv('../input/ventes.csv')  # fichier d'entraînement
ventes['catégorie'] = ventes['catégorie'].fillna('inconnue')
for colonne in ['prix', 'quantité']:
    ventes[colonne] = ventes[colonne].clip(lower=0)
    print(f"{colonne} : moyenne {ventes[colonne].mean():.2f} €")
modele = Ridge(alpha=1.0)
modele.fit(ventes[['prix', 'quantité']], ventes['total'])
resultat = pd.DataFrame({'id': ventes['id'], 'prévision': modele.predict(ventes[['prix', 'quantité']])})
resultat.to_csv('soumission.csv', index=False)
"""

#: ... and one with Chinese ones (GBK has every character).
CHINESE = """# 销售预测：基线模型，数据清洗
import pandas as pd
from sklearn.linear_model import Ridge

sales = pd.read_csv('../input/sales.csv')  # 训练数据
sales['category'] = sales['category'].fillna('未知')
for column in ['price', 'quantity']:
    sales[column] = sales[column].clip(lower=0)
    print(f"{column}：平均值 {sales[column].mean():.2f} 元")
model = Ridge(alpha=1.0)
model.fit(sales[['price', 'quantity']], sales['total'])
result = pd.DataFrame({'id': sales['id'], 'forecast': model.predict(sales[['price', 'quantity']])})
result.to_csv('submission.csv', index=False)
"""


def _notebook(source: str) -> str:
    cells = [{"cell_type": "code", "metadata": {}, "source": part, "outputs": [], "execution_count": None}
             for part in source.split("\n\n")]
    metadata = {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}
    return json.dumps({"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 4}, ensure_ascii=False)


# -- decoding ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "encoding"), [
    (FRENCH.encode("utf-8"), "utf-8"),
    (FRENCH.encode("cp1252"), "cp1252"),
    (CHINESE.encode("gbk"), "gb18030"),  # GBK is read with its superset
    (FRENCH.encode("utf-16"), "utf-16"),  # with a byte-order mark (little-endian here)
    (CHINESE.encode("utf-16-be"), None),  # no byte-order mark: NUL bytes, not text, in code
    ("\ufeff".encode("utf-16-be") + CHINESE.encode("utf-16-be"), "utf-16"),
    (CHINESE.encode("utf-32"), "utf-32"),
], ids=["utf-8", "cp1252", "gbk", "utf-16-le-bom", "utf-16-be-no-bom", "utf-16-be-bom", "utf-32"])
def test_scripts_are_read_in_their_encoding(data: bytes, encoding: str | None) -> None:
    decoded = decode_kernel_bytes(data, "k.py")
    if encoding is None:
        assert decoded.reason == "binary file (NUL byte in the first 8 kB)"
        return
    text, how = decoded
    assert text in (FRENCH, CHINESE)
    assert how == TextDecoding("k.py", encoding, how.note)
    assert (how.note is None) == (encoding == "utf-8")
    if encoding in ("cp1252", "gb18030"):
        assert how.note == f"not valid UTF-8: decoded as {encoding} (detected)"


def test_utf8_is_read_as_dolos_reads_it_bom_and_crlf_kept() -> None:
    data = b"\xef\xbb\xbf" + FRENCH.replace("\n", "\r\n").encode("utf-8")
    text, how = decode_kernel_bytes(data, "k.py")
    assert text == "\ufeff" + FRENCH.replace("\n", "\r\n")
    assert how == TextDecoding("k.py", "utf-8-sig", None)


def test_notebooks_in_utf16_without_bom_are_read() -> None:
    unit, how = decode_reference_recorded(_notebook(CHINESE).encode("utf-16-le"), "k.ipynb")
    assert unit.source == "notebook" and "销售预测" in unit.text
    assert how.encoding == "utf-16-le" and "without a byte-order mark" in how.note


def test_declared_source_encoding_is_honoured_as_python_does() -> None:
    data = b"# -*- coding: latin-1 -*-\n" + FRENCH.encode("latin-1", errors="replace")
    text, how = decode_kernel_bytes(data, "k.py")
    assert how.encoding == "latin-1" and "declared source encoding" in how.note
    assert "Prévision" in text
    bad = decode_kernel_bytes(b"# coding: no-such-codec\nx = '\xe9'\n", "k.py")
    assert bad.reason == "declares the unknown source encoding 'no-such-codec': not read"


def test_undecodable_bytes_have_a_recorded_reason() -> None:
    # junk: no encoding makes text of it, and it is said why
    junk = decode_kernel_bytes(bytes(range(0x80, 0x100)) * 8, "junk.py")
    assert junk.reason.startswith("not text in any encoding (no encoding detected; as UTF-8, ")
    assert "replaced with U+FFFD, the first at byte 0" in junk.reason
    # UTF-8 with a damaged byte is still read; the note counts the replaced bytes
    damaged = FRENCH.encode("utf-8").replace("€".encode("utf-8"), b"\xe2\x82")
    text, how = decode_kernel_bytes(damaged, "k.py")
    assert "\ufffd" in text and how.encoding == "utf-8"
    assert how.note.startswith("not valid UTF-8: 1 byte(s) replaced with U+FFFD, the first at byte ")
    # NUL bytes stay binary, as before
    assert decode_kernel_bytes(b"x = 1\x00\n", "b.py").reason == "binary file (NUL byte in the first 8 kB)"


# -- corpus and copy detection -------------------------------------------------------------------


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    root = tmp_path / "kernels"
    (root / "windows").mkdir(parents=True)
    (root / "windows" / "ventes-cp1252.py").write_bytes(FRENCH.replace("\n", "\r\n").encode("cp1252"))
    (root / "windows" / "sales-gbk.ipynb").write_bytes(_notebook(CHINESE).encode("gbk"))
    (root / "sales-utf16.py").write_bytes(CHINESE.encode("utf-16"))
    (root / "ventes-bom.py").write_bytes(b"\xef\xbb\xbf" + FRENCH.encode("utf-8"))
    (root / "junk.py").write_bytes(bytes(range(0x80, 0x100)) * 8)
    return root


def test_corpus_reads_every_encoding_and_records_it(corpus_dir: Path) -> None:
    corpus = load_reference_corpus(corpus_dir)
    assert corpus.encodings == {
        "sales-utf16.py": "utf-16",
        "ventes-bom.py": "utf-8-sig",
        "windows/sales-gbk.ipynb": "gb18030",
        "windows/ventes-cp1252.py": "cp1252",
    }
    assert [d.path for d in corpus.decodings] == [u.path for u in corpus.units]
    assert {d.path: d.note for d in corpus.decodings}["windows/ventes-cp1252.py"] == (
        "not valid UTF-8: decoded as cp1252 (detected)")
    (skipped,) = corpus.skipped
    assert skipped.path == "junk.py" and skipped.reason.startswith("not text in any encoding")
    units, skipped_too = corpus  # still unpacks as a pair
    assert units == corpus.units and skipped_too == corpus.skipped
    assert corpus.decodings[0].to_dict() == {"path": "sales-utf16.py", "encoding": "utf-16",
                                             "note": "UTF-16 text (decoded as such)"}


def test_copies_of_windows_saved_kernels_are_found(corpus_dir: Path) -> None:
    agents = [CodeUnit(path="code/ventes.py", language="python", text=FRENCH),
              CodeUnit(path="code/sales.py", language="python", text=CHINESE)]
    report = compare(agents, load_reference_corpus(corpus_dir))
    best = {}
    for pair in report.pairs:
        best.setdefault(pair.agent_path, {})[pair.reference_path] = pair.agent_containment
    assert best["code/ventes.py"]["windows/ventes-cp1252.py"] == pytest.approx(1.0)
    assert best["code/sales.py"]["windows/sales-gbk.ipynb"] > 0.9  # cells joined by blank lines
    assert best["code/sales.py"]["sales-utf16.py"] == pytest.approx(1.0)


def test_cli_pairs_and_compare_read_other_encodings(corpus_dir: Path, tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(FRENCH, encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(similarity, ["pairs", "--format", "json", str(agent),
                                        str(corpus_dir / "windows" / "ventes-cp1252.py")])
    assert result.exit_code == 0, result.output
    (pair,) = json.loads(result.stdout)["pairs"]
    assert pair["similarity"] == pytest.approx(1.0)
    assert "as cp1252: not valid UTF-8: decoded as cp1252 (detected)" in result.stderr
    result = runner.invoke(similarity, ["compare", "--format", "json", str(agent), "--reference", str(corpus_dir)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    flagged = {p["reference"] for p in data["pairs"] if p["flagged"]}
    assert {"windows/ventes-cp1252.py", "ventes-bom.py"} <= flagged
    assert [s["path"] for s in data["skipped"]] == ["junk.py"]


# -- the encoding recorded in every report ---------------------------------------------------------


def test_comparison_report_records_how_listed_kernels_were_read(corpus_dir: Path) -> None:
    agents = [CodeUnit(path="code/ventes.py", language="python", text=FRENCH)]
    report = compare(agents, load_reference_corpus(corpus_dir))
    listed = {p.reference_path for p in report.pairs}
    assert "windows/ventes-cp1252.py" in listed
    recorded = {d.path: d for d in report.decodings}
    # every listed kernel that was not plain UTF-8, and nothing else (a BOM is UTF-8)
    assert set(recorded) == {p for p in listed if p in {"windows/ventes-cp1252.py", "windows/sales-gbk.ipynb",
                                                         "sales-utf16.py"}}
    assert recorded["windows/ventes-cp1252.py"].encoding == "cp1252"
    assert [d.path for d in report.decodings] == sorted(recorded)
    assert report.to_dict()["decodings"][0] == report.decodings[0].to_dict()


def test_index_records_the_encoding_as_brute_force_does(corpus_dir: Path, tmp_path: Path) -> None:
    from mleaudit.audit.similarity.index import build_corpus_index, load_corpus_index

    build_corpus_index([corpus_dir], tmp_path / "k.index")
    agents = [CodeUnit(path="code/ventes.py", language="python", text=FRENCH),
              CodeUnit(path="code/sales.py", language="python", text=CHINESE)]
    brute = compare(agents, load_reference_corpus(corpus_dir))
    index = load_corpus_index(tmp_path / "k.index")
    try:
        through_index = index.compare(agents, top=None)
    finally:
        index.close()
    assert {p.reference_path for p in through_index.pairs} == {p.reference_path for p in brute.pairs}
    assert through_index.decodings == brute.decodings
    assert {d.encoding for d in through_index.decodings} == {"cp1252", "gb18030", "utf-16"}


def test_cli_json_records_agent_and_kernel_encodings(corpus_dir: Path, tmp_path: Path) -> None:
    from mleaudit.audit.similarity.index import build_corpus_index

    agent = tmp_path / "agent.py"
    agent.write_bytes(FRENCH.encode("cp1252"))
    runner = CliRunner()
    result = runner.invoke(similarity, ["pairs", "--format", "json", str(agent), str(corpus_dir / "sales-utf16.py")])
    assert result.exit_code == 0, result.output
    assert {d["path"]: d["encoding"] for d in json.loads(result.stdout)["decodings"]} == {
        str(agent): "cp1252", str(corpus_dir / "sales-utf16.py"): "utf-16"}
    build_corpus_index([corpus_dir], tmp_path / "k.index")
    documents = []
    for source in (["--reference", str(corpus_dir)], ["--index", str(tmp_path / "k.index")]):
        result = runner.invoke(similarity, ["compare", "--format", "json", str(agent), *source])
        assert result.exit_code == 0, result.output
        documents.append(json.loads(result.stdout))
    for data in documents:
        encodings = {d["path"]: d["encoding"] for d in data["decodings"]}
        assert encodings[str(agent)] == "cp1252" and encodings["windows/ventes-cp1252.py"] == "cp1252"
        assert set(encodings) - {str(agent)} <= {p["reference"] for p in data["pairs"]}
    assert documents[0]["decodings"] == documents[1]["decodings"]
    # the table says it on stderr
    result = runner.invoke(similarity, ["compare", str(agent), "--reference", str(corpus_dir)])
    assert "read reference windows/ventes-cp1252.py as cp1252: not valid UTF-8" in result.stderr


def test_audit_report_records_how_listed_kernels_were_read(corpus_dir: Path, tmp_path: Path) -> None:
    from mleaudit.audit.cli import main
    from mleaudit.audit.schemas import check_report

    run = tmp_path / "run"
    (run / "submission").mkdir(parents=True)
    (run / "code").mkdir()
    (run / "code" / "solution.py").write_text(FRENCH, encoding="utf-8")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["audit", str(run), "--corpus", str(corpus_dir), "--no-grade",
                                       "--format", "json", "-o", str(out)])
    assert result.exit_code in (0, 1, 3), result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    check_report(report)
    similarity_part = report["similarity"]
    listed = {p["reference_path"] for p in similarity_part["pairs"]}
    recorded = {d["path"]: d["encoding"] for d in similarity_part["decodings"]}
    assert recorded["windows/ventes-cp1252.py"] == "cp1252"
    assert set(recorded) <= listed


def test_names_and_notes_never_drive_the_terminal(tmp_path: Path) -> None:
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "evil\x1b]0;pwn\x07\u202e.py").write_bytes(FRENCH.encode("cp1252"))
    result = CliRunner().invoke(similarity, ["compare", str(folder), "--reference", str(folder)])
    assert result.exit_code == 0, result.output
    for text in (result.stdout, result.stderr):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "evil\\x1b]0;pwn\\x07\\u202e.py as cp1252" in result.stderr


def test_a_forged_encoding_in_an_index_record_is_refused() -> None:
    from mleaudit.audit.similarity.index import CorpusIndexError
    from mleaudit.audit.similarity.index.blobs import _decode_record, _encode_record

    def record(encoding: str, note: str) -> bytes:
        return _encode_record(language="python", source="file", hashes=np.zeros(0, np.int64),
                              kgram_starts=np.zeros(0, np.int64), span_starts=np.zeros(0, np.int64),
                              span_ends=np.zeros(0, np.int64), lines=[0], cells=(), token_starts=None,
                              token_ends=None, decoding=TextDecoding("k.py", encoding, note))

    assert _decode_record(record("cp1252", "decoded as cp1252"), "k.py", 23).decoding == ("cp1252", "decoded as cp1252")
    for encoding, note in (("\x1b[2J", "x"), ("a" * 100, "x"), ("cp1252", "n" * 10_000)):
        with pytest.raises(CorpusIndexError, match="corrupt record"):
            _decode_record(record(encoding, note), "k.py", 23)


def test_decodings_name_a_file_as_the_pairs_do_even_when_its_name_is_not_utf8(tmp_path: Path) -> None:
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "other.py").write_text(FRENCH, encoding="utf-8")
    os.makedirs(os.fsencode(folder), exist_ok=True)
    with open(os.fsencode(folder) + b"/bad\xff\xfename.py", "wb") as stream:
        stream.write(FRENCH.encode("cp1252"))
    result = CliRunner().invoke(similarity, ["pairs", "--format", "json", str(folder)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (decoding,) = data["decodings"]
    assert decoding["encoding"] == "cp1252"
    assert decoding["path"] in {p["left"] for p in data["pairs"]} | {p["right"] for p in data["pairs"]}
