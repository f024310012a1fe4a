"""Everything users look at: terminal tables, progress, HTML reports."""
