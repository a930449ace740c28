"""Stage `score`: the section and its scorer entries (params.py), what a part scores and writes
(rows.py), config checks and model needs (section.py), reuse of earlier rows (reuse.py) and its
Stage (stage.py); the metrics themselves are engine/metrics/."""
