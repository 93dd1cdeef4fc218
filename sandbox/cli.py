"""``mleaudit run`` and ``mleaudit sandbox``: run an agent in a sandbox, check the backends.

Thin click commands over :func:`mleaudit.sandbox.runner.run_sandbox`. Sandbox, spec, grading and audit
errors become ``Error: <message>`` with exit code 2; a run that started has its ``run.json``
written before the error is reported. ``grading`` is imported inside the commands; the audit
never is: ``run --audit`` calls :data:`audit_after_run`, which the audit's command line installs
(the sandbox package depends only on ``mleaudit.audit.run``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

import click

from mleaudit.sandbox.errors import SandboxError, SpecError
from mleaudit.sandbox.spec import GpuRequest, NetworkPolicy, Resources, SandboxSpec, load_sandbox_spec, parse_duration, parse_size

__all__ = ["run_command", "sandbox", "SandboxCliError"]


class SandboxCliError(click.ClickException):
    """A spec, sandbox, data or input problem: ``Error: <message>``, exit code 2."""

    exit_code = 2


def _runner(backend: str, *, keep: bool, unsafe: bool, venv: Path | None = None, rootfs: Path | None = None) -> Any:
    if backend == "docker":
        for given, flag in ((unsafe, "--unsafe-no-sandbox"), (venv, "--venv"), (rootfs, "--rootfs")):
            if given:
                raise SandboxCliError(f"{flag} only applies to --backend local (the image holds the agent's environment)")
        from mleaudit.sandbox.docker import DockerRunner

        return DockerRunner(keep=keep)
    from mleaudit.sandbox.local import BubblewrapRunner, UnsafeLocalRunner, find_bwrap

    if unsafe:
        if rootfs is not None:
            raise SandboxCliError("--rootfs needs a sandbox; it cannot be used with --unsafe-no-sandbox")
        click.echo("WARNING: --unsafe-no-sandbox: the agent runs on this machine with no isolation", err=True)
        return UnsafeLocalRunner()
    try:
        find_bwrap()
    except SandboxError as exc:
        raise SandboxCliError(_describe(exc)) from None
    extra = _venv_paths(venv) if venv is not None else ()
    kwargs: dict[str, Any] = {"extra_ro_paths": extra}
    if rootfs is not None:
        kwargs["rootfs"] = str(rootfs.absolute())
    return BubblewrapRunner(**kwargs)


def _describe(exc: SandboxError) -> str:
    describe = getattr(exc, "describe", None)
    text = describe() if describe is not None else str(exc)
    if getattr(exc, "remedies", ()):
        text = text.replace("\n", "\nTo fix it:\n", 1)
    return text


def _venv_paths(venv: Path) -> tuple[str, ...]:
    """The read-only host paths a virtual environment needs: itself and its base Python's prefix.

    A venv's ``bin/python`` links to the Python it was made from (``home`` in ``pyvenv.cfg``);
    that installation is bound too when it lies outside the system folders every sandbox has.
    """
    venv = venv.absolute()
    cfg = venv / "pyvenv.cfg"
    if not cfg.is_file() or not (venv / "bin").is_dir():
        raise SandboxCliError(f"--venv {venv}: not a virtual environment (no pyvenv.cfg and bin/)")
    paths = [str(venv)]
    try:
        lines = cfg.read_text(encoding="utf-8", errors="replace").splitlines()[:100]
    except OSError as exc:
        raise SandboxCliError(f"--venv {venv}: cannot read pyvenv.cfg: {exc.strerror or exc}") from None
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and key.strip() == "home" and value.strip():
            prefix = Path(value.strip()).parent
            if prefix.is_dir() and not any(str(prefix) == d or str(prefix).startswith(d + "/") for d in ("/usr", "/opt")):
                paths.append(str(prefix))
    return tuple(paths)


def _venv_env(venv: Path) -> dict[str, str]:
    from mleaudit.sandbox.runner import BASE_ENV

    venv = venv.absolute()
    return {"VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}:{BASE_ENV['PATH']}"}


def _convert(fn, value: Any, name: str) -> Any:
    try:
        return fn(value, field_name=name)
    except SpecError as exc:
        # The message already starts with the option's name; click adds it once more.
        raise click.BadParameter(str(exc).removeprefix(f"{name}: "), param_hint=name) from None


def _execute(spec: SandboxSpec, run_dir: Path, runner: Any, validator: Any, validation_limits: Any = None) -> Any:
    from mleaudit.sandbox.errors import RunDirError, SandboxRunError
    from mleaudit.sandbox.runner import SANDBOX_FAILED, run_sandbox

    try:
        return run_sandbox(spec, run_dir, runner=runner, validator=validator, validation_limits=validation_limits)
    except RunDirError as exc:
        raise SandboxCliError(str(exc)) from None
    except SandboxRunError as exc:
        raise SandboxCliError(f"error: {exc}\n(the agent had started; the run dir is complete and its outputs "
                              f"cleaned; recorded in {run_dir / 'run.json'} with status error)") from None
    except SandboxError as exc:
        if _recorded_status(run_dir) != SANDBOX_FAILED:
            # Refused before anything was written (a missing host path): nothing is recorded.
            raise SandboxCliError(_describe(exc)) from None
        raise SandboxCliError(
            f"sandbox_failed: the agent did not run. {_describe(exc)}\n"
            f"(recorded in {run_dir / 'run.json'} with status sandbox_failed; running again with the same "
            "--run-dir replaces that record)"
        ) from None


def _recorded_status(run_dir: Path) -> str | None:
    """The ``status`` of the run dir's ``run.json`` when there is a readable one."""
    try:
        record = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record.get("status") if isinstance(record, dict) else None


