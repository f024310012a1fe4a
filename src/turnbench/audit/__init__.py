"""`turnbench audit-judge`: measure a judge's biases with a fixed probe suite.

`probes` reads the versioned probe texts, `plan` lists the judgments an audit asks for and
renders them with the chosen benchmark's own judge prompts, `stats` turns the logged
judgments into the audit's numbers with bootstrap intervals, and `run` executes an audit
resumably in a run directory (the same log machinery as a run).
"""
