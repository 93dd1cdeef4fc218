"""Bubblewrap on this host: finding it, and what to do when it cannot create its namespaces."""

from __future__ import annotations

import shutil
from pathlib import Path

from mleaudit.sandbox.errors import SandboxUnavailable

_INSTALL_HINT = (
    "install it (Debian/Ubuntu: apt-get install bubblewrap), use --backend docker, "
    "or pass --unsafe-no-sandbox to run the agent without any isolation"
)
#: bubblewrap's messages when it cannot create namespaces (user namespaces refused or limited).
_NAMESPACE_ERRORS = ("namespace", "uid map", "gid map", "setting up", "unshare", "clone", "operation not permitted",
                     "permission denied", "creating new")  # fmt: skip


def _sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", *name.split(".")).read_text(encoding="ascii").strip()
    except OSError:
        return None


def namespace_remedies(error: str = "") -> list[str]:
    """What can make bubblewrap work on a host where it cannot create its namespaces.

    Parameters
    ----------
    error : str
        bubblewrap's message; remedies for user namespaces are given when it names a namespace
        or permission problem (or is empty), the general ones always.

    Returns
    -------
    list of str
        One remedy per item, the current value of each setting shown where this host has it.
    """
    remedies: list[str] = []
    lowered = error.lower()
    if not error or any(word in lowered for word in _NAMESPACE_ERRORS):

        def now(name: str) -> str:
            value = _sysctl(name)
            return f" (now {value})" if value is not None else ""

        remedies += [
            "allow unprivileged user namespaces where AppArmor restricts them (Ubuntu 23.10 and later): "
            "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
            f"{now('kernel.apparmor_restrict_unprivileged_userns')}, or give bwrap an AppArmor profile "
            "that allows userns (/etc/apparmor.d/bwrap: abi <abi/4.0>, profile bwrap /usr/bin/bwrap "
            "flags=(unconfined) { userns, })",
            "allow unprivileged user namespaces on Debian-patched kernels: "
            f"sysctl -w kernel.unprivileged_userns_clone=1{now('kernel.unprivileged_userns_clone')}",
            f"allow user namespaces at all: sysctl -w user.max_user_namespaces=15000 (must be above 0)"
            f"{now('user.max_user_namespaces')}",
            "run mleaudit as root: bubblewrap then needs no user namespace (the agent still runs as an "
            "unprivileged user)",
            "inside a container: bubblewrap needs CAP_SYS_ADMIN there (docker run --cap-add SYS_ADMIN "
            "--security-opt seccomp=unconfined --security-opt apparmor=unconfined), or run mleaudit on the host",
        ]
    remedies.append("use --backend docker (the agent runs in a container instead)")
    return remedies


def find_bwrap() -> str:
    """The bubblewrap executable.

    Raises
    ------
    SandboxUnavailable
        If ``bwrap`` is not on PATH.
    """
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed: {_INSTALL_HINT}")
    return path
