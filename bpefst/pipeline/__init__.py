"""Layer 6: streaming tokenization and validation over whole texts and id streams."""
