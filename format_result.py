#!/usr/bin/env python3
"""Leaderboard of stored runs: `python format_result.py [DIR] [--format rich|markdown|csv|json|html]`, and
`python format_result.py --compare RUN_A RUN_B` for a paired comparison.

The code is `typed_eval.cli.leaderboard_command`, `typed_eval.reports.leaderboard`, `typed_eval.reports.tables` and
`typed_eval.reports.exports` (also
`typed-eval-leaderboard` once installed).
"""

import sys

from typed_eval.cli.leaderboard_command import main
from typed_eval.reports.exports import render_csv, render_json
from typed_eval.reports.leaderboard import build_rows
from typed_eval.reports.tables import render_markdown, render_rich

__all__ = ["build_rows", "main", "render_csv", "render_json", "render_markdown", "render_rich"]

if __name__ == "__main__":
    sys.exit(main())
