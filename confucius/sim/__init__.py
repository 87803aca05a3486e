# SPDX-License-Identifier: MIT
"""`confucius sim`: the ns-3 simulator (sim/README.md) from Python.

    bottleneck.py   build/sim/bottleneck: one run's options in, its JSON out
    episode.py      the motivating example per scheduler (`confucius sim episode`)
    engine.py       the registry's engine ns3: a planned task simulated, as a run
    plan.py         a lab scenario's plan (experiment/plan.py) as the simulator runs it,
                    and the cells it cannot
    worker.py       a task's pages in the bottleneck program, their logs read back
    store.py        a simulated task as the lab's run (RunData and its runs row)
    alone.py        a database's loads again without their pages
    traces.py       a database's loads grouped by the trace each drew from its set
    sweep.py        the cells as tasks, in this process or on Dask distributed
    cli.py          the commands
"""
