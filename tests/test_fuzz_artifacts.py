"""The mutation fuzz of the Acceptance section of issue 16 (driver: ``tests/fuzz_artifacts.py``).

Real artifacts of every kind are mutated (byte flips, truncation, huge declared
lengths, values of the wrong type, scrambled tables) and read by the commands that
take them.  Bounded for CI (150 cases, about 20 s on 2 shared cores); set
``BPEFST_FUZZ_CASES`` (and ``BPEFST_FUZZ_SEED``) for a longer run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_mutated_artifacts_are_refused_cleanly(tmp_path) -> None:
    cases = int(os.environ.get("BPEFST_FUZZ_CASES", "150"))
    seed = int(os.environ.get("BPEFST_FUZZ_SEED", "0"))
    summary_path = tmp_path / "summary.json"
    done = subprocess.run([sys.executable, str(HERE / "fuzz_artifacts.py"), "--cases", str(cases), "--seed", str(seed),
                           "--out", str(summary_path)], capture_output=True, timeout=60 + cases)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    summary = json.loads(summary_path.read_text())
    assert summary["failures"] == [], json.dumps(summary["failures"][:5], indent=1)
    assert summary["max_rss_kb"] < 1 << 20
    outcomes = {outcome for per_mutation in summary["counts"].values() for outcome in per_mutation}
    assert outcomes <= {"refused", "same", "changed"}
    assert sum(summary["counts"]["flip"].values()) > 0 and summary["counts"]["flip"].get("refused", 0) > 0
    raw = ("flip", "truncate", "huge-length")
    assert all(summary["counts"].get(how, {}).get("changed", 0) == 0 for how in raw)  # the checksum catches them all
