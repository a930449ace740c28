"""Precision by hardware: the capability probe, `dtype: auto`, slow-dtype fallback and strict_dtype."""
from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from engine.errors import ConfigError  # noqa: E402
from engine.items import ScoreItem  # noqa: E402
from engine.metrics.embedding import EmbeddingScorer  # noqa: E402
from engine.metrics.likelihood import LikelihoodScorer  # noqa: E402
from engine.runtime import hardware  # noqa: E402
from engine.runtime.hardware import DeviceCapability, auto_dtype, check_dtype, resolve_dtype  # noqa: E402
from engine.signature import parse_signature  # noqa: E402
from engine.testing.tiny_lm import build_tiny_bart  # noqa: E402

MINILM = "pypi:all-MiniLM-L6-v2"
# Seconds of one probe matmul, as measured on the two CPU classes seen on these machines.
AVX2 = DeviceCapability("cpu", "AMD EPYC", "AVX2", native_bf16=False, native_fp16=False,
                        seconds={"float32": 0.002, "bfloat16": 0.6, "float16": 0.7})
AMX = DeviceCapability("cpu", "Intel Xeon", "AVX512", native_bf16=True, native_fp16=True,
                       seconds={"float32": 0.002, "bfloat16": 0.0003, "float16": 0.0004}, amx_bf16=True, amx_fp16=True)
# AVX512-BF16 and AVX512-FP16 without AMX: native, not emulated-slow in the quick probe, so the
# linear probe at the model's shapes decides.
NO_AMX = DeviceCapability("cpu", "Intel Xeon", "AVX512", native_bf16=True, native_fp16=True,
                          seconds={"float32": 0.0003, "bfloat16": 0.0004, "float16": 0.0002})
# Linear-probe seconds per dtype as measured on that CPU (one thread, MiniLM's 384->1536 at 256 rows).
MEASURED = {"float32": 0.00198, "bfloat16": 0.00364, "float16": 0.00194}
ITEMS = [
    ScoreItem("a", "a", "en", "g", "none", "x = 1  // Returns the user name.\n", 7, 32,
              "// Returns the user name.", "// Returns", " the name of the user."),
    ScoreItem("b", "b", "en", "g", "none", "y = 2  // Counts the open files.\n", 7, 32,
              "// Counts the open files.", "// Counts", " how many files are open."),
]


@pytest.fixture(scope="module")
def bart_dir(tmp_path_factory) -> str:
    return build_tiny_bart(tmp_path_factory.mktemp("bart") / "m")


@pytest.fixture()
def probe(monkeypatch: pytest.MonkeyPatch):
    """Set what the probe reports (and, optionally, the linear probe's seconds per dtype); the
    one-warning and one-log memories start empty."""
    monkeypatch.setattr(hardware, "_warned", set())
    monkeypatch.setattr(hardware, "_told", set())

    def use(capability: DeviceCapability, linear: dict[str, float] | None = None) -> None:
        monkeypatch.setattr(hardware, "probe_device", lambda device="auto": capability)
        if linear is not None:
            monkeypatch.setattr(hardware, "linear_seconds", lambda dtype, shape: linear[dtype])

    return use


def _likelihood(model: str, **options) -> LikelihoodScorer:
    return LikelihoodScorer(LikelihoodScorer.Params.from_mapping(
        {"model": model, "device": "cpu", "directions": ["forward"], **options}, where="score.scorers[2]"))


def _model_of(scorer):
    """The model the registry holds for a likelihood scorer."""
    scorer._load()
    model = scorer._model
    scorer._unbind()
    return model


def _slow_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "slower than float32" in r.getMessage()]


def test_a_slow_bfloat16_loads_float32_with_one_warning(bart_dir: str, probe, caplog) -> None:
    probe(AVX2)
    scorer = _likelihood(bart_dir, dtype="bfloat16")
    with caplog.at_level(logging.WARNING):
        signatures = scorer.signatures()
        rows = scorer.score(ITEMS)
        scorer.score(ITEMS)
        _likelihood(bart_dir, dtype="bfloat16").signatures()
    assert next(_model_of(scorer).parameters()).dtype == torch.float32
    assert parse_signature(signatures["none"])["dtype"] == "float32"
    assert all(parse_signature(r.signature)["dtype"] == "float32" for r in rows)
    warnings = _slow_warnings(caplog)
    assert len(warnings) == 1 and "bfloat16 runs 300.0x slower than float32" in warnings[0]
    assert "AVX2" in warnings[0] and "strict_dtype" in warnings[0]


