"""Benchmarks built on the typed-task core: FaRel (multiple choice), story-graph, and suite files."""
