"""`python -m engine.cli`: the `babelscore` command."""
import sys

from engine.cli import main

sys.exit(main())
