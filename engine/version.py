"""The package's version: a base-layer module, so that signatures and manifests can name it
without importing the package's __init__ (which sets up the CUDA environment)."""

__version__ = "0.1.0"  # keep equal to pyproject.toml's `version`
