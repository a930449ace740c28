"""babelscore: batch scoring of LLM-generated code comments in many natural languages."""
from engine.runtime import thread_plan

# First: how thread pools wait is read once, when torch and numba load (engine.runtime.thread_plan).
thread_plan.apply()

from engine.runtime.cuda import use_fork_safe_cuda_check  # noqa: E402
from engine.version import __version__  # noqa: E402

__all__ = ["__version__"]

# Before anything asks torch whether CUDA is there: asked through NVML, the answer does not
# initialise CUDA, so a later fork (vLLM's default for its EngineCore) stays safe.
use_fork_safe_cuda_check()
