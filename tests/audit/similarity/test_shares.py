"""The agent's shares with many references from one lookup (:class:`ShareIndex`) equal those of
one search per reference, and so do the detector's figures against a whole corpus."""

from __future__ import annotations

import random

import numpy as np
import pytest

from mleaudit.audit.similarity.detect import DetectionCorpus, profile_code
from mleaudit.audit.similarity.detect import detection_corpus as detection_corpus_module
from mleaudit.audit.similarity.detect.token_model import AgentQuery, ShareIndex

_LINES = ["df = pd.read_csv('train.csv')\n", "model.fit(X_train, y_train)\n", "x = np.log1p(df['{c}'])\n",
          "pred = model.predict_proba(X_val)[:, 1]\n", "print(roc_auc_score(y_val, pred))\n",
          "for i in range({n}):\n    total += i * {n}\n", "df['{c}'] = df['{c}'].fillna({n})\n",
          "params = dict(depth={n}, seed=2024, name='{c}')\n"]


def _code(rng: random.Random, lines: int) -> str:
    return "".join(rng.choice(_LINES).format(c=rng.choice("abcdef"), n=rng.randint(1, 9)) for _ in range(lines))


@pytest.mark.parametrize("seed", range(6))
def test_preloaded_shares_equal_one_search_per_reference(seed: int) -> None:
    rng = random.Random(seed)
    references = [profile_code(_code(rng, rng.randint(0, 30)), f"r{i}.py") for i in range(25)]
    agent = profile_code(_code(rng, rng.randint(1, 40)), "agent.py")
    index = ShareIndex(references)
    loaded, searched = AgentQuery(agent), AgentQuery(agent)
    ids = sorted(rng.sample(range(len(references)), 12))
    loaded.preload_shares(references, index, ids)
    for i in ids:
        grams, contexts = loaded.share(references[i])
        want_grams, want_contexts = searched.share(references[i])
        for got, want in zip((*grams, *contexts), (*want_grams, *want_contexts)):
            assert got.dtype == want.dtype and np.array_equal(got, want)


def test_evidence_against_the_corpus_equals_evidence_pair_by_pair(monkeypatch) -> None:
    rng = random.Random(11)
    base = _code(rng, 30)
    # forks of one notebook (near-duplicates, left out together) and unrelated notebooks
    references = [profile_code(base + _code(rng, 3), f"fork{i}.py") for i in range(4)]
    references += [profile_code(_code(rng, rng.randint(5, 40)), f"other{i}.py") for i in range(12)]
    corpus = DetectionCorpus(references)
    assert any(len(corpus.near_duplicates(i)) > 1 for i in range(len(references)))
    agent = profile_code(base[: len(base) // 2] + _code(rng, 10), "agent.py")
    # small blocks, so that one agent file meets several
    monkeypatch.setattr(detection_corpus_module, "_SHARE_CELLS", 3 * len(agent.ids))
    together = corpus.evidence_all(agent)
    one_by_one = [corpus.evidence(agent, i) for i in range(len(references))]
    assert together == one_by_one
    assert any(e.bits > 0 for e in together)


def test_evidence_of_code_met_again_comes_from_the_memo_and_equals_a_fresh_scoring(monkeypatch) -> None:
    rng = random.Random(5)
    references = [profile_code(_code(rng, rng.randint(5, 30)), f"r{i}.py") for i in range(10)]
    corpus = DetectionCorpus(references)
    texts = [_code(rng, 12) for _ in range(4)]
    first = [corpus.evidence_all(profile_code(text, "a.py")) for text in texts]
    scored = []
    real = DetectionCorpus._evidence_all
    monkeypatch.setattr(DetectionCorpus, "_evidence_all", lambda self, *a: scored.append(1) or real(self, *a))
    # the same code at another path, with other comments: its tokens are the same
    again = [corpus.evidence_all(profile_code("# another note\n" + text, "b.py")) for text in texts]
    assert again == first and not scored
    wanted = [i % 2 == 0 for i in range(len(references))]
    part = corpus.evidence_all(profile_code(texts[0], "a.py"), wanted)
    assert scored and part == [e if w else None for e, w in zip(first[0], wanted)]
    # other code is scored, and equals what a corpus without a memo finds
    other = profile_code(texts[0] + "extra = 1\n", "c.py")
    assert corpus.evidence_all(other) == DetectionCorpus(references).evidence_all(other)


def test_the_evidence_memo_holds_a_bounded_number_of_agent_files(monkeypatch) -> None:
    monkeypatch.setattr(detection_corpus_module, "_EVIDENCE_MEMO", 3)
    rng = random.Random(8)
    corpus = DetectionCorpus([profile_code(_code(rng, 20), "r.py")])
    for i in range(7):
        corpus.evidence_all(profile_code(f"value_{i} = {i}\n" + _code(rng, 5), "a.py"))
    assert len(corpus._memo) == 3
