"""BFCL's multi-turn categories: a conversation of several user turns in which the model acts on BFCL's stateful
backends (a file system, a trading bot, a vehicle...), run as BFCL's handlers run it and scored by BFCL's own
multi-turn checker (`bfcl-eval` installed `--no-deps`, plus `mpmath`)."""
