"""How far a judge's scores can be trusted: repeats, panels, agreement, length, injections.

Pure computations over judged items (`combine`, `agreement`, `length`, `detector`) and the
results blocks built from a run's log (`blocks`). Nothing here sends a request.
"""
