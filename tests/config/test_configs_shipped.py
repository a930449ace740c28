"""The shipped configs load and validate (the paper config's hub ids and data files are not checked: that needs a hub)."""
from __future__ import annotations

from engine.config import load_config
from tests.support.paths import REPO


def test_demo_configs_load():
    demo = load_config(REPO / "configs" / "demo.yaml")
    assert demo.stages == ("noise", "perturb", "score", "judge", "calibrate", "report")
    assert len(demo.section("perturb").families) == 8 and demo.section("perturb").significance.pairs
    assert {s.kind for s in demo.section("score").scorers} == {"lexical", "embedding", "likelihood"}
    [judge] = demo.section("judge").judges
    assert judge.backend == "vllm" and judge.structured_strategies() == ("standard",) and "cot" in judge.strategies
    generate = load_config(REPO / "configs" / "demo_generate.yaml")
    assert len(generate.section("generate").generators) == 2
    sweep = load_config(REPO / "configs" / "demo_sweep.yaml")
    assert [s.params.all_layers for s in sweep.section("score").scorers if s.kind == "embedding"] == [True]


def test_paper_config_is_the_full_study():
    # Hub ids and the study's data files need a hub and the data: parse and validate only.
    paper = load_config(REPO / "configs" / "paper.yaml", check=False)
    assert paper.labels is not None and paper.labels.endswith("expert_labels.parquet")
    generators = paper.section("generate").generators
    assert [g.card for g in generators] == ["starcoder2", "granite-code", "codeqwen1.5", "codellama", "codegemma"]
    assert all(g.tensor_parallel_size == 1 and g.backend == "vllm" for g in generators)
    build = paper.section("build")
    assert build.files_per_language == 500 and set(build.languages) == {"en", "nl", "zh", "el", "pl"}
    embedding = [s.params for s in paper.section("score").scorers if s.kind == "embedding"]
    assert any(set(p.contexts) == {"none", "minimal", "full"} for p in embedding)


def test_finetune_demo_config_loads():
    finetune = load_config(REPO / "configs" / "demo_finetune.yaml")
    assert finetune.stages == ("finetune", "report")
    params = finetune.section("finetune")
    assert params.train_languages == ("el", "all") and params.eval_backend == "vllm" and params.structured
