"""Evaluate a grounding model: ``python eval.py key=value ...`` (see ``gge.cli``)."""

import sys

from gge.cli import main

if __name__ == "__main__":
    sys.exit(main())
