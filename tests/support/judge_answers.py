"""A sample table for the judge stage and a backend that answers from a script (by request id), recording what
it was asked."""
from __future__ import annotations

import json

import pyarrow as pa

from engine.llm.requests import ChatResponse
from engine.records import SAMPLE_SCHEMA
from engine.taxonomy import CLUSTERS

GENERATORS = ("starcoder2-7b", "codegemma-7b")


def judge_samples(file_ids=("f1", "f2", "f3"), language="nl") -> pa.Table:
    rows = []
    for file_id in file_ids:
        source = f"class A {{\n  // Geeft {file_id} terug\n  int x() {{ return 1; }}\n}}\n"
        comment = f"// Geeft {file_id} terug"
        start = source.index(comment)
        for generator in GENERATORS:
            rows.append(dict(sample_id=f"{file_id}/{generator}", file_id=file_id, language=language, source=source,
                             comment_start=start, comment_end=start + len(comment), reference=comment, generator=generator,
                             prime="// Geeft", prediction=f" {generator} terug", label="partial", error_codes=["SE-MD"]))
    rows.append(dict(rows[0], sample_id="f1/none", generator="x", prediction=None))  # nothing to judge: skipped
    return pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)


class Scripted:
    """Answers by request id: `file|strategy|language|reference|cluster`; records what it was asked."""

    def __init__(self):
        self.requests = []

    def chat(self, requests):
        self.requests.extend(requests)
        out = []
        for r in requests:
            file_id, strategy, language, reference, cluster = r.request_id.split("|")
            if file_id == "f2":
                out.append(ChatResponse(r.request_id, None, None, 0, 0, 0.5, "HTTP 503 after 7 attempt(s)"))
                continue
            if cluster == "semantic_code":
                out.append(ChatResponse(r.request_id, "no json here", "stop", 100, 5, 0.1))
                continue
            label = {"semantic_accuracy": "partial", "meta": "correct"}.get(cluster, "correct")
            codes = list(CLUSTERS[cluster][:1]) if cluster else ["SE-HA3", "BOGUS-1"]
            if cluster == "linguistic_grammar":
                label = "incorrect" if file_id == "f3" else "correct"
            answer = {"evaluations": [{"model_name": g.upper(), "errors": codes, "explanation": "", "overall_quality": label}
                                      for g in GENERATORS]}
            out.append(ChatResponse(r.request_id, "```json\n" + json.dumps(answer) + "\n```", "stop", 100, 20, 0.1))
        return out
