"""The NVIDIA devices bound into a local sandbox for the spec's GPU request."""

from __future__ import annotations

import glob
import os

from mleaudit.sandbox.errors import GpuUnavailable
from mleaudit.sandbox.spec import SandboxSpec

#: What to do when the GPUs asked for are not there.
GPU_REMEDIES = (
    "run without --gpus (or ask for fewer, by index: --gpus 0,1)",
    "install the NVIDIA driver so that /dev/nvidiactl and /dev/nvidia0... exist (check with nvidia-smi)",
    "use --backend docker on a host whose daemon has the NVIDIA container runtime",
)
_NVIDIA_CONTROL = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")


def gpu_bind_args(spec: SandboxSpec) -> tuple[list[str], tuple[str, ...]]:
    """bubblewrap's arguments that expose the GPUs the spec asks for, and their indices.

    Raises
    ------
    GpuUnavailable
        If the machine has no NVIDIA devices, or not the ones asked for.
    """
    if spec.gpus is None:
        return [], ()
    devices = sorted(glob.glob("/dev/nvidia[0-9]*"), key=lambda p: int(p[len("/dev/nvidia"):]))
    if not devices or not os.path.exists("/dev/nvidiactl"):
        raise GpuUnavailable("GPUs were requested but this machine has no NVIDIA devices (/dev/nvidia*)",
                             remedies=GPU_REMEDIES)
    request = spec.gpus
    if request.device_ids:
        wanted = []
        for dev_id in request.device_ids:
            path = f"/dev/nvidia{dev_id}"
            if not dev_id.isdigit() or path not in devices:
                raise GpuUnavailable(f"gpus: device {dev_id!r} is not one of {', '.join(devices)} "
                                     "(the local backend takes device indices)", remedies=GPU_REMEDIES)  # fmt: skip
            wanted.append(path)
        devices = wanted
    elif request.count is not None:
        if request.count > len(devices):
            raise GpuUnavailable(f"gpus: {request.count} requested but this machine has {len(devices)}",
                                 remedies=GPU_REMEDIES)
        devices = devices[: request.count]
    args: list[str] = []
    for dev in [*_NVIDIA_CONTROL, *devices]:
        if os.path.exists(dev):
            args += ["--dev-bind", dev, dev]
    if os.path.isdir("/dev/nvidia-caps"):
        args += ["--dev-bind", "/dev/nvidia-caps", "/dev/nvidia-caps"]
    # NVML reads the PCI tree.
    args += ["--ro-bind", "/sys", "/sys"]
    return args, tuple(d[len("/dev/nvidia"):] for d in devices)
