"""Which tests are `heavy`: the one place that says so (conftest.py applies it).

`make test-fast` runs `pytest -m "not heavy"`: unit tests and tiny in-process models. A test is
heavy when it runs a model beyond a tiny in-process one, starts vLLM or Ray, runs the sandboxed
toolchains, a whole `babelscore run` or a CLI subprocess, resolves packages, dry-runs the Makefile,
drives a browser, or takes more than about 10 s on its own. `slow` and `gpu` tests are heavy too.

Modules are named by their path inside tests/ ("sandbox/test_escape.py"). Every test module is
named in exactly one of HEAVY_MODULES and FAST_MODULES, and every entry of HEAVY_TESTS names a test
function of a fast module: tests/project/test_tiers.py fails otherwise, so a new
module is classified when it is added and a renamed test does not drop silently into the fast tier.
"""
from __future__ import annotations

HEAVY_MODULES = frozenset({
    "bench/test_bench_scripts.py",  # every bench script at a tiny size, in subprocesses
    "cli/test_bench_command.py",  # `babelscore bench` in a subprocess, with measured runs
    "cli/test_demo_end_to_end.py",  # the demo run and Chromium
    "cli/test_input_errors.py",  # CLI subprocesses
    "cli/test_user_errors.py",  # CLI subprocesses and runs
    "data/test_demo_data.py",  # subprocesses over the embedded data
    "data/test_loss.py",
    "data/test_validate.py",
    "executors/test_ray_cluster.py",
    "executors/test_ray_executor.py",
    "executors/test_ray_gpu_placement.py",
    "executors/test_ray_head_check.py",  # imports ray for the executor's loop
    "executors/test_ray_resources.py",  # a tiny FIM model and the demo config
    "executors/test_ray_user_cluster.py",  # real `ray start` nodes
    "executors/test_resume_across_executors.py",
    "finetune/test_adapter_judging.py",
    "finetune/test_resume.py",
    "io/test_commit_markers.py",
    "io/test_disk_full.py",
    "judge/test_forecast.py",  # forecasts with tiny tokenizers and runs
    "judge/test_http_faults.py",
    "judge/test_resume.py",
    "judge/test_vllm_judge.py",
    "judge/test_vllm_serve.py",
    "llm/test_http_budget.py",  # judge runs against a local HTTP server, one killed
    "llm/test_http_concurrency.py",  # a judge run against a local HTTP server
    "llm/test_vllm_worker_fault.py",
    "project/test_gpu_setup.py",  # pip resolution and Makefile dry runs
    "project/test_install_sets.py",  # pip resolution
    "project/test_package_data.py",  # builds and installs the wheel
    "project/test_readme.py",  # the walk-through in a fresh shell
    "report/test_browser.py",  # Chromium
    "report/test_sweep.py",
    "reuse/test_generations.py",
    "reuse/test_reuse.py",
    "roundtrip/test_exact_equality.py",  # the sandboxed toolchains, from here on
    "roundtrip/test_cpp_rust_values.py",  # C++, Rust, Go and Java rows through the stage
    "roundtrip/test_exception_crossing.py",
    "roundtrip/test_go_values.py",
    "roundtrip/test_js_prototypes.py",
    "roundtrip/test_line_ends.py",
    "roundtrip/test_lookalike_answers.py",
    "roundtrip/test_python_body_and_nan.py",
    "roundtrip/test_python_graph_forgets.py",
    "roundtrip/test_python_server_reach.py",
    "roundtrip/test_replay_and_arguments.py",
    "roundtrip/test_native_arguments.py",  # Java arguments through the sandboxed toolchain
    "roundtrip/test_shared_objects.py",
    "roundtrip/test_stage.py",
    "roundtrip/test_tasks.py",
    "roundtrip/test_tests_run_to_the_end.py",
    "roundtrip/test_unrun_tests.py",
    "roundtrip/test_value_verdict.py",
    "roundtrip/test_verdict_forgeries.py",
    "roundtrip/test_verdicts.py",
    "runner/test_bitwise.py",  # whole runs compared byte for byte
    "runner/test_part_invariance.py",
    "runner/test_resume.py",
    "runner/test_run_core.py",
    "runner/test_run_failures.py",
    "runner/test_rundiff.py",
    "runner/test_signatures.py",
    "runner/test_stranded_runs.py",  # CLI runs in subprocesses
    "runner/test_throughput.py",
    "runtime/test_cuda_sim.py",  # simulated CUDA in subprocesses, vLLM
    "runtime/test_model_files.py",
    "runtime/test_model_residency.py",
    "runtime/test_thread_plan.py",  # fresh interpreters and a run
    "runtime/test_vllm_cuda_startup.py",  # downloads the CUDA vLLM wheel, runs its start-up code
    "sandbox/test_concurrent_engines.py",
    "sandbox/test_crossing.py",
    "sandbox/test_escape.py",
    "sandbox/test_exceptions.py",
    "sandbox/test_hostile_programs.py",
    "sandbox/test_languages.py",
    "sandbox/test_large_values.py",
    "sandbox/test_memory_bounds.py",
    "sandbox/test_probe.py",
    "sandbox/test_relay_crashes.py",
    "sandbox/test_usr_view.py",
    "sandbox/test_wire_shapes.py",
    "stages/test_toy_stage.py",  # under both executors, Ray included
})

