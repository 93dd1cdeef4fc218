"""GPUs inside the sandbox, on machines that have them (``--run-gpu``)."""

from __future__ import annotations

import json
import shutil

import pytest

from mleaudit.sandbox.spec import GpuRequest

pytestmark = pytest.mark.gpu


def test_nvidia_smi_sees_the_gpus_in_the_local_sandbox(run_agent, bwrap):
    if shutil.which("nvidia-smi") is None:
        pytest.skip("nvidia-smi is not installed on this machine")
    result = run_agent("nvidia-smi -L; ls /dev | grep nvidia", runner=bwrap, gpus=GpuRequest())
    log = result.run_log.read_text()
    assert result.exit_code == 0, log
    assert "GPU 0" in log and "nvidiactl" in log
    record = json.loads(result.run_json.read_text())
    assert record["gpus_visible"] and record["gpus_visible"][0] == "0"


def test_one_gpu_of_several_is_all_the_sandbox_sees(run_agent, bwrap):
    if shutil.which("nvidia-smi") is None:
        pytest.skip("nvidia-smi is not installed on this machine")
    result = run_agent("ls /dev | grep -E '^nvidia[0-9]+$'", runner=bwrap, gpus=GpuRequest(count=1))
    assert result.run_log.read_text().split() == ["nvidia0"]
