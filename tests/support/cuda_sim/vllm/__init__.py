"""Simulated vLLM 0.32 for tests/support/cuda_sim (see its README): the start-up facts of the real one,
none of its model code."""
import os

# As vllm/env_override.py does when vllm is imported.
os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"

from vllm._engine import LLM  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402

__version__ = "0.32.0+sim"
__all__ = ["LLM", "SamplingParams"]
