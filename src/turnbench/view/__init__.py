"""`turnbench view`: a local web app over run directories (and human judging)."""
