"""Load a ruleset: find the rules folder, read every ``<id>.yaml``, validate, compile, digest.

Validation has two stages, and every problem of every file is collected before one
:class:`RulesetError` (a :class:`~mleaudit.audit.errors.RuleError`) is raised, the way Dolos validates its
options:

1. structure: ``rules/schema.json`` (JSON Schema draft 2020-12) checks keys, types and enums;
2. meaning: ``id`` equals the file stem, ids are unique, the id prefix fits the category,
   languages are known to :mod:`mleaudit.audit.parsing`, queries and regexes compile, ``focus`` names a
   capture, message placeholders name a capture (or a value the target provides), built-in
   checks exist and run only on ``run`` targets, ``terms`` filters name a known policy list.

Rule files are read with ``yaml.safe_load``. ``Ruleset.digest`` is a sha256 over the rule files
in sorted order, recorded in reports so that a report can be reproduced with the same rules.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import jsonschema
import yaml

from mleaudit import audit
from mleaudit.audit.errors import ConfigError, RuleError
from mleaudit.audit.parsing import LANGUAGES
from mleaudit.audit.rules.matchers import Matcher, compile_matcher, leaf_specs
from mleaudit.audit.rules.cache import RuleDocumentCache, rule_cache_root
from mleaudit.audit.rules.spec import (
    PAIR_FIELDS,
    BuiltinSpec,
    QuerySpec,
    RuleSpec,
    Target,
)
from mleaudit.grading import untrusted_yaml

__all__ = [
    "CATEGORY_PREFIXES",
    "ID_PREFIXES",
    "RULES_ENV",
    "CompiledRule",
    "Ruleset",
    "RuleProblem",
    "RulesetError",
    "find_rules_root",
    "iter_rule_files",
    "load_rule_schema",
    "load_ruleset",
    "read_yaml",
]

logger = logging.getLogger(__name__)

#: Environment variable that names the rules folder when no option is given.
RULES_ENV = "MLEAUDIT_RULES"
#: Allowed rule id prefixes.
ID_PREFIXES = ("leak", "ext", "llm", "sub", "plag", "env", "grade")
#: Category -> id prefixes that fit it (``sub-equals-answers`` is answers access seen in the
#: submission, so ``answers-access`` accepts ``sub-`` too).
CATEGORY_PREFIXES = {
    "answers-access": ("leak", "sub"),
    "label-leak": ("leak",),
    "external-resource": ("ext",),
    "llm-api": ("llm",),
    "manual-submission": ("sub",),
    "validation-probing": ("sub", "env"),
    "sandbox-tamper": ("env",),
    "plagiarism": ("plag",),
    "grading": ("grade",),
}
#: Template fields every text match provides besides its captures.
TEXT_FIELDS = ("file", "line")
_TEST_SUFFIX = ".test.yaml"


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleProblem:
    """One problem found while loading: which rule, which file, what is wrong."""

    rule_id: str
    path: str
    cause: str

    def __str__(self) -> str:
        return f"{self.rule_id} ({self.path}): {self.cause}"


class RulesetError(RuleError):
    """All problems of a ruleset, raised together; ``problems`` lists them one by one."""

    def __init__(self, problems: Sequence[RuleProblem]):
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} problem(s) in the ruleset:\n{lines}")


@dataclass(frozen=True, slots=True, kw_only=True)
class CompiledRule:
    """A rule spec with its compiled matcher (``None`` for similarity rules)."""

    spec: RuleSpec
    matcher: Matcher | None

    @property
    def id(self) -> str:
        return self.spec.id


@dataclass(frozen=True, slots=True, kw_only=True)
class Ruleset:
    """Compiled rules sorted by id, with the digest of the files they came from.

    Attributes
    ----------
    rules : tuple of CompiledRule
        Sorted by rule id.
    digest : str
        sha256 (hex) over the rule files' relative paths and bytes, in sorted order.
    roots : tuple of Path
        The folders the rules were read from.
    """

    rules: tuple[CompiledRule, ...]
    digest: str
    roots: tuple[Path, ...] = ()

    def __len__(self) -> int:
        return len(self.rules)

    def __iter__(self) -> Iterator[CompiledRule]:
        return iter(self.rules)

    def ids(self) -> tuple[str, ...]:
        """The rule ids, sorted."""
        return tuple(r.id for r in self.rules)

    def get(self, rule_id: str) -> CompiledRule:
        """The rule with id ``rule_id``.

        Raises
        ------
        KeyError
            If there is none.
        """
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(f"no rule {rule_id!r} in the ruleset")

    def select(self, rule_ids: Iterable[str]) -> "Ruleset":
        """A ruleset with only ``rule_ids`` (same digest: it names the files, not the selection)."""
        wanted = set(rule_ids)
        return Ruleset(rules=tuple(r for r in self.rules if r.id in wanted), digest=self.digest, roots=self.roots)


def find_rules_root(option: str | os.PathLike[str] | None = None) -> Path:
    """The rules folder: ``option``, else ``$MLEAUDIT_RULES``, else ``rules/`` of the checkout.

    Parameters
    ----------
    option : path-like, optional
        The ``--rules`` option value.

    Returns
    -------
    Path
        An existing directory.

    Raises
    ------
    ConfigError
        If the chosen folder does not exist, or none of the three gives one; the message names
        all three.
    """
    default = Path(audit.__file__).resolve().parents[1] / "rules"
    if option is not None:
        path = Path(option)
        if not path.is_dir():
            raise ConfigError(f"--rules {path}: not a directory")
        return path
    env = os.environ.get(RULES_ENV)
    if env:
        path = Path(env)
        if not path.is_dir():
            raise ConfigError(f"{RULES_ENV}={env}: not a directory")
        return path
    if default.is_dir():
        return default
    raise ConfigError(
        f"no rules folder found: pass --rules DIR, set {RULES_ENV}, or use a checkout with {default}"
    )


def read_yaml(path: Path) -> object:
    """Parse a YAML file as plain data, within bounds (:func:`mleaudit.grading.untrusted_yaml.safe_load`).

    Rule folders may come from anywhere (``--rules``), so a file nested thousands deep, an alias
    bomb or a key written twice is a problem of that file, never a crash or a silent override.

    Raises
    ------
    OSError
        If the file cannot be read.
    UnicodeDecodeError
        If it is not UTF-8 text.
    yaml.YAMLError
        If it is not valid YAML or is outside the bounds.
    """
    return _yaml_of_bytes(path.read_bytes())


def _yaml_of_bytes(raw: bytes) -> object:
    """:func:`read_yaml` of a file's bytes (decoded as ``read_text`` does, universal newlines)."""
    return untrusted_yaml.safe_load(raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n"))


def iter_rule_files(root: Path) -> list[Path]:
    """Rule files under ``root`` (``**/*.yaml`` except ``*.test.yaml`` and hidden folders), sorted."""
    files = []
    for path in root.rglob("*.yaml"):
        rel = path.relative_to(root)
        if path.name.endswith(_TEST_SUFFIX) or any(part.startswith(".") for part in rel.parts):
            continue
        if path.is_file():
            files.append(path)
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def load_rule_schema(path: Path | None = None) -> dict:
    """The JSON Schema for rule files (default: ``schema.json`` of the checkout's rules folder).

    Raises
    ------
    ConfigError
        If the schema file is missing, is not valid JSON or is not a valid JSON Schema.
    """
    path = path or Path(audit.__file__).resolve().parents[1] / "rules" / "schema.json"
    try:
        raw = path.read_bytes()
        schema = json.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"rule schema {path}: {exc}") from None
    digest = hashlib.sha256(raw).digest()
    if digest not in _VALID_SCHEMAS:  # checking the schema against the meta-schema costs ~20 ms
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ConfigError(f"rule schema {path} is not a valid JSON Schema: {exc.message}") from None
        _VALID_SCHEMAS.add(digest)
    return schema


