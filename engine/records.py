"""Arrow schemas of every table babelscore reads or writes: input samples, scores, noise, etc.

Schemas are declared once here; writers cast to them so every Parquet part of a run has the
same schema (a dataset with drifting schemas cannot be read back as one table).
"""
from __future__ import annotations

import pyarrow as pa

LABELS = ("incorrect", "partial", "correct")  # ordered: the weights of quadratic kappa use this order
NOISE_KINDS = ("none", "uniform", "targeted")
CONTEXTS = ("none", "minimal", "full")

SAMPLE_SCHEMA = pa.schema(
    [
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("file_id", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("comment_start", pa.int32(), nullable=False),
        pa.field("comment_end", pa.int32(), nullable=False),
        pa.field("reference", pa.string(), nullable=False),
        pa.field("generator", pa.string()),
        pa.field("prime", pa.string()),
        pa.field("prediction", pa.string()),
        pa.field("label", pa.string()),
        pa.field("error_codes", pa.list_(pa.string())),
    ]
)
REQUIRED_SAMPLE_COLUMNS = ("sample_id", "file_id", "language", "source", "comment_start", "comment_end", "reference")

# One scored item: a sample's prediction, or one of its noise predictions.
SCORE_SCHEMA = pa.schema(
    [
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("generator", pa.string()),
        pa.field("language", pa.string(), nullable=False),
        pa.field("noise", pa.string(), nullable=False),  # none | uniform | targeted
        pa.field("metric", pa.string(), nullable=False),  # bleu | rougeL | meteor | bertscore | bartscore | ...
        pa.field("scorer", pa.string(), nullable=False),  # model id, '' for lexical metrics
        pa.field("context", pa.string(), nullable=False),  # none | minimal | full | ''
        pa.field("variant", pa.string(), nullable=False),  # P | R | F | layer-7/F | forward | ...
        pa.field("value", pa.float64()),  # NaN with `error` set when the row failed
        pa.field("signature", pa.string(), nullable=False),
        pa.field("error", pa.string()),  # null for a good row; the reason otherwise
    ]
)
SCORE_KEY = ("sample_id", "noise", "metric", "scorer", "context", "variant")

REJECTED_SCHEMA = pa.schema(
    [
        pa.field("row_index", pa.int64(), nullable=False),  # 0-based position in the input
        pa.field("sample_id", pa.string()),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("raw", pa.string(), nullable=False),  # the row as JSON, as read
    ]
)

# A noise prediction of a sample (stage `noise`).
NOISE_SCHEMA = pa.schema(
    [
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("noise", pa.string(), nullable=False),  # uniform | targeted
        pa.field("prediction", pa.string(), nullable=False),
        pa.field("n_tokens", pa.int32(), nullable=False),
        pa.field("tokenizer", pa.string(), nullable=False),
        pa.field("seed", pa.int64(), nullable=False),
    ]
)

# Generated predictions (stage `generate`): the sample columns plus what generation produced.
GENERATION_EXTRA_FIELDS = [
    pa.field("raw_generation", pa.string()),
    pa.field("prompt_tokens", pa.int32()),
    pa.field("generated_tokens", pa.int32()),
    pa.field("generation_error", pa.string()),
]
GENERATION_SCHEMA = pa.schema(list(SAMPLE_SCHEMA) + GENERATION_EXTRA_FIELDS)

# One row per (metric, scorer, variant, context, language, task, group_by, generator); task is
# `agreement` (3 expert classes) or `noise-uniform` / `noise-targeted` (real vs noise).
# group_by names the grouping the row was fitted under: `language` (generators pooled;
# generator is null) or `language+generator` (one classifier per target LLM).
CALIBRATION_SCHEMA = pa.schema(
    [
        pa.field("metric", pa.string(), nullable=False),
        pa.field("scorer", pa.string(), nullable=False),
        pa.field("variant", pa.string(), nullable=False),
        pa.field("context", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
        pa.field("generator", pa.string()),  # null when the generators are pooled
        pa.field("task", pa.string(), nullable=False),
        pa.field("group_by", pa.string()),  # `language` or `language+generator`; null reads as `language`
        pa.field("n", pa.int64(), nullable=False),
        pa.field("n_left_out", pa.int64()),  # rows with an error or a non-finite value, not fitted
        pa.field("fitted", pa.bool_(), nullable=False),
        pa.field("reason", pa.string()),  # why not fitted
        pa.field("classes", pa.list_(pa.string())),  # class order used by the matrices
        pa.field("thresholds", pa.list_(pa.float64())),  # region boundaries, ascending
        pa.field("region_labels", pa.list_(pa.string())),  # len(thresholds) + 1 labels
        pa.field("kappa", pa.float64()),
        pa.field("kappa_lo", pa.float64()),
        pa.field("kappa_hi", pa.float64()),
        pa.field("f1", pa.float64()),
        pa.field("f1_lo", pa.float64()),
        pa.field("f1_hi", pa.float64()),
        pa.field("confusion", pa.list_(pa.list_(pa.int64()))),  # rows: expert, cols: predicted
        pa.field("confusion_row_norm", pa.list_(pa.list_(pa.float64()))),
        pa.field("confusion_col_norm", pa.list_(pa.list_(pa.float64()))),
    ]
)

# One row per (file, generator, judge, strategy, prompt language) (stage `judge`). Token counts,
# latency and the raw answer are those of the call(s) that judged the file, repeated on each
# generator's row: count them once per (file_id, task, strategy, prompt_language).
JUDGMENT_SCHEMA = pa.schema(
    [
        pa.field("file_id", pa.string(), nullable=False),
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("generator", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
        pa.field("judge", pa.string(), nullable=False),
        pa.field("task", pa.string(), nullable=False),  # the judge entry's identity
        pa.field("strategy", pa.string(), nullable=False),  # standard | cot | rubric | hierarchical
        pa.field("prompt_language", pa.string(), nullable=False),
        pa.field("structured", pa.bool_(), nullable=False),
        pa.field("label", pa.string()),  # correct | partial | incorrect; null unless parse_status is ok
        pa.field("error_codes", pa.list_(pa.string()), nullable=False),  # taxonomy ids
        pa.field("hallucinated_codes", pa.list_(pa.string()), nullable=False),  # codes outside the taxonomy
        pa.field("error_confidence", pa.list_(pa.float64()), nullable=False),  # aligned with error_codes; null if not given
        pa.field("parse_status", pa.string(), nullable=False),  # ok | empty | malformed | truncated | api_error
        pa.field("parse_method", pa.string(), nullable=False),  # whole | fenced | balanced | ''
        pa.field("cluster_status", pa.list_(pa.string()), nullable=False),  # hierarchical: "cluster=status"
        pa.field("calls", pa.int32(), nullable=False),
        pa.field("prompt_tokens", pa.int64(), nullable=False),
        pa.field("completion_tokens", pa.int64(), nullable=False),
        pa.field("latency_s", pa.float64(), nullable=False),
        pa.field("raw_response", pa.string()),  # hierarchical: JSON object cluster -> answer
        pa.field("error", pa.string()),  # the backend's error message(s), if any
    ]
)
JUDGMENT_KEY = ("sample_id", "task", "strategy", "prompt_language")
