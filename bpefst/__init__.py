"""bpefst: a tokenizer compiler for byte-pair encoding."""

__version__ = "0.1.0"
