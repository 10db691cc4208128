"""Running the ``bpefst`` command as a user does, and what a user error must look like."""

from __future__ import annotations

import subprocess
import sys


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bpefst", *args], input=stdin, capture_output=True, timeout=120)


def assert_user_error(result: subprocess.CompletedProcess, fragment: str) -> None:
    """Exit 2 and one line on stderr, ``bpefst: error: ...`` containing ``fragment``; no traceback."""
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert "Traceback" not in stderr
    assert stderr.count("\n") == 1 and stderr.startswith("bpefst: error: "), stderr
    assert fragment in stderr, stderr
