"""The `schemas` suite: JSONSchemaBench's real-world JSON Schemas (and the user's own), each the output type."""
