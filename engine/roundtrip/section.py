"""What the round trip's section needs before and beside its parts: config checks, the models
it loads, its one task, and the signatures of the scores it writes."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from engine.errors import ConfigError, InputError
from engine.params import option_digest
from engine.roundtrip.params import ORACLE, RoundTripParams
from engine.stages.base import StageTask

log = logging.getLogger(__name__)


def check_section(params: RoundTripParams) -> None:
    """Config-time checks: a usable sandbox, resolvable models, a loadable task table."""
    from engine.roundtrip.tasks import load_tasks
    from engine.runtime import check_model_name as check_model
    from engine.sandbox.process import unavailable

    why = unavailable(params.sandbox)
    if why:  # no silent weaker fallback: generated code runs isolated or by explicit choice
        raise ConfigError(f"roundtrip.sandbox.isolation: {why}")
    if params.sandbox.isolation == "hook":
        log.warning("roundtrip: sandbox.isolation: hook runs generated code WITHOUT isolation "
                    "(not a security boundary); its rows say isolation=hook-not-a-boundary")
    for i, g in enumerate(params.generators):
        if g.backend != ORACLE:
            check_model(g.model, f"roundtrip.generators[{i}].model")
    if params.comment_generator is not None and params.comment_generator.backend != ORACLE:
        check_model(params.comment_generator.model, "roundtrip.comment_generator.model")
    if params.fluency_model:
        check_model(params.fluency_model, "roundtrip.fluency_model")
    try:
        load_tasks(params.tasks, programming_languages=params.programming_languages)
    except InputError as exc:
        raise ConfigError(f"roundtrip.tasks: {exc}") from exc


def model_needs(params: RoundTripParams, stage: str) -> list[Any]:
    """The models its parts load (engine.runtime.memory.ModelNeed), oracles left out."""
    from engine.runtime.memory import ModelNeed

    entries = [(f"roundtrip.generators[{i}]", g) for i, g in enumerate(params.generators)]
    if params.comment_generator is not None:
        entries.append(("roundtrip.comment_generator", params.comment_generator))
    needs = [ModelNeed(g.model, stage, where, g.backend, g.dtype, "auto", g.max_model_len)
             for where, g in entries if g.backend != ORACLE]
    if params.fluency_model:
        needs.append(ModelNeed(params.fluency_model, stage, "roundtrip.fluency_model", dtype="float32", device="cpu"))
    return needs


def model_key(params: RoundTripParams) -> str:
    """The task's model key: every model it loads, '' without one."""
    models = [g.model for g in (*params.generators, params.comment_generator) if g is not None and g.backend != ORACLE]
    if params.fluency_model:
        models.append(params.fluency_model)
    # Without a model the parts are CPU work (sandbox runs): no model actor, no model key.
    return f"roundtrip:{','.join(models)}" if models else ""


def section_tasks(params: RoundTripParams, stage: str) -> list[StageTask[None]]:
    """One task for the whole section, named from its resolved options: a comment is shared by
    every generator, and abstraction compares all U x V regenerations of one (task, language)."""
    return [StageTask(stage, f"roundtrip-{option_digest(params.to_dict())}", model_key(params), 0)]


def signatures(p: Any) -> dict[str, Any]:
    """Signature strings of the scores the round trip writes (sandbox limits and interpreter included)."""
    from engine.roundtrip.scores import signature
    from engine.sandbox.process import interpreter_version, isolation_name
    from engine.signature import package_version

    box = p.sandbox
    sandbox = {"isolation": isolation_name(box), "cpu": box.cpu_seconds, "wall": box.wall_seconds,
               "mem": box.memory_mb, "nproc": box.max_processes, "python": interpreter_version(box)}
    generators = [g.display_name for g in p.generators]
    comments = p.comment_generator.display_name if p.comment_generator else "given"
    common = {"tasks": p.tasks if p.tasks in ("humaneval", "polyglot") else Path(p.tasks).name, "generators": generators,
              "samples": p.samples, "comments": comments, "seed": p.seed, "transformers": package_version("transformers")}
    if p.programming_languages:
        common["programming_languages"] = list(p.programming_languages)
    out = {
        "pass@1": signature("pass@1", **common, verdict=p.verdict, call_s=p.call_seconds, **sandbox),
        "correctness": signature("correctness", **common, inputs=p.inputs, call_s=p.call_seconds, **sandbox),
        "abstraction": signature("abstraction", **common, similarity="mean(ast-edge-jaccard,token-jaccard)",
                                 tokens="no-keywords,no-given"),
    }
    if p.compressions:
        out["conciseness"] = signature("conciseness", **common, compressions=p.compressions, unit="chars",
                                       compressor=comments, keeps="correctness>=original")
    if p.fluency_model:
        out["fluency"] = signature("fluency", model=p.fluency_model, comments=comments, unit="1/perplexity")
    return out
