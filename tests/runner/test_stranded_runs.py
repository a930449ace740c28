"""A run that stops before or while starting its executor is never stranded, and a run that is
really running is never taken over (CLI subprocesses; no cluster needed: nothing listens at the
address given, which the driver finds out before Ray is started).

- The Ray executor pointed at an address where nothing listens: exit 9 with one message naming
  the cause and the fix, the run directory says `failed` with that reason, the same command
  without --resume is refused naming the status and the exact command to run, and that command
  (here continued with the local executor) completes the run equal to a clean one.
- A second driver on a run whose driver is alive (held in a part) is refused, naming the holder.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.faults import HOLD_PART_ENV
from tests.support.run_compare import assert_runs_equal

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, cwd=REPO,
                          env=env or _env(), timeout=300, check=False)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BABELSCORE_TEST_", "RAY_"))}
    env["BABELSCORE_NO_PROGRESS"] = "1"
    return env


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("stranded")
    spec = importlib.util.spec_from_file_location("make_synthetic", REPO / "bench" / "make_synthetic.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    input_path = module.write_synthetic(folder / "in.parquet", 12)
    config = folder / "config.yaml"
    config.write_text(f"name: stranded\ninput: {input_path}\npart_size: 4\nstages: [score]\nscore:\n  scorers:\n"
                      "    - kind: lexical\n      metrics: [bleu]\n")
    reference = folder / "reference"
    done = _cli("run", str(config), "--out", str(reference))
    assert done.returncode == 0, done.stderr[-3000:]
    return config, reference


def test_unreachable_cluster_leaves_a_failed_run_that_the_named_command_continues(case, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    config, reference = case
    out = tmp_path / "run"
    command = ["run", str(config), "--out", str(out), "--executor", "ray", "--ray-address", "127.0.0.1:1"]
    proc = _cli(*command)
    assert proc.returncode == 9, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 2, proc.stderr[-3000:]
    assert "cannot reach the Ray cluster at 127.0.0.1:1" in errors[0] and "ray start --head" in errors[0]
    assert errors[1].endswith("--executor ray --ray-address 127.0.0.1:1 --resume")
    manifest = _manifest(out)
    assert manifest["status"] == "failed" and "cannot reach the Ray cluster" in manifest["failure"]["error"]

    again = _cli(*command)  # the same command: refused, saying why the run stopped and what to pass
    assert again.returncode == 5
    assert "status failed: ClusterError: cannot reach" in again.stderr
    assert again.stderr.rstrip().endswith("--ray-address 127.0.0.1:1 --resume")

    resumed = _cli("run", str(config), "--out", str(out), "--resume")  # the cluster is not needed to continue
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    manifest = _manifest(out)
    assert manifest["status"] == "complete" and "failure" not in manifest
    assert any("cannot reach" in str(h.get("error")) for h in manifest["failure_history"])
    assert_runs_equal(out, reference)


def test_a_second_driver_on_a_running_run_is_refused(case, tmp_path: Path) -> None:
    config, reference = case
    out = tmp_path / "run"
    first_part = sorted(_manifest(reference)["parts"])[0]
    marker = tmp_path / "held"
    env = {**_env(), HOLD_PART_ENV: first_part, HOLD_PART_ENV + "_MARKER": str(marker)}
    driver = subprocess.Popen([sys.executable, "-m", "engine.cli", "run", str(config), "--out", str(out)], cwd=REPO,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (marker.exists() and marker.read_text().strip()) and driver.poll() is None:
            assert time.monotonic() < deadline, "the first driver never reached its part"
            time.sleep(0.05)
        for resume in ([], ["--resume"]):
            second = _cli("run", str(config), "--out", str(out), *resume)
            assert second.returncode == 5, second.stderr[-3000:]
            assert f"being written by another babelscore process (pid {driver.pid} on host" in second.stderr
        assert _manifest(out)["status"] == "running"
    finally:
        marker.with_name(marker.name + ".release").write_text("go\n")
        _, stderr = driver.communicate(timeout=300)
    assert driver.returncode == 0, stderr[-3000:]
    assert_runs_equal(out, reference)
