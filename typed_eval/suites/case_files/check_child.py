"""The child process of `typed_eval.suites.case_files.checks`: reads a check per line on stdin, answers a line on
stdout.

Why its own streams: a `python` assertion may print or read stdin; the protocol keeps private copies of the
pipes, and the code sees /dev/null. Ctrl-C is the parent's to handle (it kills this process), so it is ignored
here; a `sys.exit()` or `KeyboardInterrupt` raised by the code is that assertion's failure.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

from typed_eval.providers.local_server import die_with_parent
from typed_eval.suites.case_files.assertions import CannotCheck, Check, Output, check_of


def _answer(job: dict[str, Any], checks: dict[str, Check]) -> dict[str, Any]:
    key = json.dumps(job["spec"], sort_keys=True)
    try:
        if key not in checks:
            checks[key] = check_of(job["spec"])
        graded = checks[key](Output(job["text"], job["value"]), job["context"])
    except CannotCheck as exc:
        return {"score": 0.0, "passed": False, "reason": f"cannot check: {exc}"}
    except RecursionError:
        return {"score": 0.0, "passed": False, "reason": "cannot check: the reply is nested too deeply"}
    except MemoryError:
        return {"score": 0.0, "passed": False, "reason": "cannot check: out of memory"}
    except BaseException as exc:
        return {"score": 0.0, "passed": False, "reason": f"the check failed: {type(exc).__name__}: {exc}"}
    passed = graded.passed if graded.passed is not None else graded.score > 0
    return {"score": graded.score, "passed": passed, "reason": graded.reason}


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    quiet = os.open(os.devnull, os.O_RDWR)
    os.dup2(quiet, 0)
    os.dup2(quiet, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 (for the process's life)
    sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    checks: dict[str, Check] = {}
    for line in requests:
        answers.write(json.dumps(_answer(json.loads(line), checks), ensure_ascii=False).encode() + b"\n")
        answers.flush()


if __name__ == "__main__":
    main()