def test_strict_dtype_is_refused_at_config_time(bart_dir: str, probe) -> None:
    probe(AVX2)
    with pytest.raises(ConfigError, match=r"^score\.scorers\[2\]\.dtype: dtype bfloat16 runs 300\.0x slower"):
        _likelihood(bart_dir, dtype="bfloat16", strict_dtype=True)
    with pytest.raises(ConfigError, match=r"^score\.scorers\[0\]\.dtype: dtype float16 runs 350\.0x slower"):
        EmbeddingScorer.Params.from_mapping({"model": MINILM, "mode": "fast", "dtype": "float16", "strict_dtype": True},
                                            where="score.scorers[0]")
    from engine.generate.params import GenerateSection

    with pytest.raises(ConfigError, match=r"^generate\.generators\[0\]\.dtype: dtype bfloat16"):
        GenerateSection.from_mapping({"generators": [{"model": bart_dir, "card": "starcoder2", "dtype": "bfloat16",
                                                      "strict_dtype": True}]}, where="generate")
    with pytest.raises(ConfigError, match=r"^judge\.dtype: dtype bfloat16 runs 300\.0x"):
        check_dtype("bfloat16", "cpu", True, "judge.dtype")
    # strict is fine with what the device runs fast, and without strict nothing is refused
    assert check_dtype("float32", "cpu", True, "judge.dtype") == "float32"
    assert check_dtype("auto", "cpu", True, "judge.dtype") == "float32"
    assert _likelihood(bart_dir, dtype="bfloat16").params.resolved_dtype == "float32"


def test_native_bfloat16_loads_bfloat16(bart_dir: str, probe, caplog) -> None:
    probe(AMX)
    scorer = _likelihood(bart_dir, dtype="bfloat16", strict_dtype=True)
    with caplog.at_level(logging.WARNING):
        rows = scorer.score(ITEMS)
    assert next(_model_of(scorer).parameters()).dtype == torch.bfloat16
    assert parse_signature(rows[0].signature)["dtype"] == "bfloat16" and not _slow_warnings(caplog)
    auto = _likelihood(bart_dir)
    auto.score(ITEMS[:1])
    assert next(_model_of(auto).parameters()).dtype == torch.bfloat16


def test_auto_is_float32_without_native_half_and_the_numbers_are_unchanged(bart_dir: str, probe) -> None:
    probe(AVX2)
    auto, pinned = _likelihood(bart_dir), _likelihood(bart_dir, dtype="float32")
    assert auto.params.dtype == "auto" and auto.params.resolved_dtype == "float32"
    assert [r.value for r in auto.score(ITEMS)] == [r.value for r in pinned.score(ITEMS)]
    assert auto.signatures() == pinned.signatures()


def test_embedding_compat_is_float32_whatever_the_hardware(probe) -> None:
    probe(AMX)
    compat = EmbeddingScorer(EmbeddingScorer.Params(model=MINILM, layer=2))
    assert compat.params.dtype == "auto" and compat.params.resolved_dtype == "float32"
    assert parse_signature(compat.signatures()["bertscore/none"])["dtype"] == "float32"
    fast = EmbeddingScorer(EmbeddingScorer.Params(model=MINILM, layer=2, mode="fast"))
    assert parse_signature(fast.signatures()["bertscore/none"])["dtype"] == "bfloat16"
    probe(AVX2)
    assert parse_signature(fast.signatures()["bertscore/none"])["dtype"] == "float32"


@pytest.mark.parametrize("capability, expected", [
    (AVX2, "float32"),
    (AMX, "bfloat16"),
    # native flags but the probe finds it emulated-slow: not trusted
    (DeviceCapability("cpu", "x", "AVX512", True, False, {"float32": 0.002, "bfloat16": 0.2}), "float32"),
    (DeviceCapability("cuda:0", "V100", "sm_70", False, True), "float16"),
    (DeviceCapability("cuda:0", "H100", "sm_90", True, True), "bfloat16"),
    (DeviceCapability("cuda:0", "K80", "sm_37", False, False), "float32"),
    (DeviceCapability("mps", "mps", "mps", False, False), "float32"),
])
def test_the_auto_rule(capability: DeviceCapability, expected: str) -> None:
    assert auto_dtype(capability) == expected


def test_an_explicit_dtype_within_the_margin_is_kept(probe) -> None:
    probe(DeviceCapability("cpu", "x", "AVX512", True, False, {"float32": 0.002, "bfloat16": 0.006, "float16": 0.5}))
    assert resolve_dtype("bfloat16", "cpu") == "bfloat16"  # 3x slower: kept, the user asked for it
    assert resolve_dtype("float16", "cpu") == "float32"
    with pytest.raises(ConfigError, match="allowed: auto, float32"):
        resolve_dtype("int8", "cpu")


@pytest.mark.parametrize("linear, expected", [
    (MEASURED, "float32"),  # bfloat16 at 0.54x float32's rate, float16 at 1.02x: neither is worth it
    ({"float32": 0.002, "bfloat16": 0.0008, "float16": 0.0019}, "bfloat16"),  # 2.5x
    ({"float32": 0.002, "bfloat16": 0.004, "float16": 0.0012}, "float16"),  # bfloat16 slow, float16 1.67x
    ({"float32": 0.002, "bfloat16": 0.0016, "float16": 0.0016}, "float32"),  # 1.25x: within the jitter, not taken
])
def test_auto_without_amx_follows_the_linear_probe(probe, linear: dict[str, float], expected: str, caplog) -> None:
    probe(NO_AMX, linear)
    with caplog.at_level(logging.INFO, logger="engine.runtime.hardware"):
        choice = hardware.choose_dtype("auto", "cpu")
        assert resolve_dtype("auto", "cpu") == expected
    assert choice.dtype == expected
    speed = linear["float32"] / linear["bfloat16"]
    assert f"bfloat16 linear at {speed:.2f}x float32's rate" in choice.reason and "no AMX" in choice.reason
    told = [r.getMessage() for r in caplog.records if r.getMessage().startswith("dtype auto on cpu")]
    assert told == [f"dtype auto on cpu: {expected} ({choice.reason})"]  # once per process and shape


