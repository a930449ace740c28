"""Which tests are `heavy`: the one place that says so (conftest.py applies it).

`make test-fast` runs `pytest -m "not heavy"`: unit tests and tiny in-process models. A test is
heavy when it runs a model beyond a tiny in-process one, starts vLLM or Ray, runs the sandboxed
toolchains, a whole `babelscore run` or a CLI subprocess, resolves packages, dry-runs the Makefile,
drives a browser, or takes more than about 10 s on its own. `slow` and `gpu` tests are heavy too.

Every test module is named in exactly one of HEAVY_MODULES and FAST_MODULES, and every entry of
HEAVY_TESTS names a test function of a fast module: tests/test_tiers.py fails otherwise, so a new
module is classified when it is added and a renamed test does not drop silently into the fast tier.
"""
from __future__ import annotations

HEAVY_MODULES = frozenset({
    "test_bench.py",  # `babelscore bench` in a subprocess, with measured runs
    "test_bitwise.py",  # whole runs compared byte for byte
    "test_commit_markers.py",
    "test_cuda_sim.py",  # simulated CUDA in subprocesses, vLLM
    "test_data_loss.py",
    "test_demo_data.py",  # subprocesses over the embedded data
    "test_demo_end_to_end.py",  # the demo run and Chromium
    "test_disk_full.py",
    "test_fault_attacks.py",
    "test_finetune_judge.py",
    "test_finetune_resume.py",
    "test_gpu_setup.py",  # pip resolution and Makefile dry runs
    "test_install_sets.py",  # pip resolution
    "test_invariance.py",
    "test_judge_faults.py",
    "test_judge_resume.py",
    "test_judge_vllm.py",
    "test_judge_vllm_serve.py",
    "test_model_files.py",
    "test_model_residency.py",
    "test_package_data.py",  # builds and installs the wheel
    "test_ray_cluster.py",
    "test_ray_executor.py",
    "test_ray_gpu_placement.py",
    "test_readme.py",  # the walk-through in a fresh shell
    "test_report_browser.py",  # Chromium
    "test_report_sweep.py",
    "test_resume.py",
    "test_resume_executors.py",
    "test_reuse.py",
    "test_reuse_generate.py",
    "test_ray_user_cluster.py",  # real `ray start` nodes
    "test_ray_head_check.py",  # imports ray for the executor's loop
    "test_bench_scripts.py",  # every bench script at a tiny size, in subprocesses
    "test_thread_plan.py",  # fresh interpreters and a run
    "test_ray_resources.py",  # a tiny FIM model and the demo config
    "test_vllm_cuda_startup.py",  # downloads the CUDA vLLM wheel, runs its start-up code
    "test_judge_budget.py",  # judge runs against a local HTTP server, one killed
    "test_judge_concurrency.py",  # a judge run against a local HTTP server
    "test_judge_forecast.py",  # forecasts with tiny tokenizers and runs
    "test_stranded_runs.py",  # CLI runs in subprocesses
    "test_roundtrip_attacks.py",  # the sandboxed toolchains, from here on
    "test_roundtrip_crashes.py",
    "test_roundtrip_crossing.py",
    "test_roundtrip_probe.py",
    "test_roundtrip_unrun_tests.py",
    "test_roundtrip_usr.py",
    "test_roundtrip_large.py",
    "test_roundtrip_concurrent.py",
    "test_roundtrip_exceptions.py",
    "test_roundtrip_values.py",
    "test_roundtrip_bounds.py",
    "test_roundtrip_escape.py",
    "test_roundtrip_forgery.py",
    "test_roundtrip_languages.py",
    "test_roundtrip_sandbox.py",
    "test_roundtrip_stage.py",
    "test_roundtrip_tasks.py",
    "test_roundtrip_verdicts.py",
    "test_run_core.py",
    "test_rundiff.py",
    "test_signatures.py",
    "test_throughput.py",
    "test_toy_stage.py",  # under both executors, Ray included
    "test_user_errors.py",  # CLI subprocesses and runs
    "test_validate.py",
    "test_vllm_worker_fault.py",
})

