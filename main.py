#!/usr/bin/env python3
"""Command line: `python main.py run --suite NAME --model M ...` evaluates a model and stores the run.

The same program is installed as the `farel-eval` console script; the code is `farel_eval.cli`.
"""

import sys

from farel_eval.cli import main

if __name__ == "__main__":
    sys.exit(main())
