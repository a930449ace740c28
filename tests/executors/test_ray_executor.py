"""Ray executor on a local Ray instance: same output as the local executor, retries, failures.

One Ray session serves the whole module (starting Ray costs ~10 s here). Reference outputs come
from the local executor, which runs the same `execute_part` in-process; what is under test is
the distribution: routing, actor pools, retries, exactly-once commits.
"""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from engine import runner  # noqa: E402
from engine.config import load_config  # noqa: E402
from engine.errors import ConfigError, PartFailedError  # noqa: E402
from engine.executors.params import RayOptions  # noqa: E402
from engine.executors.ray import RayExecutor  # noqa: E402
from engine.faults import KILL_PART_ENV  # noqa: E402
from engine.io.rundir import RunDirectory  # noqa: E402
from engine.part_execution import PartTask  # noqa: E402
from engine.records import SCORE_KEY, SCORE_SCHEMA  # noqa: E402
from engine.stages.plan import build_plan  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
N_SAMPLES = 40
PART_SIZE = 5  # 8 parts of one file (5 generators) each


def load_make_synthetic() -> Any:
    spec = importlib.util.spec_from_file_location("make_synthetic", REPO / "bench" / "make_synthetic.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_config(folder: Path, input_path: Path, scorers: str = "    - kind: lexical\n", part_size: int = PART_SIZE) -> Path:
    path = folder / "config.yaml"
    path.write_text(f"name: ray-test\ninput: {input_path}\npart_size: {part_size}\nstages: [score]\nscore:\n  scorers:\n{scorers}")
    return path


def lexical_key(config_path: Path, index: int) -> str:
    """Key of lexical part `index` as the planner names it."""
    return build_plan(load_config(config_path)).bound("score").parts(index + 1)[index].key


def sorted_rows(run_dir: Path) -> list[dict[str, Any]]:
    table = runner.read_scores(str(run_dir))
    rows = table.sort_by([(k, "ascending") for k in SCORE_KEY]).to_pylist()
    keys = [tuple(r[k] for k in SCORE_KEY) for r in rows]
    assert len(keys) == len(set(keys)), "duplicate score keys"
    return rows


def assert_same_rows(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = dict(g), dict(w)
        gv, wv = g.pop("value"), w.pop("value")
        assert g == w
        assert (math.isnan(gv) and math.isnan(wv)) or gv == wv, (g, gv, wv)


def run_with(monkeypatch: pytest.MonkeyPatch, executor: Any, config_path: Path, out: Path, resume: bool = False) -> None:
    """A whole run (execute_run) with our executor instance instead of the one it would build."""
    monkeypatch.setattr(runner, "make_executor", lambda name, address=None, options=None: executor)
    runner.execute_run(load_config(config_path), str(out), resume=resume, executor_name="ray")


@pytest.fixture(scope="module")
def ray_session():
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024 * 1024, logging_level="WARNING")
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def lexical_case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A lexical config on a synthetic input, and its output under the local executor."""
    folder = tmp_path_factory.mktemp("lexical")
    input_path = load_make_synthetic().write_synthetic(folder / "in.parquet", N_SAMPLES)
    config = write_config(folder, input_path)
    runner.execute_run(load_config(config), str(folder / "local"), executor_name="local")
    return config, sorted_rows(folder / "local")


def test_options_are_validated() -> None:
    with pytest.raises(ConfigError, match="max_retries: got -1"):
        RayOptions(max_retries=-1)
    with pytest.raises(ConfigError, match="actors_per_model: got 0"):
        RayOptions(actors_per_model=0)
    with pytest.raises(TypeError):
        RayExecutor(options=RayOptions(), max_retries=1)


def test_ray_output_equals_local(ray_session, lexical_case, tmp_path, monkeypatch) -> None:
    config, want = lexical_case
    executor = RayExecutor()
    run_with(monkeypatch, executor, config, tmp_path / "ray")
    assert_same_rows(sorted_rows(tmp_path / "ray"), want)
    manifest = RunDirectory.open_existing(tmp_path / "ray").manifest
    assert manifest.status == "complete" and not manifest.failed_parts
    assert len(executor.placements) == 8 and not any(p["actor"] for p in executor.placements.values())
    assert ray.is_initialized(), "close() must not shut down a Ray session it did not start"


def test_killed_task_is_retried(ray_session, lexical_case, tmp_path, monkeypatch) -> None:
    config, want = lexical_case
    marker = tmp_path / "killed"
    key = lexical_key(config, 3)
    monkeypatch.setenv(KILL_PART_ENV, key)
    monkeypatch.setenv(KILL_PART_ENV + "_MARKER", str(marker))
    executor = RayExecutor(max_retries=1)
    run_with(monkeypatch, executor, config, tmp_path / "ray")
    assert marker.exists(), "the fault was not injected"
    assert executor.placements[key]["attempts"] == 2
    assert all(p["attempts"] == 1 for k, p in executor.placements.items() if k != key)
    assert_same_rows(sorted_rows(tmp_path / "ray"), want)


def test_retries_are_bounded_then_resume_completes(ray_session, lexical_case, tmp_path, monkeypatch) -> None:
    config, want = lexical_case
    key = lexical_key(config, 5)
    monkeypatch.setenv(KILL_PART_ENV, key)
    monkeypatch.setenv(KILL_PART_ENV + "_MARKER", str(tmp_path / "killed"))
    with pytest.raises(PartFailedError, match=key):
        run_with(monkeypatch, RayExecutor(max_retries=0), config, tmp_path / "ray")
    manifest = RunDirectory.open_existing(tmp_path / "ray").manifest
    assert manifest.status == "failed"
    assert list(manifest.failed_parts) == [key]
    assert manifest.failed_parts[key]["attempts"] == 1
    assert key not in manifest.parts and len(manifest.parts) == 7
    # The marker now exists, so the part survives this time; committed parts are kept.
    executor = RayExecutor()
    run_with(monkeypatch, executor, config, tmp_path / "ray", resume=True)
    assert list(executor.placements) == [key]
    assert_same_rows(sorted_rows(tmp_path / "ray"), want)


def test_exception_in_a_part_fails_it_at_once(ray_session, lexical_case, tmp_path) -> None:
    config_path, _ = lexical_case
    plan = build_plan(load_config(config_path))
    run = runner.open_run(plan, str(tmp_path / "run"), resume=False)
    runner.prepare(run, plan)
    (tmp_path / "run" / "samples" / "part-00002.parquet").unlink()
    executor = RayExecutor(max_retries=2)
    runner.run_part_stage(run, plan, plan.bound("score"), executor)
    failed = run.manifest.failed_parts
    key = lexical_key(config_path, 2)
    assert list(failed) == [key]
    assert failed[key]["attempts"] == 1  # a deterministic error is not retried
    assert "FileNotFoundError" in failed[key]["error"]
    assert "filesystem" in failed[key]["error"]
    assert len(run.manifest.parts) == 7


def _model_parts(config_path: Path, n_parts: int) -> list[PartTask]:
    """Lexical parts dressed as parts of a model: they must go through an actor pool."""
    lexical = build_plan(load_config(config_path)).bound("score").parts(n_parts)
    return [PartTask("score", "lexical-actor", p.index, model_key="fake-model", entry=p.entry, directory=p.directory,
                     params=p.params)
            for p in lexical]


def test_killed_actor_is_replaced_and_only_its_part_is_charged(ray_session, lexical_case, tmp_path, monkeypatch) -> None:
    config_path, _ = lexical_case
    plan = build_plan(load_config(config_path))
    run = runner.open_run(plan, str(tmp_path / "run"), resume=False)
    runner.prepare(run, plan)
    parts = _model_parts(config_path, 8)
    monkeypatch.setenv(KILL_PART_ENV, "score/lexical-actor/00002")
    monkeypatch.setenv(KILL_PART_ENV + "_MARKER", str(tmp_path / "killed"))
    commits: list[str] = []
    failures: list[tuple[str, str, int]] = []
    executor = RayExecutor(actors_per_model=1, max_in_flight_per_actor=3, max_retries=1)
    executor.run_parts(
        str(run.root), plan, parts, {},
        lambda part, table: (commits.append(part.key), run.commit_part(part.key, part.relative_path, table, SCORE_SCHEMA)),
        lambda part, error, attempts: failures.append((part.key, error, attempts)),
        run.manifest.part_rows,
    )
    assert (tmp_path / "killed").exists()
    assert not failures
    assert sorted(commits) == sorted(p.key for p in parts)  # each part committed exactly once
    assert executor.models_started == ["fake-model"]
    assert all(p["actor"] for p in executor.placements.values())
    # Exactly one attempt is charged: to the earliest part the dead actor had not returned. That
    # is the killed part, or the part just before it when the kill came before that part's
    # result left the actor (then its result was lost too and it really had to run again).
    # Parts queued behind it were resubmitted without being charged.
    charged = [k for k, p in executor.placements.items() if p["attempts"] == 2]
    assert charged in (["score/lexical-actor/00002"], ["score/lexical-actor/00001"])
    assert all(p["attempts"] == 1 for k, p in executor.placements.items() if k not in charged)
    pids = {p["pid"] for p in executor.placements.values()}
    assert len(pids) == 2  # the first actor and its replacement


@pytest.fixture(scope="module")
def tiny_bart(tmp_path_factory: pytest.TempPathFactory) -> str:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from engine.testing.tiny_lm import build_tiny_bart

    return build_tiny_bart(tmp_path_factory.mktemp("tiny-bart"))


@pytest.mark.slow
def test_ray_with_a_model_equals_local(ray_session, tiny_bart, tmp_path, monkeypatch) -> None:
    """Lexical tasks and a likelihood model's actor pool in one run; the output is the local one."""
    input_path = load_make_synthetic().write_synthetic(tmp_path / "in.parquet", 20)
    scorers = f"    - kind: lexical\n    - kind: likelihood\n      model: {tiny_bart}\n      directions: [forward, avg]\n"
    config = write_config(tmp_path, input_path, scorers, part_size=5)
    runner.execute_run(load_config(config), str(tmp_path / "local"), executor_name="local")
    executor = RayExecutor(actors_per_model=1)
    run_with(monkeypatch, executor, config, tmp_path / "ray")
    assert_same_rows(sorted_rows(tmp_path / "ray"), sorted_rows(tmp_path / "local"))
    lexical_prefix = lexical_key(config, 0).rsplit("/", 1)[0] + "/"
    model_parts = {k: p for k, p in executor.placements.items() if not k.startswith(lexical_prefix)}
    assert len(model_parts) == 4 and all(p["actor"] for p in model_parts.values())
    assert len({p["pid"] for p in model_parts.values()}) == 1  # one actor loaded the model once
    assert len(executor.models_started) == 1
