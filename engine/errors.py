"""Project exception types. Every message says what went wrong and what to do."""


class BabelscoreError(Exception):
    """Base class for all errors babelscore raises on purpose."""


class ConfigError(BabelscoreError):
    """A run config is malformed: unknown key, bad value, missing file."""


class InputError(BabelscoreError):
    """The input sample table cannot be used (unreadable, or no valid row at all)."""


class RunDirectoryError(BabelscoreError):
    """The run directory belongs to another config or is in an unexpected state."""


class StageError(BabelscoreError):
    """A pipeline stage cannot run: a column it needs is missing, or a part failed."""

    def __init__(self, stage: str, message: str):
        super().__init__(f"stage '{stage}': {message}")
        self.stage = stage


class ModelLoadError(BabelscoreError):
    """A model or tokenizer could not be loaded from its configured location."""


class DamagedModelError(ModelLoadError):
    """A local model file is missing, cut short or damaged (engine/runtime/model_files.py): the
    files, not the config, need fixing, so a run that met it at load time is continued with
    `--resume` once the file is repaired."""


class DiskFullError(BabelscoreError):
    """A write into the run directory found its filesystem full (or over quota). Nothing
    half-written is left that looks complete (engine/io/atomic.py); committed parts are kept, so
    the run continues with `--resume` once space is freed."""


class MissingSecretError(ModelLoadError):
    """An environment variable the config names (a judge's `api_key_env`, a `provider_secret_env`)
    is not set. The variable is not part of the config, so after exporting it the same run
    continues (`--resume`) or starts."""


class PartFailedError(BabelscoreError):
    """A part kept failing after its retries; the run is marked failed.

    causes: the parts' error strings ("ConfigError: ...") so the CLI can say whether the fix
    is in the config (a new run directory) or elsewhere (--resume).
    """

    def __init__(self, message: str, causes: list[str] | tuple[str, ...] = ()):
        super().__init__(message)
        self.causes = list(causes)

    @property
    def config_caused(self) -> bool:
        return any(c.startswith(("ConfigError", "ModelLoadError")) for c in self.causes)

    @property
    def environment_caused(self) -> bool:
        """A variable the config names is not set: export it, then `--resume` (the config stays)."""
        return any(c.startswith("MissingSecretError") for c in self.causes)

    @property
    def budget_caused(self) -> bool:
        """Every failure is a judge stopped at a spending cap: raise it, then `--resume`."""
        return bool(self.causes) and all(c.startswith("BudgetExhaustedError") for c in self.causes)

    @property
    def files_caused(self) -> bool:
        """A model file is damaged: repair it, then `--resume` (the config stays as it is)."""
        return any(c.startswith("DamagedModelError") for c in self.causes)


class ClusterError(BabelscoreError):
    """The Ray cluster named by `--ray-address` cannot be reached, refuses this driver (another
    token, another Ray or Python version) or was lost in the middle of the run. Nothing of the
    run is wrong: committed parts are kept, and once the cluster is fixed the run continues
    with `--resume`."""


class BudgetExhaustedError(BabelscoreError):
    """A judge's next request would pass a spending cap (max_prompt_tokens, max_completion_tokens,
    max_cost): nothing over it was sent, every paid answer is kept (RUN/judge_cache). The part
    fails without a retry; raise the cap and `--resume` (caps are not part of the run's identity)."""


class BudgetStopError(PartFailedError):
    """The run stopped because judges reached their spending caps (every failed part says so)."""


class TransientError(BabelscoreError):
    """A failure of the moment, not of the data (out of memory at batch size 1, a lost device):
    the whole part fails, the executor retries it, and `--resume` redoes it. Never an error row."""


class RejectedRowsError(BabelscoreError):
    """A run finished but quarantined more input rows than `validation.max_rejected` /
    `--max-rejected` allow (engine/data/loss.py). Every valid row was processed; the exit
    status says that rows are missing from the results. `suggestion`: what to run next."""

    def __init__(self, message: str, suggestion: str = ""):
        super().__init__(message)
        self.suggestion = suggestion
