"""Stage `build`: the run's input made from a folder of source files (samples.py) and its Stage
(stage.py); comment extraction and language identification are engine/data/."""