FAST_MODULES = frozenset({
    "build/test_samples.py",
    "calibrate/test_agreement.py",
    "calibrate/test_run_directory.py",
    "calibrate/test_thresholds.py",
    "cli/test_demo_closing.py",
    "config/test_config.py",
    "config/test_config_paths.py",
    "config/test_config_reference.py",
    "config/test_configs_shipped.py",
    "config/test_default_seed.py",
    "config/test_model_entry.py",
    "data/test_convert.py",
    "data/test_extract.py",
    "executors/test_cluster_docs.py",
    "executors/test_cluster_messages.py",
    "executors/test_ray_parts.py",
    "finetune/test_adapter_table.py",
    "finetune/test_data.py",
    "finetune/test_training_inputs.py",
    "generate/test_backends.py",
    "generate/test_prime_rule.py",
    "generate/test_prompts.py",
    "io/test_manifest.py",
    "judge/test_analysis.py",
    "judge/test_parse.py",
    "judge/test_parse_corpus.py",
    "judge/test_prompts.py",
    "judge/test_stage.py",
    "judge/test_study_layout.py",
    "judge/test_study_reproduce.py",
    "judge/test_taxonomy_facts.py",
    "judge/test_templates.py",
    "judge/test_user_pack.py",
    "kernels/test_kde.py",
    "kernels/test_matching.py",
    "llm/test_http_backend.py",
    "llm/test_transformers_sampling.py",
    "llm/test_vllm_guard.py",
    "metrics/test_context.py",
    "metrics/test_embedding_compat.py",
    "metrics/test_embedding_scorer.py",
    "metrics/test_lexical.py",
    "metrics/test_likelihood.py",
    "metrics/test_meteor_wordnet.py",
    "metrics/test_packing.py",
    "noise/test_noise.py",
    "perturb/test_perturb.py",
    "perturb/test_significance.py",
    "project/test_comments.py",
    "project/test_docstrings.py",
    "project/test_file_lengths.py",
    "project/test_private_names.py",
    "project/test_tiers.py",
    "report/test_figures.py",
    "report/test_nf_reasons.py",
    "report/test_report.py",
    "report/test_summary.py",
    "roundtrip/test_report.py",
    "roundtrip/test_scores.py",
    "runner/test_isolation.py",
    "runner/test_progress.py",
    "runtime/test_dtype.py",
    "runtime/test_gpu.py",
    "runtime/test_model_registry.py",
    "runtime/test_runtime.py",
    "sandbox/test_wire.py",
    "score/test_rows.py",
    "stages/test_attributes.py",
    "stages/test_boundaries.py",
    "stages/test_protocol_use.py",
    "stages/test_registry.py",
    "stages/test_reopen.py",
    "testing/test_tiny_models.py",
})

# Heavy tests inside fast modules, as "module::function" (every parametrization of it).
HEAVY_TESTS = frozenset({
    "calibrate/test_run_directory.py::test_streamed_calibration_equals_the_in_memory_fit",
    "cli/test_demo_closing.py::test_the_background_warm_up_fills_the_caches_the_demo_would_fill_itself",  # a child process: numba and vLLM
    "generate/test_backends.py::test_vllm_and_transformers_give_identical_greedy_outputs",  # vLLM
    "kernels/test_kde.py::test_thresholds_are_the_same_bits_compiled_afresh_and_loaded_from_the_cache_in_any_thread_count",  # numba compiles in subprocesses
    "metrics/test_embedding_compat.py::test_all_layers_equal_bert_score",
    "metrics/test_embedding_compat.py::test_equals_bert_score",  # MiniLM through bert_score and through us
    "metrics/test_embedding_compat.py::test_multiple_references_take_max_per_score",
    "metrics/test_embedding_scorer.py::test_baseline_without_the_layer_row_is_a_config_error",
    "metrics/test_embedding_scorer.py::test_fast_bfloat16_close_to_float32",
    "metrics/test_embedding_scorer.py::test_scores_do_not_depend_on_batching",
    "metrics/test_likelihood.py::test_batch_composition_and_order_invariance",  # many batchings of three models
    "metrics/test_packing.py::test_minilm_fast_scores_packed_equal_unpacked",  # MiniLM in two dtypes, packed and not
    "perturb/test_perturb.py::test_run_results_are_part_invariant",  # whole runs
    "report/test_report.py::test_failed_build_keeps_previous_report",
    "report/test_report.py::test_labels_without_calibration_explain_the_stage",
    "report/test_report.py::test_report_writes_page_and_valid_images",
    "roundtrip/test_scores.py::test_exceptions_and_broken_code",
    "runner/test_isolation.py::test_roundtrip_out_of_memory_at_batch_size_one_is_retried_then_a_failed_part",  # a whole run
    "runtime/test_model_registry.py::test_model_cap_holds_one_model_at_a_time_and_intervals_never_overlap",
})


def module_of(nodeid: str) -> str:
    """`tests/pkg/test_x.py::test_y[a]` -> `pkg/test_x.py` (the module's path inside tests/)."""
    return nodeid.split("::", 1)[0].removeprefix("tests/")


def test_of(nodeid: str) -> str:
    """`tests/pkg/test_x.py::test_y[a]` -> `pkg/test_x.py::test_y` (class-level ids keep their class)."""
    _, _, rest = nodeid.partition("::")
    return f"{module_of(nodeid)}::{rest.split('[', 1)[0]}"


def is_heavy(nodeid: str, marker_names: set[str]) -> bool:
    """Heavy by its module, by its own entry, or by a `slow`/`gpu` marker; a module named in
    neither list counts as heavy (tests/project/test_tiers.py then fails and says where to add it)."""
    module = module_of(nodeid)
    return (module not in FAST_MODULES or test_of(nodeid) in HEAVY_TESTS
            or bool(marker_names & {"slow", "gpu", "heavy"}))
