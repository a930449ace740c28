"""What a stage is: the unit a run is made of. docs/architecture.md walks through a run.

Every stage (`Stage`) declares its name, config section and the kinds of rows it `provides`
and `consumes` (SAMPLES, CANDIDATES, SCORES, ...), never other stages' names; engine.stages.plan
resolves the data flow from them. A stage is built from its own validated section
(`ScoreStage(params)`) and is generic over its Params class (`params_class`), a part stage also
over its tasks' entry params (`PartStage[ScoreSection, ScorerSpec]`); its hooks read `self.params`
and take no config. It is one of three kinds: `PartStage` (part `i` of the input to part `i` of
its output; `tasks` is its identity, `run_part(ctx)` a pure function of the part's inputs),
`SourceStage` (makes the run's input) and `DriverStage` (runs once in the driver after every
part). Optional capabilities (`Reusable`, `ReportSection`, `ReportSettings`, `Rates`, `Analyzes`,
`CandidateSource`) are small bases found with isinstance, never by name. Adding a stage is one
module `engine/<stage>/stage.py` and one line in engine.stages.registry (docs/architecture.md).
"""
from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Iterable, TypeVar, cast

import pyarrow as pa

from engine.errors import StageError
from engine.kinds import CALIBRATION, CANDIDATES, INPUT, JUDGMENTS, LAYER_SETTING, REPORT, ROUNDTRIP_ROWS, SAMPLES, SCORES, SIGNIFICANCE_SETTING
from engine.params import Params

if TYPE_CHECKING:
    from engine.io.rundir import RunDirectory

# A stage's section params: a frozen, validated `Params` class (engine.params).
P = TypeVar("P", bound=Params)
# The params of one entry of a section, which a task carries: a generator, a scorer spec, a judge
# (None for a stage whose section is its only entry).
E = TypeVar("E")

# What a stage module imports from here: the bases and, so that one import serves a stage, the
# kinds of rows of the declared data flow (`provides` / `consumes`) and the keys of
# `ReportSettings.report_settings`, defined in engine.kinds.
__all__ = [
    "CALIBRATION", "CANDIDATES", "INPUT", "JUDGMENTS", "LAYER_SETTING", "REPORT", "ROUNDTRIP_ROWS", "SAMPLES", "SCORES",
    "SIGNIFICANCE_SETTING", "MODEL_PATH_OPTIONS", "StageTask", "PartTask", "prepass_hash", "RunSettings", "PartContext",
    "SampleOrigin", "OwnTable", "Stage", "PartStage", "SourceStage", "DriverStage", "Reusable", "ReportSection",
    "ReportSettings", "Rates", "Analyzes", "CandidateSource",
]

# Option names whose values are model or tokenizer locations in most sections.
MODEL_PATH_OPTIONS = ("model", "tokenizer")


@dataclass(frozen=True)
class StageTask(Generic[E]):
    """One configured entry of a stage: its identity and how parts of it are scheduled.

    task: unique, filesystem-safe name (e.g. `lexical-bleu-1a2b3c4d`, `generate-starcoder2-7b`);
    model_key: parts sharing it share one loaded model (model-major scheduling; '' = no model);
    entry: position of the entry in its config section (scorer, generator, judge...), -1 if
    none: only for messages that name the entry (`judge.judges[1]`);
    params: the entry's own validated params (a generator, a scorer, a judge; None: the
    section is the entry), what the stage's hooks read for this task.
    """

    stage: str
    task: str
    model_key: str = ""
    entry: int = -1
    params: E | None = field(default=None, compare=False)


@dataclass(frozen=True)
class PartTask(Generic[E]):
    """Part `index` of one stage task: the unit of work, of retry and of exactly-once commit."""

    stage: str
    task: str
    index: int
    model_key: str = ""
    entry: int = -1
    directory: str = ""  # the stage's output folder (BoundStage.parts sets it from the stage)
    params: E | None = field(default=None, compare=False)  # the task's entry params (StageTask.params)

    @classmethod
    def of(cls, stage_task: StageTask[E], index: int, directory: str) -> "PartTask[E]":
        return cls(stage_task.stage, stage_task.task, index, stage_task.model_key, stage_task.entry, directory,
                   stage_task.params)

    @property
    def key(self) -> str:
        return f"{self.stage}/{self.task}/{self.index:05d}"

    @property
    def relative_path(self) -> str:
        return f"{self.directory}/{self.task}__part-{self.index:05d}.parquet"


