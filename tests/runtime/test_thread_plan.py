"""The thread plan (engine/runtime/thread_plan.py): thread pools wait passively unless the user
said otherwise, the plan is set before torch loads, and a run records it."""
from __future__ import annotations

import json
import os
import subprocess

from tests.support.paths import PYTHON, REPO
from tests.support.samples import make_sample, write_jsonl

PROBE = (
    "import json, sys\n"
    "{first}\n"
    "import engine, torch\n"
    "from engine.runtime import thread_plan\n"
    "import os; print(json.dumps({{'env': os.environ.get('OMP_WAIT_POLICY'), 'plan': thread_plan.plan()}}))\n"
)


def _probe(first: str = "", **env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "KMP_BLOCKTIME")}
    proc = subprocess.run([PYTHON, "-c", PROBE.format(first=first)], cwd=REPO, capture_output=True, text=True, check=True,
                          env={**clean, "PYTHONPATH": str(REPO), **env})
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_pools_wait_passively_and_the_plan_is_set_before_torch_loads():
    out = _probe()
    assert out["env"] == "PASSIVE"  # what libgomp reads when torch loads it
    assert out["plan"]["OMP_WAIT_POLICY"] == "PASSIVE" and out["plan"]["KMP_BLOCKTIME"] == "0"
    assert out["plan"]["loaded_before"] == []
    assert out["plan"]["torch_intra_op"] >= 1


def test_a_policy_the_user_set_is_kept():
    assert _probe(OMP_WAIT_POLICY="ACTIVE")["plan"]["OMP_WAIT_POLICY"] == "ACTIVE"


def test_torch_loaded_before_engine_is_named_in_the_plan():
    assert _probe(first="import torch")["plan"]["loaded_before"] == ["torch"]


def test_a_run_records_its_thread_plan(tmp_path):
    write_jsonl(tmp_path / "in.jsonl", [make_sample(f"f{i}/gen-a") for i in range(3)])
    config = tmp_path / "c.yaml"
    config.write_text("input: in.jsonl\nstages: [score]\nscore:\n  scorers: [{kind: lexical, metrics: [bleu]}]\n")
    proc = subprocess.run([PYTHON, "-m", "engine.cli", "run", str(config), "--out", str(tmp_path / "run")], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["thread_plan"]["OMP_WAIT_POLICY"] in ("PASSIVE", os.environ.get("OMP_WAIT_POLICY"))
    assert "loaded_before" in manifest["thread_plan"]
