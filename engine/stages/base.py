"""What a stage is: the unit a run is made of.

A *part stage* turns part `i` of the run's input into part `i` of its own output directory
under RUN/. It declares (in the spirit of datatrove's pipeline steps and Ray Data's stages):

- `name`: its name in `stages:` and in part keys; `section`: its config section (or None);
- `directory` and `schema`: where its part files go and the Arrow schema every part has;
- `input_columns`: the columns it needs from its input table (checked before `run_part`, the
  stage named in the error); `reads`: earlier stages whose outputs it reads for the same part;
- `tasks(config)`: its **identity** — one `StageTask` per configured entry, each named from the
  entry's complete resolved options, so two differently configured entries never share a task,
  a part file or a score key (an exactly duplicated entry is refused at config time);
- `prepass(...)`: an optional **corpus pre-pass** run once over the whole input before any
  part (document frequencies, generation limits, vocabularies); its JSON-able result is stored
  in RUN/prepass/<task>.json and its hash goes into the signatures;
- `run_part(ctx)`: a pure function of the part's inputs, the task and the pre-pass result.

Part stages run through an executor (local or Ray) and the driver commits each part
atomically. Driver stages (calibrate, report) read the committed outputs after all parts.

Adding a stage is one module with a `Stage` subclass and one line in `engine.stages.registry`.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable

import pyarrow as pa

from engine.errors import StageError


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

    def input_table(self) -> pa.Table:
        """The part's input rows: generated rows when a generate stage ran, else validated samples."""
        return self._input_reader(self.part.index)

    def stage_output(self, stage: str) -> pa.Table:
        """Every committed row of an earlier stage (all its tasks) for this part's index."""
        return self._output_reader(stage, self.part.index)


class Stage:
    """Base class of a part stage. Subclasses set the class attributes and override methods."""

    name: ClassVar[str]
    section: ClassVar[str | None] = None  # config section key; None: the stage takes no options
    # "module:Class" of the section's Params class: what `babelscore config reference` documents
    # (the score stage documents its scorer kinds instead).
    params_class: ClassVar[str | None] = None
    directory: ClassVar[str]
    schema: ClassVar[pa.Schema]
    input_columns: ClassVar[tuple[str, ...]] = ()
    reads: ClassVar[tuple[str, ...]] = ()  # earlier stages whose outputs run_part reads

    # ----- configuration ------------------------------------------------------------------
    def parse_section(self, raw: Any, base_dir: Path, where: str) -> Any:
        """Validate this stage's config section into a frozen Params object."""
        raise NotImplementedError

    def check_config(self, config: Any) -> None:
        """Config-time checks that need the whole config (models resolvable, inputs present)."""

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
        """Signature strings of this task's outputs, for the manifest."""
        return {}

    # ----- driver-side analysis and report (optional) ----------------------------------------
    def analyze(self, run: Any, config: Any) -> None:
        """Run once in the driver after every part of every stage committed (e.g. agreement
        tables of the stage's outputs). Must read the run directory group by group, not all at once."""

    def report_section(self, run_root: Path) -> tuple[str, str, str] | None:
        """(anchor, title, HTML body) of this stage's report section, or None when it has nothing."""
        return None

    # ----- helpers for subclasses -----------------------------------------------------------
    def require_columns(self, table: pa.Table, source: str) -> None:
        missing = [c for c in self.input_columns if c not in table.column_names]
        if missing:
            raise StageError(self.name, f"its input {source} lacks column(s) {missing}; it needs {list(self.input_columns)}")

