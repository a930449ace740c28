"""The converter from the study's public wide layout to input samples."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from engine.data.convert import PUBLIC_GENERATORS, convert_public_tables, convert_rows, fim_prefix, locate_comment
from engine.data.reader import RawRow
from engine.data.validate import SampleValidator

CONTENT = (
    "public class Graph {\n"
    "    // TODO\n"
    "    int n;\n"
    "    /**\n     * Returns the shortest path between two nodes.\n     */\n"
    "    int[] path(int a, int b) { return null; }\n"
    "    // TODO\n"
    "}\n"
)
COMMENT = "/**\n     * Returns the shortest path between two nodes.\n     */"
START = CONTENT.index(COMMENT)
PRIME = "/**\n     * Returns the shortest"


def _masked(generator: str, prefix: str, suffix: str) -> str:
    if "codegemma" in generator:
        return f"<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>"
    if "CodeLlama" in generator:
        return f"<PRE> {prefix} <SUF>{suffix} <MID>"
    return f"<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>"


def _wide_rows():
    row = {"file_id": "60_1", "content": CONTENT, "original_comment": COMMENT}
    labels = ["Correct", "Partially correct", "incorrect", "correct", None]
    for generator, label in zip(PUBLIC_GENERATORS, labels):
        prefix = CONTENT[:START] + PRIME
        row[f"masked_data_{generator}"] = _masked(generator, prefix, CONTENT[START + len(COMMENT):])
        row[f"predict_{generator}"] = " path from a to b.\n     */\n    int[] path("
        row[f"predicted_comment_{generator}"] = " path from a to b.\n     */"
        row[f"expert_accuracy_{generator}"] = label
        row[f"error_codes_{generator}"] = "SE-MD,MS-LT" if label == "incorrect" else None
    # a second file whose comment occurs twice: the FIM prefix must pick the second '// TODO'
    todo_second = CONTENT.rindex("// TODO")
    row2 = {"file_id": "61_2", "content": CONTENT, "original_comment": "// TODO"}
    generator = "bigcode/starcoder2-7b"
    row2[f"masked_data_{generator}"] = _masked(generator, CONTENT[:todo_second] + "// TO", CONTENT[todo_second + 7:])
    row2[f"predicted_comment_{generator}"] = "DO"
    row2[f"expert_accuracy_{generator}"] = "correct"
    return [row, row2]


def test_fim_prefix_reads_every_family_format():
    for generator in PUBLIC_GENERATORS:
        assert fim_prefix(_masked(generator, "PRE\n  ", "SUF")) == "PRE\n  "
    assert fim_prefix("no markers") is None


def test_locate_comment_uses_the_prefix_to_pick_the_occurrence():
    second = CONTENT.rindex("// TODO")
    assert locate_comment(CONTENT, "// TODO", CONTENT[:second] + "// T") == (second, "// T")
    assert locate_comment(CONTENT, "// TODO", None) == (CONTENT.index("// TODO"), "")
    assert locate_comment(CONTENT, "absent", None) is None


def test_public_tables_convert_to_valid_samples(tmp_path):
    path = tmp_path / "java_nl.parquet"
    pq.write_table(pa.Table.from_pylist(_wide_rows()), path)
    table = convert_public_tables([str(path)])
    rows = table.to_pylist()
    assert len(rows) == 6
    validator = SampleValidator(require_prediction=True)
    valid = [validator.check(RawRow(i, r, None, None))[0] for i, r in enumerate(rows)]
    assert all(v is not None for v in valid), validator.reasons
    first = {v["generator"]: v for v in valid if v["file_id"] == "60_1"}
    assert set(first) == set(PUBLIC_GENERATORS)
    for generator, sample in first.items():
        assert sample["language"] == "nl"
        assert sample["sample_id"] == f"60_1/{generator.rsplit('/', 1)[-1]}"
        assert (sample["comment_start"], sample["comment_end"]) == (START, START + len(COMMENT))
        assert sample["prime"] == PRIME
    assert first["google/codegemma-7b"]["label"] == "correct"
    assert first["meta-llama/CodeLlama-7b-hf"]["label"] == "partial"
    assert first["Qwen/CodeQwen1.5-7B"]["error_codes"] == ["SE-MD", "MS-LT"]
    assert first["ibm-granite/granite-8b-code-base"]["label"] is None
    (second,) = [v for v in valid if v["file_id"] == "61_2"]
    assert second["comment_start"] == CONTENT.rindex("// TODO") and second["prime"] == "// TO"


def test_a_comment_missing_from_its_file_is_kept_for_quarantine(tmp_path):
    rows = _wide_rows()[:1]
    rows[0]["original_comment"] = "// not in the file"
    path = tmp_path / "el.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    converted = convert_public_tables([str(path)], languages=["el"]).to_pylist()
    assert len(converted) == 5
    validator = SampleValidator(require_prediction=True)
    results = [validator.check(RawRow(i, r, None, None)) for i, r in enumerate(converted)]
    assert all(sample is None and "offsets out of range" in rejection["reason"] for sample, rejection in results)


def test_predictions_are_cut_at_the_study_stop_strings_and_the_raw_text_is_kept():
    row = _wide_rows()[0]
    codegemma, starcoder = "google/codegemma-7b", "bigcode/starcoder2-7b"
    row[f"predicted_comment_{codegemma}"] = " path.\n     */<|file_separator|>junk<eos>"
    row[f"predict_{codegemma}"] = " path.\n     */<|file_separator|>junk<eos>"
    row[f"predicted_comment_{starcoder}"] = None  # falls back to the raw generation, cut
    row[f"predict_{starcoder}"] = " path.<|end|> */<|endoftext|>"
    samples = {s["generator"]: s for s in convert_rows([row], "en")}
    assert samples[codegemma]["prediction"] == " path.\n     */"
    assert samples[codegemma]["raw_generation"] == " path.\n     */<|file_separator|>junk<eos>"
    assert samples[starcoder]["prediction"] == " path."  # <|end|> comes first
    assert samples[starcoder]["raw_generation"] == " path.<|end|> */<|endoftext|>"
    # a prediction without stop strings is unchanged
    assert samples["Qwen/CodeQwen1.5-7B"]["prediction"] == " path from a to b.\n     */"


def test_a_missing_fim_prefix_recovers_the_prime_by_the_letters_rule():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok)  # one token per character
    row = _wide_rows()[0]
    generator = "bigcode/starcoder2-7b"
    row[f"masked_data_{generator}"] = None
    samples = {s["generator"]: s for s in convert_rows([row], "en", tokenizers={generator: tokenizer})}
    # letters R, e, t are the first three tokens with a letter; '/**', newline and ' * ' are not
    assert samples[generator]["prime"] == "/**\n     * Ret"
    assert samples["google/codegemma-7b"]["prime"] == PRIME  # its FIM prefix still rules
    without = {s["generator"]: s for s in convert_rows([row], "en")}
    assert without[generator]["prime"] == ""