def _size(value: int | None) -> str:
    if value is None:
        return "none"
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= factor:
            return f"{value / factor:.3g} {unit}"
    return f"{value} B"


def _summary(result: Any) -> None:
    record = json.loads(result.run_json.read_text(encoding="utf-8")) if result.run_json.is_file() else {}
    exit_text = f"exit code {result.exit_code}"
    if result.exit_signal:
        exit_text += f", signal {result.exit_signal}"
    click.echo(f"run dir:     {result.run_dir}")
    click.echo(f"status:      {result.status} ({exit_text}, {result.duration_s:.1f} s, backend {result.backend})")
    limits = record.get("limits") or {}
    if limits:
        time_limit = limits.get("time_limit_s")
        click.echo(f"limits:      time {f'{time_limit:g} s' if time_limit else 'none'}, memory {_size(limits.get('memory'))}, "
                   f"pids {limits.get('pids') or 'none'}, cpus {limits.get('cpus') or 'all'}, "
                   f"outputs {_size(limits.get('disk'))}, run.log {_size(limits.get('log'))}")  # fmt: skip
        enforcement = limits.get("enforcement") or {}
        if enforcement:
            click.echo("enforced by: " + ", ".join(f"{k} {v}" for k, v in sorted(enforcement.items())))
    if result.limits_hit:
        click.echo(f"limits hit:  {', '.join(result.limits_hit)}")
    click.echo(f"submission:  {result.submission or 'none'}")
    click.echo(f"validation:  {result.validation.count} call(s) ({result.validation.valid} valid, "
               f"{result.validation.invalid} invalid, {result.validation.refused} refused)")  # fmt: skip
    for event in result.events:
        where = event.get("path") or ""
        detail = str(event.get("detail", ""))
        shown = f"{where}: {detail}" if where and not detail.startswith(where) else detail
        click.echo(f"event:       {event['kind']}: {shown}")


#: ``(run_dir, competition_id, competitions_dir, data_dir) -> exit code``: audits a finished run for
#: ``mleaudit run --audit``. The audit sits above the sandbox, so it installs this when it adds
#: these commands to its command line (:mod:`mleaudit.audit.cli`); the sandbox never imports it.
AuditAfterRun = Callable[[Path, "str | None", "Path | None", "Path | None"], int]
audit_after_run: AuditAfterRun | None = None


def _audit(run_dir: Path, competition_id: str | None, competitions_dir: Path | None, data_dir: Path | None) -> int:
    if audit_after_run is None:
        raise SandboxCliError("--audit needs the audit's command line (run it as `mleaudit run`), which was not loaded")
    return audit_after_run(run_dir, competition_id, competitions_dir, data_dir)


