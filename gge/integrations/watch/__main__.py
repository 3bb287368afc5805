"""``python -m gge.integrations.watch DIR ...``: the same as ``gge watch DIR ...``."""

from __future__ import annotations

import sys

from gge.integrations.watch.cli import watch_main

if __name__ == "__main__":
    sys.exit(watch_main(sys.argv[1:]))
