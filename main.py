#!/usr/bin/env python3
"""Command line: `python main.py run --suite NAME --model M ...` evaluates a model and stores the run.

The same program is installed as the `typed-eval` console script; the code is `typed_eval.cli`.
"""

import sys

from typed_eval.cli import main

if __name__ == "__main__":
    sys.exit(main())
