"""What a stage is: the unit a run is made of.

A *part stage* turns part `i` of the run's input into part `i` of its own output directory
under RUN/. It declares (in the spirit of datatrove's pipeline steps and Ray Data's stages):

- `name`: its name in `stages:` and in part keys; `section`: its config section (or None);
- `kind`: `part` (parts through an executor), `source` (makes the run's input before the
  samples are cut, e.g. `build`) or `driver` (runs once in the driver after every part, e.g.
  calibrate, report: `run_driver`);
- `provides` and `consumes`: the **declared data flow**, kinds of rows (SAMPLES, CANDIDATES,
  SCORES, ...) rather than stage names; `engine.stages.flow` resolves from them which stage's
  rows a part reads, for the runner, both executors, RunDirectory and the report;
- `directory` and `schema`: where its part files go and the Arrow schema every part has;
- `input_columns`: the columns it needs from its input table (checked before `run_part`, the
  stage named in the error);
- `seeded`, `path_options`, `preflight`: what the config loader and `babelscore config check`
  do for it (the top-level `seed` defaults its seed(s); which option values are paths
  relative to the config file; checks that read the input);
- `tasks(config)`: its **identity** — one `StageTask` per configured entry, each named from the
  entry's complete resolved options, so two differently configured entries never share a task,
  a part file or a score key (an exactly duplicated entry is refused at config time);
- `prepass(...)`: an optional **corpus pre-pass** run once over the whole input before any
  part (document frequencies, generation limits, vocabularies); its JSON-able result is stored
  in RUN/prepass/<task>.json and its hash goes into the signatures;
- `run_part(ctx)`: a pure function of the part's inputs, the task and the pre-pass result.

Part stages run through an executor (local or Ray) and the driver commits each part
atomically. Driver stages read the committed outputs after all parts. How a task's parts run
follows from its `StageTask.model_key`: with a model they run in that model's actor (the
model stays loaded between parts), without one as plain tasks.

Adding a stage is one module with a `Stage` subclass and one line in `engine.stages.registry`;
optional capabilities (`Reusable`, below) are opt-in base classes. The driver binds the listed
stages into a RunPlan (engine.stages.plan); docs/architecture.md walks through a run.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable

import pyarrow as pa

from engine.errors import StageError

# Kinds of rows in the declared data flow (`provides` / `consumes`), re-exported for stage modules.
from engine.kinds import CALIBRATION, CANDIDATES, INPUT, JUDGMENTS, REPORT, ROUNDTRIP_ROWS, SAMPLES, SCORES  # noqa: E402,F401

# Option names whose values are model or tokenizer locations in most sections.
MODEL_PATH_OPTIONS = ("model", "tokenizer")


@dataclass(frozen=True)
class StageTask:
    """One configured entry of a stage: its identity and how parts of it are scheduled.

    task: unique, filesystem-safe name (e.g. `lexical-bleu-1a2b3c4d`, `generate-starcoder2-7b`);
    model_key: parts sharing it share one loaded model (model-major scheduling; '' = no model);
    entry: position of the entry in its config section (scorer, generator, judge...), -1 if none.
    """

    stage: str
    task: str
    model_key: str = ""
    entry: int = -1


@dataclass(frozen=True)
class PartTask:
    """Part `index` of one stage task: the unit of work, of retry and of exactly-once commit."""

    stage: str
    task: str
    index: int
    model_key: str = ""
    entry: int = -1
    directory: str = ""

    @classmethod
    def of(cls, stage_task: StageTask, index: int, directory: str) -> "PartTask":
        return cls(stage_task.stage, stage_task.task, index, stage_task.model_key, stage_task.entry, directory)

    @property
    def key(self) -> str:
        return f"{self.stage}/{self.task}/{self.index:05d}"

    @property
    def relative_path(self) -> str:
        directory = self.directory
        if not directory:
            from engine.stages.registry import get_stage

            directory = get_stage(self.stage).directory
        return f"{directory}/{self.task}__part-{self.index:05d}.parquet"

    @property
    def schema(self) -> pa.Schema:
        from engine.stages.registry import get_stage

        return get_stage(self.stage).schema


def prepass_hash(result: Any) -> str:
    """Short sha256 of a pre-pass result (canonical JSON); goes into signatures."""
    payload = json.dumps(result, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


@dataclass
class PartContext:
    """Everything a part may read. Workers build it from the run directory they can see."""

    run_root: Path
    config: Any  # engine.config.RunConfig (not imported: stages must not import the runner)
    part: PartTask
    prepass: dict[str, Any] = field(default_factory=dict)
    _input_reader: Any = None  # callable(index) -> pa.Table, set by the runner
    _output_reader: Any = None  # callable(stage, index) -> pa.Table, set by the runner
    _consumed: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # kind -> earlier Stages (the RunPlan's)

    def input_table(self) -> pa.Table:
        """The part's input rows: generated rows when a generate stage ran, else validated samples."""
        return self._input_reader(self.part.index)

    def stage_output(self, stage: str) -> pa.Table:
        """Every committed row of an earlier stage (all its tasks) for this part's index."""
        return self._output_reader(stage, self.part.index)

    def providers_of(self, kind: str) -> tuple["Stage", ...]:
        """The earlier stages this part reads rows of `kind` from, in run order (the RunPlan
        resolved them from the declared data flow); read each with `stage_output`."""
        return self._consumed.get(kind, ())


