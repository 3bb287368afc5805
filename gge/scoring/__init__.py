"""Pure functions from answers to numbers: hits, Top-1 selection, metrics, analysis."""
