"""Installs the simulated CUDA into this interpreter when CUDASIM_DIR is set (see README.md)."""
import os

if os.environ.get("CUDASIM_DIR"):
    import fake_cuda

    fake_cuda.install_import_hook()
