"""The all-pairs fingerprint path (token hashes without token records, vectorised winnowing)
against the plain definitions: Dolos's winnowing loop and the full tokenizer."""

from __future__ import annotations

import random

import numpy as np
import pytest

from mleaudit.audit.similarity.tokenize import tokenize_hashes, tokenize_text
from mleaudit.audit.similarity.tokenize.hashes import _closing_events
from mleaudit.audit.similarity.tokenize.kinds import _kind_table
from mleaudit.audit.similarity.winnow import fingerprint_tokens, hash_token
from mleaudit.audit.similarity.winnow.fingerprints import _kgram_fingerprints
from mleaudit.audit.similarity.winnow.selection import _winnow_reference, _winnow_selected

BROKEN = [
    "def f(x:\n    return x +\n",
    "for i in range(3)\n    print(i\n",
    "x = [1, 2,\ny = {'a': (3\n",
    "class A(:\n  def g(self): return 'é\n",
    "!pip install pandas\n%matplotlib inline\nimport pandas as pd\n",
]


def _sequences(rng: random.Random):
    """k-gram-like values: few distinct (many ties), periodic (a statement repeated), random."""
    for _ in range(150):
        n = rng.randrange(0, 300)
        yield [rng.randrange(3) for _ in range(n)]
        period = [rng.randrange(2**25) for _ in range(rng.randrange(1, 25))]
        yield [period[i % len(period)] for i in range(n)]
        yield [rng.randrange(2**25) for _ in range(n)]


@pytest.mark.parametrize("window", [2, 3, 5, 17, 40])
def test_vectorised_winnowing_equals_dolos_loop(window: int) -> None:
    rng = random.Random(window)
    for values in _sequences(rng):
        got = _winnow_selected(np.array(values, dtype=np.int64), window)
        assert got.dtype == np.int64 and got.tolist() == _winnow_reference(values, window), (window, values)


def test_values_that_do_not_pack_take_the_walk() -> None:
    rng = random.Random(9)
    for _ in range(100):
        values = [rng.choice([-3, 0, 2**31, 2**40, 7]) for _ in range(rng.randrange(1, 60))]
        assert _winnow_selected(np.array(values, dtype=np.int64), 4).tolist() == _winnow_reference(values, 4)
    assert _winnow_selected(np.zeros(0, dtype=np.int64), 17).tolist() == []
    assert _winnow_selected(np.array([5, 5, 1], dtype=np.int64), 1).tolist() == [0, 1, 2]


@pytest.mark.parametrize(("k", "window"), [(23, 17), (5, 4), (1, 1), (3, 1)])
def test_kgram_fingerprints_equal_the_fingerprint_records(k: int, window: int) -> None:
    rng = random.Random(k * window)
    for _ in range(40):
        tokens = [rng.choice(["(", ")", "call", "identifier", "argument_list"]) for _ in range(rng.randrange(0, 200))]
        token_hashes = np.array([hash_token(t) for t in tokens], dtype=np.int64)
        expected = [f.hash for f in fingerprint_tokens(tokens, k, window)]
        assert _kgram_fingerprints(token_hashes, k, window).tolist() == expected
    with pytest.raises(ValueError, match="k-gram length"):
        _kgram_fingerprints(np.zeros(3, dtype=np.int64), 0, 1)


@pytest.mark.parametrize("text", BROKEN)
def test_token_hashes_equal_the_tokenizer_on_broken_code(text: str) -> None:
    tokenized = tokenize_text(text, "python", "a.py")
    assert tokenize_hashes(text, "python").tolist() == tokenized.token_hashes.tolist()


def test_silent_nodes_with_children_drop_only_their_own_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    # Dolos writes nothing for a comment node but walks its children; Python comments are
    # leaves, so a silent kind with children is made up here to reach the general matching.
    table = _kind_table("python")
    silent = table.writes.copy()
    for name in ("call", "argument_list", "comment"):
        silent[list(table.names).index(name)] = False
    monkeypatch.setattr(table, "writes", silent)
    text = "print(len(x), f(g(1)))  # note\nvalue = h(k(2))\n" + BROKEN[0]
    tokenized = tokenize_text(text, "python", "a.py")
    assert "call" not in tokenized.tokens and "identifier" in tokenized.tokens
    assert tokenize_hashes(text, "python").tolist() == tokenized.token_hashes.tolist()


def test_closing_events_match_a_stack() -> None:
    rng = random.Random(4)
    for _ in range(500):
        events, stack, closes = [], [], {}
        for _ in range(rng.randrange(1, 80)):
            if stack and rng.random() < 0.5:
                closes[stack.pop()] = len(events)
                events.append(-1)
            else:
                stack.append(len(events))
                events.append(rng.randrange(6))
        while stack:
            closes[stack.pop()] = len(events)
            events.append(-1)
        opening = np.array(sorted(rng.sample(sorted(closes), rng.randrange(1, len(closes) + 1))), dtype=np.int64)
        got = _closing_events(np.array(events, dtype=np.int64), opening)
        assert got.tolist() == [closes[i] for i in opening.tolist()]
