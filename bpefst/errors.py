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


class DisallowedSpecialError(BpefstError, ValueError):
    """The text holds a special token that the call did not allow (a ValueError, as in tiktoken).

    The message names the keyword arguments of the Python API; the command line
    shows :meth:`cli_message`, which names its flags instead.
    """

    def __init__(self, token: str, position: int):
        self.token, self.position = token, position
        super().__init__(
            f"the text contains the special token {token!r} at character {position}, which is not allowed: pass "
            f"allowed_special={{{token!r}}} (or \"all\") to encode it as a special token, or disallowed_special=() "
            f"to encode it as plain text"
        )

    def __reduce__(self):  # rebuilt from its fields when raised in a forked worker
        return (type(self), (self.token, self.position))

    def cli_message(self) -> str:
        return (f"the text contains the special token {self.token!r} at character {self.position}, which is not allowed "
                f"(allow it, e.g. --allowed-special all, or treat it as text with --allowed-special none)")
