"""``python -m gge.integrations.verl``: ``gge export verl`` (``summarize ...``: ``gge summarize-verl``)."""

from __future__ import annotations

import sys

from gge.integrations.verl.cli import _main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main())
