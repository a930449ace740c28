"""Package data ships in the wheel and is read from the installed package, not the source tree."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHIPPED = [
    "engine/resources/model_cards.yaml",
    "engine/resources/encoders.yaml",
    "engine/resources/languages.tsv",
    *[f"engine/resources/taxonomy_{lang}.yaml" for lang in ("en", "nl", "zh", "el", "pl")],
    "engine/data/demo/samples.jsonl",
    *[f"engine/data/demo/content_{lang}.yaml" for lang in ("en", "nl", "zh", "el", "pl")],
    "engine/roundtrip/prompts/regenerate.txt",
    *[f"engine/roundtrip/prompts/regenerate.{lang}.txt" for lang in ("java", "javascript", "cpp", "go", "rust")],
    "engine/roundtrip/data/polyglot.jsonl",
    *[f"engine/roundtrip/prompts/{kind}.{lang}.txt" for kind in ("explain", "compress") for lang in ("en", "nl", "zh", "el", "pl")],
]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the sources (the checkout stays free of build output)."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".cache")
    for name in ("engine", "kernels"):
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    out = root / "dist"
    # --no-build-isolation: build with the installed setuptools, no index needed
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(src)], check=True, capture_output=True, timeout=300)
    (path,) = out.glob("babelscore-*.whl")
    return path


def test_the_wheel_contains_the_package_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [name for name in SHIPPED if name not in names]
    assert not missing, missing
    assert not any(name.startswith("engine/data/demo/content_") and name.endswith(".py") for name in names)


def test_an_installed_wheel_reads_its_own_data(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    probe = (
        "import json, engine\n"
        "from engine.generate.cards import load_cards\n"
        "from engine.resources import default_layer_table\n"
        "from engine.data.demo.make_demo_data import build_rows\n"
        "from engine.report.score_settings import language_name\n"
        "print(json.dumps({'file': engine.__file__, 'cards': sorted(load_cards()),\n"
        "  'layer': default_layer_table()['bert-base-multilingual-cased'], 'rows': len(build_rows()),\n"
        "  'language': language_name('de')}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, check=True, capture_output=True,
                          text=True, timeout=300)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(result["file"]).is_relative_to(target)  # the installed copy, not the checkout
    assert result["cards"] == ["codegemma", "codellama", "codeqwen1.5", "granite-code", "starcoder2"]
    assert result["layer"] == 9
    assert result["language"] == "German"  # engine/resources/languages.tsv travels with the wheel
    assert result["rows"] == len((REPO / "engine/data/demo/samples.jsonl").read_text(encoding="utf-8").splitlines())
