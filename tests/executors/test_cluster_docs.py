"""docs/cluster.md's one-machine recipe names every port flag a second node needs: the same
flags tests/support/ray_nodes.py gives each node it starts (the Ray cluster tests run on them)."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"```bash cluster-one-machine\n(.*?)```", re.S)
_PORT_FLAG = re.compile(r"--[a-z-]*port\b")
_HEAD_ONLY = {"--port", "--ray-client-server-port"}  # the head's GCS and client server


def _second_node_command() -> str:
    block = _BLOCK.search((REPO / "docs" / "cluster.md").read_text(encoding="utf-8"))
    assert block is not None, "docs/cluster.md has no ```bash cluster-one-machine block"
    commands = block.group(1).replace("\\\n", " ").splitlines()
    second = [c for c in commands if c.startswith("ray start --address=")]
    assert len(second) == 1, commands
    return second[0]


def test_the_second_node_of_the_docs_names_every_port_the_test_nodes_set():
    command = _second_node_command()
    harness = set(_PORT_FLAG.findall((REPO / "tests" / "support" / "ray_nodes.py").read_text(encoding="utf-8"))) - _HEAD_ONLY
    assert len(harness) >= 8, harness
    assert set(_PORT_FLAG.findall(command)) - _HEAD_ONLY == harness
    assert "--temp-dir=" in command
    ports = [int(p) for p in re.findall(r"-port=(\d+)", command)]
    low, high = (int(re.search(rf"--{b}-worker-port=(\d+)", command).group(1)) for b in ("min", "max"))
    assert len(set(ports)) == len(ports) and not (low <= 19999 and high >= 10002)  # the head's default worker range
