def TokensPrompt(**fields):  # a TypedDict in vLLM
    return dict(fields)
