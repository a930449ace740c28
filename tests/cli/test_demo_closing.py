"""The demo's closing note: one-off start-up costs and how to use babelscore from the shell."""
from __future__ import annotations

import json

from engine.cli.demo import print_demo_closing
from engine.demo import one_off_lines


def test_one_off_lines_name_the_model_builds_and_the_slow_loads(tmp_path):
    run = tmp_path / "demo"
    run.mkdir()
    models = [{"model": "demo:tiny-chat", "stage": "judge", "load_s": 84.6}, {"model": "pypi:all-MiniLM-L6-v2", "stage": "score", "load_s": 0.4}]
    (run / "manifest.json").write_text(json.dumps({"models": models}))
    lines = one_off_lines(["tiny-bart", "tiny-chat"], 4.2, [run])
    assert lines[0].startswith("start-up costs of this run")
    assert "built the tiny models tiny-bart, tiny-chat in 4 s wall (first run only" in lines[1]
    assert lines[2].startswith("  loading demo:tiny-chat for judge: 85 s wall") and len(lines) == 3  # the 0.4 s load is no cost
    assert one_off_lines([], 0.0, [tmp_path / "absent"]) == []
    warmed = one_off_lines([], 0.0, [], {"kde-kernels": 8.4, "figure-fonts": 0.3, "vllm-inspection": 13.2})
    assert len(warmed) == 3 and "KDE kernels" in warmed[1] and "vLLM" in warmed[2]  # the 0.3 s step did no one-off work


def test_the_background_warm_up_fills_the_caches_the_demo_would_fill_itself(tmp_path, monkeypatch):
    """A child process at low priority compiles the KDE kernels and fills vLLM's model-inspection cache
    (here in a fresh VLLM_CACHE_ROOT) and matplotlib's font list for the tiny chat model."""
    from engine.demo import build_demo_model, finish_warmup, start_warmup

    build_demo_model(tmp_path / "models", "tiny-chat")
    monkeypatch.setenv("VLLM_CACHE_ROOT", str(tmp_path / "vllm-cache"))
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    steps = finish_warmup(start_warmup(tmp_path / "models"), timeout_s=300)
    assert set(steps) == {"kde-kernels", "figure-fonts", "vllm-inspection"}, steps
    assert [p.name for p in (tmp_path / "vllm-cache" / "modelinfos").iterdir()] == [
        "vllm-model_executor-models-llama-LlamaForCausalLM.json"]
    assert any((tmp_path / "mpl").glob("fontlist-*.json"))
    # a second demo finds vLLM's cache filled: that step does nothing (and vllm is not imported)
    assert "vllm-inspection" not in finish_warmup(start_warmup(tmp_path / "models"), timeout_s=300)


def test_the_demo_ends_with_how_to_run_babelscore_from_the_shell(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # a fresh shell: .venv not activated
    print_demo_closing([], 0.0, [], {})
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-3].startswith("next: use babelscore from the shell") and "not on your PATH" in out[-3]
    assert out[-2].strip().startswith("source ") and out[-2].split()[1].endswith("bin/activate")
    assert out[-1].strip().startswith("babelscore validate") and "examples/samples.jsonl" in out[-1]
