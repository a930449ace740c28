"""WordNet for METEOR's synonym stage, offline: nltk's reader over Debian's WordNet 3.0 files.

nltk's WordNet reader loads a folder `corpora/wordnet` found on `nltk.data.path`. When nltk
has no WordNet of its own (`nltk.download('wordnet')` needs the internet), the WordNet 3.0
database of Debian's packages `wordnet-base` and `wordnet-sense-index` (`make setup` installs
them where apt-get exists; files under /usr/share/wordnet) is copied into such a folder in a
cache directory (BABELSCORE_CACHE, default ~/.cache/babelscore), together with the `lexnames`
file that nltk needs and those packages do not ship, and the cache is put on
`nltk.data.path`. Another copy of the WordNet 3.0 database files can be named with
BABELSCORE_WORDNET_DIR.
"""
from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

logger = logging.getLogger(__name__)

WORDNET_DIR_ENV = "BABELSCORE_WORDNET_DIR"
DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")
CACHE_ENV = "BABELSCORE_CACHE"
POS_FILES = ("noun", "verb", "adj", "adv")
OPTIONAL_FILES = ("index.sense", "cntlist.rev", "cntlist", "frames.vrb", "sentidx.vrb", "sents.vrb")
# WordNet 3.0's lexicographer files (lexnames(5WN)): number, name, syntactic category
# (1 noun, 2 verb, 3 adjective, 4 adverb). nltk reads them from the `lexnames` file.
LEXNAMES = (
    ("adj.all", 3), ("adj.pert", 3), ("adv.all", 4), ("noun.Tops", 1), ("noun.act", 1),
    ("noun.animal", 1), ("noun.artifact", 1), ("noun.attribute", 1), ("noun.body", 1),
    ("noun.cognition", 1), ("noun.communication", 1), ("noun.event", 1), ("noun.feeling", 1),
    ("noun.food", 1), ("noun.group", 1), ("noun.location", 1), ("noun.motive", 1),
    ("noun.object", 1), ("noun.person", 1), ("noun.phenomenon", 1), ("noun.plant", 1),
    ("noun.possession", 1), ("noun.process", 1), ("noun.quantity", 1), ("noun.relation", 1),
    ("noun.shape", 1), ("noun.state", 1), ("noun.substance", 1), ("noun.time", 1),
    ("verb.body", 2), ("verb.change", 2), ("verb.cognition", 2), ("verb.communication", 2),
    ("verb.competition", 2), ("verb.consumption", 2), ("verb.contact", 2), ("verb.creation", 2),
    ("verb.emotion", 2), ("verb.motion", 2), ("verb.perception", 2), ("verb.possession", 2),
    ("verb.social", 2), ("verb.stative", 2), ("verb.weather", 2), ("adj.ppl", 3),
)


def cache_root() -> Path:
    base = os.environ.get(CACHE_ENV) or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "babelscore")
    return Path(base).expanduser()


def database_dir() -> Path | None:
    """A folder holding the WordNet 3.0 database files (data.noun, index.noun, ...), or None."""
    for candidate in (os.environ.get(WORDNET_DIR_ENV), DEBIAN_WORDNET_DIR):
        if candidate and all((Path(candidate) / f"{kind}.{pos}").is_file() for kind in ("data", "index") for pos in POS_FILES):
            return Path(candidate)
    return None


def lexnames_text() -> str:
    return "".join(f"{number:02d}\t{name}\t{category}\n" for number, (name, category) in enumerate(LEXNAMES))


def link_database(source: Path, nltk_data: Path) -> Path:
    """Make `nltk_data/corpora/wordnet` from the database files in `source` (idempotent, atomic)."""
    target = nltk_data / "corpora" / "wordnet"
    if (target / "lexnames").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".wordnet-", dir=target.parent))
    names = [f"{kind}.{pos}" for kind in ("data", "index") for pos in POS_FILES]
    names += [f"{pos}.exc" for pos in POS_FILES] + list(OPTIONAL_FILES)
    for name in names:
        if (source / name).is_file():
            # A copy (about 36 MB): nltk refuses symlinks that leave the corpus folder and
            # files with more than one hard link.
            shutil.copyfile(source / name, staging / name)
    (staging / "lexnames").write_text(lexnames_text(), encoding="utf-8")
    try:
        staging.rename(target)
    except OSError:  # another process made it first
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _nltk_search_paths() -> list[Path]:
    """Where nltk looks for its data (its defaults and NLTK_DATA), as nltk.data.path lists them."""
    paths = [Path(p) for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    paths += [Path.home() / "nltk_data"]
    paths += [Path(sys.prefix) / sub for sub in ("nltk_data", "share/nltk_data", "lib/nltk_data")]
    paths += [Path(p) for p in ("/usr/share/nltk_data", "/usr/local/share/nltk_data", "/usr/lib/nltk_data",
                                "/usr/local/lib/nltk_data")]
    return paths + [cache_root() / "nltk_data"]


def wordnet_findable() -> bool:
    """Whether ensure_wordnet() will find a WordNet, by looking at the folders only: no nltk
    import (seconds), so a config check stays fast. The load itself, and its version in the
    signatures, come from ensure_wordnet() when METEOR scores."""
    if database_dir() is not None:
        return True
    return any((p / "corpora" / "wordnet").is_dir() or (p / "corpora" / "wordnet.zip").is_file() for p in _nltk_search_paths())


@lru_cache(maxsize=1)
def ensure_wordnet() -> str | None:
    """Make nltk's WordNet loadable; its version ('3.0') or None when no WordNet is found."""
    import nltk

    try:
        nltk.data.find("corpora/wordnet")
    except LookupError:
        source = database_dir()
        if source is None:
            logger.info(
                "WordNet data not found: METEOR runs without its synonym stage. Install Debian's "
                "wordnet-base and wordnet-sense-index (make setup does), set %s to a WordNet 3.0 "
                "database folder, or run nltk.download('wordnet')", WORDNET_DIR_ENV,
            )
            return None
        nltk_data = cache_root() / "nltk_data"
        link_database(source, nltk_data)
        if str(nltk_data) not in nltk.data.path:
            nltk.data.path.append(str(nltk_data))
    try:
        from nltk.corpus import wordnet

        wordnet.ensure_loaded()
        return str(wordnet.get_version())
    except Exception as exc:  # a broken or partial WordNet folder: run without synonyms, say why
        logger.warning("WordNet found but not loadable (%s): METEOR runs without its synonym stage", exc)
        return None


if __name__ == "__main__":  # `make setup` prepares the cache once
    logging.basicConfig(level=logging.INFO)
    print(f"WordNet for METEOR: {ensure_wordnet() or 'not available'}")