_backend_option = click.option("--backend", type=click.Choice(["local", "docker"]), default="local", show_default=True,
                               help="local: bubblewrap on this machine; docker: a container.")  # fmt: skip
_keep_option = click.option("--keep", is_flag=True, help="docker: keep the container after the run (for inspection).")
_unsafe_option = click.option("--unsafe-no-sandbox", "unsafe", is_flag=True,
                              help="local: run the agent with NO isolation (only limits and the time limit).")  # fmt: skip
_venv_option = click.option("--venv", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
                            help="local: a virtual environment with the agent's Python packages, bound read-only "
                                 "at the same path, its bin/ first on PATH.")  # fmt: skip
_rootfs_option = click.option("--rootfs", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
                              help="local: a root file system (an unpacked image) whose /usr, /etc, /opt and /lib "
                                   "replace the host's, read-only.")  # fmt: skip


def _competitions_option(func):
    return click.option("--competitions", "competitions_dir", type=click.Path(file_okay=False, path_type=Path),
                        envvar="MLEAUDIT_COMPETITIONS", show_envvar=True, default=None,
                        help="Folder of competition folders (default: the checkout's competitions/).")(func)  # fmt: skip


def _data_dir_option(func):
    return click.option("--data-dir", "data_dir", type=click.Path(file_okay=False, path_type=Path),
                        envvar="MLEAUDIT_DATA_DIR", show_envvar=True, default=None,
                        help="Prepared data: <DIR>/<id>/prepared/{public,private} (default: the user cache dir).")(func)  # fmt: skip


def _setup(competition_id: str, competitions_dir: Path | None, data_dir: Path | None) -> Any:
    from mleaudit.grading.errors import GradingError
    from mleaudit.sandbox.competition import setup_competition

    try:
        return setup_competition(competition_id, competitions_root=competitions_dir, data_dir=data_dir,
                                 progress=lambda msg: click.echo(msg, err=True))  # fmt: skip
    except GradingError as exc:
        raise SandboxCliError(str(exc)) from None


def _validation_limits(setup: Any, max_bytes: int | None) -> Any:
    """The endpoint's bounds for a competition: its size cap unless ``--validation-max-bytes`` overrides it."""
    from mleaudit.sandbox.validation import ValidationLimits

    cap = max_bytes or getattr(setup, "max_submission_bytes", None)
    return ValidationLimits(max_bytes=cap) if cap else ValidationLimits()


