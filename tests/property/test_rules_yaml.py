"""Rule files: ``mleaudit.audit.rules.loader.load_ruleset`` on a folder holding one generated rule.

``load_ruleset`` is documented to raise ``ConfigError`` (folder or schema) or ``RulesetError``
(a ``RuleError``, every problem of every file) and nothing else, whatever the file holds:
plausible rules with random matchers, messages and fields, YAML that is not a mapping, nested
cut short, or bytes that are not UTF-8 (hostile YAML on its own: ``test_configs.py``). A rule
that loads has the file's id. Loading never hangs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from mleaudit.audit.errors import AuditError, ConfigError, RuleError
from mleaudit.audit.rules.loader import load_ruleset
from tests.property import strategies as S
from tests.property.support import budget, call

CATEGORIES = ("llm-api", "manual-submission", "external-resource", "answers-access", "validation-probing",
              "label-leak", "sandbox-tamper", "plagiarism", "nope")
PREFIXES = ("llm", "sub", "ext", "leak", "env", "plag", "xyz")
safe_text = S.short_text.map(S.no_surrogates)

regex_text = st.one_of(
    st.sampled_from([r"(?P<url>https?://\S+)", r"(a+)+$", r"(?P<x>.*)", r"[", r"(?P<1>x)", r"(?P<a>x)(?P<a>y)", r"\b",
                     r"(?i)openai", r"x{1000}{1000}", r"(?<=a+)b", r"^", r"(?P<focus>pip) install", r"\\", "\x00"]),
    safe_text,
)
query_text = st.one_of(
    st.sampled_from([
        "(call function: (identifier) @fn)",
        "(call function: (attribute) @fn (#match? @fn \"openai\")) @call",
        "((string) @s (#eq? @s \"x\"))",
        "((identifier) @a (#not-any-of? @a \"b\"))",
        "(call) @c (#match? @c \"(a+)+$\")",
        "(command name: (command_name) @name)",
        "(nonexistent_node) @x",
        "((identifier) @_x (#match? @_x \"[\"))",
        "(call",
        "@x",
        "",
    ]),
    safe_text,
)


def _matcher(depth: int) -> st.SearchStrategy:
    leaves = st.one_of(
        st.builds(lambda q: {"query": q}, st.one_of(query_text, st.dictionaries(st.sampled_from(["python", "bash", "r"]),
                                                                               query_text, min_size=1, max_size=2))),
        st.builds(lambda r, flags, langs: {"regex": r, **({"regex_flags": flags} if flags else {}),
                                           **({"languages": langs} if langs else {})},
                  regex_text, st.lists(st.sampled_from(["ignorecase", "multiline", "dotall", "verbose"]), max_size=2, unique=True),
                  st.lists(st.sampled_from(["python", "bash", "r"]), max_size=2, unique=True)),
        st.builds(lambda r: {"strings": r}, regex_text),
        st.builds(lambda name, params: {"builtin": name, "params": params},
                  st.sampled_from(["submission_provenance", "nope", "sample_few_changes"]) | safe_text,
                  st.dictionaries(safe_text, st.one_of(st.integers(), safe_text, st.floats()), max_size=2)),
        st.builds(lambda v: {"terms": v}, S._obj(capture=st.sampled_from(["url", "x", "1"]),
                                                policy=st.sampled_from(["label_leak_columns", "nope"]),
                                                values=st.lists(safe_text, max_size=2))),
        S.yaml_leaf,
    )
    if depth <= 0:
        return leaves
    child = _matcher(depth - 1)
    return st.one_of(
        leaves,
        st.builds(lambda items: {"all": items}, st.lists(st.one_of(child, st.builds(lambda m: {"not": m}, child),
                                                                   st.builds(lambda m: {"inside": m}, child)), max_size=3)),
        st.builds(lambda items: {"any": items}, st.lists(child, max_size=3)),
    )


@st.composite
def rule_document(draw) -> tuple[str, object]:
    """(file stem, rule mapping): mostly well-formed, every field sometimes wrong."""
    prefix = draw(st.sampled_from(PREFIXES))
    stem = f"{prefix}-{draw(st.sampled_from(['x', 'a-b', 'call', 'UPPER', 'q_r']))}"
    rule = {
        "id": draw(st.one_of(st.just(stem), st.just(stem), safe_text, S.yaml_leaf)),
        "title": draw(st.one_of(st.just("A title"), safe_text, st.just("t" * 130))),
        "message": draw(st.one_of(st.sampled_from(["Calls `{fn}`.", "At {file}:{line}.", "{0}", "{}", "{url!r:>{w}}",
                                                   "{", "}", "{x.y[0]}", "plain"]), safe_text)),
        "severity": draw(st.sampled_from(["info", "low", "medium", "high", "critical", "HIGH", 3])),
        "confidence": draw(st.sampled_from(["low", "medium", "high", "certain"])),
        "category": draw(st.sampled_from(CATEGORIES)),
        "target": draw(st.one_of(st.sampled_from(["code", "log", "file", "run", "similarity", "nope"]),
                                 st.lists(st.sampled_from(["code", "log", "file", "run"]), max_size=3))),
        "metadata": draw(st.one_of(st.just({"rationale": "why"}),
                                   S._obj(rationale=safe_text, references=st.lists(safe_text, max_size=2),
                                          since=safe_text))),
    }
    optional = draw(S._obj(
        languages=st.lists(st.sampled_from(["python", "bash", "r", ""]), max_size=3),
        events=st.lists(st.sampled_from(["command", "code", "output", "message", "tool_call", "nope"]), max_size=3),
        paths=S._obj(include=st.lists(safe_text, max_size=2), exclude=st.lists(safe_text, max_size=2)),
        match=_matcher(2),
        when=st.dictionaries(st.sampled_from(["score", "agent_containment", "longest_fragment", "nope"]),
                             S._obj(gte=st.floats(), lt=st.integers(), eq=st.integers()), max_size=2),
        focus=st.sampled_from(["call", "fn", "url", "1x", "x"]),
        status=st.sampled_from(["stable", "experimental", "beta"]),
    ))
    rule.update(optional)
    if draw(st.integers(0, 5)) == 0:
        del rule[draw(st.sampled_from(sorted(rule)))]
    return stem, rule


@st.composite
def rule_file(draw) -> tuple[str, bytes]:
    stem, rule = draw(rule_document())
    return stem, draw(S.yaml_bytes(st.just(rule)))


@budget(60)
@given(rule_file())
def test_load_ruleset_raises_only_rule_or_config_error(case):
    stem, data = case
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "rules"
        (root / "llm-api").mkdir(parents=True)
        (root / "llm-api" / f"{stem}.yaml").write_bytes(data)
        ruleset, error = call(load_ruleset, [root], allowed=(RuleError, ConfigError), what="load_ruleset")
        if error is not None:
            assert isinstance(error, AuditError)
            return
    assert ruleset.ids() == (stem,), f"loaded {ruleset.ids()} from {stem}.yaml"
