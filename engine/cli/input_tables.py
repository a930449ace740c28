"""`babelscore validate` (an input table's bad rows, without running) and `babelscore convert`."""
from __future__ import annotations

import argparse
from typing import Any

from engine.cli.exits import EXIT_FAILED_PARTS, EXIT_OK
from engine.errors import InputError


def add_validate_command(sub: Any) -> None:
    validate = sub.add_parser("validate", help="report bad rows of an input table without running")
    validate.add_argument("input", help="Parquet or JSONL sample table")
    validate.add_argument("--show", type=int, default=20, help="how many rejected rows to list")
    validate.add_argument("--allow-missing-prediction", action="store_true", help="rows may lack predictions (a generate stage will add them)")
    validate.add_argument("--unknown-error-codes", choices=["warn", "reject"], default="warn",
                          help="rows with error codes outside the taxonomy: keep with a warning (default) or reject")
    validate.set_defaults(func=cmd_validate)


def add_convert_command(sub: Any) -> None:
    convert = sub.add_parser(
        "convert",
        help="convert wide per-language tables (the study's public layout) to the input schema",
        description="Columns: file_id, content, original_comment, and per generator G any of masked_data_G, "
        "predict_G, predicted_comment_G, expert_accuracy_G, error_codes_G (see docs/input.md).",
    )
    convert.add_argument("inputs", nargs="+", help="Parquet/JSONL files in the wide layout, one per language")
    convert.add_argument("--language", nargs="+", action="extend",
                         help="language code of each input file, in order: --language nl zh (default: from the file name)")
    convert.add_argument("--out", required=True, help="output Parquet file")
    convert.add_argument("--tokenizer", action="append", metavar="GENERATOR=TOKENIZER",
                         help="a generator's tokenizer (hub id or directory), to recover primes missing from masked_data")
    convert.set_defaults(func=cmd_convert)


def cmd_validate(args: argparse.Namespace) -> int:
    from engine.data.params import ValidationParams
    from engine.data.reader import iter_raw_rows
    from engine.data.validate import SampleValidator

    params = ValidationParams(unknown_error_codes=args.unknown_error_codes)
    validator = SampleValidator(require_prediction=not args.allow_missing_prediction, params=params)
    shown, unshown, said = 0, 0, 0
    for raw in iter_raw_rows(args.input):
        _, rejection = validator.check(raw)
        for message in validator.column_messages[said:]:  # once per input, before the rows it explains
            print(f"columns: {message}")
        said = len(validator.column_messages)
        # a row rejected for a misnamed column is not listed row by row: the column message says it once
        if rejection is not None and shown < args.show and "present: rename it to" not in rejection["reason"]:
            if not shown:
                print("rejected rows (numbered from 0 in input order; blank JSONL lines are not counted):")
            print(f"row {rejection['row_index']} ({rejection['sample_id']}): {rejection['reason']}")
            shown += 1
        elif rejection is not None and "present: rename it to" not in rejection["reason"]:
            unshown += 1
    if unshown:
        print(f"... {unshown} more rejected row(s) not shown (--show {shown + unshown} lists them all)")
    total = validator.valid + validator.rejected
    print(f"{args.input}: {total} rows, {validator.valid} valid, {validator.rejected} rejected")
    if validator.rejected:
        print("rejected rows by reason:")
        for line in validator.summary_lines(where=None, all_listed=not unshown):
            print("  " + line)
    for warning in (validator.label_warning(), validator.unknown_codes_warning()):
        if warning:
            print(f"warning: {warning}")
    if validator.valid == 0:
        raise InputError(f"{args.input}: no valid row ({validator.rejected} rejected); fix the input")
    return EXIT_FAILED_PARTS if validator.rejected else EXIT_OK


def cmd_convert(args: argparse.Namespace) -> int:
    from engine.data.convert import convert_public_tables
    from engine.io.atomic import write_parquet_atomic

    if args.language:  # `--language nl zh` and `--language nl --language zh` both work
        args.language = [code for value in args.language for code in value.replace(",", " ").split()]
    tokenizers = {}
    for item in args.tokenizer or []:
        generator, sep, name = item.partition("=")
        if not sep or not generator or not name:
            raise SystemExit(f"--tokenizer {item!r}: write GENERATOR=TOKENIZER, e.g. bigcode/starcoder2-7b=./tok")
        tokenizers[generator] = name
    table = convert_public_tables(args.inputs, languages=args.language, tokenizers=tokenizers)
    write_parquet_atomic(args.out, table)
    print(f"wrote {table.num_rows} samples to {args.out}")
    return 0
