"""The trainer's loggers: per-sample views (:mod:`gge.loggers.dispatch`), W&B tables, overlays."""
