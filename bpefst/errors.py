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


# -- tiktoken's exception types ------------------------------------------------------------
# Code written for tiktoken catches ValueError, KeyError, TypeError or OverflowError; each
# error below is that type and a BpefstError at once, so both kinds of caller keep working.


class _PlainKeyError(KeyError):
    """A KeyError whose ``str()`` is its message (a plain KeyError shows the repr of its argument)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownEncodingError(BpefstError, ValueError):
    """``get_encoding`` found no tokenizer of that name (a ValueError, as in tiktoken)."""


class UnknownModelError(BpefstError, _PlainKeyError):
    """``encoding_name_for_model`` does not know the model (a KeyError, as in tiktoken)."""


class UnknownTokenError(BpefstError, _PlainKeyError):
    """A token id, or the bytes of a single token, not in the vocabulary (a KeyError, as in tiktoken)."""


class TokenIdRangeError(UnknownTokenError, OverflowError):
    """A token id below 0 or above 2**32 - 1 (tiktoken raises OverflowError converting it)."""


class ArgumentTypeError(BpefstError, TypeError, ValueError):
    """An argument of the wrong type: a TypeError, and a ValueError where tiktoken happens to raise one
    (``disallowed_special="<|endoftext|>"``, a string where a set belongs)."""


class InvalidUTF8Error(BpefstError, UnicodeDecodeError):
    """Tokens whose bytes are not UTF-8 where text is needed (a UnicodeDecodeError, as tiktoken's strict decode)."""

    @classmethod
    def from_error(cls, error: UnicodeDecodeError) -> "InvalidUTF8Error":
        return cls(error.encoding, error.object, error.start, error.end, error.reason)

    def __str__(self) -> str:
        return f"the tokens do not spell UTF-8 text: {UnicodeDecodeError.__str__(self)}"


class InvalidEncodingError(BpefstError, ValueError):
    """tiktoken's constructor was given ranks, specials or a pattern that do not make a tokenizer."""
