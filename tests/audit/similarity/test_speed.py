"""Tokenizing and fingerprinting stay fast enough to audit many runs against a corpus."""

from __future__ import annotations

import time
from pathlib import Path

from mleaudit.audit.similarity import fingerprint_tokens, tokenize_text

BASE = Path(__file__).resolve().parents[2] / "fixtures" / "kernels" / "invariance" / "base.py"


def test_thousand_line_file_takes_well_under_a_second() -> None:
    base = BASE.read_text(encoding="utf-8")
    copies = []
    n = 0
    while sum(c.count("\n") for c in copies) < 1000:
        # distinct names per copy so the text is new to the parse cache and realistic
        copies.append(base.replace("def ", f"def v{n}_").replace("(frame", f"(frame{n}"))
        n += 1
    text = "".join(copies)
    assert text.count("\n") >= 1000
    start = time.perf_counter()
    tokenized = tokenize_text(text, "python", "big.py")
    fingerprints = fingerprint_tokens(tokenized.tokens, 23, 17)
    elapsed = time.perf_counter() - start
    assert len(tokenized.tokens) > 20000 and fingerprints
    assert elapsed < 1.0, f"tokenize + fingerprint of {text.count(chr(10))} lines took {elapsed:.2f} s"
