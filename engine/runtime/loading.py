"""Loading tokenizers and models from configured names, and surviving out-of-memory batches.

Every stage that loads a tokenizer or a model goes through here, so device, dtype, attention
and error handling are chosen one way: the device is `cuda` when one is visible unless
configured; the dtype follows the capability probe (engine.runtime.hardware); attention is
flash_attention_2 on CUDA in half precision when the package is installed, else sdpa, and
eager for architectures that support neither. A batch that runs out of memory is halved
until it fits; out of memory on a single item is a TransientError (the part fails and is
retried or redone on resume), never a row with an error.
"""
from __future__ import annotations

import functools
import importlib.util
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

from engine.errors import ConfigError, ModelLoadError, TransientError
from engine.runtime.hardware import resolve_device, resolve_dtype
from engine.runtime.names import ResolvedModel, check_model_name, resolve_model

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")


def torch_dtype(name: str) -> "torch.dtype":
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def attn_implementation(device: str, dtype: str) -> str:
    """flash_attention_2 on CUDA in half precision when the package is installed, else sdpa."""
    if device.startswith("cuda") and dtype != "float32" and importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2"
    return "sdpa"


def dtype_keyword() -> str:
    """`from_pretrained` takes `dtype` since transformers 4.56, `torch_dtype` before."""
    from engine.signature import package_version

    try:
        major, minor = (int(x) for x in package_version("transformers").split(".")[:2])
    except ValueError:
        return "dtype"
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


# ----- tokenizers ------------------------------------------------------------------------------
@functools.lru_cache(maxsize=32)
def _load_tokenizer(name: str, fast: bool, options: tuple[tuple[str, Any], ...]) -> Any:
    from transformers import AutoTokenizer

    resolved = resolve_model(name, "tokenizer")
    try:
        tokenizer = AutoTokenizer.from_pretrained(resolved.path, **resolved.pretrained_kwargs(), **dict(options))
    except Exception as exc:  # transformers raises many types for a missing or broken tokenizer
        raise ModelLoadError(f"cannot load tokenizer {name!r} from {resolved.path!r}: {exc}") from exc
    if fast and not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(f"tokenizer {name!r} has no fast (Rust) version; character offsets need one, so "
                             "the directory must hold a tokenizer.json")
    return tokenizer


def load_tokenizer(name: str, *, fast: bool = True, **kw: Any) -> Any:
    """The tokenizer configured as `name`, loaded once per process per (name, options).

    fast: require a fast tokenizer (offset mappings). Extra keywords go to from_pretrained and
    must be hashable. The object is shared: callers must not change its settings.
    """
    return _load_tokenizer(name, fast, tuple(sorted(kw.items())))


def check_tokenizer(name: str, where: str, *, fast: bool = True) -> Any:
    """Config-time check that the tokenizer configured under key `where` resolves and loads."""
    check_model_name(name, where, "tokenizer")
    try:
        return load_tokenizer(name, fast=fast)
    except ModelLoadError as exc:
        raise ConfigError(f"{where}: {exc}") from None


# ----- models ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LoadedModel:
    """A model in eval mode on its device, with what was actually chosen for it."""

    model: Any
    resolved: ResolvedModel
    device: str
    dtype: str  # the dtype actually used (after the probe's fallback)
    attn_implementation: str


def _from_pretrained(auto_class: Any, path: str, kwargs: dict[str, Any]) -> Any:
    if isinstance(auto_class, str):
        import transformers

        auto_class = getattr(transformers, auto_class)
    loader = getattr(auto_class, "from_pretrained", auto_class)
    return loader(path, **kwargs)


def load_model(
    name: str,
    auto_class: Any,
    *,
    dtype: str = "auto",
    device: str = "auto",
    strict_dtype: bool = False,
    attn: str | None = None,
    **kw: Any,
) -> LoadedModel:
    """Load `name` with `auto_class` (a transformers class, its name, or a callable(path, **kwargs)).

    dtype `auto` or explicit, resolved by the probe (a slow explicit dtype falls back to float32
    with a warning, or raises ConfigError when strict_dtype). attn: None chooses it; an
    architecture without that implementation falls back to eager with a warning.
    """
    resolved = resolve_model(name, "model")
    device = resolve_device(device)
    used_dtype = resolve_dtype(dtype, device, strict_dtype, model=name)
    attention = attn or attn_implementation(device, used_dtype)
    kwargs = {dtype_keyword(): torch_dtype(used_dtype), "attn_implementation": attention,
              **resolved.pretrained_kwargs(), **kw}
    try:
        try:
            model = _from_pretrained(auto_class, resolved.path, kwargs)
        except (ValueError, ImportError) as exc:
            if attention == "eager":
                raise
            logger.warning("model %s: attention %s unavailable (%s); using eager", name, attention, exc)
            attention = "eager"
            model = _from_pretrained(auto_class, resolved.path, {**kwargs, "attn_implementation": "eager"})
    except ModelLoadError:
        raise
    except Exception as exc:  # transformers raises many types for missing or damaged files
        from engine.runtime.model_files import check_model_dir

        check_model_dir(resolved.path, f"model {name!r}")  # a damaged file: DamagedModelError naming it
        raise ModelLoadError(f"cannot load model {name!r} from {resolved.path!r}: {type(exc).__name__}: {exc}. "
                             "Check the directory or hub id (a damaged weights file can be replaced and the "
                             "run resumed)") from exc
    model = model.eval().to(device)
    attention = str(getattr(getattr(model, "config", None), "_attn_implementation", None) or attention)
    logger.info("loaded %s (%s) on %s in %s, attention %s", name, resolved.short_identity, device, used_dtype,
                attention)
    return LoadedModel(model, resolved, device, used_dtype, attention)


# ----- out of memory ---------------------------------------------------------------------------
def is_oom(exc: BaseException) -> bool:
    """Whether `exc` is an out-of-memory error of torch (CUDA, MPS or host)."""
    import torch

    return isinstance(exc, (torch.cuda.OutOfMemoryError, MemoryError)) or "out of memory" in str(exc).lower()


def free_accelerator_memory() -> None:
    """Hand torch's cached CUDA blocks back, in a process that uses CUDA (never starting it here)."""
    import torch

    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def halve_on_oom(
    fn: Callable[[Sequence[T]], list[R]],
    batch: Sequence[T],
    min_batch: int = 1,
    on_halve: Callable[[int], None] | None = None,
) -> list[R]:
    """`fn(batch)`, one result per item; on out of memory the batch is halved and each half retried.

    Out of memory on a batch of `min_batch` items or fewer raises TransientError (the part is
    retried, never recorded as an error row). Other exceptions propagate unchanged. on_halve
    is called with the size of each batch that was split.
    """
    try:
        return fn(batch)
    except Exception as exc:
        if not is_oom(exc):
            raise
        free_accelerator_memory()
        if len(batch) <= max(1, min_batch):
            raise TransientError(f"out of memory on a batch of {len(batch)} item(s) even after halving "
                                 f"({exc}); the part will be retried: free memory, lower the batch size, "
                                 "or use a device with more memory") from exc
        logger.warning("out of memory on a batch of %d; halving and retrying", len(batch))
        if on_halve is not None:
            on_halve(len(batch))
    half = len(batch) // 2
    return (halve_on_oom(fn, batch[:half], min_batch, on_halve)
            + halve_on_oom(fn, batch[half:], min_batch, on_halve))
