"""A uid of its own for every sandbox run of a root caller: chosen, held for the run, released.

The kernel keeps state per uid that no namespace of a root caller's sandbox separates: the user
keyrings and the key quota, the ``RLIMIT_NPROC`` count, the inotify instances and watches
(``fs.inotify.max_user_instances``, ``max_user_watches``), the ``epoll`` watches, the POSIX
message-queue bytes (``RLIMIT_MSGQUEUE``), the pipe buffer pages. A uid shared by every run
(65534, or an image's ``1000``) lets one run leave data there for a later one, read a
concurrent run's usage (a covert channel) and exhaust what the other gets (a denial of
service), and a uid with an account shares all of it with a real user of the host.

Both backends therefore run a root caller's sandbox, unless its spec names a ``user``, as a
uid/gid drawn at random for that run from :data:`RUN_UID_RANGE` (:func:`choose_run_user`): one
that has no account, no running process, no keys, lies in no subordinate range, and is held by
no other run of this process. :class:`RunUsers` holds the drawn uid for one spec object from
the first question about the run's owner to its end, so that the staging folders, the
pre-flight sandbox and the run agree; :meth:`RunUsers.end` then empties and invalidates the
uid's user keyrings (:func:`clear_user_keys`) and lets it be drawn again
(:func:`release_run_user`). A uid drawn for one run never serves a concurrent one, and the
range is large enough (a million ids) that a later run gets another one in all likelihood.

A sandbox started by the local backend also joins a new, empty session keyring before it
executes (:func:`session_keyring_preexec`), so that it neither reads nor writes the caller's.

``keyctl(2)`` has no libc wrapper; it is called through ``syscall(2)`` by number
(``x86_64``, ``aarch64``, ``riscv64``). Elsewhere the keyrings are left alone.
"""

from __future__ import annotations

import ctypes
import grp
import logging
import os
import platform
import pwd
import random
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Callable

from mleaudit.sandbox.errors import SandboxUnavailable

__all__ = [
    "RUN_UID_RANGE",
    "RunUsers",
    "choose_run_user",
    "clear_user_keys",
    "key_owners",
    "parse_user",
    "release_run_user",
    "reserved_uids",
    "session_keyring_preexec",
]

logger = logging.getLogger(__name__)

#: The uids (and gids) from which a root caller's sandbox user is drawn, one at random per run:
#: 2,000,000 to 2,999,999. It lies above the login accounts (1000-59999), systemd's dynamic and
#: home users (60001-65519), ``nobody`` (65534) and the first 28 default ``/etc/subuid`` ranges
#: (100000 + 65536 n); an id with an account, a group, a running process, keys, or inside any
#: subordinate range of ``/etc/subuid``/``/etc/subgid`` is never taken (:func:`choose_run_user`).
RUN_UID_RANGE = range(2_000_000, 3_000_000)

#: The ``keyctl`` syscall number by machine (libc has no wrapper of its own).
_KEYCTL_SYSCALLS = {"x86_64": 250, "amd64": 250, "aarch64": 219, "arm64": 219, "riscv64": 219}
_KEYCTL_GET_KEYRING_ID, _KEYCTL_JOIN_SESSION_KEYRING, _KEYCTL_CLEAR, _KEYCTL_INVALIDATE = 0, 1, 7, 21
_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING = -4, -5
#: Attempts at a free uid before giving up.
_UID_ATTEMPTS = 1000
#: uids handed to a run of this process and not yet released (runs may overlap in threads).
_RESERVED_UIDS: set[int] = set()
_RESERVED_LOCK = threading.Lock()
_random = random.SystemRandom()


def _keyctl() -> Callable[..., int] | None:
    """``keyctl(2)`` through libc's ``syscall``, or None on a machine whose number is not known."""
    number = _KEYCTL_SYSCALLS.get(platform.machine().lower())
    if number is None:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    call = libc.syscall
    call.restype = ctypes.c_long

    def keyctl(operation: int, *args: int) -> int:
        return int(call(ctypes.c_long(number), ctypes.c_long(operation), *(ctypes.c_long(a) for a in args)))

    return keyctl


def parse_user(user: str | None) -> tuple[int, int] | None:
    """The uid/gid of a spec's ``user`` (``"uid"`` or ``"uid:gid"``).

    Parameters
    ----------
    user : str or None
        The spec's ``user``.

    Returns
    -------
    (int, int) or None
        None when no user is given; the uid twice when no gid is.

    Examples
    --------
    >>> parse_user("2000:3000"), parse_user("2000"), parse_user(None)
    ((2000, 3000), (2000, 2000), None)
    """
    if not user:
        return None
    uid, _, gid = user.partition(":")
    return int(uid), int(gid or uid)


