"""babelscore: batch scoring of LLM-generated code comments in many natural languages."""

__version__ = "0.1.0"
