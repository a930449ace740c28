"""METEOR with WordNet synonyms (Debian's WordNet 3.0 through nltk's reader) equals nltk's meteor_score."""
from __future__ import annotations

import random

import pytest

from engine.metrics.base import build_scorer
from engine.metrics.meteor import MeteorParams, meteor_from_tokens
from engine.metrics.wordnet_data import ensure_wordnet, lexnames_text

# Words with WordNet synonyms among each other, so the synonym stage decides many matches.
WORDS = (
    "big large huge small little tiny car automobile quick fast rapid returns gives get obtain "
    "function method value number list array the a of user name sorts sort create make build "
    "remove delete file data begin start end finish show display print reads read writes write "
    "checks check tests test buy purchase close shut"
).split()


@pytest.fixture(scope="module")
def wordnet_version():
    version = ensure_wordnet()
    if version is None:
        pytest.skip("no WordNet: Debian's wordnet-base and wordnet-sense-index are not installed "
                    "(make setup installs them where apt-get exists)")
    return version


def test_lexnames_lists_the_45_wordnet_files():
    lines = lexnames_text().splitlines()
    assert len(lines) == 45 and lines[0] == "00\tadj.all\t3" and lines[44] == "44\tadj.ppl\t3"


def test_meteor_with_synonyms_equals_nltk_on_300_random_english_pairs(wordnet_version):
    from nltk.corpus import wordnet
    from nltk.translate.meteor_score import meteor_score

    assert wordnet_version == "3.0" and len(wordnet.synsets("car")) > 0
    rng = random.Random(15)
    params = MeteorParams(synonyms=True)
    differing_from_exact = 0
    for _ in range(300):
        ref = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
        hyp = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
        ours = meteor_from_tokens(ref, hyp, "en", params)
        assert ours == meteor_score([ref], hyp), (ref, hyp)
        differing_from_exact += ours != meteor_from_tokens(ref, hyp, "en", MeteorParams(synonyms=False))
    assert differing_from_exact > 30  # the synonym stage really ran


def test_signature_names_the_wordnet_version(wordnet_version):
    assert MeteorParams(synonyms=True).signature_fields("en")["syn"] == "wordnet-3.0"
    scorer = build_scorer("lexical", {"metrics": ["meteor"]}, "score.scorers[0]")
    assert "syn:wordnet-3.0" in str(scorer.signatures())
