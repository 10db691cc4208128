"""Packed token bitmasks: allocate one, apply it to logits (numpy or torch).

The layout is the one xgrammar and llguidance use, so a bpefst automaton can
stand in for theirs in an engine: ``int32`` words, ``ceil(vocab / 32)`` per
row, bit ``t % 32`` of word ``t // 32`` set iff token ``t`` is allowed
(:meth:`bpefst.promotion.GuidedAutomaton.fill_next_token_bitmask` fills a row).
Applying a mask sets the logits of the disallowed tokens to ``-inf``; the
unpacking is vectorized (a shift by ``0..31`` per word), no Python loop over
tokens.  numpy and torch are optional and imported when used.
"""

from __future__ import annotations

from ..errors import BpefstError


def bitmask_words(vocab_size: int) -> int:
    return (vocab_size + 31) // 32


def allocate_token_bitmask(batch_size: int, vocab_size: int, backend: str = "numpy"):
    """A zeroed ``(batch_size, ceil(vocab_size / 32))`` int32 array (``backend``: numpy or torch)."""
    shape = (batch_size, bitmask_words(vocab_size))
    if backend == "numpy":
        numpy = _require("numpy", "numpy")
        return numpy.zeros(shape, dtype=numpy.int32)
    if backend == "torch":
        torch = _require("torch", "transformers")
        return torch.zeros(shape, dtype=torch.int32)
    raise BpefstError(f"unknown bitmask backend {backend!r} (expected numpy or torch)")


def apply_token_bitmask(logits, bitmask, rows=None) -> None:
    """Set ``logits[i, t] = -inf`` where bit ``t`` of ``bitmask[i]`` is clear, in place.

    ``logits``: ``(batch, vocab)`` (or ``(vocab,)`` with a one-row mask), numpy
    or torch, any float dtype; tokens past the mask's ``32 * words`` are
    disallowed.  ``rows``: only these batch rows (others untouched).
    """
    if type(logits).__module__.startswith("torch"):
        _apply_torch(logits, bitmask, rows)
    else:
        _apply_numpy(logits, bitmask, rows)


def _apply_torch(logits, bitmask, rows) -> None:
    import torch

    flat = logits.dim() == 1
    scores = logits.unsqueeze(0) if flat else logits
    mask = bitmask.view(1, -1) if bitmask.dim() == 1 else bitmask
    if rows is not None:
        index = torch.as_tensor(rows, dtype=torch.long, device=scores.device)
        mask = mask[index.to(mask.device)]
    shifts = torch.arange(32, dtype=torch.int32, device=mask.device)
    allowed = ((mask.unsqueeze(-1) >> shifts) & 1).reshape(mask.shape[0], -1).bool().to(scores.device)
    vocab = scores.shape[-1]
    if allowed.shape[1] < vocab:
        allowed = torch.nn.functional.pad(allowed, (0, vocab - allowed.shape[1]))
    allowed = allowed[:, :vocab]
    if rows is None:
        scores.masked_fill_(~allowed, float("-inf"))
    else:
        scores[index] = scores[index].masked_fill(~allowed, float("-inf"))


def _apply_numpy(logits, bitmask, rows) -> None:
    import numpy

    flat = logits.ndim == 1
    scores = logits[None, :] if flat else logits
    mask = bitmask.reshape(1, -1) if bitmask.ndim == 1 else bitmask
    index = numpy.arange(scores.shape[0]) if rows is None else numpy.asarray(rows)
    mask = mask[index] if rows is not None else mask
    bits = numpy.unpackbits(numpy.ascontiguousarray(mask).view(numpy.uint8), axis=-1, bitorder="little").astype(bool)
    vocab = scores.shape[-1]
    if bits.shape[1] < vocab:
        bits = numpy.pad(bits, ((0, 0), (0, vocab - bits.shape[1])))
    allowed = bits[:, :vocab]
    block = scores[index]
    block[~allowed] = -numpy.inf
    scores[index] = block


def _require(module: str, extra: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise BpefstError(f"this needs {module}: pip install 'bpefst[{extra}]'") from None


def check_guided(guided, stop_hint: str) -> None:
    """What every logits processor needs of its automaton: stop ids (so a finished match can end
    generation) and a start state; ``stop_hint`` says how to pass them in the caller's framework."""
    if not guided.stop_ids:
        raise BpefstError("the guided automaton has no stop ids, so a finished match could not end generation; "
                          f"build it with stop_ids={stop_hint}")
    if guided.start is None:
        raise BpefstError("the guided automaton accepts nothing")
