"""Report section of the round trip: summaries per generator and language, drop from English."""
from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from engine.config import config_from_mapping
from engine.records import ROUNDTRIP_SCHEMA
from engine.roundtrip.report import section_html, summarise
from tests.support.paths import REPO
from tests.support.roundtrip_rows import ROWS


def test_summary_and_drop_from_english():
    en, zh = summarise(ROWS)
    assert (en["language"], en["pass_at_1"], en["correctness"], en["n"], en["errors"]) == ("en", 1.0, 0.75, 2, 0)
    assert (zh["pass_at_1"], zh["correctness"], zh["errors"], zh["tasks"]) == (0.5, 0.5, 1, 3)
    assert zh["drop_pass_at_1"] == pytest.approx(0.5) and zh["drop_correctness"] == pytest.approx(0.25)
    assert zh["abstraction"] == pytest.approx((0.5 + 0.9 + 0.5) / 3) and math.isnan(en["drop_pass_at_1"])


def test_section_html(tmp_path):
    assert section_html(tmp_path) is None
    (tmp_path / "roundtrip").mkdir()
    pq.write_table(pa.Table.from_pylist(ROWS, schema=ROUNDTRIP_SCHEMA), tmp_path / "roundtrip" / "t__part-00000.parquet")
    page = section_html(tmp_path, {"roundtrip-abc": {"pass@1": "metric:roundtrip-pass@1|seed:0"}})
    assert 'data-language="zh"' in page and '<td data-metric="drop_pass_at_1">+0.500</td>' in page
    assert "metric:roundtrip-pass@1|seed:0" in page and "error: 1" in page
    assert '<li data-programming-language="python">python: pass@1 0.750 over 4 regenerations</li>' in page


def test_demo_config_loads():
    raw = yaml.safe_load((REPO / "configs" / "demo_roundtrip.yaml").read_text())
    config = config_from_mapping(raw, REPO / "configs", check=False)
    params = config.section("roundtrip")
    assert [g.backend for g in params.generators] == ["oracle", "transformers"]
    assert set(params.languages) == {"en", "nl", "zh", "el", "pl"}
    assert params.tasks == "polyglot" and params.programming_languages == ("python", "javascript")
