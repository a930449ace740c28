"""LLM-as-a-judge: prompts as data, output schemas, the parser, backends and the analysis."""
