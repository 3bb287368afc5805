"""``python -m gge.demo.suite --out DIR [--seed N] [--per-benchmark N]``: write the demo suite."""

from __future__ import annotations

from gge.demo.suite.generate import main

if __name__ == "__main__":
    raise SystemExit(main())
