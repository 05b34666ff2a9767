"""The `pydantic-evals` suite: a pydantic_evals dataset file posed as any suite's cases, scored by its evaluators."""
