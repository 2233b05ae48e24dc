"""Benchmarks of the harness: what its operators, adapters and runner cost, and how exact they are.

Nothing here is part of the library a user imports (`retrofit`): the benchmarks import it, and the
library never imports them (`make lint` checks it). Each measurement is a module or package named
for what it measures, under a name no other module of the project has; the experiment that runs it
and writes its results file is `experiments/<job>.py`, started like every job by
`retrofit.jobs.launch` (`python -m retrofit <job>`).
"""