@click.command("run")
@click.option("-c", "--competition", "competition_id", required=True, metavar="ID", help="Competition id.")
@click.option("--agent", "agent_cmd", required=True, metavar="CMD", help="The agent command, run with /bin/sh -c inside the sandbox.")
@click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="New or empty folder for the run (submission/, logs/, code/, run.log, run.json).")
@click.option("--agent-dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="The agent's files, read-only at /home/agent.")
@click.option("--agent-id", default=None, help="Agent name recorded in run.json.")
@_backend_option
@click.option("--image", default=None, help="docker image (default: mleaudit/agent:local, built from images/).")
@click.option("--gpus", default=None, metavar="all|N|IDS", help="GPUs for the agent: all, a count, or device ids (0,1).")
@click.option("--time-limit", default=None, metavar="DURATION",
              help="Wall-clock limit: seconds, or 30m, 2h (default 24h).")
@click.option("--cpus", type=float, default=None, help="CPU cores (default: all).")
@click.option("--memory", default=None, metavar="SIZE",
              help="Memory of the whole sandbox, tmpfs included (e.g. 4g; default 75% of the host's).")
@click.option("--shm", default=None, metavar="SIZE", help="docker: /dev/shm size (e.g. 1g).")
@click.option("--pids", type=click.IntRange(min=1), default=None, help="Maximum number of processes (default 4096).")
@click.option("--disk", default=None, metavar="SIZE", help="Space the output folders may use (default 20g).")
@click.option("--log-limit", default=None, metavar="SIZE",
              help="Cap of run.log; later output is counted and dropped (default 256m).")
@click.option("--stop-grace", default=None, metavar="DURATION",
              help="At a limit: SIGTERM, this long to finish, then SIGKILL (default 30s).")
@click.option("--validation-max-bytes", default=None, metavar="SIZE",
              help="Largest request the validation endpoint reads (default: a multiple of the sample submission).")
@click.option("--allow-host", "allow", multiple=True, metavar="HOST",
              help="Allow HTTP(S) to this host (repeatable; *.domain and host:port work). Default: no network.")
@click.option("--env", "env", multiple=True, metavar="NAME=VALUE", help="Extra environment variable (repeatable).")
@click.option("--audit", "do_audit", is_flag=True,
              help="Audit the run dir when the run ends (exit 1 on high findings, 3 when the audit is incomplete).")
@_keep_option
@_unsafe_option
@_venv_option
@_rootfs_option
@_competitions_option
@_data_dir_option
def run_command(competition_id: str, agent_cmd: str, run_dir: Path, agent_dir: Path | None, agent_id: str | None,
                backend: str, image: str | None, gpus: str | None, time_limit: str | None, cpus: float | None,
                memory: str | None, shm: str | None, pids: int | None, disk: str | None, log_limit: str | None,
                stop_grace: str | None, validation_max_bytes: str | None, allow: tuple[str, ...], env: tuple[str, ...],
                do_audit: bool, keep: bool, unsafe: bool, venv: Path | None, rootfs: Path | None,
                competitions_dir: Path | None, data_dir: Path | None) -> None:
    """Run an agent on a competition in a sandbox and write an MLE-bench run dir.

    The competition's data is prepared if needed; its public files are mounted read-only at
    /home/data, the agent writes /home/submission, /home/logs and /home/code, its files are at
    /home/agent, and /home/validate_submission.sh checks a submission through the host's
    validation endpoint (every call is logged). The held-out answers are never mounted.
    Limits hold for the whole sandbox (cgroups where the host allows them, else per-process
    rlimits; run.json says which): without flags the defaults of mleaudit.sandbox.spec.DEFAULT_LIMITS
    apply (24 h, 75 % of the host's memory, 4096 processes, 20 GiB of outputs, a 256 MiB
    run.log). At the time limit the agent gets SIGTERM and --stop-grace seconds before SIGKILL.
    A pre-flight sandbox runs first; if it cannot start, nothing runs and the error says how
    to fix it. --venv gives the local backend's agent its Python packages.

    Exit code 0 when the run was carried out (whatever the agent's own exit code), 1 with
    --audit when a finding is high or critical, 3 with --audit when the audit is incomplete
    (nothing high found, but something not checked), 2 when the run could not be carried out
    (status sandbox_failed: the cause and remedies are printed).

    Example:

        mleaudit run -c sklearn-digits --agent "python3 /home/agent/solve.py" --agent-dir agents/baseline --run-dir runs/r1 --time-limit 10m --audit
    """
    from mleaudit.sandbox.docker import DEFAULT_IMAGE
    from mleaudit.sandbox.spec import DEFAULT_TIME_LIMIT_S

    environment = {}
    for item in env:
        name, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="--env")
        environment[name] = value
    runner = _runner(backend, keep=keep, unsafe=unsafe, venv=venv, rootfs=rootfs)
    if venv is not None:
        environment = {**_venv_env(venv), **environment}
    setup = _setup(competition_id, competitions_dir, data_dir)
    try:
        spec = SandboxSpec(
            command=("/bin/sh", "-c", agent_cmd),
            image=(image or DEFAULT_IMAGE) if backend == "docker" else image,
            competition_id=competition_id,
            agent_id=agent_id,
            data_dir=setup.public_dir,
            agent_dir=agent_dir.absolute() if agent_dir else None,
            hidden=setup.hidden,
            env=environment,
            gpus=_convert(GpuRequest.parse, gpus, "--gpus") if gpus else None,
            resources=Resources(
                cpus=cpus,
                memory_bytes=_convert(parse_size, memory, "--memory") if memory else None,
                shm_bytes=_convert(parse_size, shm, "--shm") if shm else None,
                pids=pids,
                disk_bytes=_convert(parse_size, disk, "--disk") if disk else None,
                log_bytes=_convert(parse_size, log_limit, "--log-limit") if log_limit else None,
            ).with_defaults(),
            network=NetworkPolicy(allow=allow),
            time_limit_s=_convert(parse_duration, time_limit, "--time-limit") if time_limit else DEFAULT_TIME_LIMIT_S,
            **({"stop_grace_s": _convert(parse_duration, stop_grace, "--stop-grace")} if stop_grace else {}),
        )
    except SpecError as exc:
        raise SandboxCliError(str(exc)) from None
    limits = _validation_limits(setup, _convert(parse_size, validation_max_bytes, "--validation-max-bytes")
                                if validation_max_bytes else None)  # fmt: skip
    result = _execute(spec, run_dir, runner, setup.validator, limits)
    _summary(result)
    if do_audit:
        sys.exit(_audit(result.run_dir, competition_id, competitions_dir, data_dir))


