"""``mleaudit sandbox check``: which backends can run here.

Reports whether bubblewrap can create its namespaces, whether the docker daemon answers,
whether an image is present locally, whether the host has NVIDIA GPUs, and, when the daemon
has a GPU runtime or the host has GPUs, whether ``nvidia-smi`` works inside a container.
"""

from __future__ import annotations

import glob
import logging
import shutil
import subprocess
from dataclasses import dataclass

from mleaudit.sandbox.errors import SandboxError

__all__ = ["CheckItem", "check_environment"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckItem:
    """One line of the report: ``ok`` is True, False, or None when the check did not apply."""

    name: str
    ok: bool | None
    detail: str

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


def _host_gpus() -> CheckItem:
    devices = sorted(glob.glob("/dev/nvidia[0-9]*"))
    smi = shutil.which("nvidia-smi")
    if not devices and smi is None:
        return CheckItem(name="host GPUs", ok=None, detail="no NVIDIA devices or nvidia-smi on this machine")
    if smi is None:
        return CheckItem(name="host GPUs", ok=True, detail=f"{len(devices)} device node(s); nvidia-smi not installed")
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return CheckItem(name="host GPUs", ok=False, detail=f"nvidia-smi failed: {exc}")
    if out.returncode != 0:
        return CheckItem(name="host GPUs", ok=False, detail=f"nvidia-smi failed: {out.stderr.strip() or out.stdout.strip()}")
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
    return CheckItem(name="host GPUs", ok=True, detail="; ".join(lines) or "nvidia-smi listed no GPU")


def check_environment(*, image: str | None = None, gpu_image: str | None = None) -> tuple[CheckItem, ...]:
    """Probe the backends; never raises for an unavailable one.

    Parameters
    ----------
    image : str, optional
        A docker image to look for locally (default: the agent image built from ``images/``).
    gpu_image : str, optional
        The image to run ``nvidia-smi`` in (default: ``image``); it must contain nvidia-smi
        or get it from the NVIDIA runtime.

    Returns
    -------
    tuple of CheckItem
        ``bubblewrap``, ``docker daemon``, ``docker image``, ``host GPUs``, ``docker GPUs``.
    """
    from mleaudit.sandbox.docker import DEFAULT_IMAGE, device_requests, docker_client
    from mleaudit.sandbox.local import bwrap_works
    from mleaudit.sandbox.spec import GpuRequest

    image = image or DEFAULT_IMAGE
    items = []
    ok, detail = bwrap_works()
    items.append(CheckItem(name="bubblewrap", ok=ok, detail=detail))
    try:
        client = docker_client(timeout=30)
    except SandboxError as exc:
        items.append(CheckItem(name="docker daemon", ok=False, detail=str(exc)))
        items.append(CheckItem(name="docker image", ok=None, detail="no daemon"))
        client = None
    else:
        version = client.version()
        runtimes = sorted((client.info().get("Runtimes") or {}).keys())
        items.append(CheckItem(name="docker daemon", ok=True,
                               detail=f"docker {version.get('Version')} (API {version.get('ApiVersion')}); runtimes: {', '.join(runtimes)}"))  # fmt: skip
        try:
            found = client.images.get(image)
            items.append(CheckItem(name="docker image", ok=True, detail=f"{image} ({found.short_id})"))
        except Exception as exc:  # noqa: BLE001 - any lookup failure means "not usable"
            items.append(CheckItem(name="docker image", ok=False, detail=f"{image}: {getattr(exc, 'explanation', None) or exc}"))
    host = _host_gpus()
    items.append(host)
    if client is None:
        items.append(CheckItem(name="docker GPUs", ok=None, detail="no daemon"))
    elif "nvidia" not in runtimes and host.ok is not True:
        items.append(CheckItem(name="docker GPUs", ok=None, detail="no GPU runtime in the daemon and no host GPUs"))
    else:
        run_image = gpu_image or image
        try:
            output = client.containers.run(run_image, ["nvidia-smi", "-L"], remove=True, network_mode="none",
                                           device_requests=device_requests(GpuRequest()), stdout=True, stderr=True)  # fmt: skip
            text = output.decode("utf-8", errors="replace").strip()
            items.append(CheckItem(name="docker GPUs", ok=True, detail=text.replace("\n", "; ") or "nvidia-smi ran"))
        except Exception as exc:  # noqa: BLE001 - report whatever stopped nvidia-smi in a container
            items.append(CheckItem(name="docker GPUs", ok=False, detail=f"nvidia-smi in {run_image}: {getattr(exc, 'explanation', None) or exc}"))
    return tuple(items)
