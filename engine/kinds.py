"""Kinds of rows in the declared data flow: what a stage provides and consumes (never a stage name).

A base-layer module so that the run directory, the report and the stages can all name them
(engine.stages.base re-exports them for stage modules).
"""
from __future__ import annotations

SAMPLES = "samples"  # the rows every later stage works on: the validated input, or generated rows
CANDIDATES = "candidates"  # extra texts to score per sample (noise, perturbations): `as_candidates`
SCORES = "scores"
JUDGMENTS = "judgments"
ROUNDTRIP_ROWS = "roundtrip-rows"
INPUT = "input"  # the run's input table, made by a source stage instead of read from `input:`
CALIBRATION = "calibration"
REPORT = "report-page"

# Keys of a stage's `ReportSettings.report_settings` (engine.stages.base): what the report's sweep
# views read of the stages' recorded options, without naming the stages.
LAYER_SETTING = "representative_layers"  # embedding model -> the layer it reports without a sweep
SIGNIFICANCE_SETTING = "significance"  # {correlation, alpha} of the significance tests