@click.group("sandbox")
def sandbox() -> None:
    """Run agents from a spec file and check which sandbox backends work here.

    Example:

        mleaudit sandbox check
    """


@sandbox.command("check")
@click.option("--image", default=None, help="docker image to look for (default: mleaudit/agent:local).")
@click.option("--gpu-image", default=None, help="Image to run nvidia-smi in (default: --image).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def check_command(image: str | None, gpu_image: str | None, as_json: bool) -> None:
    """Report docker reachability, GPU visibility and bubblewrap availability.

    Exit code 0 when at least one sandbox backend (bubblewrap or docker with its image) works,
    2 when none does.

    Example:

        mleaudit sandbox check --image mleaudit/agent:local
    """
    from mleaudit.sandbox.check import check_environment

    items = check_environment(image=image, gpu_image=gpu_image)
    if as_json:
        click.echo(json.dumps([i.to_dict() for i in items], indent=2, sort_keys=True))
    else:
        for item in items:
            mark = {True: "ok  ", False: "FAIL", None: "n/a "}[item.ok]
            click.echo(f"{mark} {item.name:14} {item.detail}")
    status = {i.name: i.ok for i in items}
    if not (status.get("bubblewrap") or (status.get("docker daemon") and status.get("docker image"))):
        sys.exit(2)


@sandbox.command("run")
@click.argument("spec_path", metavar="SPEC.yaml", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="New or empty folder for the run.")
@_backend_option
@_keep_option
@_unsafe_option
@_venv_option
@_rootfs_option
@_competitions_option
@_data_dir_option
def sandbox_run_command(spec_path: Path, run_dir: Path, backend: str, keep: bool, unsafe: bool, venv: Path | None,
                        rootfs: Path | None, competitions_dir: Path | None, data_dir: Path | None) -> None:
    """Run the agent a YAML spec describes (see sandbox/spec/__init__.py for the keys).

    With a 'competition:' key and no 'data:', the competition's public data is mounted and
    the validation endpoint served, as for 'mleaudit run'. Limits the spec leaves out get the
    defaults of 'mleaudit run'.

    Example:

        mleaudit sandbox run agent.yaml --run-dir runs/r2 --backend docker
    """
    import dataclasses

    try:
        spec = load_sandbox_spec(spec_path)
        spec = spec.with_defaults()
    except SpecError as exc:
        raise SandboxCliError(str(exc)) from None
    if backend == "docker" and not spec.image:
        from mleaudit.sandbox.docker import DEFAULT_IMAGE

        spec = dataclasses.replace(spec, image=DEFAULT_IMAGE)
    runner = _runner(backend, keep=keep, unsafe=unsafe, venv=venv, rootfs=rootfs)
    if venv is not None:
        spec = dataclasses.replace(spec, env={**_venv_env(venv), **spec.env})
    validator = None
    limits = None
    if spec.competition_id:
        setup = _setup(spec.competition_id, competitions_dir, data_dir)
        spec = dataclasses.replace(spec, data_dir=spec.data_dir or setup.public_dir,
                                   hidden=tuple(dict.fromkeys(spec.hidden + setup.hidden)))  # fmt: skip
        validator = setup.validator
        limits = _validation_limits(setup, None)
    _summary(_execute(spec, run_dir, runner, validator, limits))
