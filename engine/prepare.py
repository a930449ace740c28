"""Prepare a run's input: validate every row, quarantine bad ones, cut the valid ones into parts.

Parts hold whole files: every row of a file lands in the same part (stages that work per file,
like a judge seeing all generators' candidates, need that), and a part is closed once it holds
at least `part_size` rows. Files are taken in the order of their first row. Valid rows are
spilled to an Arrow stream first, so the driver never holds the whole input: it holds the rows
of the parts still being filled (one part when each file's rows are contiguous in the input).

With a generate stage the unit is the file: its first row is the one generated from, so later
rows of the same file are merged into it (counted in the manifest). With `labels:` and no
generate stage, expert labels are joined to the rows by (file_id, generator).
"""
from __future__ import annotations

import logging
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.ipc as ipc

from engine.errors import InputError
from engine.generate.labels import join_labels
from engine.io.atomic import write_parquet_atomic
from engine.io.rundir import RunDirectory
from engine.records import REJECTED_SCHEMA, SAMPLE_SCHEMA

logger = logging.getLogger(__name__)

SPILL = "samples/.spill.arrow"
SPILL_BATCH = 2048


def _input_rows(plan: Any) -> Iterator[Any]:
    config, source = plan.config, plan.input_source
    if source is not None:  # a source stage (e.g. build) makes the input
        from engine.data.reader import RawRow

        table = source.stage.input_table()
        for index, values in enumerate(table.to_pylist()):
            yield RawRow(index, values, None, None)
    else:
        from engine.data.reader import iter_raw_rows

        yield from iter_raw_rows(config.input)


def _spill_valid_rows(run: RunDirectory, plan: Any) -> tuple[Any, list[dict[str, Any]], dict[str, int], list[str], int]:
    """Pass 1: validate, spill valid rows; returns (validator, rejected, rows per file, file order, merged)."""
    from engine.data.validate import SampleValidator

    # When a stage generates the samples, the input needs no prediction and each file is generated once.
    generated = plan.sample_source is not None
    validator = SampleValidator(require_prediction=not generated, params=plan.config.validation)
    one_row_per_file = generated
    rejected: list[dict[str, Any]] = []
    rows_per_file: dict[str, int] = {}
    merged = 0
    buffer: list[dict[str, Any]] = []
    spill = run.path(SPILL)
    spill.parent.mkdir(parents=True, exist_ok=True)
    with ipc.new_stream(str(spill), SAMPLE_SCHEMA) as writer:
        for raw in _input_rows(plan):
            sample, rejection = validator.check(raw)
            if rejection is not None:
                rejected.append(rejection)
                continue
            file_id = sample["file_id"]
            if one_row_per_file and file_id in rows_per_file:
                merged += 1
                continue
            rows_per_file[file_id] = rows_per_file.get(file_id, 0) + 1
            buffer.append(sample)
            if len(buffer) >= SPILL_BATCH:
                writer.write_table(pa.Table.from_pylist(buffer, schema=SAMPLE_SCHEMA))
                buffer = []
        if buffer:
            writer.write_table(pa.Table.from_pylist(buffer, schema=SAMPLE_SCHEMA))
    return validator, rejected, rows_per_file, list(rows_per_file), merged


def _assign_parts(rows_per_file: dict[str, int], file_order: list[str], part_size: int) -> tuple[dict[str, int], list[int]]:
    """file -> part index, and rows per part: files in first-seen order, a part closes at >= part_size rows."""
    part_of: dict[str, int] = {}
    sizes: list[int] = []
    current = 0
    for file_id in file_order:
        if not sizes or current >= part_size:
            sizes.append(0)
            current = 0
        part_of[file_id] = len(sizes) - 1
        sizes[-1] += rows_per_file[file_id]
        current += rows_per_file[file_id]
    return part_of, sizes


def prepare(run: RunDirectory, plan: Any) -> None:
    """Validate the input, write `samples/part-*.parquet` (whole files per part), quarantine the rest.

    plan: the run's RunPlan (engine.stages.plan): its input source, whether a stage makes the samples."""
    if run.stage_done("prepare"):
        return
    config = plan.config
    validator, rejected, rows_per_file, file_order, merged = _spill_valid_rows(run, plan)
    part_of, sizes = _assign_parts(rows_per_file, file_order, config.part_size)
    pending: dict[int, list[dict[str, Any]]] = {}
    spill = run.path(SPILL)
    labels = None if plan.sample_source is not None else config.labels  # else joined to the generated rows
    with ipc.open_stream(str(spill)) as reader:
        for batch in reader:
            for row in batch.to_pylist():
                index = part_of[row["file_id"]]
                rows = pending.setdefault(index, [])
                rows.append(row)
                if len(rows) == sizes[index]:
                    table = pa.Table.from_pylist(pending.pop(index), schema=SAMPLE_SCHEMA)
                    if labels:
                        table = join_labels(table, labels, keep_unmatched=True)
                    write_parquet_atomic(run.path(f"samples/part-{index:05d}.parquet"), table, SAMPLE_SCHEMA)
    spill.unlink(missing_ok=True)
    write_parquet_atomic(run.path("rejected.parquet"), pa.Table.from_pylist(rejected, schema=REJECTED_SCHEMA))
    counts = {
        "input_rows": validator.valid + validator.rejected,
        "valid_rows": validator.valid,
        "rejected_rows": validator.rejected,
        "rejected_by_reason": dict(validator.reasons),
        "parts": len(sizes),
    }
    if merged:
        counts["rows_sharing_a_generated_file"] = merged
        logger.info("%d input rows share their file with an earlier row: each file is generated once", merged)
    run.manifest.set_part_rows(sizes)
    if validator.rejected:
        logger.warning(
            "%d of %d input rows rejected (see %s), by reason:\n%s",
            validator.rejected,
            validator.valid + validator.rejected,
            run.path("rejected.parquet"),
            "\n".join(validator.summary_lines()),
        )
    for message in validator.column_messages:
        logger.warning("input columns: %s", message)
    if validator.spaced_labels:
        logger.warning("%s", validator.label_warning())
    if validator.unknown_codes:
        counts["unknown_error_codes"] = dict(validator.unknown_codes)
        logger.warning("%s", validator.unknown_codes_warning())
    run.manifest.record_counts(counts)
    if validator.valid == 0:
        run.finish("failed")
        raise InputError(
            f"no valid row in the input ({validator.rejected} rejected; reasons in {run.path('rejected.parquet')}): "
            "fix the input and start a new run"
        )
    run.mark_stage("prepare")
