"""Multi-turn stress (`--perturb KIND`): arms that perturb the history a judged turn sees.

`arms.py` says what each kind changes and what the judge is shown; `planted.py` reads the
planted answers; `injections.py` holds the injected documents (package data, versioned) and
the deterministic obedience checks. The engine runs the arms as more work of the same run
(`turnbench.engine.drivers.stress`), and results pair each arm with the unperturbed run
(`turnbench.results.stress`).
"""
