"""Statistics with no I/O: bootstrap, paired differences, Bradley-Terry, agreement."""
