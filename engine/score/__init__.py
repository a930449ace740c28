"""Stage `score`: the section and its scorer entries (scoring.py), config checks and model needs
(section.py), reuse of earlier rows (reuse.py) and its Stage (stage.py); the metrics themselves
are engine/metrics/."""
