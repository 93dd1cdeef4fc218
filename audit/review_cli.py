"""``mleaudit review``: list a run's findings with their review status, and record decisions.

``mleaudit review RUN_OR_REPORT`` (short for ``review show``) lists the findings of an audit
report (a JSON file written by ``mleaudit audit -o``) or of a run folder (audited on the spot),
each with its fingerprint and the decision the baseline holds for it. ``mleaudit review decide
FINGERPRINT --confirm|--dismiss --note TEXT`` records a decision in the baseline file
(:mod:`mleaudit.audit.review`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from mleaudit.audit.cli_options import DefaultCommandGroup, InputError, competitions_option, data_dir_option, rules_option

__all__ = ["review"]

#: Baseline file used when --baseline is not given.
DEFAULT_BASELINE = Path("mleaudit-baseline.json")

baseline_file_option = click.option(
    "--baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="MLEAUDIT_BASELINE", show_envvar=True,
    default=DEFAULT_BASELINE,
    show_default=True,
    help="The baseline file of reviewer decisions.",
)


class ReviewGroup(DefaultCommandGroup):
    """``mleaudit review X`` runs ``review show X`` unless X names a subcommand."""

    default_command = "show"


def _load_report(target: Path, competition_id: str | None, competitions_dir: Path | None, data_dir: Path | None,
                 rules: Path | None) -> dict[str, Any]:
    """A report dict from a report JSON file, or from auditing a run folder (no similarity)."""
    from mleaudit.grading.errors import GradingError

    from mleaudit.audit.errors import AuditError

    if target.is_file() and target.suffix.lower() == ".json":
        from mleaudit.grading import untrusted_json

        try:
            report = untrusted_json.loads(target.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{target}: cannot read ({exc})") from exc
        except json.JSONDecodeError as exc:
            raise InputError(f"{target}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
        if not isinstance(report, dict) or not isinstance(report.get("findings"), list):
            raise InputError(f"{target}: not an audit report (no 'findings' list)")
        return report
    if not target.exists():
        raise InputError(f"{target}: no such run folder or report file")
    from mleaudit.audit.pipeline import AuditRequest, run_audit

    request = AuditRequest(run_dir=target, competition_id=competition_id, similarity=False,
                           competitions_root=competitions_dir, data_dir=data_dir, rules_root=rules)
    try:
        return run_audit(request).to_dict()
    except (AuditError, GradingError) as exc:
        raise InputError(str(exc)) from exc


def _open_baseline(path: Path, *, missing_ok: bool):
    from mleaudit.audit.review import BaselineError, load_baseline

    try:
        return load_baseline(path, missing_ok=missing_ok)
    except BaselineError as exc:
        raise InputError(str(exc)) from exc


def _location(finding: dict[str, Any]) -> str:
    evidence = finding.get("evidence") or []
    if not evidence:
        return ""
    first = evidence[0]
    line = first.get("start_line")
    return f"{first.get('path')}:{line}" if line else str(first.get("path"))


@click.group("review", cls=ReviewGroup)
def review() -> None:
    """Review findings: list them with their status, confirm or dismiss them once.

    Decisions go to a baseline file (default ./mleaudit-baseline.json) that `mleaudit audit
    --baseline FILE` honours: dismissed findings stay in the report, marked, and no longer count
    towards the verdict. Fingerprints ignore line numbers, so decisions survive shifted lines.

    Example:

        mleaudit review report.json

        mleaudit review decide 3f9a1c --dismiss --note "comment, not a call" --from report.json
    """


@review.command("show")
@click.argument("target", type=click.Path(path_type=Path))
@click.option("-c", "--competition", "competition_id", default=None, help="Competition id when TARGET is a run folder.")
@baseline_file_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@competitions_option
@data_dir_option
@rules_option
def review_show(target: Path, competition_id: str | None, baseline: Path, fmt: str, competitions_dir: Path | None,
                data_dir: Path | None, rules: Path | None) -> None:
    """List the findings of a report (or run folder) with fingerprints and review status.

    Example:

        mleaudit review show report.json --baseline decisions.json
    """
    report = _load_report(target, competition_id, competitions_dir, data_dir, rules)
    decisions = _open_baseline(baseline, missing_ok=True)
    run_id = (report.get("run") or {}).get("run_id")
    rows = []
    for finding in report["findings"]:
        decision = decisions.lookup(str(finding.get("fingerprint", "")), run_id)
        status = decision.decision if decision else (finding.get("review") or {}).get("decision", "open")
        note = decision.note if decision else (finding.get("review") or {}).get("note", "")
        rows.append({"fingerprint": finding.get("fingerprint"), "status": status, "note": note,
                     "rule_id": finding.get("rule_id"), "severity": finding.get("severity"),
                     "location": _location(finding), "message": finding.get("message")})
    if fmt == "json":
        json.dump({"run_id": run_id, "baseline": str(baseline), "findings": rows}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(file=sys.stdout, highlight=False)
    if not rows:
        console.print(f"{escape(str(run_id))}: no findings")
        return
    table = Table(title=f"findings of {escape(str(run_id))} (baseline {escape(str(baseline))})", title_justify="left")
    for column in ("fingerprint", "status", "severity", "rule", "location", "message / note"):
        table.add_column(column)
    for row in rows:
        text = escape(str(row["message"]))
        if row["note"]:
            text += f"\n[italic]note: {escape(row['note'])}[/italic]"
        table.add_row(str(row["fingerprint"])[:12], row["status"], str(row["severity"]), escape(str(row["rule_id"])),
                      escape(row["location"]), text)
    console.print(table)


@review.command("decide")
@click.argument("fingerprint")
@click.option("--confirm", is_flag=True, help="The finding is a real violation.")
@click.option("--dismiss", is_flag=True, help="The finding is a false alarm.")
@click.option("--note", required=True, help="Why (kept next to the finding in later reports).")
@click.option("--from", "source", type=click.Path(path_type=Path), default=None,
              help="The report or run folder the finding comes from (allows a fingerprint prefix; records rule and location).")
@click.option("--all-runs", is_flag=True, help="Apply to this fingerprint in every run, not only the run of --from.")
@click.option("--by", "decided_by", default=None, help="Reviewer name (default: the login name).")
@baseline_file_option
@click.option("-c", "--competition", "competition_id", default=None, help="Competition id when --from is a run folder.")
@competitions_option
@data_dir_option
@rules_option
def review_decide(fingerprint: str, confirm: bool, dismiss: bool, note: str, source: Path | None, all_runs: bool,
                  decided_by: str | None, baseline: Path, competition_id: str | None, competitions_dir: Path | None,
                  data_dir: Path | None, rules: Path | None) -> None:
    """Record a decision on one finding in the baseline file.

    FINGERPRINT is the finding's fingerprint (with --from, a prefix of at least 6 hex digits
    is enough). A later decision on the same finding and scope replaces the earlier one.

    Example:

        mleaudit review decide 3f9a1c --confirm --note "calls gpt-4o on the test set" --from report.json
    """
    from mleaudit.audit.review import BaselineError, new_decision, record_decision, resolve_fingerprint

    if confirm and dismiss:
        raise InputError("--confirm and --dismiss contradict each other: say one")
    if not confirm and not dismiss:
        raise InputError("say --confirm or --dismiss")
    decision = "confirmed" if confirm else "dismissed"
    _open_baseline(baseline, missing_ok=True)  # a malformed baseline fails before any audit
    finding = None
    run_id = None
    try:
        if source is not None:
            report = _load_report(source, competition_id, competitions_dir, data_dir, rules)
            finding = resolve_fingerprint(fingerprint, report["findings"])
            fingerprint = str(finding["fingerprint"])
            run_id = None if all_runs else (report.get("run") or {}).get("run_id")
        record = new_decision(fingerprint.strip().lower(), decision, note, finding=finding, run_id=run_id,
                              decided_by=decided_by)
        # read again and written under the baseline's lock: other reviewers may be deciding too
        record_decision(baseline, record)
    except BaselineError as exc:
        raise InputError(str(exc)) from exc
    scope = f"run {run_id}" if run_id else "all runs"
    click.echo(f"{record.decision} {record.fingerprint[:12]} ({record.rule_id or 'rule unknown'}) for {scope} in {baseline}")
