"""What the judge section needs beside its parts: relative locations resolved, config-time
checks of every judge, the models it loads, and the signature of a judge's judgments."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from engine.judge.params import JudgeParams, JudgeSection
from engine.params import config_path


def resolve_prompt_packs(raw: Mapping[str, Any], base_dir: Path) -> dict[str, Any]:
    """`prompt_pack` folders (of the section and of each judge) and `lora` adapters relative to the config's folder."""
    def resolve(options: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(options)
        for key in ("prompt_pack", "lora"):
            if isinstance(out.get(key), str):
                out[key] = config_path(out[key], base_dir)
        return out

    section = resolve(raw)
    if isinstance(section.get("judges"), list):
        section["judges"] = [resolve(j) if isinstance(j, Mapping) else j for j in section["judges"]]
    return section


def judges_of(sections: Mapping[str, Any]) -> tuple[JudgeParams, ...] | None:
    """The judges of a config's parsed sections (None: the config has no judge stage)."""
    section = next((s for s in sections.values() if isinstance(s, JudgeSection)), None)
    return None if section is None else section.judges


def check_section(section: JudgeSection) -> None:
    """Every judge's prompt pack, model, adapter and tokenizer, checked before any work."""
    from engine.runtime import check_model_name as check_model

    for i, judge in enumerate(section.judges):
        if judge.prompt_pack is not None:  # every file of a user prompt pack, checked before any work
            from engine.judge.promptpack import check_pack_dir

            check_pack_dir(judge.prompt_pack)
        if judge.backend == "http":  # a served model name, checked by the server
            if judge.tokenizer is not None:  # the forecast counts prompt tokens with it
                check_model(judge.tokenizer, f"judge.judges[{i}].tokenizer", kind="tokenizer")
            continue
        check_model(judge.model, f"judge.judges[{i}].model")
        if judge.lora is not None:
            from engine.judge.adapter import check_adapter_base

            check_adapter_base(judge.lora, judge.model, f"judge.judges[{i}].lora")
        if judge.tokenizer is not None:
            check_model(judge.tokenizer, f"judge.judges[{i}].tokenizer", kind="tokenizer")


def check_secrets_set(section: JudgeSection) -> str | None:
    """Every HTTP judge's API key and provider secrets are in the environment (the variables
    are not in the config: a missing one would otherwise fail every judge part of the run)."""
    from engine.llm.http_backend import check_secrets

    judges = [(i, j) for i, j in enumerate(section.judges) if j.backend == "http"]
    for i, judge in judges:
        check_secrets(judge, f"judge.judges[{i}]")
    named = sorted({n for _i, j in judges for n in (j.api_key_env, *j.provider_secret_env.values()) if n})
    return f"judge: environment variables {', '.join(named)} are set" if named else None


def section_model_needs(section: JudgeSection, stage: str) -> list[Any]:
    """The models the section's local judges load (a served judge loads none here)."""
    from engine.runtime.memory import ModelNeed

    return [ModelNeed(j.model, stage, f"judge.judges[{i}]", j.backend, j.dtype, "auto", j.max_model_len,
                      j.gpu_memory_utilization)
            for i, j in enumerate(section.judges) if j.backend != "http"]


def judgment_signature(judge: Any) -> str:
    """The judge's model identity (local backends), backend, decoding and prompt setup."""
    from engine.signature import format_signature, package_version

    fields: dict[str, object] = {"stage": "judge", "model": judge.model, "backend": judge.backend}
    if judge.backend != "http":  # a served model has no identity the client can check
        from engine.runtime import resolve_model

        fields["model_id"] = resolve_model(judge.model, "model").short_identity
        fields["dtype"] = judge.dtype
    fields.update(strategies=list(judge.strategies), prompt_languages=list(judge.prompt_languages),
                  structured=list(judge.structured_strategies()), temperature=judge.temperature,
                  seed=judge.seed, max_tokens=judge.max_tokens_signature(), babelscore_prompts=package_version("babelscore"))
    if judge.lora is not None:
        from engine.judge.adapter import adapter_hash

        fields["lora"] = adapter_hash(judge.lora)
    if judge.provider_options:
        import json

        fields["provider_options"] = json.dumps(judge.provider_options, sort_keys=True, ensure_ascii=False)
    if judge.provider_secret_env:  # which body keys carry a secret, never their values
        fields["provider_secret_keys"] = ",".join(sorted(judge.provider_secret_env))
    return format_signature(fields)
