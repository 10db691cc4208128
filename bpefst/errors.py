"""The one exception type that means "the user gave us something we cannot use".

Every layer raises :class:`BpefstError` (or a subclass) for bad input: a
malformed file, an improper merge list, an artifact of the wrong kind.  The CLI
turns it into a one-line message on stderr and exit status 2; anything else
that escapes is a bug and is allowed to show a traceback.
"""


class BpefstError(Exception):
    """Bad usage or bad input; the message is shown to the user as is."""

    exit_code = 2


class ArtifactError(BpefstError):
    """An artifact file is truncated, corrupted, or not what was expected."""
