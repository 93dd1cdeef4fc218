"""What the agent is given inside every sandbox: its environment, its command under the init, the assets.

The host's environment is never passed through (it may hold secrets): the agent gets
:data:`BASE_ENV`, the run's own variables and the spec's ``env``. A sandboxed command runs
under ``assets/init.py``, which starts the loopback forwarder to the host's proxy.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from mleaudit.sandbox.spec import AGENT_PATHS, SandboxSpec

#: Files bound into every sandbox (the validation helper, the loopback forwarder).
ASSETS_DIR = Path(__file__).resolve().parents[1] / "assets"
#: Loopback port of the in-sandbox forwarder to the allow-list proxy.
PROXY_PORT = 3128
#: Where the proxy socket appears inside the sandbox.
PROXY_SOCKET = f"{AGENT_PATHS['support']}/proxy.sock"
FORWARDER = f"{AGENT_PATHS['support']}/forward.py"
#: The sandbox's first process (``assets/init.py``), next to the forwarder.
INIT = f"{AGENT_PATHS['support']}/init.py"
#: The environment every agent gets; the host's is never passed through (it may hold secrets).
BASE_ENV = MappingProxyType(
    {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "DATA_DIR": AGENT_PATHS["data"],
        "SUBMISSION_DIR": AGENT_PATHS["submission"],
        "LOGS_DIR": AGENT_PATHS["logs"],
        "CODE_DIR": AGENT_PATHS["code"],
        "AGENT_DIR": AGENT_PATHS["agent"],
        "VALIDATE_SOCKET": AGENT_PATHS["validate_socket"],
    }
)



def agent_command(spec: SandboxSpec, *, sandboxed: bool) -> tuple[str, ...]:
    """The argv the sandbox runs: the agent's command under ``assets/init.py``.

    The init starts the loopback forwarder to the host's proxy (with an allow-list the agent
    does not start without it; under ``network: none`` it only records refused attempts) and
    keeps the sandbox alive through a stop's grace period until every process of the agent
    has ended (see its docstring). A run without a sandbox gets the command as it is.
    """
    if not sandboxed:
        return spec.command
    forward = ["--forward", str(PROXY_PORT), PROXY_SOCKET] + (["--required"] if spec.network.allow else [])
    return ("python3", INIT, *forward, "--", *spec.command)


def agent_environment(spec: SandboxSpec, run_id: str, *, proxied: bool) -> dict[str, str]:
    env = dict(BASE_ENV)
    env["RUN_ID"] = run_id
    if spec.competition_id:
        env["COMPETITION_ID"] = spec.competition_id
    if spec.time_limit_s:
        env["TIME_LIMIT_SECS"] = str(int(spec.time_limit_s))
    if proxied:
        proxy = f"http://127.0.0.1:{PROXY_PORT}"
        env.update({"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "http_proxy": proxy, "https_proxy": proxy,
                    "NO_PROXY": "", "no_proxy": ""})  # fmt: skip
    env.update(spec.env)
    return env