def key_owners() -> set[int]:
    """The uids that own keys (``/proc/key-users``).

    Returns
    -------
    set of int
        Empty when the file cannot be read.
    """
    try:
        text = Path("/proc/key-users").read_text(encoding="ascii")
    except OSError:
        return set()
    return {int(line.split(":")[0]) for line in text.splitlines() if line.split(":")[0].strip().isdigit()}


def reserved_uids() -> frozenset[int]:
    """The uids drawn by :func:`choose_run_user` in this process and not yet released.

    Returns
    -------
    frozenset of int
        A copy.
    """
    with _RESERVED_LOCK:
        return frozenset(_RESERVED_UIDS)


def _ids_in_use() -> tuple[set[int], set[int]]:
    """uids and gids of the running processes (real, effective, saved, file system) and of key owners."""
    uids: set[int] = set()
    gids: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as handle:
                for line in handle:
                    if line.startswith(b"Uid:"):
                        uids.update(int(v) for v in line.split()[1:])
                    elif line.startswith(b"Gid:"):
                        gids.update(int(v) for v in line.split()[1:])
                        break
        except (OSError, ValueError):
            continue
    uids.update(key_owners())
    return uids, gids


def _subordinate_ranges(path: str) -> list[range]:
    """The ranges of an ``/etc/subuid``-style file (``name:start:count`` lines)."""
    ranges = []
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    for line in lines:
        parts = line.strip().split(":")
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            ranges.append(range(int(parts[1]), int(parts[1]) + int(parts[2])))
    return ranges


def _has_account(uid: int) -> bool:
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(uid)
            return True
        except (KeyError, OverflowError):
            pass
    return False


def choose_run_user(candidates: range = RUN_UID_RANGE, *,
                    choice: Callable[[range], int] | None = None) -> tuple[int, int]:  # fmt: skip
    """A uid/gid (equal) for one run of a root caller, reserved until :func:`release_run_user`.

    It is drawn at random from ``candidates`` (:data:`RUN_UID_RANGE`) and redrawn while it is 0,
    has a passwd or group entry, is the uid or gid of a running process (``/proc/*/status``),
    owns keys (``/proc/key-users``), lies in a range of ``/etc/subuid`` or ``/etc/subgid`` (a
    user's containers may run as it), or is held by another run of this process.

    Parameters
    ----------
    candidates : range
        Where to draw from.
    choice : callable, optional
        Draws one id from a range (default: :class:`random.SystemRandom`).

    Returns
    -------
    (int, int)
        The uid and the gid (the same number).

    Raises
    ------
    SandboxUnavailable
        If no free id turns up in 1000 draws.
    """
    draw = choice or _random.choice
    uids, gids = _ids_in_use()
    subordinate = _subordinate_ranges("/etc/subuid") + _subordinate_ranges("/etc/subgid")
    with _RESERVED_LOCK:
        for _ in range(_UID_ATTEMPTS):
            uid = draw(candidates)
            if (uid == 0 or uid in uids or uid in gids or uid in _RESERVED_UIDS or any(uid in r for r in subordinate)
                    or _has_account(uid)):  # fmt: skip
                continue
            _RESERVED_UIDS.add(uid)
            return uid, uid
    raise SandboxUnavailable(f"no free uid found in {candidates.start}-{candidates.stop - 1} for the sandbox user")


def release_run_user(uid: int) -> None:
    """Let :func:`choose_run_user` hand out ``uid`` again (after its keys are cleared).

    Parameters
    ----------
    uid : int
        A uid drawn by :func:`choose_run_user`; any other is ignored.
    """
    with _RESERVED_LOCK:
        _RESERVED_UIDS.discard(uid)


def session_keyring_preexec() -> Callable[[], None]:
    """A ``preexec_fn`` part that gives the child (and the sandbox) a new, empty anonymous session keyring.

    Returns
    -------
    callable
        Takes no argument; best effort (a seccomp filter may refuse ``keyctl``, and a machine
        without a known ``keyctl`` number does nothing).
    """
    keyctl = _keyctl()

    def join() -> None:
        if keyctl is not None:
            keyctl(_KEYCTL_JOIN_SESSION_KEYRING, 0)  # best effort: a seccomp filter may refuse keyctl

    return join


