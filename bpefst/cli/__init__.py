"""The ``bpefst`` command line: click commands that parse arguments and call the layers.

No algorithm lives here; each command is a thin shell over a library function.
This module is the console entry point and stays light, so that Ctrl-C while the
commands are still being imported ends as quietly as Ctrl-C during the work.

Exit statuses (README, "Commands"): 0 success, 1 a negative verdict, 2 bad usage
or bad input (one line on stderr), 130 interrupted (Ctrl-C, as a shell reports
SIGINT), 141 when the reader of stdout went away (``| head``; 128 + SIGPIPE, as
``cat`` reports it), quietly in both cases.
"""

from __future__ import annotations

import os
import sys

INTERRUPTED = 130
PIPE_CLOSED = 141


def __getattr__(name: str):
    if name == "cli":  # ``from bpefst.cli import cli``, without importing every command at start-up
        from .app import cli

        return cli
    raise AttributeError(name)


def main() -> None:
    """Console entry point: run the CLI; one exit status per outcome (module docstring).

    Output that cannot be written (a full disk behind stdout) ends the command
    with one line and exit 2; stdout is flushed here, not at interpreter exit,
    where a failure would print a traceback-like "Exception ignored" message.
    """
    try:
        from .streams import guard_standard_streams, whole_writes_stdout

        guard_standard_streams()
        whole_writes_stdout()
        code = _run()
        _flush_stdout()
    except KeyboardInterrupt:
        _silence_stdout()
        code = INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        code = PIPE_CLOSED
    sys.exit(code)


def _run() -> int | str | None:
    import click

    from ..artifact import record_inputs
    from ..errors import BpefstError
    from .app import cli
    from .streams import Interrupted, PipeClosed, StdoutError

    record_inputs()  # no command may write over a file it read (README, "Artifacts")
    try:
        result = cli.main(prog_name="bpefst", standalone_mode=False)
        return result if isinstance(result, int) else 0
    except SystemExit as done:
        return done.code
    except (PipeClosed, BrokenPipeError):
        raise BrokenPipeError from None
    except Interrupted:
        raise KeyboardInterrupt from None
    except click.Abort as abort:  # click turns Ctrl-C (and EOF) outside a command into Abort
        if isinstance(abort.__context__, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        click.echo("bpefst: error: aborted", err=True)
        return 2
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except BpefstError as exc:  # raised outside a command, e.g. by a closed stdout while flushing
        print(f"bpefst: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        _fail_writing(exc, stdout=isinstance(exc, StdoutError))
        return 2


def _flush_stdout() -> None:
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        _fail_writing(exc, stdout=True)
        sys.exit(2)


def _fail_writing(exc: OSError, stdout: bool) -> None:
    """One line for an OSError that escaped the command: a file's or stdout's, or else the system's own words
    (never blamed on stdout: a lost connection to a cluster is not a problem with stdout)."""
    _silence_stdout()
    if exc.filename:
        message = f"cannot write {exc.filename}: {exc.strerror or exc}"
    elif stdout:
        message = f"cannot write to stdout: {exc.strerror or exc}"
    else:
        message = f"{exc.strerror or exc} ({type(exc).__name__})"
    if sys.stderr is not None:
        print(f"bpefst: error: {message}", file=sys.stderr)


def _silence_stdout() -> None:
    # Python flushes stdout at exit; on a closed pipe that flush would print a
    # second error, so point stdout at /dev/null first.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
