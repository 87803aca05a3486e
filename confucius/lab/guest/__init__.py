# SPDX-License-Identifier: MIT
"""One run of a scenario, inside the lab VM: `python -m confucius.lab.guest SPEC.json`.

The host (runner.py) writes the run's spec (contract.RunSpec), the pages and the hosts file
into the run's results folder and boots the VM with this package as the script. Here:

1. `run.build_topology`: the dumbbell (topology.Topology) with a bare bottleneck, then the
   spec's record of the bottleneck's tc commands as it is (classes and filters included),
   and one server address per Web domain;
2. the tools, one runner each behind `base.Runner` (start, stop, record into the events),
   composed by `run.runners` from the spec:
   - `capture.StatsCapture`: qdisc statistics from one `tc -s -j -batch` process, and the
     drop counters of every namespace at the end;
   - `flows.FlowSampler`: Confucius's flows over netlink (fast around each page load);
   - `pages.WebServer` and `pages.load_page`: the Web server and web-client's page loads;
   - `traffic.RttProbes` (irtt) and `traffic.BulkFlows` (iperf3);
   - `rt.RtSession`: one start of the real-time flow(s);
   A new tool is one more Runner and one line in `run.runners`.
3. `schedule`: the RT flow(s) and the page loads, in one of three modes:
   - `episodes` (default): for each page a fresh RT flow warms up until it has converged,
     then the page loads, then the flow runs on until its frames have been on time for a
     while (the tail), and stops. Every load meets an RT flow in the same state: GCC
     recovers from a back-off additively (tens of kbit/s per second), so a flow kept
     running would meet each page at a rate that depends on how earlier pages treated it
     (a scheduler that protects it would face a faster flow next time);
   - `continuous`: one RT flow for the whole run, as in the papers' simulations; each load
     waits until the flow has converged again since the previous load ended;
   - `timed`: without pages, the RT flow warms up and runs for the scenario's duration.
   A bandwidth trace (`trace.TracePlayer`) plays from each load's start in episodes (the
   same pattern for every scheduler's load; the first rate before), from the start in
   continuous runs, and from the end of the warm-up in timed runs.
4. Everything is written to scratch space in the guest's memory (9p writes are slow) and
   copied into the results folder at the end, with `events.json` (contract.GuestEvents):
   the timeline of the run (CLOCK_MONOTONIC ns, the clock of rtflow's logs) that
   the host's run_folder.py reads.

Converged: the RT flow has run `min` seconds and the mean of its target rate (rtflow's
rate log) over the last `hold` seconds is within ±`tolerance` of the mean over the `hold`
seconds before: its level has stopped moving. A controller that ramps up (GCC gains 8 %/s
when far from its estimate) fails this; one that saws around a level (GCC near its
estimate, the TCP mode's rate rule) passes. At `max` seconds the load starts anyway,
recorded as not converged.

Calm (the end of a tail): the frames captured over the last `calm` seconds all arrived whole
within the stall threshold.

No busy loops: the main thread sleeps between polls of the logs, the samplers between samples.

Beside the run, stand-alone measurements of the bottleneck: `fidelity` (does a shaper keep
its rate, window by window), `selfdelay` (a download's own queueing delay: the AQM) and
`bulk` (long-lived TCP flows waiting in epoll, for the per-CCA experiments and the tests).
"""
