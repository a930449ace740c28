"""Compatibility mode against the bert_score package (0.3.13), `none` setting, fp32.

Oracle: `bert_score.score(cands, refs, model_type=<local dir>, num_layers=k)` on the real
all-MiniLM-L6-v2 (PyPI-shipped) and on tiny random BERT/RoBERTa models built here.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

bert_score = pytest.importorskip("bert_score")

from engine.metrics.embedding import EmbeddingScorer  # noqa: E402
from engine.metrics.rescale import read_baseline  # noqa: E402
from engine.runtime import resolve_model  # noqa: E402
from tests.support import tiny_encoders  # noqa: E402

MINILM = "pypi:all-MiniLM-L6-v2"
LAYER = 4
TOL = 1e-6
LONG = " ".join(["the value of the user file is returned when the list is sorted"] * 44)  # > 512 tokens

CANDS = [
    "Returns the name of the user.",
    "  compute the sum of two numbers  ",
    "a",
    "Geeft de naam van de gebruiker terug.",
    "Zwraca nazwę użytkownika.",
    "Επιστρέφει το όνομα του χρήστη.",
    "返回用户的姓名。",
    "sorts the list in place and returns nothing",
    LONG,
    "checks whether the file exists",
    "Returns the name of the user.",
    "the the the the",
]
REFS = [
    "Return the user name.",
    "adds two integers and returns the result",
    "b c d",
    "Geeft de gebruikersnaam.",
    "Zwraca nazwę.",
    "Επιστρέφει το όνομα.",
    "返回用户名。",
    LONG + " and more words at the end",
    "sorts the list",
    "\tchecks if the file is there\n",
    "Returns the name of the user.",
    "a completely different sentence about graphs",
]


def skip_if_minilm_missing() -> str:
    try:
        return resolve_model(MINILM).path
    except Exception as exc:  # the PyPI model package is part of `make setup`
        pytest.skip(f"all-MiniLM-L6-v2 not installed: {exc}")


@pytest.fixture(scope="module")
def minilm_dir() -> str:
    return skip_if_minilm_missing()


@pytest.fixture(scope="module")
def ours(minilm_dir: str) -> dict[bool, dict[str, list[float]]]:
    out = {}
    for idf in (False, True):
        scorer = EmbeddingScorer(EmbeddingScorer.Params(model=MINILM, layer=LAYER, idf=idf))
        out[idf] = scorer.score_texts(CANDS, REFS)
    return out


def assert_close(ours: dict[str, list[float]], theirs, prefix: str = "", tol: float = TOL) -> None:
    for name, values in zip(("P", "R", "F"), theirs):
        got = torch.tensor(ours[prefix + name], dtype=torch.float64)
        want = values.to(torch.float64)
        diff = (got - want).abs().max().item()
        assert diff <= tol, f"{prefix}{name}: max |diff| {diff:.3g}"


@pytest.fixture(scope="module")
def theirs(minilm_dir: str) -> dict[tuple[bool, int], tuple[torch.Tensor, ...]]:
    return {
        (idf, bs): bert_score.score(CANDS, REFS, model_type=minilm_dir, num_layers=LAYER, idf=idf, batch_size=bs, nthreads=0)
        for idf in (False, True)
        for bs in (1, 3, 64)
    }


@pytest.mark.parametrize("idf", [False, True])
@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_equals_bert_score(ours, theirs, idf: bool, batch_size: int) -> None:
    """Equal within 1e-6, except where bert_score's own value depends on its batch size.

    bert_score pads a batch and lets a padded position add a similarity 0 to each max; when
    every real similarity of a token is negative (here: the > 512-token candidate against a
    short reference batched with a long one) its value rises with the batch. Ours never
    lets padding in, i.e. equals bert_score at batch size 1 (no padding) on every pair.
    """
    alone = theirs[(idf, 1)]
    batched = theirs[(idf, batch_size)]
    for k, name in enumerate(("P", "R", "F")):
        got = torch.tensor(ours[idf][name], dtype=torch.float64)
        assert (got - alone[k].double()).abs().max().item() <= TOL, f"{name} vs bert_score batch_size=1"
        quirk = (batched[k].double() - alone[k].double()).abs() > TOL
        assert (got - batched[k].double())[~quirk].abs().max().item() <= TOL, f"{name} vs bert_score batch_size={batch_size}"
        assert bool((batched[k].double()[quirk] >= got[quirk] - TOL).all())  # padding's 0 only raises a max
        assert int(quirk.sum()) <= 1


def test_empty_sides_score_zero(minilm_dir: str) -> None:
    """bert_score crashes on empty strings under transformers 5; its documented intent is P = R = F = 0."""
    cands = ["", "   ", "returns the user", "returns the user", "sorted list"]
    refs = ["the user", "the user", "", "\n ", "a sorted list"]
    scorer = EmbeddingScorer(EmbeddingScorer.Params(model=MINILM, layer=LAYER))
    got = scorer.score_texts(cands, refs)
    for name in ("P", "R", "F", "mean-cos"):
        assert got[name][:4] == [0.0] * 4
    theirs = bert_score.score(cands[4:], refs[4:], model_type=minilm_dir, num_layers=LAYER)
    assert_close({k: v[4:] for k, v in got.items()}, theirs)


def test_multiple_references_take_max_per_score(minilm_dir: str) -> None:
    cands = ["Returns the name of the user.", "sorts the list", "adds two numbers"]
    refs = [
        ["Returns the name of the user and the path of the file and the size of the list.", "the user"],
        ["the list is sorted"],
        ["sum of two ints", "adds numbers", "x"],
    ]
    scorer = EmbeddingScorer(EmbeddingScorer.Params(model=MINILM, layer=LAYER))
    got = scorer.score_texts(cands, refs)
    theirs = bert_score.score(cands, refs, model_type=minilm_dir, num_layers=LAYER)
    assert_close(got, theirs)
    # P, R, F maxima come from different references somewhere, else the test proves little
    singles = [scorer.score_texts([c] * len(rs), rs) for c, rs in zip(cands, refs)]
    argmax = {name: [max(range(len(s[name])), key=s[name].__getitem__) for s in singles] for name in ("P", "R", "F")}
    assert argmax["P"] != argmax["R"] or argmax["R"] != argmax["F"]


def test_all_layers_equal_bert_score(minilm_dir: str) -> None:
    cands, refs = CANDS[:4], REFS[:4]
    scorer = EmbeddingScorer(EmbeddingScorer.Params(model=MINILM, all_layers=True, mean_pool=False))
    got = scorer.score_texts(cands, refs)
    p, r, f = bert_score.score(cands, refs, model_type=minilm_dir, num_layers=LAYER, all_layers=True)
    assert p.shape[0] == 7 and len(got) == 3 * 7
    for layer in range(7):
        assert_close(got, (p[layer], r[layer], f[layer]), prefix=f"layer-{layer}/")


def test_baseline_rescaling_equals_bert_score(minilm_dir: str, tmp_path: Path) -> None:
    table = tmp_path / "baseline.tsv"
    rows = ["LAYER,P,R,F"] + [f"{k},{0.80 + k / 100:.8f},{0.81 + k / 200:.8f},{0.805 + k / 150:.8f}" for k in range(7)]
    table.write_text("\n".join(rows) + "\n")
    scorer = EmbeddingScorer(EmbeddingScorer.Params(model=MINILM, layer=LAYER, baseline=str(table)))
    got = scorer.score_texts(CANDS[:5], REFS[:5])
    theirs = bert_score.score(
        CANDS[:5], REFS[:5], model_type=minilm_dir, num_layers=LAYER,
        rescale_with_baseline=True, lang="en", baseline_path=str(table),
    )
    # (x - b)/(1 - b) magnifies the raw 1e-6 agreement by 1/(1 - b) (b up to 0.87 here)
    assert_close(got, theirs, tol=TOL / (1 - 0.87))
    assert "rescale:baseline.tsv@" in scorer.signatures()["bertscore/none"]


def test_rescale_test_vector(tmp_path: Path) -> None:
    """A model-free vector: bert_score's rescaling (x - b) / (1 - b) computed by hand from the baseline row."""
    table = tmp_path / "b.tsv"
    table.write_text("LAYER\tP\tR\tF\n9\t0.83150584\t0.8314941\t0.83122575\n")
    base = read_baseline(str(table)).for_layer(9)
    for x, want in zip([0.98433024, 0.98322397, 0.91203862], [0.9070012, 0.9004356, 0.4779559]):
        assert base.rescale("P", x) == pytest.approx(want, abs=1e-6)
    for x, want in zip([0.98335612, 0.97823000, 0.91621464], [0.9013838, 0.8710111, 0.5035655]):
        assert base.rescale("F", x) == pytest.approx(want, abs=1e-6)


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("compat_tiny")
    return {kind: tiny_encoders.build(kind, root / kind) for kind in ("bert", "roberta")}


