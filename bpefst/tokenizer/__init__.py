"""Layer 3: the BPE tokenizer model, its file formats, and the reference encoder."""

from .formats import FORMATS, format_losses, load_tokenizer, save_tokenizer
from .model import BPEModel
from .pretokenize import FROM_FILE, PRESETS, Pretokenizer, pattern_override, resolve_pattern
from .reference import ReferenceEncoder

__all__ = ["BPEModel", "FORMATS", "FROM_FILE", "PRESETS", "Pretokenizer", "ReferenceEncoder", "format_losses", "load_tokenizer", "pattern_override", "resolve_pattern", "save_tokenizer"]
