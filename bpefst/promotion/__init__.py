"""Layer 5: promotion of text automata to token automata."""
