"""A cluster the way users start one, following docs/cluster.md literally.

One cluster per module (its start is the slow part): a head (`ray start --head`) and one worker
node (`ray start --address=...`), each a `ray start` subprocess in its own session, temp dir and
ports (tests/support/ray_nodes.py), with the environment of the docs' `cluster-env` block and the token
made by the docs' `cluster-token` block. Every process sees a home whose `~/.ray/auth_token`
exists, as it does for anyone who ran a local Ray before: there `ray start --head` turns token
authentication on by itself, so a node or driver without the docs' environment is refused.
The driver is `babelscore run --executor ray --ray-address HEAD` (a CLI subprocess) on a config
with a model stage (a tiny likelihood model); its output must equal the local run's as
`babelscore diff` sees it, with parts computed on both nodes. Nodes end with a kill of their
own process group, never `ray stop`.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")
pytest.importorskip("torch")
pytest.importorskip("transformers")

from engine.faults import HOLD_PART_ENV  # noqa: E402
from tests.support.ray_nodes import NodeStartError, RayNode, docs_environment, make_docs_token  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _base_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "BABELSCORE_TEST_"))}
    env.update(HOME=str(home), HF_HUB_OFFLINE="1", BABELSCORE_NO_PROGRESS="1", PYTHONPATH=str(REPO))
    return env


class Cluster:
    def __init__(self, folder: Path):
        self.folder = folder
        self.home = folder / "home"
        (self.home / ".ray").mkdir(parents=True)
        # What a local `ray.init()` leaves in a user's home: a token of its own.
        (self.home / ".ray" / "auth_token").write_text(secrets.token_hex(32))
        self.token = folder / "shared" / "ray" / "auth_token"
        make_docs_token(self.token)
        self.env = {**_base_env(self.home), **docs_environment(self.token)}
        self.nodes: list[RayNode] = []
        self.temp_dirs: list[Path] = []
        self.head = self.start(None)
        self.worker = self.start(self.head.address)

    def start(self, head_address: str | None, env: dict[str, str] | None = None) -> RayNode:
        # Ray's socket paths live under the temp dir and may not exceed 107 bytes: a short one.
        temp_dir = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
        self.temp_dirs.append(temp_dir)
        node = RayNode.start(temp_dir, env or self.env, head_address=head_address)
        self.nodes.append(node)
        return node

    def end(self) -> None:
        for node in reversed(self.nodes):
            node.end()
        for temp_dir in self.temp_dirs:
            shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    started = Cluster(tmp_path_factory.mktemp("user-cluster"))
    try:
        yield started
    finally:
        started.end()


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory, cluster: Cluster) -> tuple[Path, Path]:
    """A config with a model stage and its local run (the reference)."""
    from engine.testing.tiny_lm import build_tiny_bart

    folder = tmp_path_factory.mktemp("user-cluster-case")
    model = build_tiny_bart(folder / "tiny-bart")
    spec_path = REPO / "bench" / "make_synthetic.py"
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_synthetic", spec_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    input_path = module.write_synthetic(folder / "in.parquet", 16)
    config = folder / "config.yaml"
    config.write_text(f"name: user-cluster\ninput: {input_path}\npart_size: 4\nstages: [score]\nscore:\n  scorers:\n"
                      f"    - kind: likelihood\n      model: {model}\n      directions: [forward]\n")
    local = babelscore(cluster.env, "run", str(config), "--out", str(folder / "local"))
    assert local.returncode == 0, local.stderr[-3000:]
    return config, folder / "local"


def babelscore(env: dict[str, str], *args: str, timeout: float = 400) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=timeout, check=False)


def _manifest(run: Path) -> dict[str, Any]:
    return json.loads((run / "manifest.json").read_text(encoding="utf-8"))


def _ray_run(env: dict[str, str], config: Path, out: Path, address: str, *extra: str) -> subprocess.CompletedProcess:
    return babelscore(env, "run", str(config), "--out", str(out), "--executor", "ray", "--ray-address", address,
                      "--ray-actors-per-model", "2", *extra)


def _one_message(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR engine.cli:")]
    assert len(errors) == 2 and errors[1].startswith("ERROR engine.cli: next: "), proc.stderr[-3000:]
    return errors[0]


def test_docs_recipe_runs_on_both_nodes_and_equals_local(cluster: Cluster, case, tmp_path: Path) -> None:
    config, local = case
    out = tmp_path / "ray"
    proc = _ray_run(cluster.env, config, out, cluster.head.address)
    assert proc.returncode == 0, proc.stderr[-4000:]
    manifest = _manifest(out)
    placements = manifest["placements"]
    assert sorted(placements) == sorted(manifest["parts"])  # every committed part says where it ran
    assert len({p["node_id"] for p in placements.values()}) == 2, placements  # on the head and on the worker
    assert all(p["attempts"] == 1 for p in placements.values())
    diff = babelscore(cluster.env, "diff", str(out), str(local))
    assert diff.returncode == 0, diff.stdout[-3000:]


def test_without_the_docs_auth_step_the_node_and_the_driver_are_refused(cluster: Cluster, case, tmp_path: Path) -> None:
    config, _ = case
    no_auth = {**_base_env(cluster.home), **docs_environment(cluster.token, skip=("RAY_AUTH",))}
    assert not any(k.startswith("RAY_AUTH") for k in no_auth)
    with pytest.raises(NodeStartError, match="InvalidAuthToken"):
        cluster.start(cluster.head.address, env=no_auth)
    out = tmp_path / "run"
    proc = _ray_run(no_auth, config, out, cluster.head.address)
    assert proc.returncode == 9, proc.stderr[-3000:]
    message = _one_message(proc)
    assert "authentication token" in message and "RAY_AUTH_MODE=token" in message
    assert proc.stderr.count("gcs_client.cc") <= 1, proc.stderr[-3000:]  # asked once, not retried for 20 s
    manifest = _manifest(out)
    assert manifest["status"] == "failed" and "authentication token" in manifest["failure"]["error"]
    # The fixed environment and the command the message names continue the run.
    hint = proc.stderr.split("next: ")[-1]
    assert hint.rstrip().endswith(f"--ray-address {cluster.head.address} --resume"), hint
    again = _ray_run(cluster.env, config, out, cluster.head.address, "--resume")
    assert again.returncode == 0, again.stderr[-3000:]
    assert _manifest(out)["status"] == "complete" and "failure" not in _manifest(out)


# A driver of another Ray release: the version it reports to the cluster is changed, nothing else.
_OTHER_RAY = """
import sys
import ray._private.utils as utils
real = utils.compute_version_info
utils.compute_version_info = lambda: ("2.0.0", real()[1])
from engine.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_driver_of_another_ray_version_gets_one_message(cluster: Cluster, case, tmp_path: Path) -> None:
    config, _ = case
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-c", _OTHER_RAY, "run", str(config), "--out", str(out), "--executor", "ray",
                           "--ray-address", cluster.head.address], capture_output=True, text=True, cwd=REPO,
                          env=cluster.env, timeout=300, check=False)
    assert proc.returncode == 9, proc.stderr[-3000:]
    message = _one_message(proc)
    assert "runs another Ray or Python version" in message and "Ray: 2.0.0" in message, message
    assert _manifest(out)["status"] == "failed"


