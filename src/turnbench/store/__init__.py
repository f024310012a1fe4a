"""The run directory as a whole: finished runs read back, the results file, the run's
configuration and its up-to-date check."""