def test_tiny_bert_truncation_equals_bert_score(tiny_dirs: dict[str, str]) -> None:
    """Model window 64: inputs over it are silently truncated, as bert_score does."""
    long = " ".join(["returns the name of the user file"] * 20)
    cands = [long, "the cat sat on the mat", long + " sorted"]
    refs = ["the name of the user", long, long]
    scorer = EmbeddingScorer(EmbeddingScorer.Params(model=tiny_dirs["bert"], layer=2))
    got = scorer.score_texts(cands, refs)
    # batch_size=1: no padding in bert_score, whose padded 0 may enter the max of a random model
    theirs = bert_score.score(cands, refs, model_type=tiny_dirs["bert"], num_layers=2, batch_size=1)
    assert_close(got, theirs)


def test_tiny_roberta_prefix_space_equals_bert_score_intent(tiny_dirs: dict[str, str], monkeypatch) -> None:
    """bert_score tokenises RoBERTa with add_prefix_space=True; transformers 5 ignores that as a call
    argument, so the oracle gets a tokenizer loaded with it (its intent)."""
    from transformers import AutoTokenizer

    def get_tokenizer(model_type: str, use_fast: bool = False):
        return AutoTokenizer.from_pretrained(model_type, add_prefix_space=True)

    monkeypatch.setattr(sys.modules["bert_score.score"], "get_tokenizer", get_tokenizer)
    cands = ["the cat sat on the mat", "unhappy cats are happy", "returns the name of the user"]
    refs = ["a cat sat", "happy dogs", "the name"]
    scorer = EmbeddingScorer(EmbeddingScorer.Params(model=tiny_dirs["roberta"], layer=2))
    got = scorer.score_texts(cands, refs)
    assert scorer.runtime.prefix_space
    theirs = bert_score.score(cands, refs, model_type=tiny_dirs["roberta"], num_layers=2, batch_size=1)
    assert_close(got, theirs)
