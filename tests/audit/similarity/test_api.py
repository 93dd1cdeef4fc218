"""Public API: options validation, compare() roles, ordering, thresholds and serialisation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mleaudit.audit.errors import ConfigError
from mleaudit.audit.similarity import PairReport, SimilarityOptions, SimilarityReport, compare
from mleaudit.audit.units import CodeUnit

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "kernels" / "invariance"


def unit(name: str, path: str | None = None, language: str = "python") -> CodeUnit:
    return CodeUnit(path=path or name, language=language, text=(FIXTURES / name).read_text(encoding="utf-8"))


def test_default_options_are_dolos_defaults() -> None:
    options = SimilarityOptions()
    assert (options.kgram_length, options.kgrams_in_window) == (23, 17)
    assert options.max_doc_fraction is None and options.display_threshold == 0.0
    assert options.guarantee_tokens == 39


def test_options_report_every_error_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        SimilarityOptions(
            kgram_length=0,
            kgrams_in_window=True,
            max_doc_fraction=1.5,
            min_fragment_kgrams=2.5,
            display_threshold=-0.1,
        )
    assert str(info.value) == (
        "invalid similarity options:\n"
        "  kgram_length must be an integer >= 1, got 0\n"
        "  kgrams_in_window must be an integer >= 1, got True\n"
        "  max_doc_fraction must be None or a number in (0, 1], got 1.5\n"
        "  min_fragment_kgrams must be an integer >= 1, got 2.5\n"
        "  display_threshold must be a number in [0, 1], got -0.1"
    )


def test_options_are_frozen() -> None:
    with pytest.raises(AttributeError):
        SimilarityOptions().kgram_length = 5  # type: ignore[misc]


def test_options_from_thresholds_and_dict() -> None:
    assert SimilarityOptions.from_thresholds(noise_tokens=10, guarantee_tokens=20).kgrams_in_window == 11
    with pytest.raises(ConfigError, match=r"guarantee_tokens \(5\) must be an integer >= noise_tokens \(10\)"):
        SimilarityOptions.from_thresholds(noise_tokens=10, guarantee_tokens=5)
    options = SimilarityOptions.from_dict({"kgram_length": 15, "display_threshold": 0.25})
    assert SimilarityOptions.from_dict(options.to_dict()) == options
    with pytest.raises(ConfigError, match="unknown option\\(s\\) noise, window"):
        SimilarityOptions.from_dict({"window": 3, "noise": 2})


def test_compare_pairs_every_agent_with_every_reference_sorted_by_containment() -> None:
    agents = [unit("renamed.py", "code/a.py"), unit("unrelated.py", "code/b.py")]
    references = [unit("unrelated.py", "k/words.py"), unit("base.py", "k/titanic.py")]
    report = compare(agents, references)
    assert isinstance(report, SimilarityReport)
    assert len(report.pairs) == 4
    keys = [(p.agent_path, p.reference_path) for p in report.pairs]
    assert keys[:2] == [("code/a.py", "k/titanic.py"), ("code/b.py", "k/words.py")]
    containments = [p.agent_containment for p in report.pairs]
    assert containments == sorted(containments, reverse=True)
    assert report.pairs[0].reference_id == "k/titanic"


def test_ties_are_ordered_by_reference_path() -> None:
    agents = [unit("base.py", "code/a.py")]
    references = [unit("base.py", "z/copy.py"), unit("base.py", "a/copy.py")]
    report = compare(agents, references)
    assert [p.reference_path for p in report.pairs] == ["a/copy.py", "z/copy.py"]


def test_display_threshold_filters_on_either_containment() -> None:
    agents = [unit("renamed.py", "code/a.py"), unit("unrelated.py", "code/b.py")]
    report = compare(agents, [unit("base.py")], SimilarityOptions(display_threshold=0.5))
    assert [p.agent_path for p in report.pairs] == ["code/a.py"]
    # a small kernel wholly inside a larger agent file passes on reference containment
    big_agent = CodeUnit(path="code/big.py", language="python", text=unit("base.py").text + unit("unrelated.py").text)
    report = compare([big_agent], [unit("base.py")], SimilarityOptions(display_threshold=0.9))
    assert len(report.pairs) == 1
    assert report.pairs[0].reference_containment == 1.0 > report.pairs[0].agent_containment


def test_min_fragment_kgrams_hides_short_fragments_only() -> None:
    agents = [unit("reordered.py")]
    all_fragments = compare(agents, [unit("base.py")]).pairs[0]
    long_only = compare(agents, [unit("base.py")], SimilarityOptions(min_fragment_kgrams=10)).pairs[0]
    assert all(f.length >= 10 for f in long_only.fragments)
    assert len(long_only.fragments) < len(all_fragments.fragments)
    assert long_only.agent_containment == all_fragments.agent_containment


def test_languages_are_only_compared_with_their_own() -> None:
    bash = CodeUnit(path="logs/cmd.sh", language="bash", text="pip install -q timm && echo ok\n")
    rscript = CodeUnit(path="code/x.R", language="r", text="x <- 1\n")
    report = compare([bash, rscript, unit("base.py")], [unit("base.py")])
    assert [p.agent_path for p in report.pairs] == ["base.py"]
    assert [(s.path, s.reason) for s in report.skipped] == [("code/x.R", "no grammar for language 'r'")]


def test_report_to_dict_is_json_and_complete() -> None:
    report = compare([unit("reordered.py")], [unit("base.py")], boilerplate=[unit("starter.py")])
    data = json.loads(json.dumps(report.to_dict(), sort_keys=True))
    assert data["options"]["kgram_length"] == 23
    assert len(data["corpus_digest"]) == 64
    pair = data["pairs"][0]
    assert set(pair) >= {
        "agent_path", "reference_path", "reference_id", "similarity", "agent_containment",
        "reference_containment", "longest_fragment", "total_overlap", "agent_total", "reference_total",
        "agent_covered", "reference_covered", "fragments",
    }
    fragment = pair["fragments"][0]
    assert set(fragment["agent"]) == {"path", "start_byte", "end_byte", "start_line", "start_col", "end_line", "end_col"}


def test_corpus_digest_changes_with_references() -> None:
    one = compare([], [unit("base.py")]).corpus_digest
    assert one == compare([unit("renamed.py")], [unit("base.py")]).corpus_digest
    assert one != compare([], [unit("renamed.py", "base.py")]).corpus_digest
    assert one != compare([], [unit("base.py")], boilerplate=[unit("starter.py")]).corpus_digest


def test_pair_report_is_frozen() -> None:
    pair = compare([unit("base.py")], [unit("base.py")]).pairs[0]
    assert isinstance(pair, PairReport)
    with pytest.raises(AttributeError):
        pair.similarity = 0.5  # type: ignore[misc]
