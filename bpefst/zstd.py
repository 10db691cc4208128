"""Zstandard decompression, an optional extra: ``pip install 'bpefst[zstd]'``.

Large corpora are published as ``.jsonl.zst`` (The Pile, SlimPajama, DCLM),
so zstd is read wherever gzip is: corpus and id inputs as a stream
(:func:`bpefst.pipeline.inputs.open_input`), tokenizer files whole under the
decompression cap (:mod:`bpefst.tokenizer.formats.common`).  Python 3.11 has
no zstd module in its standard library (``compression.zstd`` came in 3.14),
so the ``zstandard`` package does the work; it is imported only when a zstd
stream is met, and its absence is a one-line error naming the extra.

Why :class:`ZstdReader` and not the package's own ``stream_reader``: that
reader ends quietly at the end of a truncated file (half a frame gives no
error, just less text), and a silently shortened corpus is a wrong answer.
So frames are decoded here one at a time with the package's incremental
decompressor, and the input ending inside a frame is an error.

Three limits keep a hostile stream cheap:

* the output is handed out in pieces, never held whole, as for gzip;
* the compressed input goes in :data:`FEED` bytes at a time.  One zstd block
  of 4 bytes (a header and a byte repeated) can stand for 128 KiB, so a call
  can return at most about 32,768 times its input: 64 MiB for a 2 KiB feed;
* a frame declares the window it needs (the decoder keeps that much recent
  output in memory): frames asking for more than :data:`MAX_WINDOW` (128 MiB,
  the ``zstd`` tool's own default limit; only ``zstd --long=28`` or more
  writes larger ones) are refused before memory is reserved for them.
"""

from __future__ import annotations

from typing import BinaryIO

from .errors import BpefstError

MAGIC = b"\x28\xb5\x2f\xfd"
MAX_WINDOW = 1 << 27
FEED = 2048
READ = 1 << 16
INSTALL_HINT = "pip install 'bpefst[zstd]'"


def require_zstandard(name: str):
    """The ``zstandard`` module, or a BpefstError saying that ``name`` needs it and how to install it."""
    try:
        import zstandard
    except ImportError:
        raise BpefstError(f"{name} is zstd-compressed, which needs the zstandard package: {INSTALL_HINT}") from None
    return zstandard


class ZstdReader:
    """The decompressed bytes of a binary stream of zstd frames (one after another, as ``zstd -d`` reads them).

    ``read1(size)`` returns up to ``size`` bytes, empty only at the end of the
    input; bad data, a frame cut short and a too-large window raise a
    one-line :class:`BpefstError` naming ``name``.
    """

    def __init__(self, raw: BinaryIO, name: str):
        zstandard = require_zstandard(name)
        self._decompressor = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW)
        self._error = zstandard.ZstdError
        self._raw, self._name = raw, name
        self._frame = self._decompressor.decompressobj()
        self._in_frame = False  # some bytes of the current frame have been given to the decoder
        self._input = b""  # compressed bytes read but not yet given to the decoder
        self._output = memoryview(b"")
        self._ended = False

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        while not self._output and not self._ended:
            self._decode_more()
        size = len(self._output) if size is None or size < 0 else size
        piece, self._output = self._output[:size], self._output[size:]
        return piece.tobytes()

    read = read1

    def _decode_more(self) -> None:
        """Give the decoder its next feed (reading more input when none is left); at the end, check the last frame."""
        if not self._input:
            self._input = self._raw.read(READ)
            if not self._input:
                self._ended = True
                if self._in_frame:
                    raise BpefstError(f"{self._name}: corrupt or truncated zstd data (the input ends inside a frame)")
                return
        feed, self._input = self._input[:FEED], self._input[FEED:]
        try:
            self._output = memoryview(self._frame.decompress(feed))
        except self._error as exc:
            raise BpefstError(f"{self._name}: {explain(exc)}") from None
        self._in_frame = True
        if self._frame.eof:  # the frame is complete; what followed it starts the next one
            self._input = self._frame.unused_data + self._input
            self._frame = self._decompressor.decompressobj()
            self._in_frame = False

    def close(self) -> None:
        self._output = memoryview(b"")


def explain(exc: BaseException) -> str:
    """A zstd error in words a user can act on: a too-large window is not corruption."""
    text = str(exc)
    if "too much memory" in text.lower() or "window" in text.lower():
        return (f"needs a decoding window larger than {MAX_WINDOW >> 20} MiB (written with zstd --long?); "
                "decompress it first (zstd -dc --long=31 FILE | bpefst ... -)")
    return f"corrupt or truncated zstd data ({text})"
