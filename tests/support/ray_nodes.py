"""Ray nodes started the way users start them: `ray start` subprocesses, not ray.cluster_utils.

Each node is one `ray start` run under its own session (`setsid`), with its own `--temp-dir`
and ports picked free on this machine, so it clashes with no other Ray here. `ray start`
leaves its daemons (GCS, raylet, workers) in the process group it was started in, so a node
ends with one `kill -- -PGID` of its own group: never `ray stop`, which ends every Ray process
of the machine. The environment of every node and of the driver comes from the shell block of
docs/cluster.md marked `cluster-env` (`docs_environment`), so the test runs what the docs say.
"""
from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from contextlib import closing
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).with_name("ray"))
DOCS = REPO / "docs" / "cluster.md"
_ENV_BLOCK = re.compile(r"```bash cluster-env\n(.*?)```", re.S)
_TOKEN_BLOCK = re.compile(r"```bash cluster-token\n(.*?)```", re.S)
DOCS_TOKEN_PATH = "/shared/ray/auth_token"


def make_docs_token(token_file: Path) -> None:
    """Run the docs' `cluster-token` block, with `token_file` in place of the shared path."""
    match = _TOKEN_BLOCK.search(DOCS.read_text(encoding="utf-8"))
    if match is None:
        raise AssertionError(f"{DOCS} has no ```bash cluster-token block")
    assert token_file.name == Path(DOCS_TOKEN_PATH).name
    script = match.group(1).replace(str(Path(DOCS_TOKEN_PATH).parent), str(token_file.parent))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    subprocess.run(["bash", "-euc", script], check=True, env=env, timeout=60)


def free_ports(n: int) -> list[int]:
    """n ports free at this moment (held open together so they are distinct)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port_range(width: int) -> tuple[int, int]:
    """A run of `width` ports that are free now (for Ray's worker ports)."""
    for start in range(20000 + (os.getpid() % 200) * 100, 60000, 97):
        ok = True
        for port in range(start, start + width):
            with closing(socket.socket()) as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return start, start + width - 1
    raise RuntimeError("no free port range")


def docs_environment(token_file: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """The variables the docs' `cluster-env` block exports, with `TOKEN_FILE` standing for the
    shared token file; lines containing any string of `skip` are left out (a step removed)."""
    match = _ENV_BLOCK.search(DOCS.read_text(encoding="utf-8"))
    if match is None:
        raise AssertionError(f"{DOCS} has no ```bash cluster-env block")
    env: dict[str, str] = {}
    for line in match.group(1).splitlines():
        line = line.split("#", 1)[0].strip()
        if not line.startswith("export ") or any(s in line for s in skip):
            continue
        name, _, value = line[len("export "):].partition("=")
        env[name] = shlex.split(value.replace(DOCS_TOKEN_PATH, str(token_file)))[0] if value else ""
    return env


class RayNode:
    """One `ray start` node in its own process group; `end()` kills that group only."""

    def __init__(self, pgid: int, address: str, temp_dir: Path, output: str):
        self.pgid = pgid
        self.address = address
        self.temp_dir = temp_dir
        self.output = output

    @classmethod
    def start(cls, temp_dir: Path, env: dict[str, str], head_address: str | None = None, num_cpus: int = 1,
              resources: str | None = None, timeout: float = 180) -> "RayNode":
        temp_dir.mkdir(parents=True, exist_ok=True)
        gcs, node_manager, object_manager, agent, agent_grpc, runtime_env, metrics, client = free_ports(8)
        low, high = free_port_range(24)
        command = [RAY, "start", f"--temp-dir={temp_dir}", f"--num-cpus={num_cpus}", "--num-gpus=0",
                   "--node-ip-address=127.0.0.1", f"--node-manager-port={node_manager}",
                   f"--object-manager-port={object_manager}", f"--min-worker-port={low}", f"--max-worker-port={high}",
                   f"--dashboard-agent-listen-port={agent}", f"--dashboard-agent-grpc-port={agent_grpc}",
                   f"--runtime-env-agent-port={runtime_env}", f"--metrics-export-port={metrics}",
                   "--object-store-memory=80000000", "--disable-usage-stats", "--log-style=record"]
        if resources:
            command.append(f"--resources={resources}")
        if head_address is None:
            command += ["--head", f"--port={gcs}", "--include-dashboard=false", f"--ray-client-server-port={client}"]
            address = f"127.0.0.1:{gcs}"
        else:
            command.append(f"--address={head_address}")
            address = head_address
        # start_new_session: `ray start` and every daemon it leaves behind share one new group.
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
        node = cls(proc.pid, address, temp_dir, output)
        if proc.returncode != 0:
            node.end()
            raise NodeStartError(f"`ray start` exited {proc.returncode}:\n{output[-4000:]}")
        return node

    def pids(self) -> list[int]:
        import psutil

        found = []
        for proc in psutil.process_iter(["pid"]):
            try:
                if os.getpgid(proc.pid) == self.pgid:
                    found.append(proc.pid)
            except (ProcessLookupError, PermissionError):
                continue
        return found

    def raylet_pid(self) -> int:
        import psutil

        for pid in self.pids():
            try:
                if psutil.Process(pid).name() == "raylet":
                    return pid
            except psutil.NoSuchProcess:
                continue
        raise AssertionError(f"no raylet in process group {self.pgid}")

    def end(self) -> None:
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class NodeStartError(RuntimeError):
    pass