def prepass_hash(result: Any) -> str:
    """Short sha256 of a pre-pass result (canonical JSON); goes into signatures."""
    payload = json.dumps(result, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class RunSettings:
    """The run-wide settings a part may read; everything else a stage reads is its own params.

    labels: the expert labels table (absolute path) that generated rows are joined with, if any;
    reuse: earlier run directories whose finished rows this run takes (engine.reuse).
    """

    labels: str | None = None
    reuse: tuple[str, ...] = ()


@dataclass
class PartContext(Generic[E]):
    """Everything a part may read. Workers build it from the run directory they can see."""

    run_root: Path
    settings: RunSettings
    part: PartTask[E]
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


@dataclass(frozen=True)
class SampleOrigin:
    """Where a part stage's samples come from, as the RunPlan hands it to the stage
    (`PartStage.samples`): the stage never asks which stage makes them.

    generated: the generator names a stage gives the rows (its `row_generators`); None: no
    stage generates them, they are the run's input rows;
    input: the input file they are read from (None: a source stage makes them, or a stage
    generates them).
    """

    generated: tuple[str, ...] | None = None
    input: str | None = None


@dataclass(frozen=True)
class OwnTable:
    """A part stage's task table of its own, read in place of the samples (the round trip's
    tasks), as the stage describes it (`PartStage.own_table`) to the bench: its rows, and the
    section options that cap it (`limit_option` rows in all, `per_part_option` a part)."""

    rows: int
    limit_option: str
    per_part_option: str


class Stage(ABC, Generic[P]):
    """What every stage declares, whatever its kind: identity, config section, data flow."""

    name: ClassVar[str]
    kind: ClassVar[str]  # part | source | driver: set by PartStage, SourceStage, DriverStage
    # The module or package that holds the stage's domain code (the only place, with the
    # registry, where the stage's name may be written).
    package: ClassVar[str] = ""
    section: ClassVar[str | None] = None  # config section key; None: the stage takes no options
    # "module:Class" of the section's Params class (the `P` it derives from): what the registry
    # names as its params type and `babelscore config reference` documents.
    params_class: ClassVar[str | None] = None
    # The section is a list of entries of several kinds, each documented by its kind (the score
    # stage's scorers) rather than by the section's class.
    entries_by_kind: ClassVar[bool] = False
    provides: ClassVar[str | None] = None  # the kind of rows it writes
    consumes: ClassVar[tuple[str, ...]] = ()  # the kinds of rows its parts (or its driver work) read
    # The top-level `seed` defaults the section's `seed` (see `with_run_seed`); a stage that
    # keeps its own default says why in its docstring.
    seeded: ClassVar[bool] = False
    # Option names whose values are locations: a value starting with ./ or ../ is resolved
    # against the config file's folder (engine.config.resolve_path_options), in nested entries too.
    path_options: ClassVar[tuple[str, ...]] = MODEL_PATH_OPTIONS

    params: P

    def __init__(self, params: P | None = None) -> None:
        # The validated section. None only in the registry's unbuilt instance, which parses
        # sections and declares the data flow and never reads `params`.
        self.params = cast(P, params)

    @abstractmethod
    def parse_section(self, raw: Any, base_dir: Path, where: str) -> P:
        """Validate this stage's config section into a frozen Params object."""

    def with_run_seed(self, options: dict[str, Any], seed: int) -> dict[str, Any]:
        """The section's raw options with the run's `seed` as the default of its seed (when `seeded`)."""
        if self.seeded:
            options.setdefault("seed", seed)
        return options

    def check_config(self) -> None:
        """Config-time checks of its section (models resolvable, inputs present)."""

    def preflight(self) -> str | None:
        """Checks that read the input (run before the run directory exists, and by `config check`);
        ConfigError when one fails, else a line saying what was checked (None: nothing)."""
        return None

    def console_lines(self, run: "RunDirectory", counts: dict[str, Any]) -> list[str]:
        """What `babelscore run` prints of its rows once the run is done ([]: nothing).
        run: the finished run's engine.io.rundir.RunDirectory, opened with its layout; counts: the manifest's counts."""
        return []


class PartStage(Stage[P], Generic[P, E]):
    """Parts through an executor: part `i` of its input becomes part `i` of `directory`;
    its tasks carry entry params of type `E`."""

    kind: ClassVar[str] = "part"
    directory: ClassVar[str] = ""
    schema: ClassVar[pa.Schema | None] = None
    # The columns it needs from its input table (checked before `run_part`, the stage named in the error).
    input_columns: ClassVar[tuple[str, ...]] = ()
    # The `generator` values its rows carry, when it provides SAMPLES (None: it names none).
    row_generators: tuple[str, ...] | None = None
    # Where its samples come from: set by the RunPlan when it binds the stage.
    samples: SampleOrigin = SampleOrigin()

    @abstractmethod
    def tasks(self) -> list[StageTask[E]]:
        """Its identity: one task per configured entry, named from the entry's resolved options,
        so two differently configured entries never share a task, a part file or a score key."""

    @abstractmethod
    def run_part(self, ctx: PartContext[E]) -> pa.Table:
        """A pure function of the part's inputs, the task and the pre-pass result."""

    def signatures(self, task: StageTask[E], prepass: dict[str, Any]) -> dict[str, Any]:
        """Signature strings of this task's outputs, for the manifest. Every stage that writes rows
        gives them: the runner refuses a task with committed rows and no signature."""
        return {}

    def model_needs(self) -> list[Any]:
        """The models its parts load (engine.runtime.memory.ModelNeed), for memory planning."""
        return []

    def needs_prepass(self, task: StageTask[E]) -> bool:
        """Whether the task has a corpus pre-pass (`prepass`), run once over the whole input
        before any part; its JSON-able result is stored in RUN/prepass/<task>.json and its hash
        goes into the signatures."""
        return False

    def prepass(self, task: StageTask[E], tables: Iterable[pa.Table]) -> dict[str, Any]:
        """Run once over every part's input table (streamed, never concatenated)."""
        return {}

    def input_parts(self, run_root: str | Path) -> list[int] | None:
        """Rows of each part of a task table of its own, cut in RUN/ before its parts are planned;
        None: its parts are the run's sample parts. It must be idempotent on a run directory
        (resume reuses what it wrote), so part i always covers the same rows."""
        return None

    def own_table(self) -> OwnTable | None:
        """Its task table of its own, described for the bench (None: it reads the samples)."""
        return None

    def require_columns(self, table: pa.Table, source: str) -> None:
        missing = [c for c in self.input_columns if c not in table.column_names]
        if missing:
            raise StageError(self.name, f"its input {source} lacks column(s) {missing}; it needs {list(self.input_columns)}")


class SourceStage(Stage[P]):
    """Makes the run's input: its rows are validated and cut into sample parts like a file's."""

    kind: ClassVar[str] = "source"

    @abstractmethod
    def input_table(self) -> pa.Table:
        """The run's input rows."""


class DriverStage(Stage[P]):
    """Runs once in the driver after every part committed."""

    kind: ClassVar[str] = "driver"
    # A driver stage that only views final outputs runs after the run is marked complete.
    after_complete: ClassVar[bool] = False

    @abstractmethod
    def run_driver(self, run: "RunDirectory") -> None:
        """Its work; it records its own completion with `run.mark_stage(self.name, ...)`."""


# ----- opt-in capabilities: a stage derives from one to have it; the RunPlan, engine.reuse and
# the layout find them with isinstance, never by a stage's name ----------------------------------
class Reusable(ABC):
    """Parts can take finished rows of earlier runs (`reuse:`). The stage owns what makes two
    results the same (`reuse_identity`) and how a part's rows are matched and merged
    (`reuse_part`); engine.reuse holds only the generic machinery (sources, bookkeeping)."""

    reuse_verb: ClassVar[str] = "computed"  # the console's verb for the rows it made itself

    @abstractmethod
    def reuse_identity(self, task: StageTask, prepass: dict[str, Any]) -> str:
        """A task's identity: equal identities compute equal rows from equal inputs."""

    @abstractmethod
    def reuse_part(self, ctx: PartContext, sources: Any) -> tuple[pa.Table, dict[str, int], int] | None:
        """(table, rows reused per earlier run, rows computed), or None to compute the part whole.
        sources: engine.reuse.sources.ReuseSources of the earlier runs."""


class ReportSection(ABC):
    """The stage has its own section in the report."""

    @abstractmethod
    def report_section(self, ctx: Any) -> Any:
        """None, an (anchor, title, HTML body) tuple, or a list of them (or of
        `engine.report.section_api.Section`). ctx: the report's ReportContext (`ctx.data.root` is
        the run folder, `ctx.fw` draws figures)."""


class ReportSettings(ABC):
    """The report reads something of the stage's options as the run recorded them (the
    manifest's config): the report never opens another stage's section by name."""

    @abstractmethod
    def report_settings(self, options: dict[str, Any]) -> dict[str, Any]:
        """{setting key: value} from the recorded options of its section ({} when absent)."""


class Rates(ABC):
    """What "per second" means for the stage besides rows/s (engine.throughput)."""

    rates: ClassVar[tuple[tuple[str, str], ...]] = ()  # (counter, unit) pairs
    output_rows_counter: ClassVar[str | None] = None  # the counter its output rows stand for (round trip: runs)


class Analyzes(ABC):
    """Driver-side analysis of a part stage's committed outputs (e.g. agreement tables)."""

    @abstractmethod
    def analyze(self, run: "RunDirectory") -> None:
        """Once in the driver after every part of every stage committed; it must read the run
        directory group by group, not all at once."""


class CandidateSource:
    """Its rows are candidates the score stage scores like predictions (`provides = CANDIDATES`)."""

    def as_candidates(self, table: pa.Table) -> pa.Table:
        """Its rows as (sample_id, noise, prediction): what the scorers score."""
        return table.select(["sample_id", "noise", "prediction"])
