"""Running untrusted programs (a model's regenerated code and a task's tests) outside the engine.

One sandboxed run (`process.run_program`: bubblewrap, seccomp, a uid of its own, size-capped
mounts, a verdict channel the program cannot forge), the six languages' ways of turning code and
tests into runs (`languages`), and the split run that keeps a candidate and its tests in two
sandboxes with only plain values between them (`relay`, `proxies`, `plain`, `compare`). It knows
nothing of scoring: engine.roundtrip builds its verdicts on it. docs/sandbox.md is the threat model.
"""
