"""Build stage: source files -> samples, with language identification, filters and selection."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.build.params import BuildParams
from engine.build.samples import approximate_token_count, build_samples
from engine.data.langid import LanguageIdentifier
from engine.errors import ConfigError, InputError
from engine.records import SAMPLE_SCHEMA

# file -> (content, the one eligible comment, its natural language); every other comment in a
# file is under 10 tokens or inside a string.
FILES = {
    "java/en/Graph.java": (
        ('public class Graph {\n    // short one\n    String s = "// Returns nothing of interest to anybody at all here";\n'
        "    /**\n     * Returns the connected component of the graph that contains the given node.\n     */\n"
        "    int component(int node) { return node; }\n}\n"),
        "/**\n     * Returns the connected component of the graph that contains the given node.\n     */",
        "en",
    ),
    "java/en/Path.java": (
        ("class Path {\n    // Computes the shortest path between two nodes with the bellman ford algorithm.\n"
        "    int f() { return 0; } // ok\n}\n"),
        "// Computes the shortest path between two nodes with the bellman ford algorithm.",
        "en",
    ),
    "java/nl/Pad.java": (
        ("class Pad {\r\n    // Berekent het kortste pad tussen twee knopen met het algoritme van Bellman en Ford.\r\n"
        "    int f() { return 0; }\r\n}\r\n"),
        "// Berekent het kortste pad tussen twee knopen met het algoritme van Bellman en Ford.",
        "nl",
    ),
    "py/zh/tu.py": (
        'def size(g):\n    s = "# 不是注释"\n    # 返回图中节点的数量，如果图为空则返回零，否则返回正整数。\n    return len(g)\n',
        "# 返回图中节点的数量，如果图为空则返回零，否则返回正整数。",
        "zh",
    ),
    "go/el/user.go": (
        ("package user\n\n// Επιστρέφει το πλήρες όνομα του χρήστη, όπως είναι αποθηκευμένο στη βάση δεδομένων.\n"
        "func Name() string { return \"\" }\n"),
        "// Επιστρέφει το πλήρες όνομα του χρήστη, όπως είναι αποθηκευμένο στη βάση δεδομένων.",
        "el",
    ),
    "js/pl/user.js": (
        ("/* Zwraca pełną nazwę użytkownika zapisaną w bazie danych albo pusty napis. */\n"
        "function name() { return ''; } // x\n"),
        "/* Zwraca pełną nazwę użytkownika zapisaną w bazie danych albo pusty napis. */",
        "pl",
    ),
}
SKIPPED = {
    "java/short/Short.java": "class S {\n    // too short\n}\n",
    "py/strings_only.py": 'x = "# Returns the connected component of the graph that contains the node."\n',
    "notes/README.md": "# Returns the connected component of the graph that contains the given node.\n",
    ".git/Hidden.java": "// Returns the connected component of the graph that contains the given node.\n",
    "java/empty/Empty.java": "",
}


@pytest.fixture(scope="module")
def source_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sources")
    for rel, content in {**{k: v[0] for k, v in FILES.items()}, **SKIPPED}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8"))  # bytes: CRLF stays CRLF
    (root / "java/bad").mkdir(parents=True)
    (root / "java/bad/Latin1.java").write_bytes("// Retourne le nom de l'utilisateur \xe9\xe9\n".encode("latin-1"))
    return root


def test_samples_have_the_expected_comments_languages_and_offsets(source_dir: Path) -> None:
    table = build_samples(BuildParams(source_dir=str(source_dir)))
    assert table.schema.equals(SAMPLE_SCHEMA)
    rows = {r["file_id"]: r for r in table.to_pylist()}
    assert set(rows) == set(FILES)
    for file_id, (content, comment, language) in FILES.items():
        row = rows[file_id]
        assert row["sample_id"] == file_id
        assert row["source"] == content
        assert row["reference"] == comment
        assert row["comment_start"] == content.index(comment)
        assert row["source"][row["comment_start"]:row["comment_end"]] == row["reference"]
        assert row["language"] == language, file_id
        assert row["generator"] is None and row["prediction"] is None and row["prime"] is None


def test_selection_is_deterministic_and_per_language(source_dir: Path) -> None:
    params = BuildParams(source_dir=str(source_dir), files_per_language=1, seed=3)
    first = build_samples(params)
    assert first.equals(build_samples(params))
    languages = first.column("language").to_pylist()
    assert sorted(languages) == sorted({v[2] for v in FILES.values()})
    picked = [r["file_id"] for r in first.to_pylist() if r["language"] == "en"]
    assert picked[0] in ("java/en/Graph.java", "java/en/Path.java")
    picks = {tuple(r["file_id"] for r in build_samples(
        BuildParams(source_dir=str(source_dir), files_per_language=1, seed=s, languages=("en",))).to_pylist())
        for s in range(8)}
    assert picks == {("java/en/Graph.java",), ("java/en/Path.java",)}  # the seed decides, both happen


def test_language_set_and_programming_languages_restrict(source_dir: Path) -> None:
    params = {"source_dir": str(source_dir), "languages": ("nl", "pl"), "programming_languages": ("java", "javascript")}
    # Restricted to nl and pl, the detector calls the English comments Dutch ...
    table = build_samples(BuildParams(**params))
    assert sorted(table.column("file_id").to_pylist()) == [
        "java/en/Graph.java", "java/en/Path.java", "java/nl/Pad.java", "js/pl/user.js"]
    # ... unless English is one of the other languages it may answer (and never accepts).
    table = build_samples(BuildParams(**params, other_languages=("en",)))
    assert sorted(table.column("file_id").to_pylist()) == ["java/nl/Pad.java", "js/pl/user.js"]


def test_window_filter_drops_files_whose_context_does_not_fit(source_dir: Path) -> None:
    english = ("java/en/Graph.java", "java/en/Path.java")
    lengths = np.array([approximate_token_count(FILES[f][1]) for f in english], dtype=float)
    limit = lengths.mean() + 3 * lengths.std(ddof=0)
    need = {f: approximate_token_count(FILES[f][0].replace(FILES[f][1], "")) + limit for f in english}
    assert need["java/en/Path.java"] < need["java/en/Graph.java"]
    window = int(need["java/en/Path.java"]) + 1  # Path.java fits, Graph.java does not
    params = BuildParams(source_dir=str(source_dir), languages=("en",), other_languages=("nl", "zh", "el", "pl"),
                         window=window)
    assert [r["file_id"] for r in build_samples(params).to_pylist()] == ["java/en/Path.java"]
    wide = BuildParams(source_dir=str(source_dir), languages=("en",), other_languages=("nl", "zh", "el", "pl"))
    assert [r["file_id"] for r in build_samples(wide).to_pylist()] == list(english)


def test_min_comment_tokens(source_dir: Path) -> None:
    table = build_samples(BuildParams(source_dir=str(source_dir), min_comment_tokens=2, languages=("en",),
                                      other_languages=("nl",), programming_languages=("java",)))
    assert "java/short/Short.java" in table.column("file_id").to_pylist()


def test_approximate_token_count() -> None:
    assert approximate_token_count("Returns the user's name.") == 7  # Returns the user ' s name .
    assert approximate_token_count("返回图中") == 4
    assert approximate_token_count("") == 0


def test_language_identifier() -> None:
    ident = LanguageIdentifier()
    assert ident.identify("Returns the name of the user") == "en"
    assert ident.identify("Geeft de naam van de gebruiker terug") == "nl"
    assert ident.identify("返回用户的姓名") == "zh"
    assert ident.identify("Επιστρέφει το όνομα του χρήστη") == "el"
    assert ident.identify("Zwraca nazwę użytkownika") == "pl"
    assert ident.identify("1234 + 5678") is None
    assert LanguageIdentifier(("en",)).identify("Returns the name of the user") == "en"
    assert LanguageIdentifier(("de", "en"), min_confidence=0.9).identify("Geeft de naam van de gebruiker terug") is None


def test_params_validation(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="languages"):
        BuildParams(source_dir="x", languages=("EN",))
    with pytest.raises(ConfigError, match="programming_languages"):
        BuildParams(source_dir="x", programming_languages=("cobol",))
    with pytest.raises(ConfigError, match="comment_kinds"):
        BuildParams.from_mapping({"source_dir": "x", "comment_kinds": ["inline"]})
    with pytest.raises(ConfigError, match="xx"):
        build_samples(BuildParams(source_dir=str(tmp_path), languages=("xx",)))
    with pytest.raises(InputError, match="not a directory"):
        build_samples(BuildParams(source_dir=str(tmp_path / "missing")))