def _hold_all(env: dict[str, str], local: Path, marker: Path) -> tuple[dict[str, str], list[str]]:
    """The driver's environment with every part held on its first attempt (engine/faults.py)."""
    keys = sorted(_manifest(local)["parts"])
    return {**env, HOLD_PART_ENV: ",".join(keys), HOLD_PART_ENV + "_MARKER": str(marker)}, keys


def _held_pids(marker: Path, n: int) -> dict[int, int]:
    """{position of the part: pid} of the parts holding now."""
    found = {}
    for i in range(n):
        path = marker.with_name(f"{marker.name}-{i}")
        if path.exists() and path.read_text().strip():
            found[i] = int(path.read_text())
    return found


def _release(marker: Path, n: int) -> None:
    for i in range(n):
        marker.with_name(f"{marker.name}-{i}.release").write_text("go\n")


def _wait_for(condition, what: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _on_node(pid: int, node: RayNode) -> bool:
    """Whether process `pid` was started by that node's raylet (a worker's parent is its raylet)."""
    return node.raylet_pid() in {p.pid for p in psutil.Process(pid).parents()}


def test_worker_node_lost_mid_run_completes_exactly_once(cluster: Cluster, case, tmp_path: Path) -> None:
    config, local = case
    marker = tmp_path / "held"
    env, keys = _hold_all(cluster.env, local, marker)
    out = tmp_path / "run"
    driver = subprocess.Popen([sys.executable, "-m", "engine.cli", "run", str(config), "--out", str(out), "--executor",
                               "ray", "--ray-address", cluster.head.address, "--ray-actors-per-model", "2"],
                              cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # One actor per node (each has one CPU), each holding the first part it got.
        _wait_for(lambda: len(_held_pids(marker, len(keys))) == 2 or driver.poll() is not None, "two held parts")
        held = _held_pids(marker, len(keys))
        on_worker = [i for i, pid in held.items() if _on_node(pid, cluster.worker)]
        assert len(on_worker) == 1, held
        os.kill(cluster.worker.raylet_pid(), signal.SIGKILL)  # the worker node's raylet: the node is lost
        _release(marker, len(keys))
        _, stderr = driver.communicate(timeout=400)
    finally:
        if driver.poll() is None:
            driver.kill()
        cluster.worker.end()  # what is left of that node (its agents) ends with its group
    assert driver.returncode == 0, stderr[-4000:]
    manifest = _manifest(out)
    assert manifest["status"] == "complete" and not manifest["failed_parts"]
    assert sorted(manifest["parts"]) == keys  # lost 0, duplicated 0 (one marker per part key)
    lost = keys[on_worker[0]]
    assert manifest["placements"][lost]["attempts"] == 2
    on_head = keys[next(i for i in held if i not in on_worker)]
    # Redone on the node that is left (the head), where the other held part ran.
    assert manifest["placements"][lost]["node_id"] == manifest["placements"][on_head]["node_id"]
    assert babelscore(cluster.env, "diff", str(out), str(local)).returncode == 0


def test_head_lost_mid_run_stops_cleanly_and_resume_on_a_new_cluster_completes(cluster: Cluster, case,
                                                                                tmp_path: Path) -> None:
    config, local = case
    marker = tmp_path / "held"
    env, keys = _hold_all(cluster.env, local, marker)
    out = tmp_path / "run"
    driver = subprocess.Popen([sys.executable, "-m", "engine.cli", "run", str(config), "--out", str(out), "--executor",
                               "ray", "--ray-address", cluster.head.address], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: _held_pids(marker, len(keys)) or driver.poll() is not None, "a held part")
        cluster.head.end()  # the head node, GCS included
        _, stderr = driver.communicate(timeout=300)
    finally:
        if driver.poll() is None:
            driver.kill()
        _release(marker, len(keys))
    assert driver.returncode == 9, stderr[-4000:]
    assert "Traceback" not in stderr, stderr[-4000:]
    assert "lost the Ray cluster" in stderr and "--resume" in stderr.split("next: ")[-1]
    manifest = _manifest(out)
    assert manifest["status"] == "failed" and "lost the Ray cluster" in manifest["failure"]["error"]
    new_head = cluster.start(None)
    cluster.head = new_head
    again = _ray_run(cluster.env, config, out, new_head.address, "--resume")
    assert again.returncode == 0, again.stderr[-4000:]
    assert _manifest(out)["status"] == "complete"
    assert sorted(_manifest(out)["parts"]) == keys
    assert babelscore(cluster.env, "diff", str(out), str(local)).returncode == 0
