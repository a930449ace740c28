"""Attacks on the promises of docs/judges.md and docs/running.md that the other fault tests do not
make, each one a way a real CLI run can break them: an API key quoted where an
error text is cut short, echoed in a stored answer, sent along a redirect, pasted into the config,
or missing from the environment; model files damaged in ways the header checks missed; a full or
read-only disk outside the atomic writers; a committed part whose file was lost before --resume."""
from __future__ import annotations

import json
import logging
from http.server import BaseHTTPRequestHandler

import pytest

from engine.judge.params import JudgeParams
from engine.llm import http_backend
from engine.llm.http_backend import HttpChatBackend
from engine.llm.requests import ChatRequest
from tests.support.http_server import local_http_server

KEY = "sk-attack-0123456789abcdefSECRET"
REQUEST = ChatRequest("r", ({"role": "user", "content": "x"},), 20)


def _key_pieces(text: str) -> list[str]:
    """Every piece of the key of 8 characters or more that `text` holds (a prefix is a leak too)."""
    return [KEY[i:j] for i in range(len(KEY)) for j in range(i + 8, len(KEY) + 1) if KEY[i:j] in text]


class _Handler(BaseHTTPRequestHandler):
    seen_auth: dict[str, list[str | None]] = {}
    location = ""

    def log_message(self, *args) -> None:
        pass

    def _record(self) -> None:
        self.seen_auth.setdefault(self.path, []).append(self.headers.get("Authorization"))
        if self.headers.get("Content-Length"):
            self.rfile.read(int(self.headers["Content-Length"]))

    def do_POST(self) -> None:
        self._record()
        if self.path.startswith("/long401"):
            # An error answer that quotes the request's header near the end of what is quoted.
            body = ("x" * (http_backend.ERROR_BODY_CHARS - 20) + " " + self.headers["Authorization"]).encode()
            self.send_response(401)
        elif self.path.startswith("/echo200"):
            content = json.dumps(f"you sent {self.headers['Authorization']}")
            body = f'{{"choices": [{{"message": {{"content": {content}}}, "finish_reason": "stop"}}]}}'.encode()
            self.send_response(200)
        elif self.path.startswith("/redirect"):
            body = b"moved"
            self.send_response(302)
            self.send_header("Location", self.location)
        else:
            body = b'{"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}'
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST


@pytest.fixture(scope="module")
def server():
    with local_http_server(_Handler, "") as url:
        yield url


def _backend(base_url: str, monkeypatch) -> HttpChatBackend:
    monkeypatch.setenv("JUDGE_ATTACK_KEY", KEY)
    return HttpChatBackend(JudgeParams.from_mapping(dict(
        model="m", backend="http", base_url=base_url, api_key_env="JUDGE_ATTACK_KEY", max_retries=0,
        backoff_base_s=0.01, backoff_cap_s=0.01, timeout_s=5)), sleep=lambda s: None)


def test_a_key_quoted_where_the_error_body_is_cut_is_redacted(server, monkeypatch, caplog) -> None:
    with caplog.at_level(logging.DEBUG):
        [answer] = _backend(server + "/long401", monkeypatch).chat([REQUEST])
    assert answer.error.startswith("HTTP 401 (not retried): xxx")
    assert not _key_pieces(answer.error) and not _key_pieces(caplog.text), answer.error[-80:]


def test_a_key_in_an_exception_text_cut_at_200_characters_is_redacted(server, monkeypatch, caplog) -> None:
    import httpx

    def refuses(client, request, **kwargs):
        raise ConnectionError("p" * 190 + f" {request.headers['Authorization']}")

    backend = _backend(server, monkeypatch)
    monkeypatch.setattr(httpx.Client, "send", refuses)
    with caplog.at_level(logging.DEBUG):
        [answer] = backend.chat([REQUEST])
    assert answer.error.startswith("connection error (ConnectionError: ppp")
    assert not _key_pieces(answer.error) and not _key_pieces(caplog.text), answer.error[-80:]


def test_a_redirect_is_not_followed_so_the_key_never_reaches_another_host(server, monkeypatch, caplog) -> None:
    # 127.0.0.1 and localhost are two hosts to the client; the redirect target records what it was sent.
    _Handler.location = server.replace("127.0.0.1", "localhost") + "/elsewhere/chat/completions"
    _Handler.seen_auth.clear()
    with caplog.at_level(logging.DEBUG):
        [answer] = _backend(server + "/redirect", monkeypatch).chat([REQUEST])
    assert "/elsewhere/chat/completions" not in _Handler.seen_auth, "the redirect was followed"
    assert answer.error.startswith("HTTP 302 (not retried)") and "redirect" in answer.error
    assert "/elsewhere/chat/completions" in answer.error  # where it points, so the user can fix base_url
    assert not _key_pieces(answer.error) and not _key_pieces(caplog.text)


