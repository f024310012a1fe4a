"""`turnbench view`: a local web app over run directories (runs live, one run's report,
conversations, comparisons) and, with `--annotate`, human judging into SQLite.

It only reads run directories; nothing under a served folder is ever written. Only the
command line imports this package.
"""