def clear_user_keys(uid: int, gid: int, *, timeout_s: float = 10) -> bool:
    """Empty and invalidate the user and user-session keyrings of ``uid`` (as root).

    The user keyrings of a uid are kept by the user namespace (since Linux 5.3), not by its
    processes, so what a run stored there outlives it. Only the uid itself can reach them: a
    short-lived ``true`` is started as ``uid``/``gid`` and, before it executes, looks the two
    keyrings up, clears them and invalidates them; the kernel then frees them and every key
    linked only there. Nothing is started when ``/proc/key-users`` shows the uid owns no keys.
    A uid drawn for one run is never meant to serve another, so leftovers that escape this are
    unreachable by later runs anyway.

    Parameters
    ----------
    uid, gid : int
        The sandbox user of a finished run; never a uid with an account (its keys are its own).
    timeout_s : float
        How long the helper may take.

    Returns
    -------
    bool
        Whether nothing was left to clear or the keyrings were cleared.
    """
    if uid not in key_owners():
        return True
    keyctl = _keyctl()
    true = shutil.which("true") or "/bin/true"
    if keyctl is None or os.geteuid() != 0:
        return False

    def clear() -> None:  # runs as uid in the child: no logging, nothing heavy
        specials = (_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING)
        rings = [keyctl(_KEYCTL_GET_KEYRING_ID, special, 0) for special in specials]
        # By serial number: naming them again (-4, -5) after one is invalidated would create a new one.
        for ring in rings:
            if ring > 0:
                keyctl(_KEYCTL_CLEAR, ring)
                keyctl(_KEYCTL_INVALIDATE, ring)

    try:
        subprocess.run([true], user=uid, group=gid, extra_groups=[], preexec_fn=clear, env={}, cwd="/",
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s, check=True)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        logger.warning("could not clear the keyrings of the sandbox user %d: %s", uid, exc)
        return False
    return True


class RunUsers:
    """The sandbox user of each run in progress, by the identity of its spec object.

    The orchestrator (:func:`mleaudit.sandbox.runner.run_sandbox`) passes one spec object to a backend's
    ``sandbox_owner``, ``preflight`` and ``execute``, and a new one for every run; the uid drawn
    for a spec object is held here (with the object, so that its ``id`` is not reused
    meanwhile) until :meth:`end`. Safe to use from several threads.
    """

    def __init__(self) -> None:
        self._held: dict[int, tuple[Any, tuple[int, int]]] = {}
        self._lock = threading.Lock()

    def owner(self, spec: Any) -> tuple[int, int]:
        """The uid/gid the run of ``spec`` has on the host.

        A non-root caller's own; for a root caller the spec's ``user``, else a uid/gid drawn
        for this run (:func:`choose_run_user`). The first call for a spec object draws it; later
        calls with the same object get the same ids until :meth:`end`; a call after that draws
        a new one.

        Parameters
        ----------
        spec : SandboxSpec
            The run's spec (its ``user``).

        Returns
        -------
        (int, int)
            uid and gid.

        Raises
        ------
        SandboxUnavailable
            If no free uid can be drawn.
        """
        if os.geteuid() != 0:
            return os.geteuid(), os.getegid()
        given = parse_user(spec.user)
        if given is not None:
            return given
        with self._lock:
            held = self._held.get(id(spec))
            if held is not None and held[0] is spec:
                return held[1]
            owner = choose_run_user()
            self._held[id(spec)] = (spec, owner)
            return owner

    def drawn(self, spec: Any) -> bool:
        """Whether a uid is held for ``spec`` (drawn by :meth:`owner` and not yet ended).

        Parameters
        ----------
        spec : SandboxSpec
            The run's spec.

        Returns
        -------
        bool
        """
        with self._lock:
            held = self._held.get(id(spec))
            return held is not None and held[0] is spec

    def end(self, spec: Any) -> None:
        """Clear the keys of the uid drawn for ``spec`` (if any) and let it be drawn again.

        Call it once nothing of the run runs as that uid any more. A spec that has no drawn uid
        (a given ``user``, a non-root caller, a run already ended) is ignored.

        Parameters
        ----------
        spec : SandboxSpec
            The run's spec.
        """
        with self._lock:
            held = self._held.get(id(spec))
            if held is None or held[0] is not spec:
                return
            del self._held[id(spec)]
        uid, gid = held[1]
        clear_user_keys(uid, gid)
        release_run_user(uid)
