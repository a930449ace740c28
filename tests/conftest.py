"""Shared fixtures, a quiet environment, and the `heavy` marker of tests/tiers.py (shared helpers
are modules of tests/support/)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.samples import make_sample
from tests.tiers import HEAVY_MODULES, is_heavy, module_of

os.environ.setdefault("BABELSCORE_NO_PROGRESS", "1")
# Tiny models gain nothing from intra-op threads, and on a busy 2-core machine the threads
# of torch (and of Ray workers, which inherit this) spin against each other.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TESTS = Path(__file__).resolve().parent


@pytest.fixture
def sample_factory():
    return make_sample


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under `-m "not heavy"` a heavy module is not even imported: every test of it would be
    deselected anyway, and importing Ray, vLLM and the rest costs a minute on 2 cores."""
    if config.getoption("markexpr", "").strip() != "not heavy" or not collection_path.is_relative_to(TESTS):
        return None
    return True if module_of(collection_path.relative_to(TESTS).as_posix()) in HEAVY_MODULES else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks `heavy` what tests/tiers.py classifies so (`make test-fast` deselects it)."""
    for item in items:
        if is_heavy(item.nodeid, {m.name for m in item.iter_markers()}):
            item.add_marker(pytest.mark.heavy)


@pytest.fixture(scope="module", autouse=True)
def _release_models_after_module():
    """Models (and vLLM worker processes) of one test module never stay loaded for the next."""
    yield
    from engine.runtime.model_registry import model_registry, release_all_models

    release_all_models()
    model_registry().take_records()  # the next module's record checks see only its own loads