#: Digests of the schema files found valid JSON Schemas in this process (a batch worker loads the
#: rules once per run).
_VALID_SCHEMAS: set[bytes] = set()


def _schema_problems(data: object, validator: jsonschema.Draft202012Validator) -> list[str]:
    problems = []
    for error in sorted(validator.iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.message)):
        best = jsonschema.exceptions.best_match(error.context) if error.context else error
        where = best.json_path if best.json_path != "$" else error.json_path
        problems.append(f"schema: {where}: {best.message}")
    return problems


def _placeholders(template: str) -> list[str]:
    names = []
    for _, field_name, _, _ in string.Formatter().parse(template):
        if field_name is None:
            continue
        base = field_name.split(".", 1)[0].split("[", 1)[0]
        names.append(base)
    return names


def _semantic_problems(spec: RuleSpec, matcher: Matcher | None) -> list[str]:
    problems = []
    prefix = spec.id.split("-", 1)[0]
    if prefix not in ID_PREFIXES:
        problems.append(f"id prefix {prefix!r}- is not one of {', '.join(p + '-' for p in ID_PREFIXES)}")
    elif prefix not in CATEGORY_PREFIXES.get(spec.category, (prefix,)):
        allowed = ", ".join(p + "-" for p in CATEGORY_PREFIXES[spec.category])
        problems.append(f"id prefix {prefix!r}- does not fit category {spec.category!r} (expected {allowed})")
    unknown = [lang for lang in spec.languages if lang not in LANGUAGES]
    if unknown:
        problems.append(f"unknown language(s) {unknown} (known: {', '.join(sorted(LANGUAGES))})")

    targets = set(spec.targets)
    alone = targets & {Target.RUN, Target.SIMILARITY}
    if alone and len(targets) > 1:
        problems.append("targets `run` and `similarity` cannot be combined with other targets")

    leaves = leaf_specs(spec.match) if spec.match is not None else []
    builtins = [leaf for leaf in leaves if isinstance(leaf, BuiltinSpec)]
    if Target.RUN in targets:
        if any(not isinstance(leaf, BuiltinSpec) for leaf in leaves):
            problems.append("a `run` rule may only use `builtin` matchers")
    elif builtins:
        problems.append("`builtin` matchers are only valid in `run` rules")
    if Target.SIMILARITY in targets:
        if spec.when is None:
            problems.append("a `similarity` rule needs `when`")
    elif spec.match is None:
        problems.append("this rule needs `match`")
    for leaf in leaves:
        if isinstance(leaf, QuerySpec):
            for language, _ in leaf.queries:
                if spec.languages and language not in spec.languages and Target.LOG not in targets:
                    problems.append(f"query for {language!r}, which is not in the rule's languages {list(spec.languages)}")

    if Target.SIMILARITY in targets:
        available = set(PAIR_FIELDS)
    elif Target.RUN in targets:
        from mleaudit.audit.rules.registry import CHECKS  # filled by compiling the rule's matcher

        available = {"file", "line"}
        for leaf in builtins:
            if leaf.name in CHECKS:
                available.update(CHECKS[leaf.name].values)
    else:
        available = set(TEXT_FIELDS)
        if matcher is not None:
            available |= set(matcher.capture_names) | set(getattr(matcher, "value_names", ()))
    if spec.focus is not None and Target.SIMILARITY not in targets and Target.RUN not in targets:
        if matcher is not None and spec.focus not in matcher.capture_names:
            names = ", ".join(sorted(matcher.capture_names)) or "none"
            problems.append(f"focus {spec.focus!r} is not a capture of the matcher (captures: {names})")
    try:
        placeholders = _placeholders(spec.message)
    except ValueError as exc:
        problems.append(f"message template is malformed: {exc}")
        placeholders = []
    if matcher is not None or Target.SIMILARITY in targets:
        missing = sorted({p for p in placeholders if p not in available})
        if "" in missing or any(p.isdigit() for p in missing):
            problems.append("message placeholders must be named ({name}), not positional")
            missing = [p for p in missing if p and not p.isdigit()]
        if missing:
            problems.append(
                f"message placeholder(s) {missing} name no capture or field (available: {', '.join(sorted(available))})"
            )
    return problems


