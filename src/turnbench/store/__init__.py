"""The run directory as a whole: reading finished runs, the results file, the run's configuration and its up-to-date check."""
