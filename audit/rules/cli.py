"""``mleaudit rules``: list, show, validate, test and document the YAML rules.

Thin click commands over :mod:`mleaudit.audit.rules` (loader, self-tests, docs). Every command takes
``--rules DIR`` (default: ``$MLEAUDIT_RULES``, else ``rules/`` of the checkout). A ruleset that
does not load, or an unknown rule id, is an input error: ``Error: ...`` and exit code 2.
``rules test`` exits with 1 when a self-test case fails, ``rules validate`` when a rule file has
a problem.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import click

from mleaudit.audit.cli_options import InputError, rules_option
from mleaudit.audit.errors import AuditError

__all__ = ["rules"]


def _load(rules_dir: Path | None):
    from mleaudit.audit.rules.loader import find_rules_root, load_ruleset

    try:
        return load_ruleset([find_rules_root(rules_dir)])
    except AuditError as exc:
        raise InputError(str(exc)) from exc


def _pick(ruleset, rule_ids: tuple[str, ...]):
    unknown = [rule_id for rule_id in rule_ids if rule_id not in ruleset.ids()]
    if unknown:
        hints = {u: difflib.get_close_matches(u, ruleset.ids(), n=1) for u in unknown}
        shown = ", ".join(f"{u!r}" + (f" (did you mean {h[0]!r}?)" if h else "") for u, h in hints.items())
        raise InputError(f"no rule {shown} in {', '.join(map(str, ruleset.roots))} ({len(ruleset)} rules; "
                         "see `mleaudit rules list`)")
    return [ruleset.get(rule_id) for rule_id in rule_ids] if rule_ids else list(ruleset)


@click.group("rules")
def rules() -> None:
    """List, show, validate, test and document the audit rules (YAML files under rules/).

    Example:

        mleaudit rules list --category llm-api
    """


@rules.command("list")
@click.option("--category", default=None, help="Only rules of this category (e.g. llm-api).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="A table, or a JSON list of rule summaries.")
@rules_option
def list_command(category: str | None, fmt: str, rules: Path | None) -> None:
    """List the rules: id, category, severity, confidence, target and title.

    Example:

        mleaudit rules list --category external-resource --format json
    """
    from mleaudit.audit.rules.docs import rule_summary

    ruleset = _load(rules)
    categories = sorted({r.spec.category for r in ruleset})
    if category is not None and category not in categories:
        raise InputError(f"no rule has category {category!r} (categories: {', '.join(categories)})")
    infos = [rule_summary(r) for r in ruleset if category is None or r.spec.category == category]
    infos.sort(key=lambda i: (i["category"], i["id"]))
    if fmt == "json":
        click.echo(json.dumps(infos, indent=2, sort_keys=True))
        return
    rows = [(i["id"], i["category"], i["severity"], i["confidence"], ",".join(i["targets"]), i["title"]) for i in infos]
    widths = [max(len(r[c]) for r in rows + [("id", "category", "severity", "confidence", "target", "")]) for c in range(5)]
    for row in [("id", "category", "severity", "confidence", "target", "title"), *rows]:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[5])
    click.echo(f"{len(rows)} rule(s)")


@rules.command("show")
@click.argument("rule_id")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@rules_option
def show_command(rule_id: str, fmt: str, rules: Path | None) -> None:
    """Show one rule: metadata, message, rationale, references and its matcher.

    Example:

        mleaudit rules show llm-external-api-call
    """
    from mleaudit.audit.rules.docs import render_rule_text, rule_summary

    rule = _pick(_load(rules), (rule_id,))[0]
    if fmt == "json":
        click.echo(json.dumps(rule_summary(rule), indent=2, sort_keys=True))
    else:
        click.echo(render_rule_text(rule), nl=False)


@rules.command("validate")
@rules_option
def validate_command(rules: Path | None) -> None:
    """Check every rule file against rules/schema.json and the loader's checks; exit 1 on a problem.

    Every problem of every file is listed, each as `<rule id> (<file>): <cause>`.

    Example:

        mleaudit rules validate --rules my-rules/
    """
    from mleaudit.audit.rules.loader import RulesetError, find_rules_root, load_ruleset

    try:
        root = find_rules_root(rules)
        ruleset = load_ruleset([root])
    except RulesetError as exc:
        click.echo(str(exc))
        raise SystemExit(1) from exc
    except AuditError as exc:
        raise InputError(str(exc)) from exc
    click.echo(f"{len(ruleset)} rules in {root} are valid (digest {ruleset.digest[:12]})")


@rules.command("test")
@click.argument("rule_ids", nargs=-1)
@click.option("--fixtures", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder of fixture runs for `run` rules (default: tests/fixtures/rule_runs of the checkout).")
@click.option("--failures-only", is_flag=True, help="Print only failing cases and notes, plus the summary.")
@rules_option
def test_command(rule_ids: tuple[str, ...], fixtures: Path | None, failures_only: bool, rules: Path | None) -> None:
    """Run the rules' self-tests (<id>.test.yaml): one line per case; exit 1 when one fails.

    Without RULE_IDS every rule is tested. `invalid` cases must produce a finding and `valid`
    cases none; `todo_*` cases are reported and never fail.

    Example:

        mleaudit rules test llm-external-api-call ext-kaggle-cli-download
    """
    from mleaudit.audit.rules.testing import run_rule_tests

    results = run_rule_tests(_pick(_load(rules), rule_ids), run_fixtures=fixtures)
    for r in results:
        status = "FAIL" if not r.passed else ("todo" if r.is_todo else "ok")
        if failures_only and status != "FAIL" and not (status == "todo" and r.detail):
            continue
        where = "test file" if r.kind == "file" else f"{r.kind}[{r.index}]"
        detail = r.detail or f"{r.findings} finding(s)"
        click.echo(f"{status:<5} {r.rule_id:<34} {where:<16} {detail}")
    failed = sum(not r.passed for r in results)
    todo = sum(r.is_todo for r in results)
    click.echo(f"{len({r.rule_id for r in results})} rule(s), {len(results)} case(s): "
               f"{len(results) - failed - todo} passed, {failed} failed, {todo} todo")
    if failed:
        raise SystemExit(1)


@rules.command("docs")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the markdown to this file (default: standard output).")
@rules_option
def docs_command(output: Path | None, rules: Path | None) -> None:
    """Write the markdown reference of every rule, with examples from its test file.

    Example:

        mleaudit rules docs -o docs/rules.md
    """
    from mleaudit.audit.rules.docs import render_rules_markdown

    text = render_rules_markdown(_load(rules))
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {output}: {exc.strerror or exc}") from exc
    click.echo(f"wrote {output}", err=True)
