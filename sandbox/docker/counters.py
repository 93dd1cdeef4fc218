"""What the container's cgroups counted (OOM kills, refused forks, peak memory) and how it ended.

The daemon's own report is incomplete (``State.OOMKilled`` reflects only the main process on
some docker versions), so the counters of the container's memory and pids cgroups are read on
this host while it runs, best effort.
"""

from __future__ import annotations

import re
from pathlib import Path

def exit_status(code: int | None) -> tuple[int | None, int | None]:
    """(exit code, signal): docker reports a process ended by signal ``n`` as ``128 + n``."""
    if code is None:
        return None, None
    if 128 < code < 128 + 65:
        return code, code - 128
    return code, None



class CgroupCounters:
    """The container's OOM-kill and refused-fork counters, read on this host while it runs (best effort).

    The cgroup folders are found through ``/proc/<pid>/cgroup`` of the container's first
    process, or under the usual docker parents (``docker/<id>``, ``system.slice/docker-<id>.scope``),
    for cgroup v1 (``memory.oom_control``, ``pids.events``) and v2 (``memory.events``,
    ``pids.events``). A folder counts only if its path holds the container id, so a daemon on
    another machine (whose pids mean nothing here) reads as "not measured".
    """

    def __init__(self, container_id: str, pid: int | None, root: Path = Path("/sys/fs/cgroup")) -> None:
        self.container_id = container_id
        self.root = root
        self.oom_kills = 0
        self.pids_refused = 0
        self.memory_peak = 0
        self.files: dict[str, Path] = {}
        self._find(pid)

    def _candidates(self, pid: int | None) -> list[tuple[str, Path]]:
        found: list[tuple[str, Path]] = []
        unified = (self.root / "cgroup.controllers").exists()
        if pid:
            try:
                lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
            except OSError:
                lines = []
            for line in lines:
                _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
                rel = path.lstrip("/")
                if self.container_id not in rel:
                    continue
                names = controllers.split(",") if controllers else []
                for name in ("memory", "pids"):
                    if name in names:
                        found.append((name, self.root / name / rel))
                if not controllers and unified:
                    found += [("memory", self.root / rel), ("pids", self.root / rel)]
        cid = self.container_id
        for rel in (f"docker/{cid}", f"system.slice/docker-{cid}.scope"):
            found += [("memory", self.root / "memory" / rel), ("pids", self.root / "pids" / rel)]
            if unified:
                found += [("memory", self.root / rel), ("pids", self.root / rel)]
        return found

    def _find(self, pid: int | None) -> None:
        for controller, folder in self._candidates(pid):
            if controller == "memory" and "oom" not in self.files:
                for name in ("memory.oom_control", "memory.events"):
                    if (folder / name).is_file():
                        self.files["oom"] = folder / name
                        break
                for name in ("memory.max_usage_in_bytes", "memory.peak"):
                    if "memory_peak" not in self.files and (folder / name).is_file():
                        self.files["memory_peak"] = folder / name
            if controller == "pids" and "pids" not in self.files and (folder / "pids.events").is_file():
                self.files["pids"] = folder / "pids.events"

    @staticmethod
    def _field(path: Path, key: str) -> int | None:
        try:
            text = path.read_text()
        except OSError:
            return None
        match = re.search(rf"^{re.escape(key)}\s+(\d+)\s*$", text, re.M)
        return int(match.group(1)) if match else None

    def poll(self) -> None:
        """Read the counters and keep the highest values seen (the files vanish with the container)."""
        if "oom" in self.files:
            value = self._field(self.files["oom"], "oom_kill")
            if value is not None:
                self.oom_kills = max(self.oom_kills, value)
        if "pids" in self.files:
            value = self._field(self.files["pids"], "max")
            if value is not None:
                self.pids_refused = max(self.pids_refused, value)
        if "memory_peak" in self.files:
            try:
                self.memory_peak = max(self.memory_peak, int(self.files["memory_peak"].read_text().split()[0]))
            except (OSError, ValueError, IndexError):
                pass

    def describe(self) -> dict[str, str]:
        """The files read, by counter (``not found on this host`` when none)."""
        return {key: str(self.files[key]) if key in self.files else "not found on this host"
                for key in ("oom", "pids", "memory_peak")}  # fmt: skip

    def record_hits(self, limits: list[str], details: dict[str, str], *, oom_killed: bool, oom_events: int,
                    memory: int | None, pids: int | None) -> None:  # fmt: skip
        """Add the memory and process limits hit, with what was seen, to ``limits`` and ``details``.

        Parameters
        ----------
        limits, details : list of str, dict
            The limits hit so far and their details; extended in place.
        oom_killed : bool
            docker's ``State.OOMKilled``.
        oom_events : int
            The daemon's ``oom`` events for the container.
        memory, pids : int or None
            The spec's memory and process limits (quoted in the details).
        """
        if oom_killed or oom_events or self.oom_kills:
            limits.append("memory")
            seen = [f"{self.oom_kills} OOM kill(s) in the container's memory cgroup"] if "oom" in self.files else []
            seen.append(f"{oom_events} oom notification(s) from the daemon")
            seen.append(f"docker's State.OOMKilled {str(oom_killed).lower()}")
            if self.memory_peak:
                seen.append(f"peak usage {self.memory_peak:,} bytes")
            limit_text = f" (limit {memory:,} bytes)" if memory is not None else ""
            details["memory"] = "; ".join(seen) + limit_text
        if self.pids_refused:
            limits.append("pids")
            details["pids"] = (f"{self.pids_refused} fork(s) refused at the process limit of "
                               f"{pids} (pids cgroup)")  # fmt: skip
