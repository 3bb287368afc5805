"""The demo policy: its training script (:mod:`gge.demo.train`) and the checkpoint it ships.

The synthetic suite it trains and is evaluated on is :mod:`gge.benchmarks.demo`.
"""
