"""Internals of the evaluator: answer modes, model resolution, attempt reading, scoring, storage."""
