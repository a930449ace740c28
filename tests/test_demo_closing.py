"""The demo's closing note (issue 32): one-off start-up costs and how to use babelscore from the shell."""
from __future__ import annotations

import json

from engine.cli import _print_demo_closing
from engine.demo import one_off_lines


def test_one_off_lines_name_the_model_builds_and_the_slow_loads(tmp_path):
    run = tmp_path / "demo"
    run.mkdir()
    models = [{"model": "demo:tiny-chat", "stage": "judge", "load_s": 84.6}, {"model": "pypi:all-MiniLM-L6-v2", "stage": "score", "load_s": 0.4}]
    (run / "manifest.json").write_text(json.dumps({"models": models}))
    lines = one_off_lines(["tiny-bart", "tiny-chat"], 4.2, [run])
    assert lines[0].startswith("start-up costs of this run")
    assert "built the tiny models tiny-bart, tiny-chat in 4 s (first run only" in lines[1]
    assert lines[2].startswith("  loading demo:tiny-chat for judge: 85 s") and len(lines) == 3  # the 0.4 s load is no cost
    assert one_off_lines([], 0.0, [tmp_path / "absent"]) == []


def test_the_demo_ends_with_how_to_run_babelscore_from_the_shell(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # a fresh shell: .venv not activated
    _print_demo_closing([], 0.0, [])
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-3].startswith("next: use babelscore from the shell") and "not on your PATH" in out[-3]
    assert out[-2].strip().startswith("source ") and out[-2].split()[1].endswith("bin/activate")
    assert out[-1].strip().startswith("babelscore validate") and "examples/samples.jsonl" in out[-1]
