"""The BFCL suite: the Berkeley Function Calling Leaderboard's single-turn categories, scored with BFCL's verdicts."""
