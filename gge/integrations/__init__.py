"""Adapters for trainers that take no Lightning callback.

* :mod:`gge.integrations.verl`: ``gge export verl`` (validation parquet files in the RL dataset
  schema verl and EasyR1 read), ``compute_score`` (their custom reward function) and
  ``gge summarize-verl`` (their dumped validation generations into gge's results);
* :mod:`gge.integrations.watch`: ``gge watch DIR``, evaluating every checkpoint a trainer saves.

Nothing here imports verl or EasyR1.
"""
