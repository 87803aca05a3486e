# SPDX-License-Identifier: MIT
"""`confucius sim`: the ns-3 simulator (sim/README.md) from Python.

    bottleneck.py   build/sim/bottleneck: one run's options in, its JSON out
    episode.py      the motivating example per scheduler (`confucius sim episode`)
    plan.py         a lab scenario's cells as the simulator runs them, and what it cannot
    store.py        a simulated cell's pages into the lab's database (engine "ns3")
    sweep.py        the cells as tasks, in this process or on Dask distributed
    cli.py          the commands
"""
