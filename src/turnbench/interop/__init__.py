"""Other tools' files: imports of their answers and judgments, exports to them."""