def test_a_key_written_into_the_config_is_never_echoed_by_its_error() -> None:
    from engine.errors import ConfigError

    base = dict(model="m", backend="http", base_url="http://127.0.0.1:9/v1")
    for pasted in ({"api_key": KEY}, {"api_key_env": KEY}, {"token": KEY}, {"provider_secret_env": {"k": KEY}}):
        with pytest.raises(ConfigError) as caught:
            JudgeParams.from_mapping({**base, **pasted}, where="judge.judges[0]")
        assert not _key_pieces(str(caught.value)), str(caught.value)
        assert f"judge.judges[0].{next(iter(pasted))}" in str(caught.value)


def test_a_missing_key_variable_stops_the_run_before_its_directory_and_says_export(tmp_path, monkeypatch) -> None:
    import argparse

    from engine.cli.exits import next_step
    from engine.config import config_from_mapping
    from engine.errors import MissingSecretError, PartFailedError
    from engine.preflight import preflight
    from engine.runner import execute_run
    from engine.stages.plan import build_plan
    from tests.support.samples import make_sample, write_jsonl

    monkeypatch.delenv("JUDGE_ATTACK_UNSET", raising=False)
    input_path = write_jsonl(tmp_path / "in.jsonl", [make_sample("f0/g0")])
    config = config_from_mapping({"input": str(input_path), "stages": ["judge"], "judge": {"judges": [dict(
        model="m", backend="http", base_url="http://127.0.0.1:9/v1", api_key_env="JUDGE_ATTACK_UNSET",
        strategies=["standard"])]}}, tmp_path)
    with pytest.raises(MissingSecretError, match=r"judge.judges\[0\]: environment variable JUDGE_ATTACK_UNSET"):
        execute_run(config, str(tmp_path / "run"))
    assert not (tmp_path / "run").exists()
    monkeypatch.setenv("JUDGE_ATTACK_UNSET", KEY)
    assert any("JUDGE_ATTACK_UNSET are set" in line for line in preflight(build_plan(config)))
    # On a worker that lacks the variable (a Ray node), the part fails: the config is unchanged, so resume.
    args = argparse.Namespace(command="run", config="c.yaml", out=str(tmp_path / "run"), resume=False, reuse=None,
                              executor="local")
    failed = PartFailedError("1 part(s) failed", ["MissingSecretError: environment variable X is not set"])
    assert next_step(args, failed).startswith("export the variable named above, then continue:")
    assert next_step(args, failed).endswith("--resume")


def _model_folder(tmp_path):
    """A folder that passes check_model_dir: a config, one sharded safetensors weight, a tokenizer."""
    import json
    import struct
    import zipfile

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bart"}')
    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    (folder / "model-00001-of-00001.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"w": "model-00001-of-00001.safetensors"}}))
    (folder / "tokenizer_config.json").write_text("{}")
    (folder / "tokenizer.json").write_text('{"model": {"vocab": {"a": 0}}}')
    with zipfile.ZipFile(folder / "pytorch_model.bin", "w") as zf:  # torch.save's format is a zip archive
        zf.writestr("archive/data.pkl", b"x" * 64)
    return folder


@pytest.mark.parametrize("damage, named", [
    (lambda f: (f / "model-00001-of-00001.safetensors").unlink(), "model-00001-of-00001.safetensors"),
    (lambda f: (f / "model.safetensors.index.json").write_text('{"weight_map": {"w": '), "model.safetensors.index.json"),
    (lambda f: (f / "tokenizer.json").write_text('{"model": {"vocab": {"a'), "tokenizer.json"),
    (lambda f: (f / "tokenizer_config.json").write_text('{"model_max'), "tokenizer_config.json"),
    (lambda f: (f / "pytorch_model.bin").write_bytes((f / "pytorch_model.bin").read_bytes()[:40]), "pytorch_model.bin"),
    (lambda f: (f / "config.json").write_text("[1, 2]"), "config.json"),
], ids=["shard-missing", "index-cut", "tokenizer-json-cut", "tokenizer-config-cut", "bin-cut", "config-not-object"])
def test_more_damaged_model_files_are_named(tmp_path, damage, named) -> None:
    from engine.errors import DamagedModelError
    from engine.runtime.model_files import check_model_dir

    folder = _model_folder(tmp_path)
    check_model_dir(folder, "score.scorers[0]")  # whole: no error
    damage(folder)
    with pytest.raises(DamagedModelError, match=rf"score.scorers\[0\]: model file \S*{named}") as caught:
        check_model_dir(folder, "score.scorers[0]")
    assert "re-download" in str(caught.value)


def test_a_full_disk_in_driver_work_is_a_disk_full_error(tmp_path) -> None:
    # Found on a 200 KiB tmpfs: the report's index.html write raised a raw OSError (exit 1, a traceback).
    import errno

    from engine.errors import DiskFullError
    from engine.io.rundir import RunDirectory
    from engine.runner import run_driver_stage
    from engine.stages.registry import get_stage

    class _Run:  # what run_driver_stage asks of a run directory here
        root = tmp_path

        def stage_done(self, name: str) -> bool:
            return False

    report = get_stage("report")
    page = tmp_path / "report" / "index.html"

    class _Full(type(report)):
        def run_driver(self, run: RunDirectory) -> None:
            raise OSError(errno.ENOSPC, "No space left on device", str(page))

    with pytest.raises(DiskFullError, match=rf"the disk is full: writing {page} failed.*--resume"):
        run_driver_stage(_Run(), _Full())


def test_an_answer_that_echoes_the_key_is_stored_redacted(server, monkeypatch) -> None:
    [answer] = _backend(server + "/echo200", monkeypatch).chat([REQUEST])
    assert answer.error is None and answer.text.startswith("you sent ")
    assert not _key_pieces(answer.text), answer.text


def test_a_full_disk_while_drawing_a_figure_stops_the_report(tmp_path) -> None:
    # A figure that fails for its own data is a note in the report; a full disk is not the figure's fault
    # and would fail every later file, each with a logged traceback, so it stops the report at once.
    import errno

    from engine.report.section_api import FigureWriter

    def full(path):
        raise OSError(errno.ENOSPC, "No space left on device")

    writer = FigureWriter(tmp_path, "png")
    assert "could not be drawn" in writer.draw("a", "A", "", lambda path: 1 / 0)
    with pytest.raises(OSError, match="No space left"):
        writer.draw("b", "B", "", full)


def test_a_full_disk_while_the_input_is_spilled_is_a_disk_full_error(tmp_path, monkeypatch) -> None:
    import errno

    from engine import prepare, runner
    from engine.config import config_from_mapping
    from engine.errors import DiskFullError
    from tests.support.samples import make_sample, write_jsonl

    spill = tmp_path / "run" / "spill"

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(spill))

    monkeypatch.setattr(prepare.ipc, "new_stream", full)
    input_path = write_jsonl(tmp_path / "in.jsonl", [make_sample("f0/g0")])
    config = config_from_mapping({"input": str(input_path), "stages": ["score"],
                                  "score": {"scorers": [{"kind": "lexical", "metrics": ["bleu"]}]}}, tmp_path)
    with pytest.raises(DiskFullError, match=rf"writing {spill} failed"):
        runner.execute_run(config, str(tmp_path / "run"))


