"""`python -m engine.cli`: the `babelscore` command."""
import sys

from engine.cli import main

if __name__ == "__main__":  # importing the module (a docs or import sweep) runs nothing
    sys.exit(main())
