"""Judge prompts, verdict parsers and the bounded re-ask loop."""