class Stage:
    """Base class of a stage. Subclasses set the class attributes and override methods."""

    name: ClassVar[str]
    kind: ClassVar[str] = "part"  # part | source | driver (see the module docstring)
    # The module or package that holds the stage's domain code (the only place, with this
    # stage module and the registry, where the stage's name may be written).
    package: ClassVar[str] = ""
    section: ClassVar[str | None] = None  # config section key; None: the stage takes no options
    # "module:Class" of the section's Params class: what `babelscore config reference` documents
    # (the score stage documents its scorer kinds instead).
    params_class: ClassVar[str | None] = None
    provides: ClassVar[str | None] = None  # the kind of rows it writes
    consumes: ClassVar[tuple[str, ...]] = ()  # the kinds of rows its parts (or its driver work) read
    directory: ClassVar[str] = ""
    schema: ClassVar[pa.Schema | None] = None
    input_columns: ClassVar[tuple[str, ...]] = ()
    # The top-level `seed` defaults the section's `seed` (see `with_run_seed`); a stage that
    # keeps its own default says why in its docstring.
    seeded: ClassVar[bool] = False
    # Option names whose values are locations: a value starting with ./ or ../ is resolved
    # against the config file's folder (engine.config.resolve_path_options), in nested entries too.
    path_options: ClassVar[tuple[str, ...]] = MODEL_PATH_OPTIONS
    # A driver stage that only views final outputs runs after the run is marked complete.
    after_complete: ClassVar[bool] = False
    # Whether parts can take finished rows of earlier runs: a stage derives from `Reusable`.
    # Throughput: what "per second" means for the stage besides rows/s, as (counter, unit) pairs
    # (engine.throughput), and the counter its output rows stand for, if any (round trip: runs).
    rates: ClassVar[tuple[tuple[str, str], ...]] = ()
    output_rows_counter: ClassVar[str | None] = None

    # ----- configuration ------------------------------------------------------------------
    def parse_section(self, raw: Any, base_dir: Path, where: str) -> Any:
        """Validate this stage's config section into a frozen Params object."""
        raise NotImplementedError

    def with_run_seed(self, options: dict[str, Any], seed: int) -> dict[str, Any]:
        """The section's raw options with the run's `seed` as the default of its seed (when `seeded`)."""
        if self.seeded:
            options.setdefault("seed", seed)
        return options

    def check_config(self, config: Any) -> None:
        """Config-time checks that need the whole config (models resolvable, inputs present)."""

    def preflight(self, config: Any) -> str | None:
        """Checks that read the input (run before the run directory exists, and by `config check`);
        ConfigError when one fails, else a line saying what was checked (None: nothing)."""
        return None

    def model_needs(self, config: Any) -> list[Any]:
        """The models its parts load (engine.runtime.memory.ModelNeed), for memory planning."""
        return []

    # ----- identity and planning ----------------------------------------------------------
    def tasks(self, config: Any) -> list[StageTask]:
        raise NotImplementedError

    def own_parts(self, config: Any, run_root: str | Path) -> list[int] | None:
        """Rows of each part when the stage cuts its own input (not the sample parts), else None.

        Called by the driver before the stage's parts are planned; it must be idempotent on a
        run directory (resume reuses what it wrote), so part i always covers the same rows.
        """
        return None

    def needs_prepass(self, config: Any, task: StageTask) -> bool:
        return False

    def prepass(self, config: Any, task: StageTask, tables: Iterable[pa.Table]) -> dict[str, Any]:
        """Run once over every part's input table (streamed, never concatenated)."""
        return {}

    # ----- work ---------------------------------------------------------------------------
    def run_part(self, ctx: PartContext) -> pa.Table:
        raise NotImplementedError

    def signatures(self, config: Any, task: StageTask, prepass: dict[str, Any]) -> dict[str, Any]:
        """Signature strings of this task's outputs, for the manifest. Required of every stage that
        writes rows: the runner refuses a task with committed rows and no signature."""
        return {}

    # ----- data flow -----------------------------------------------------------------------
    def row_generators(self, config: Any) -> list[str]:
        """A SAMPLES provider's `generator` values (the names its rows carry)."""
        raise NotImplementedError

    def own_table_rows(self, config: Any) -> int | None:
        """Rows of the stage's own task table when it does not work on the samples (the round
        trip's tasks), else None: what a throughput projection scales it by."""
        return None

    def has_own_table(self) -> bool:
        """Whether the stage works on a task table of its own (it defines `own_table_rows`)."""
        return type(self).own_table_rows is not Stage.own_table_rows

    def limit_own_table(self, options: dict[str, Any], limit: int, per_part: int) -> dict[str, Any]:
        """Section options that cap the stage's own task table at `limit` rows, `per_part` a part."""
        return options

    def as_candidates(self, table: pa.Table) -> pa.Table:
        """A CANDIDATES provider's rows as (sample_id, noise, prediction): what the scorers score."""
        return table.select(["sample_id", "noise", "prediction"])

    # ----- source and driver stages ---------------------------------------------------------
    def input_table(self, config: Any) -> pa.Table:
        """A source stage's rows: the run's input, validated and cut into parts like a file's."""
        raise NotImplementedError

    def run_driver(self, run: Any, config: Any) -> None:
        """A driver stage's work, once in the driver after every part committed (it records its
        own completion with `run.mark_stage(self.name, ...)`)."""
        raise NotImplementedError

    # ----- driver-side analysis and report (optional) ----------------------------------------
    def analyze(self, run: Any, config: Any) -> None:
        """Run once in the driver after every part of every stage committed (e.g. agreement
        tables of the stage's outputs). Must read the run directory group by group, not all at once."""

    def report_section(self, ctx: Any) -> Any:
        """This stage's report section(s): None, an (anchor, title, HTML body) tuple, or a list
        of them (or of `engine.report.context.Section`). ctx: the report's ReportContext
        (`ctx.data.root` is the run folder, `ctx.fw` draws figures)."""
        return None

    # ----- helpers for subclasses -----------------------------------------------------------
    def require_columns(self, table: pa.Table, source: str) -> None:
        missing = [c for c in self.input_columns if c not in table.column_names]
        if missing:
            raise StageError(self.name, f"its input {source} lacks column(s) {missing}; it needs {list(self.input_columns)}")



# ----- opt-in capabilities: a stage derives from one to have it; the RunPlan, engine.reuse and
# the layout find them with isinstance, never by a stage's name ----------------------------------
class Reusable:
    """Parts can take finished rows of earlier runs (`reuse:`). The stage owns what makes two
    results the same (`reuse_identity`) and how a part's rows are matched and merged
    (`reuse_part`); engine.reuse holds only the generic machinery (sources, bookkeeping)."""

    reuse_verb: ClassVar[str] = "computed"  # the console's verb for the rows it made itself

    def reuse_identity(self, config: Any, task: StageTask, prepass: dict[str, Any]) -> str:
        """A task's identity: equal identities compute equal rows from equal inputs."""
        raise NotImplementedError

    def reuse_part(self, ctx: PartContext, sources: Any) -> tuple[pa.Table, dict[str, int], int] | None:
        """(table, rows reused per earlier run, rows computed), or None to compute the part whole.
        sources: engine.reuse.sources.ReuseSources of the earlier runs."""
        raise NotImplementedError
