#!/usr/bin/env python3
"""FaRel's quiz generator as a command: farel-bench CSV on stdout (progress on stderr), with the original's flags.
Imported, it gives the generator's names (`generate()`, `read_csv()`...), which live in
`typed_eval/suites/farel/generator.py`. The contract is `../shared/spec/farel-generator.md`."""

from __future__ import annotations

import sys

from typed_eval.suites.farel.generate_command import main
from typed_eval.suites.farel.generator import (
    DEFAULT_TEMPLATE,
    FEMALE_NAMES,
    MALE_NAMES,
    TAG_INSTRUCTION,
    FamilyTree,
    FarelFormatError,
    FarelLengthError,
    csv_line,
    decode_template,
    family_tree,
    generate,
    iter_csv,
    read_csv,
    relation_name,
    string_literal_end,
)

__all__ = [
    "DEFAULT_TEMPLATE",
    "FEMALE_NAMES",
    "MALE_NAMES",
    "TAG_INSTRUCTION",
    "FamilyTree",
    "FarelFormatError",
    "FarelLengthError",
    "csv_line",
    "decode_template",
    "family_tree",
    "generate",
    "iter_csv",
    "main",
    "read_csv",
    "relation_name",
    "string_literal_end",
]

if __name__ == "__main__":
    sys.exit(main())