FAST_MODULES = frozenset({
    "test_cluster_docs.py",
    "test_cluster_messages.py",
    "test_judge_study_reproduce.py",
    "test_agreement.py",
    "test_build.py",
    "test_calibrate_run.py",
    "test_calibrate_stage.py",
    "test_config.py",
    "test_config_reference.py",
    "test_config_paths.py",
    "test_configs_shipped.py",
    "test_model_entry.py",
    "test_context.py",
    "test_convert.py",
    "test_default_seed.py",
    "test_demo_closing.py",
    "test_dtype.py",
    "test_embedding_compat.py",
    "test_embedding_scorer.py",
    "test_extract.py",
    "test_finetune_attacks.py",
    "test_finetune_data.py",
    "test_finetune_table.py",
    "test_generate_backends.py",
    "test_gpu.py",
    "test_isolation.py",
    "test_judge_analysis.py",
    "test_judge_corpus.py",
    "test_judge_http.py",
    "test_judge_parse.py",
    "test_judge_prompts.py",
    "test_judge_stage.py",
    "test_judge_study_layout.py",
    "test_judge_taxonomy_facts.py",
    "test_judge_templates.py",
    "test_judge_user_pack.py",
    "test_kde.py",
    "test_kernels_matching.py",
    "test_lexical.py",
    "test_likelihood.py",
    "test_manifest.py",
    "test_meteor_wordnet.py",
    "test_model_registry.py",
    "test_nf_reasons.py",
    "test_packing.py",
    "test_noise.py",
    "test_perturb.py",
    "test_prime_rule.py",
    "test_private_names.py",
    "test_progress.py",
    "test_prompts.py",
    "test_report.py",
    "test_report_figures.py",
    "test_roundtrip_report.py",
    "test_roundtrip_scores.py",
    "test_roundtrip_wire.py",
    "test_runtime.py",
    "test_sampling.py",
    "test_significance.py",
    "test_stage_attributes.py",
    "test_stage_boundaries.py",
    "test_summary.py",
    "test_tiers.py",
    "test_tiny_models.py",
    "test_vllm_guard.py",
})

# Heavy tests inside fast modules, as "module::function" (every parametrization of it).
HEAVY_TESTS = frozenset({
    "test_calibrate_run.py::test_streamed_calibration_equals_the_in_memory_fit",
    "test_demo_closing.py::test_the_background_warm_up_fills_the_caches_the_demo_would_fill_itself",  # a child process: numba and vLLM
    "test_embedding_compat.py::test_equals_bert_score",  # MiniLM through bert_score and through us
    "test_embedding_compat.py::test_multiple_references_take_max_per_score",
    "test_embedding_compat.py::test_all_layers_equal_bert_score",
    "test_embedding_scorer.py::test_fast_bfloat16_close_to_float32",
    "test_embedding_scorer.py::test_scores_do_not_depend_on_batching",
    "test_embedding_scorer.py::test_baseline_without_the_layer_row_is_a_config_error",
    "test_generate_backends.py::test_vllm_and_transformers_give_identical_greedy_outputs",  # vLLM
    "test_isolation.py::test_roundtrip_out_of_memory_at_batch_size_one_is_retried_then_a_failed_part",  # a whole run
    "test_kde.py::test_thresholds_are_the_same_bits_compiled_afresh_and_loaded_from_the_cache_in_any_thread_count",  # numba compiles in subprocesses
    "test_likelihood.py::test_batch_composition_and_order_invariance",  # many batchings of three models
    "test_model_registry.py::test_model_cap_holds_one_model_at_a_time_and_intervals_never_overlap",
    "test_packing.py::test_minilm_fast_scores_packed_equal_unpacked",  # MiniLM in two dtypes, packed and not
    "test_perturb.py::test_run_results_are_part_invariant",  # whole runs
    "test_report.py::test_report_writes_page_and_valid_images",
    "test_report.py::test_failed_build_keeps_previous_report",
    "test_report.py::test_labels_without_calibration_explain_the_stage",
    "test_roundtrip_scores.py::test_exceptions_and_broken_code",
})


def module_of(nodeid: str) -> str:
    """`tests/test_x.py::test_y[a]` -> `test_x.py`."""
    return nodeid.split("::", 1)[0].rsplit("/", 1)[-1]


def test_of(nodeid: str) -> str:
    """`tests/test_x.py::test_y[a]` -> `test_x.py::test_y` (class-level ids keep their class)."""
    path, _, rest = nodeid.partition("::")
    return f"{path.rsplit('/', 1)[-1]}::{rest.split('[', 1)[0]}"


def is_heavy(nodeid: str, marker_names: set[str]) -> bool:
    """Heavy by its module, by its own entry, or by a `slow`/`gpu` marker; a module named in
    neither list counts as heavy (tests/test_tiers.py then fails and says where to add it)."""
    module = module_of(nodeid)
    return (module not in FAST_MODULES or test_of(nodeid) in HEAVY_TESTS
            or bool(marker_names & {"slow", "gpu", "heavy"}))