def _digest(files: list[tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for rel, data in sorted(files):
        h.update(rel.encode("utf-8"))
        h.update(b"\0")
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


#: Rulesets this process compiled, by a SHA-256 of the schema and of every rule file's path and
#: bytes: a batch worker audits many runs with one ruleset, and compiling its tree-sitter
#: queries costs about a second. Any changed, added or removed file gives another key.
_COMPILED: dict[str, "Ruleset"] = {}
_MAX_COMPILED = 8  # 0: compile on every call


def load_ruleset(
    dirs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    *,
    schema_path: Path | None = None,
) -> Ruleset:
    """Load, validate and compile every rule under ``dirs``.

    Parameters
    ----------
    dirs : path-like or sequence of path-like, optional
        Rules folders (default: :func:`find_rules_root`). Each is walked for ``**/*.yaml``
        except ``*.test.yaml``.
    schema_path : Path, optional
        The JSON Schema (default: ``schema.json`` in the first folder that has one, else the
        checkout's ``rules/schema.json``).

    Returns
    -------
    Ruleset
        Rules sorted by id, with ``digest``.

    Raises
    ------
    ConfigError
        If a folder does not exist or the schema cannot be read.
    RulesetError
        If any rule file has any problem; the message lists every problem as
        ``<rule id> (<file>): <cause>``.
    """
    if dirs is None:
        roots = [find_rules_root()]
    elif isinstance(dirs, (str, os.PathLike)):
        roots = [Path(dirs)]
    else:
        roots = [Path(d) for d in dirs]
    for root in roots:
        if not root.is_dir():
            raise ConfigError(f"rules folder {root} is not a directory")
    if schema_path is None:
        schema_path = next((r / "schema.json" for r in roots if (r / "schema.json").is_file()), None)
    schema = load_rule_schema(schema_path)
    schema_bytes = json.dumps(schema, sort_keys=True).encode("utf-8")
    files: list[tuple[Path, Path, bytes | OSError]] = []
    fingerprint = hashlib.sha256(schema_bytes)
    for root in roots:
        for path in iter_rule_files(root):
            try:
                raw: bytes | OSError = path.read_bytes()
            except OSError as exc:
                raw = exc
            files.append((root, path, raw))
            # the path as named (its stem is the rule id) and as resolved (a link's target)
            fingerprint.update(f"\0{path}\0{path.resolve()}\0{root}\0".encode("utf-8", "surrogateescape"))
            fingerprint.update(hashlib.sha256(raw).digest() if isinstance(raw, bytes) else repr(raw).encode())
    key = fingerprint.hexdigest()
    known_ruleset = _COMPILED.get(key)
    if known_ruleset is not None:
        return known_ruleset
    validator = jsonschema.Draft202012Validator(schema)
    # documents read before, by their bytes (the YAML parse is most of the load)
    documents = RuleDocumentCache(rule_cache_root(), schema_bytes)

    problems: list[RuleProblem] = []
    compiled: list[CompiledRule] = []
    first_seen: dict[str, str] = {}
    digest_inputs: list[tuple[str, bytes]] = []
    for root, path, read in files:
        rel = path.relative_to(root).as_posix()
        shown = str(path)
        stem = path.name[: -len(".yaml")]
        try:
            if isinstance(read, OSError):
                raise read
            raw = read
            digest_inputs.append((rel, raw))
            data = documents.get(raw)
            known = data is not None
            if not known:
                data = _yaml_of_bytes(raw)
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            problems.append(RuleProblem(rule_id=stem, path=shown, cause=f"cannot read YAML: {exc}"))
            continue
        rule_id = str(data.get("id", stem)) if isinstance(data, dict) else stem
        # checked again on a hit: an entry of the cache never stands in for the schema
        schema_errors = _schema_problems(data, validator)
        if schema_errors:
            problems.extend(RuleProblem(rule_id=rule_id, path=shown, cause=c) for c in schema_errors)
            continue
        if not known:
            documents.put(raw, data)
        if rule_id != stem:
            problems.append(RuleProblem(rule_id=rule_id, path=shown, cause=f"id {rule_id!r} differs from the file stem {stem!r}"))
        if rule_id in first_seen:
            problems.append(
                RuleProblem(rule_id=rule_id, path=shown, cause=f"duplicate id, first defined in {first_seen[rule_id]}")
            )
        else:
            first_seen[rule_id] = shown
        try:
            spec = RuleSpec.from_dict(data, source_path=path)
        except RuleError as exc:
            problems.append(RuleProblem(rule_id=rule_id, path=shown, cause=str(exc)))
            continue
        matcher_problems: list[str] = []
        matcher = None
        if spec.match is not None:
            matcher = compile_matcher(spec.match, focus=spec.focus, problems=matcher_problems)
        causes = matcher_problems + _semantic_problems(spec, matcher)
        if causes:
            problems.extend(RuleProblem(rule_id=rule_id, path=shown, cause=c) for c in causes)
            continue
        compiled.append(CompiledRule(spec=spec, matcher=matcher))
    if problems:
        raise RulesetError(problems)
    compiled.sort(key=lambda r: r.id)
    logger.debug("loaded %d rules from %s", len(compiled), ", ".join(map(str, roots)))
    ruleset = Ruleset(rules=tuple(compiled), digest=_digest(digest_inputs), roots=tuple(roots))
    if _MAX_COMPILED > 0:
        while len(_COMPILED) >= _MAX_COMPILED:
            _COMPILED.pop(next(iter(_COMPILED)))
        _COMPILED[key] = ruleset
    return ruleset
