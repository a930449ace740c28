"""Hot loops: torch masked pooling / greedy matching and numba kernels (KDE).

Each kernel has a slow, obvious version in `kernels.reference` used as a test oracle.
"""
