"""Layer 3: the BPE tokenizer model, its file formats, and the reference encoder."""

from .formats import FORMATS, format_losses, load_tokenizer, save_tokenizer
from .model import BPEModel
from .pretokenize import PRESETS, Pretokenizer, resolve_pattern
from .reference import ReferenceEncoder

__all__ = ["BPEModel", "FORMATS", "PRESETS", "Pretokenizer", "ReferenceEncoder", "format_losses", "load_tokenizer", "resolve_pattern", "save_tokenizer"]
