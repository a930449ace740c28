"""Stage `noise`: the method (method.py) and its Stage (stage.py)."""
