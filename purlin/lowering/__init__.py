"""Progressive lowering passes, one per file."""
