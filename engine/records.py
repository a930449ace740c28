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
        # none | uniform | targeted | perturb:<target>:<family> (see PERTURB_PREFIX below)
        pa.field("noise", pa.string(), nullable=False),
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

# ----- perturbations (stage `perturb`) and their analyses -------------------------------------------
# Perturbed texts are scored like noise predictions and share the `noise` column of the score
# rows, with values `perturb:<target>:<family>`:
#   perturb:reference:<family>   the perturbed reference (scored span) against the reference
#   perturb:reference:original   the unperturbed reference against itself: S(original) of the above
#   perturb:prediction:<family>  the perturbed prediction of a sample labelled correct; its
#                                S(original) is the sample's real row (noise `none`)
# Rows with this prefix are never real predictions nor noise: calibration and agreement skip them.
PERTURB_PREFIX = "perturb:"
PERTURB_TARGETS = ("reference", "prediction")
PERTURB_ORIGINAL = "original"


def perturb_noise(target: str, family: str) -> str:
    """The `noise` value of a perturbed score row."""
    return f"{PERTURB_PREFIX}{target}:{family}"


# Stage `perturb` (RUN/perturbations/): one row per (sample, target, family), plus, for a
# perturbed reference, its unperturbed span (family `original`). `noise` and `prediction` are what
# the score stage scores (a row that could not apply has prediction null and is not scored).
PERTURB_SCHEMA = pa.schema(
    [
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("file_id", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
        pa.field("noise", pa.string(), nullable=False),  # perturb:<target>:<family>
        pa.field("target", pa.string(), nullable=False),  # reference | prediction
        pa.field("family", pa.string(), nullable=False),  # negation | identifier_swap | ... | original
        pa.field("codes", pa.list_(pa.string()), nullable=False),  # taxonomy codes it stands for
        pa.field("applied", pa.bool_(), nullable=False),
        pa.field("skip_reason", pa.string()),  # why it could not apply; null when applied
        pa.field("prediction", pa.string()),  # the perturbed scored span (what follows the prime)
        pa.field("detail", pa.string()),  # what was changed, for reading (e.g. "is -> is not")
        pa.field("seed", pa.int64(), nullable=False),
    ]
)

# dS per (metric, scorer, variant, context, language, target, family): RUN/sensitivity.parquet.
SENSITIVITY_SCHEMA = pa.schema(
    [
        pa.field("metric", pa.string(), nullable=False),
        pa.field("scorer", pa.string(), nullable=False),
        pa.field("variant", pa.string(), nullable=False),
        pa.field("context", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
        pa.field("target", pa.string(), nullable=False),
        pa.field("family", pa.string(), nullable=False),
        pa.field("codes", pa.list_(pa.string()), nullable=False),
        pa.field("n", pa.int64(), nullable=False),  # samples with both scores finite
        pa.field("n_skipped", pa.int64(), nullable=False),  # samples the family could not apply to
        pa.field("ds", pa.float64()),  # mean of S(original) - S(perturbed); null when n = 0
        pa.field("ds_lo", pa.float64()),
        pa.field("ds_hi", pa.float64()),
        pa.field("share_dropped", pa.float64()),  # share of samples with S(perturbed) < S(original)
        pa.field("mean_original", pa.float64()),
        pa.field("mean_perturbed", pa.float64()),
    ]
)

# RUN/significance.parquet: `correlation` rows (one metric setting vs the expert labels) and
# `williams` rows (setting x vs setting y on the same items, one-sided: x agrees better).
SIGNIFICANCE_SCHEMA = pa.schema(
    [
        pa.field("kind", pa.string(), nullable=False),  # correlation | williams
        pa.field("language", pa.string(), nullable=False),
        pa.field("metric", pa.string(), nullable=False),
        pa.field("scorer", pa.string(), nullable=False),
        pa.field("variant", pa.string(), nullable=False),
        pa.field("context", pa.string(), nullable=False),
        pa.field("metric_y", pa.string()),
        pa.field("scorer_y", pa.string()),
        pa.field("variant_y", pa.string()),
        pa.field("context_y", pa.string()),
        pa.field("n", pa.int64(), nullable=False),
        pa.field("spearman", pa.float64()),
        pa.field("spearman_p", pa.float64()),
        pa.field("kendall", pa.float64()),  # tau-b
        pa.field("kendall_p", pa.float64()),
        pa.field("r_xz", pa.float64()),  # williams: corr(x, labels)
        pa.field("r_yz", pa.float64()),  # corr(y, labels)
        pa.field("r_xy", pa.float64()),  # corr(x, y)
        pa.field("t", pa.float64()),
        pa.field("p", pa.float64()),  # one-sided, H1: corr(x, labels) > corr(y, labels)
        pa.field("p_adjusted", pa.float64()),  # Holm-adjusted over the language's comparisons (or = p)
        pa.field("direction", pa.string()),  # "x>y", "y>x" or "x=y" by the point estimates
        pa.field("significant", pa.bool_()),
        pa.field("reason", pa.string()),  # why a value is missing
        pa.field("sentence", pa.string()),  # plain-language finding (significant williams rows)
    ]
)

# One row per (file, generator, judge, strategy, prompt language, reference mode) (stage `judge`).
# Token counts, latency, the raw answer and the response status are those of the call(s) that
# judged the file, repeated on each generator's row: count them once per
# (file_id, task, strategy, prompt_language, reference).
JUDGMENT_SCHEMA = pa.schema(
    [
        pa.field("file_id", pa.string(), nullable=False),
        pa.field("sample_id", pa.string(), nullable=False),
        pa.field("generator", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
        pa.field("judge", pa.string(), nullable=False),
        pa.field("task", pa.string(), nullable=False),  # the judge entry's identity
        pa.field("strategy", pa.string(), nullable=False),  # standard | cot | rubric | hierarchical | combined
        pa.field("prompt_language", pa.string(), nullable=False),
        pa.field("reference", pa.string(), nullable=False),  # with | without: the original comment in the prompt
        pa.field("structured", pa.bool_(), nullable=False),
        pa.field("label", pa.string()),  # correct | partial | incorrect; null unless parse_status is ok
        pa.field("error_codes", pa.list_(pa.string()), nullable=False),  # taxonomy ids
        pa.field("hallucinated_codes", pa.list_(pa.string()), nullable=False),  # codes outside the taxonomy
        pa.field("error_confidence", pa.list_(pa.float64()), nullable=False),  # aligned with error_codes; null if not given
        pa.field("parse_status", pa.string(), nullable=False),  # ok | empty | malformed | truncated | api_error
        pa.field("parse_method", pa.string(), nullable=False),  # whole | fenced | balanced | tolerant | ''
        # the file's call(s) as a whole: ok (every candidate parsed) | "partial k/n" | a failure class
        pa.field("response_status", pa.string(), nullable=False),
        pa.field("cluster_status", pa.list_(pa.string()), nullable=False),  # hierarchical: "cluster=status"
        pa.field("calls", pa.int32(), nullable=False),
        pa.field("prompt_tokens", pa.int64(), nullable=False),
        pa.field("completion_tokens", pa.int64(), nullable=False),
        pa.field("latency_s", pa.float64(), nullable=False),
        pa.field("raw_response", pa.string()),  # hierarchical, combined: JSON object cluster -> answer
        # ids of the call(s)' rendered prompts in RUN/judge_prompts/<id>.json (engine/judge/prompt_store.py)
        pa.field("prompt_ids", pa.list_(pa.string()), nullable=False),
        pa.field("error", pa.string()),  # the backend's error message(s), if any
    ]
)
JUDGMENT_KEY = ("sample_id", "task", "strategy", "prompt_language", "reference")
# One regeneration of the round trip (stage `roundtrip`): a task's comment in one natural
# language turned back into code by one generator (sample `sample` of V), then run in the sandbox.
ROUNDTRIP_SCHEMA = pa.schema(
    [
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("programming_language", pa.string(), nullable=False),  # python | java
        pa.field("language", pa.string(), nullable=False),  # natural language of the comment
        pa.field("generator", pa.string(), nullable=False),  # model that regenerated the code
        pa.field("sample", pa.int32(), nullable=False),  # 0..V-1
        pa.field("comment_source", pa.string(), nullable=False),  # given | generated:<model name>
        pa.field("comment", pa.string()),  # null when the comment could not be generated
        pa.field("code", pa.string()),  # the regenerated function; null when generation failed
        pa.field("status", pa.string(), nullable=False),  # sandbox status of the tests run, or `error`
        pa.field("reason", pa.string(), nullable=False),  # why it did not pass ('' when it did)
        pa.field("pass_at_1", pa.float64()),  # 1 when every test passed
        pa.field("correctness", pa.float64()),  # share of differential-testing inputs that agree
        pa.field("n_inputs", pa.int32()),  # differential-testing inputs used
        pa.field("abstraction", pa.float64()),  # per (task, language), on each of its rows
        pa.field("conciseness", pa.float64()),  # per (task, language); null when not configured
        pa.field("fluency", pa.float64()),  # per (task, language); null when not configured
        pa.field("error", pa.string()),  # null for a good row; a generation failure otherwise
        pa.field("tests_verdict", pa.string()),  # status of the tests' own run (null: never run)
        pa.field("value_verdict", pa.string()),  # passed | failed | error | skipped: answers vs the reference's
    ]
)
ROUNDTRIP_KEY = ("task_id", "language", "generator", "sample")
