"""Running an evaluation: the data pipeline, the loop, Lightning and online evaluators, run state, outputs."""
