"""``python -m gge.benchmarks.demo.suite --out DIR [--seed N] [--per-benchmark N]``: write the demo suite."""

from __future__ import annotations

from gge.benchmarks.demo.suite.generate import main

if __name__ == "__main__":
    raise SystemExit(main())
