"""A user's verbatim message templates (`templates:` of a prompt pack), the `combined` strategy on
the parser corpus, every call's prompt on record, `judge render`, and provider options."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

import engine.judge.chat_backend as chat_backend
from engine.errors import ConfigError
from engine.judge.judging import judge_table
from engine.judge.messages import Candidate, JudgeItem, build_calls
from engine.judge.params import JudgeParams
from engine.judge.prompt_store import read_prompt
from engine.judge.promptpack import PROMPTS_DIR, load_pack
from engine.judge.stage import JudgeStage
from engine.llm.requests import ChatRequest, ChatResponse
from engine.records import SAMPLE_SCHEMA
from engine.stages.base import PartContext, PartTask, RunSettings
from tests.support.samples import make_sample, write_jsonl

CORPUS = yaml.safe_load((Path(__file__).parent / "golden" / "judge_answers.yaml").read_text(encoding="utf-8"))

SOURCE = 'class Q {\n    // Pops the first item.\n    Item pop() { return items.remove(0); }\n}\n'
COMMENT = "// Pops the first item."
# Five candidates with what a template engine could trip on: quotes, a backslash, a newline,
# braces that look like slots, non-ASCII text.
CANDIDATES = (("m5", '// Pops "the" first {item}.'), ("m1", "// Pops the first item."), ("m3", "// 弹出第一个元素"),
              ("m2", "// Removes C:\\tmp\n// and more"), ("m4", ""))
ITEM = JudgeItem("q1", "en", SOURCE, SOURCE.index(COMMENT), SOURCE.index(COMMENT) + len(COMMENT), COMMENT,
                 tuple(Candidate(g, c) for g, c in CANDIDATES))

# The pack author's templates, written from docs/judge_prompts.md: slots in braces, literal braces
# doubled, the answer example the author's own, the roles the author's.
STANDARD = [
    {"role": "system", "content": "You judge {language} comments. Labels: {label_correct}/{label_partial}/{label_incorrect}."},
    {"role": "user", "content": "Code with {placeholder}:\n{source}\nOriginal: {original_comment}\n\n"
                                "Answer like {{\"results\": [{{\"model_name\": \"<name>\", \"label\": \"<label>\"}}]}}\n"
                                "###\n{input_json_compact}"},
]
HIERARCHICAL = [
    {"role": "user", "content": "Only {cluster} ({cluster_codes}):\n{taxonomy_json}\nCandidates:\n{candidates_json}"},
    {"role": "assistant", "content": "{{"},
]
# What they must render, written out by hand (not by the code under test).
EXPECTED_STANDARD = (
    {"role": "system", "content": "You judge en comments. Labels: ok/partial/wrong."},
    {"role": "user", "content":
        'Code with [HERE]:\nclass Q {\n    [HERE]\n    Item pop() { return items.remove(0); }\n}\n\n'
        'Original: // Pops the first item.\n\n'
        'Answer like {"results": [{"model_name": "<name>", "label": "<label>"}]}\n###\n'
        '{"code": "class Q {\\n    [HERE]\\n    Item pop() { return items.remove(0); }\\n}\\n", '
        '"reference": "// Pops the first item.", "candidates": ['
        '{"model": "m1", "text": "// Pops the first item."}, '
        '{"model": "m2", "text": "// Removes C:\\\\tmp\\n// and more"}, '
        '{"model": "m3", "text": "// 弹出第一个元素"}, '
        '{"model": "m4", "text": ""}, '
        '{"model": "m5", "text": "// Pops \\"the\\" first {item}."}]}'},
)
EXPECTED_LANGUAGE_CLUSTER = (
    {"role": "user", "content":
        "Only linguistic_language (LG-WL1, LG-WL2):\n"
        # the cluster's parents come with their criteria, which apply to the cluster's codes
        '{\n  "Linguistic": [\n'
        '    {\n      "code": "LG",\n      "title": "linguistic",\n      "definition": "",\n'
        '      "when": "errors in the linguistic content of the generated text",\n      "unless": ""\n    },\n'
        '    {\n      "code": "LG-WL",\n      "title": "wrong language",\n      "definition": "",\n'
        '      "when": "the comment (or a large part of it) is in another language than the target language",\n'
        '      "unless": ""\n    }\n  ],\n'
        '  "Wrong language": [\n'
        '    {\n      "code": "LG-WL1",\n      "title": "undesired translation",\n      "definition": "",\n'
        '      "when": "a translation that is correct but undesired, because the translated word is seldom used in that '
        'context",\n'
        '      "unless": "correctly used foreign words that the language commonly takes in"\n    },\n'
        '    {\n      "code": "LG-WL2",\n      "title": "incorrect language",\n      "definition": "",\n'
        '      "when": "the comment (or a large part of it) is in another language than the target language",\n'
        '      "unless": ""\n    }\n  ]\n}\n'
        "Candidates:\n"
        '[\n  {\n    "model": "m1",\n    "text": "// Pops the first item."\n  },\n'
        '  {\n    "model": "m2",\n    "text": "// Removes C:\\\\tmp\\n// and more"\n  },\n'
        '  {\n    "model": "m3",\n    "text": "// 弹出第一个元素"\n  },\n'
        '  {\n    "model": "m4",\n    "text": ""\n  },\n'
        '  {\n    "model": "m5",\n    "text": "// Pops \\"the\\" first {item}."\n  }\n]'},
    {"role": "assistant", "content": "{"},
)


def _edit_pack(data: dict) -> None:
    data["labels"] = {"correct": "ok", "partial": "partial", "incorrect": "wrong"}
    data["label_variants"] = {"correct": ["ok"], "partial": ["partly"], "incorrect": ["wrong"]}
    data["placeholder"] = "[HERE]"
    data["input_keys"] = {"source": "code", "original": "reference", "candidates": "candidates", "model_name": "model",
                          "comment": "text", "taxonomy": "taxonomy"}
    data["taxonomy_keys"] = {"id": "code", "name": "title", "definition": "definition", "include": "when", "exclude": "unless"}
    data["templates"] = {"standard": STANDARD, "hierarchical": HIERARCHICAL}


def _write_pack(folder: Path, edit=_edit_pack) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load((PROMPTS_DIR / "en.yaml").read_text(encoding="utf-8"))
    edit(data)
    (folder / "en.yaml").write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def pack_dir(tmp_path_factory) -> str:
    return str(_write_pack(tmp_path_factory.mktemp("verbatim")))


def test_a_verbatim_template_renders_the_text_written_here_byte_for_byte(pack_dir) -> None:
    pack = load_pack("en", pack_dir)
    (standard,) = build_calls(pack, ITEM, "standard")
    assert standard.messages == EXPECTED_STANDARD
    clusters = {call.cluster: call for call in build_calls(pack, ITEM, "hierarchical")}
    assert clusters["linguistic_language"].messages == EXPECTED_LANGUAGE_CLUSTER
    # a strategy the pack gives no template for keeps the shipped layout, in the pack's words
    (cot,) = build_calls(pack, ITEM, "cot")
    assert cot.messages[1]["content"].endswith('"model": "m5",\n      "text": "// Pops \\"the\\" first {item}."\n    }\n  ]\n}')


def test_a_template_with_unknown_slots_bad_braces_or_roles_is_refused_with_the_fix(tmp_path) -> None:
    def edit(data):
        _edit_pack(data)
        data["templates"]["cot"] = [{"role": "user", "content": 'Say {"evaluations": []} for {input}'},
                                    {"role": "", "content": "x"}]
        data["templates"]["fancy"] = [{"role": "user", "content": "x"}]
    folder = _write_pack(tmp_path / "bad", edit)
    with pytest.raises(ConfigError) as info:
        load_pack("en", str(folder))
    message = str(info.value)
    assert 'templates.cot[0].content: unknown placeholder {"evaluations"' in message and "{{ and }}" in message
    assert "unknown placeholder {input}" in message and "templates.cot[1].role" in message
    assert "templates.fancy: not a strategy" in message and str(folder / "en.yaml") in message


def _table(generators, language: str = "en") -> pa.Table:
    rows = [make_sample(f"c1/{g}", generator=g, file_id="c1", language=language, prediction=f" {g} name.") for g in generators]
    return pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)


class Fixed:
    """Answers every call with the same text; records the requests."""

    def __init__(self, text: str):
        self.text, self.requests = text, []

    def chat(self, requests):
        self.requests.extend(requests)
        return [ChatResponse(r.request_id, self.text, "stop", 10, 10, 0.0) for r in requests]


@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_combined_reads_every_answer_shape_of_the_parser_corpus(case: dict) -> None:
    params = JudgeParams(model="m", backend="http", base_url="http://localhost:1/v1", strategies=("combined",),
                         prompt_languages=("en",))
    backend = Fixed(case["answer"])
    rows = judge_table(_table(case["generators"]), params, "t", backend).to_pylist()
    assert len(backend.requests) == 7  # one call per cluster
    assert all("Mark as PRESENT if" in r.messages[1]["content"] and "FIM" in r.messages[1]["content"] for r in backend.requests)
    got = {r["generator"]: (r["parse_status"], r["label"], r["error_codes"]) for r in rows}
    # every cluster got the same answer: the worst label over the clusters is that label, the codes their union
    assert got == {g: (status, label, codes) for g, (status, label, codes) in case["expected"].items()}
    assert all(len(r["prompt_ids"]) == 7 and r["strategy"] == "combined" for r in rows)


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    """A judge part run through the stage on a scripted backend, and the config it came from."""
    root = tmp_path_factory.mktemp("run")
    generators = ("gen-a", "gen-b", "gen-c")
    rows = [make_sample(f"{f}/{g}", generator=g, file_id=f, prediction=f" {g} {f}.") for f in ("f1", "f2") for g in generators]
    inputs = write_jsonl(root / "in.jsonl", rows)
    judge = {"model": "served", "backend": "http", "base_url": "http://localhost:1/v1", "name": "j",
             "strategies": ["standard", "hierarchical"], "prompt_languages": ["en", "nl"]}
    config_path = root / "config.yaml"
    config_path.write_text(yaml.safe_dump({"name": "r", "input": str(inputs), "stages": ["judge"], "judge": {"judges": [judge]}}))
    section = JudgeStage().parse_section({"judges": [judge]}, root, "judge")
    stage = JudgeStage(section)
    task = stage.tasks()[0]
    backend = Fixed('{"evaluations": []}')
    backends_get = chat_backend.get_chat_backend
    chat_backend.get_chat_backend = lambda params, budget=None: backend
    try:
        ctx = PartContext(root / "out", RunSettings(), PartTask.of(task, 0, stage.directory),
                          _input_reader=lambda i: pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA))
        out = stage.run_part(ctx).to_pylist()
    finally:
        chat_backend.get_chat_backend = backends_get
    return root, config_path, out, backend


def test_every_call_prompt_is_stored_once_and_linked_from_its_rows(judged_run) -> None:
    root, _config, rows, backend = judged_run
    stored = sorted((root / "out" / "judge_prompts").glob("*.json"))
    # 2 files x 2 languages x (1 standard + 7 hierarchical) calls, each prompt distinct
    assert len(backend.requests) == 32 and len(stored) == 32
    sent = {json.dumps(list(r.messages)) for r in backend.requests}
    for row in rows:
        assert len(row["prompt_ids"]) == (7 if row["strategy"] == "hierarchical" else 1)
        for pid in row["prompt_ids"]:
            assert json.dumps(read_prompt(root / "out", pid)["messages"]) in sent
    # a second run of the same part stores nothing new
    judge_table(_table(("gen-a",)), JudgeParams(model="m", backend="http", base_url="http://x/v1"), "t",
                Fixed("{}"), prompt_root=root / "out")
    judge_table(_table(("gen-a",)), JudgeParams(model="m", backend="http", base_url="http://x/v1"), "t",
                Fixed("{}"), prompt_root=root / "out")
    assert len(list((root / "out" / "judge_prompts").glob("*.json"))) == 33


def test_judge_render_prints_the_messages_a_run_stores(judged_run, tmp_path) -> None:
    from engine.cli import main

    root, config_path, rows, _backend = judged_run
    out = tmp_path / "render.json"
    assert main(["judge", "render", str(config_path), "--sample", "f2/gen-b", "--out", str(out)]) == 0
    rendered = json.loads(out.read_text(encoding="utf-8"))
    linked = {pid for r in rows if r["file_id"] == "f2" for pid in r["prompt_ids"]}
    assert len(rendered) == 16 and {r["id"] for r in rendered} == linked
    for record in rendered:
        assert record["messages"] == read_prompt(root / "out", record["id"])["messages"]
    assert main(["judge", "render", str(config_path), "--strategy", "standard", "--language", "nl", "--out", str(out)]) == 0
    (only,) = json.loads(out.read_text(encoding="utf-8"))
    assert only["request_id"] == "f1|standard|nl|with|" and only["id"] in {p for r in rows for p in r["prompt_ids"]}
    assert main(["judge", "render", str(config_path), "--sample", "nowhere/x"]) != 0


def test_provider_options_reach_the_body_and_the_signature_but_secrets_do_not(monkeypatch) -> None:
    from engine.llm.http_backend import HttpChatBackend

    options = {"provider": {"quantizations": ["fp8"], "max_price": {"prompt": 1, "completion": 3.1}}}
    monkeypatch.setenv("ROUTER_SECRET", "s3cr3t-value")
    judge = {"model": "served", "backend": "http", "base_url": "http://localhost:1/v1", "provider_options": options,
             "provider_secret_env": {"user_token": "ROUTER_SECRET"}}
    params = JudgeParams.from_mapping(judge)
    body = json.loads(HttpChatBackend(params)._body(ChatRequest("r", ({"role": "user", "content": "x"},), 5)))
    assert body["provider"] == options["provider"] and body["user_token"] == "s3cr3t-value" and body["max_tokens"] == 5
    stage = JudgeStage(JudgeStage().parse_section({"judges": [judge]}, Path("."), "judge"))
    signature = stage.signatures(stage.tasks()[0], {})["judgment"]
    assert '"quantizations": ["fp8"]' in signature and "provider_secret_keys:user_token" in signature
    assert "s3cr3t" not in signature and "s3cr3t" not in json.dumps(params.to_dict())
    with pytest.raises(ConfigError, match=r"provider_options.provider.api_key: looks like a secret.*provider_secret_env"):
        JudgeParams.from_mapping(dict(judge, provider_options={"provider": {"api_key": "x"}}))
    with pytest.raises(ConfigError, match="which the judge's own options set"):
        JudgeParams.from_mapping(dict(judge, provider_options={"temperature": 1}))
    with pytest.raises(ConfigError, match="only with backend http"):
        JudgeParams.from_mapping(dict(judge, backend="vllm", base_url=None, provider_secret_env={}))


def test_the_docs_name_every_slot_and_the_layout_of_every_strategy() -> None:
    from engine.judge.templates import LAYOUTS, TEMPLATE_SLOTS

    docs = (Path(__file__).resolve().parents[2] / "docs" / "judge_prompts.md").read_text(encoding="utf-8")
    assert [slot for slot in TEMPLATE_SLOTS if "{" + slot + "}" not in docs] == []
    for strategy, messages in LAYOUTS.items():
        row = next(line for line in docs.splitlines() if line.startswith(f"| {strategy} |"))
        assert all(f"`{template}`".replace("\n", "\\n") in row for _role, template in messages), strategy


def test_judge_render_request_prints_the_whole_body_of_each_call(judged_run, tmp_path, monkeypatch) -> None:
    from engine.cli import main

    root, _config, _rows, _backend = judged_run
    judge = {"model": "served", "backend": "http", "base_url": "http://localhost:1/v1", "name": "j",
             "strategies": ["standard", "cot"], "structured": ["standard"], "prompt_languages": ["nl"],
             "max_tokens": {"standard": 700, "cot": 1500}, "provider_options": {"provider": {"order": ["x"]}},
             "provider_secret_env": {"user": "RENDER_TEST_USER"}}
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump({"name": "r", "input": str(root / "in.jsonl"), "stages": ["judge"],
                                           "judge": {"judges": [judge]}}))
    monkeypatch.delenv("RENDER_TEST_USER", raising=False)  # never read: the body names the variable
    out = tmp_path / "render.json"
    assert main(["judge", "render", "--request", str(config_path), "--sample", "f1/gen-a", "--out", str(out)]) == 0
    standard, cot = json.loads(out.read_text(encoding="utf-8"))
    for record, limit in ((standard, 700), (cot, 1500)):
        body = record["request"]
        assert body["messages"] == record["messages"] and body["model"] == "served"
        assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 42, limit)
        assert body["provider"] == {"order": ["x"]} and body["user"] == "<$RENDER_TEST_USER>"
    schema = standard["request"]["response_format"]["json_schema"]
    assert standard["request"]["response_format"]["type"] == "json_schema" and schema["strict"] is True
    assert "evaluaties" in schema["schema"]["properties"] and "response_format" not in cot["request"]
    # one strategy of a per-strategy limit renders alone
    assert main(["judge", "render", "--request", str(config_path), "--strategy", "cot", "--out", str(out)]) == 0
    (only,) = json.loads(out.read_text(encoding="utf-8"))
    assert only["request"]["max_tokens"] == 1500
    # a language the judge never prompts in is refused, as a strategy it does not run is
    assert main(["judge", "render", str(config_path), "--language", "en", "--out", str(out)]) == 3
    assert main(["judge", "render", str(config_path), "--strategy", "rubric", "--out", str(out)]) == 3


def test_judge_render_request_on_the_demo_config(tmp_path) -> None:
    from engine.cli import main

    out = tmp_path / "demo.json"
    demo = Path(__file__).resolve().parents[2] / "configs" / "demo.yaml"
    assert main(["judge", "render", "--request", str(demo), "--out", str(out)]) == 0
    calls = {r["request_id"].split("|")[1]: r for r in json.loads(out.read_text(encoding="utf-8"))}
    assert set(calls) == {"standard", "cot"}  # the demo judge's strategies; standard answers under a schema
    for strategy, limit in (("standard", 768), ("cot", 128)):
        body = calls[strategy]["request"]
        assert body["messages"] == calls[strategy]["messages"] and body["model"] == "demo:tiny-chat"
        assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 42, limit)
        assert ("response_format" in body) == (strategy == "standard")


def test_judge_render_out_must_be_a_file_in_an_existing_directory(tmp_path, capsys) -> None:
    from engine.cli import main
    from engine.cli.exits import EXIT_USAGE

    demo = str(Path(__file__).resolve().parents[2] / "configs" / "demo.yaml")
    for out, says in ((tmp_path / "missing" / "x.json", "does not exist"), (tmp_path, "is a directory")):
        with pytest.raises(SystemExit) as stop:
            main(["judge", "render", demo, "--out", str(out)])
        assert stop.value.code == EXIT_USAGE and says in capsys.readouterr().err


def test_judge_render_language_the_sample_setting_would_not_use_is_refused(tmp_path) -> None:
    from engine.cli import main

    demo = str(Path(__file__).resolve().parents[2] / "configs" / "demo.yaml")  # prompt_languages: [sample]
    out = tmp_path / "x.json"
    assert main(["judge", "render", demo, "--language", "pl", "--out", str(out)]) == 3 and not out.exists()
    first = json.loads((main(["judge", "render", demo, "--out", str(out)]), out.read_text(encoding="utf-8"))[1])[0]
    language = first["request_id"].split("|")[2]
    assert main(["judge", "render", demo, "--language", language, "--out", str(out)]) == 0
