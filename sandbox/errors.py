"""Named errors of the sandbox package; the CLI maps each to a clear message and exit code 2."""

from __future__ import annotations

__all__ = [
    "SandboxError",
    "SpecError",
    "SandboxUnavailable",
    "ImageNotFound",
    "GpuUnavailable",
    "RunDirError",
    "SandboxRunError",
]


class SandboxError(Exception):
    """Base class of every error the sandbox raises; the message names the file, field or tool.

    Parameters
    ----------
    message : str
        What went wrong.
    remedies : sequence of str
        What the user can do about it (a setting to change, another backend), one per item;
        shown under the message by the CLI and recorded in ``run.json``.
    """

    def __init__(self, message: str = "", *, remedies: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__(message)
        self.remedies = tuple(remedies)

    def describe(self) -> str:
        """The message followed by one ``  - remedy`` line per remedy."""
        lines = [str(self)] + [f"  - {r}" for r in self.remedies]
        return "\n".join(lines)


class SpecError(SandboxError):
    """A sandbox spec is invalid (unknown key, wrong type, unsafe mount); all problems at once."""


class SandboxUnavailable(SandboxError):
    """The isolation tool is missing or cannot work here (no bubblewrap, no docker daemon)."""


class ImageNotFound(SandboxError):
    """The docker image is not present locally (images are built locally, never pulled)."""


class GpuUnavailable(SandboxError):
    """GPUs were requested but the backend has no GPU runtime or devices."""


class RunDirError(SandboxError):
    """The run directory cannot be used (exists and is not empty, cannot be created)."""


class SandboxRunError(SandboxError):
    """The run broke after the agent started (recorded in ``run.json`` as ``status: error``)."""