def test_amx_picks_bfloat16_without_timing_a_linear(probe, monkeypatch) -> None:
    def never(dtype, shape):
        raise AssertionError("AMX needs no linear probe")

    probe(AMX)
    monkeypatch.setattr(hardware, "linear_seconds", never)
    choice = hardware.choose_dtype("auto", "cpu")
    assert choice.dtype == "bfloat16" and "AMX" in choice.reason


def test_the_linear_probe_runs_at_the_model_shapes(probe, monkeypatch) -> None:
    shapes = []

    def record(dtype, shape):
        shapes.append(shape)
        return MEASURED[dtype]

    probe(NO_AMX)
    monkeypatch.setattr(hardware, "linear_seconds", record)
    assert resolve_dtype("auto", "cpu", model=MINILM) == "float32"
    assert set(shapes) == {(256, 384, 1536)}  # MiniLM's feed-forward, 256 tokens
    shapes.clear()
    assert resolve_dtype("auto", "cpu") == "float32"
    assert set(shapes) == {hardware.linear_probe_shape(hardware.DEFAULT_LINEAR)} == {(256, 768, 3072)}
    assert hardware.linear_probe_shape((4096, 11008)) == (16, 4096, 11008)  # wide layers: fewer rows


def test_fast_auto_follows_the_probe_in_signature_and_plan(probe) -> None:
    from engine.runtime.memory import ModelNeed, plan_models

    fast = EmbeddingScorer(EmbeddingScorer.Params(model=MINILM, layer=2, mode="fast"))
    need = ModelNeed(MINILM, "score", "score.scorers[0]", dtype="auto", device="cpu")
    probe(NO_AMX, MEASURED)
    assert parse_signature(fast.signatures()["bertscore/none"])["dtype"] == "float32"
    planned = plan_models([need])[0]
    assert planned.dtype == "float32" and "bfloat16 linear at 0.54x float32's rate" in planned.dtype_reason
    probe(NO_AMX, {"float32": 0.002, "bfloat16": 0.0008, "float16": 0.0019})
    assert parse_signature(fast.signatures()["bertscore/none"])["dtype"] == "bfloat16"
    planned = plan_models([need])[0]
    assert planned.dtype == "bfloat16" and "2.50x" in planned.dtype_reason and "in bfloat16 (" in planned.line()


def test_the_real_probe_runs_once_and_names_the_cpu() -> None:
    first = hardware.probe_device("cpu")
    assert first is hardware.probe_device("cpu")
    assert first.isa == torch.backends.cpu.get_cpu_capability()
    assert set(first.seconds) == {"float32", "bfloat16", "float16"} and all(s > 0 for s in first.seconds.values())
    assert first.ratio("float32") == 1.0 and "GFLOP/s" in first.describe() and first.isa in first.describe()
    assert auto_dtype(first) in ("float32", "bfloat16", "float16")


def test_the_real_linear_probe_decides_auto_here() -> None:
    """The real kernel-rate probe at MiniLM's shapes, once per process; `auto` follows its rates."""
    capability = hardware.probe_device("cpu")
    choice = hardware.choose_dtype("auto", "cpu", model=MINILM)
    assert choice == hardware.choose_dtype("auto", "cpu", model=MINILM)
    shape = hardware.linear_probe_shape((384, 1536))
    if capability.amx_bf16 or not capability.native_bf16 or capability.is_slow("bfloat16"):
        return  # decided without the linear probe (the rule's other branches are tested above)
    speed = hardware.linear_seconds("float32", shape) / hardware.linear_seconds("bfloat16", shape)
    assert hardware.linear_seconds("bfloat16", shape) == hardware.linear_seconds("bfloat16", shape)  # cached
    assert f"bfloat16 linear at {speed:.2f}x" in choice.reason
    assert (choice.dtype == "bfloat16") == (speed >= hardware.FAST_RATIO)


@pytest.mark.parametrize("config, features", [
    ({"hidden_size": 384, "intermediate_size": 1536}, (384, 1536)),  # BERT-style
    ({"d_model": 512, "d_ff": 2048}, (512, 2048)),  # T5
    ({"n_embd": 768, "n_inner": None}, (768, 3072)),  # GPT-2: 4 x hidden when the config says nothing
    ({"text_config": {"hidden_size": 64, "intermediate_size": 96}}, (64, 96)),  # multimodal: the language model's
    ({"vocab_size": 10}, None),  # no width: the probe's default shape is used
])
def test_linear_features_come_from_the_config_on_disk(tmp_path, config: dict, features) -> None:
    import json

    from engine.runtime.model_config import linear_features

    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert linear_features(str(tmp_path)) == features
