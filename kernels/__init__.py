"""Hot loops: torch masked pooling / greedy matching, numba kernels, optional Triton on CUDA.

Each kernel has a slow, obvious version in `kernels.reference` used as a test oracle.
"""
