#!/usr/bin/env python3
"""The `bfcl` suite's multi-turn categories against BFCL's own pipeline (`bfcl generate` + `bfcl evaluate`) on one
mock server: every case's verdict, every category's accuracy, what each sends, and the wall time and memory of each.

    python benchmarks/bfcl_multi_turn.py --setup /tmp/bfcl-pipeline-venv        # BFCL's pipeline, once
    python benchmarks/bfcl_multi_turn.py /tmp/bfcl-pipeline-venv/bin/python       # both modes, 800 cases

The same pipelines, models, timing and comparison as `bfcl_single_turn.py` (see there), on the four multi-turn
categories (`--categories multi_turn`, or some of them). The mock plays a scripted model
(`bfcl_multi_turn_mock.py`): per case, the ground truth's calls one per step, perturbed in a third of the cases or
so (a call skipped, a wrong value, a call repeated, text where calls are needed, arguments that are not JSON, more
than 20 steps...), the reply read from the conversation alone, so both pipelines get the same reply at the same
point of the same case. BFCL executes the calls on its backends in its own process; ours, in our backend workers.
Our venv needs `pip install --no-deps bfcl-eval==2026.3.23` and `mpmath` (the `bfcl` extra), which the mock also
uses to read the ground truth's calls.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bfcl_mock import MockServer
from bfcl_multi_turn_mock import MultiTurnReplies
from bfcl_single_turn import arguments, compare


def main() -> None:
    args = arguments(__doc__.splitlines()[0], "multi_turn")
    from typed_eval.suites.bfcl.multi_turn.cases import CATEGORIES, load_multi_turn

    names = list(CATEGORIES) if args.categories == "multi_turn" else args.categories.split(",")
    data = load_multi_turn(names, None)
    server = MockServer(MultiTurnReplies(data.cases), args.latency_ms / 1000)
    compare(args, server, len(data.cases), data.version)


if __name__ == "__main__":
    main()