def test_an_unwritable_run_directory_is_a_clear_error(tmp_path, monkeypatch) -> None:
    # Found with --out on a read-only mount: a raw OSError traceback from mkdir (exit 1).
    import errno

    from engine import prepare, runner
    from engine.config import config_from_mapping
    from engine.errors import RunDirectoryError
    from tests.support.samples import make_sample, write_jsonl

    input_path = write_jsonl(tmp_path / "in.jsonl", [make_sample("f0/g0")])
    config = config_from_mapping({"input": str(input_path), "stages": ["score"],
                                  "score": {"scorers": [{"kind": "lexical", "metrics": ["bleu"]}]}}, tmp_path)
    (tmp_path / "a-file").write_text("")
    with pytest.raises(RunDirectoryError, match=r"cannot write the run directory .*a-file/run .*--out"):
        runner.execute_run(config, str(tmp_path / "a-file" / "run"))
    # The disk turned read-only during the run: named, and --resume once it is writable again.
    spill = tmp_path / "run" / "spill"

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(spill))

    monkeypatch.setattr(prepare.ipc, "new_stream", read_only)
    with pytest.raises(RunDirectoryError, match=rf"cannot write {spill} \(Read-only file system\).*--resume"):
        runner.execute_run(config, str(tmp_path / "run"))


def test_resume_redoes_a_committed_part_whose_file_is_lost_or_cut(tmp_path) -> None:
    # Found by deleting one part file of a finished run: --resume kept the part ("committed earlier")
    # and then failed with a raw FileNotFoundError; its rows were lost for good.
    import shutil

    import pyarrow.parquet as pq

    from engine import runner
    from engine.config import config_from_mapping
    from engine.rundiff import compare_runs
    from tests.support.samples import make_sample, write_jsonl

    rows = [make_sample(f"f{f}/g0", prediction=f" returns {f}", file_id=f"f{f}", generator="g0") for f in range(3)]
    input_path = write_jsonl(tmp_path / "in.jsonl", rows)
    config = config_from_mapping({"input": str(input_path), "part_size": 1, "stages": ["score"],
                                  "score": {"scorers": [{"kind": "lexical", "metrics": ["bleu"]}]}}, tmp_path)
    runner.execute_run(config, str(tmp_path / "clean"))
    shutil.copytree(tmp_path / "clean", tmp_path / "damaged")
    first, second = sorted((tmp_path / "damaged" / "scores").glob("*__part-*.parquet"))[:2]
    first.unlink()
    pq.write_table(pq.read_table(second).slice(1), second)  # a whole Parquet file, but not the one committed
    runner.execute_run(config, str(tmp_path / "damaged"), resume=True)
    result = compare_runs(tmp_path / "clean", tmp_path / "damaged")
    assert result.equal, result.render()
