"""The schema of every file gge writes or reads back, on the ground floor of the house.

results.json (:mod:`gge.documents.results`, its cost/budget/refine sections in
:mod:`gge.documents.cost`), compare.json (:mod:`gge.documents.compare`), predictions.jsonl
(:mod:`gge.documents.records`: :class:`~gge.documents.records.PredictionRecord` and its one codec),
and the words that describe an entry (:mod:`gge.documents.caveats`). Every layer reads these; they
import nothing of gge but the value types.
"""
