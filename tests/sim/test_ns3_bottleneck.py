# SPDX-License-Identifier: MIT
"""The ns-3 simulator (sim/ns3): Confucius as an ns-3 queue disc over the unchanged core,
at the bottleneck of paper 000 Fig. 2, next to the ns-3 schedulers the lab compares.

Figures are in simulated time (ns-3's clock), so host load cannot move them."""

import json
import subprocess
from pathlib import Path

import pytest

from confucius.coredemo import share_trace
from confucius.sim.bottleneck import named_page, write_sim_page

REPO = Path(__file__).resolve().parents[2]
BOTTLENECK = REPO / "build" / "sim" / "bottleneck"
SCHEDULERS = ["pfifo", "fq_codel", "fq", "codel", "red", "pie", "fq_pie", "prio", "drr-1:1", "drr-1:5",
              "pias", "hhf", "confucius", "confucius-fixed", "confucius-class", "confucius-external"]
# The motivating example's windows after the page load starts (ms) and the RT flow's share:
# new flows' weight S doubles every 250 ms (1, 2, 4, 8) until all 10 flows are equal.
TICKS = [((0, 250), 1 / 2), ((250, 500), 1 / 3), ((500, 750), 1 / 5), ((750, 1000), 1 / 9),
         ((1000, 2000), 1 / 10)]


def simulate(*args: str) -> dict:
    if not BOTTLENECK.is_file():
        pytest.fail(f"{BOTTLENECK} is not built: run `make sim`")
    out = subprocess.run([str(BOTTLENECK), *args], check=True, capture_output=True, text=True,
                         timeout=120).stdout
    return json.loads(out)


def mean(rows, key, start_ms, end_ms):
    window = [r[key] for r in rows if start_ms < r["time_ms"] <= end_ms]
    assert window, f"no samples in ({start_ms}, {end_ms}]"
    return sum(window) / len(window)


@pytest.fixture(scope="module")
def fixed():
    return simulate("--scheduler=confucius-fixed")


@pytest.mark.parametrize("window, share", TICKS)
def test_confucius_in_ns3_halves_the_rt_share_tick_by_tick(fixed, window, share):
    assert mean(fixed["samples"], "rt", *window) == pytest.approx(share, abs=0.015)


def test_ns3_shares_match_the_cores_own_share_trace(fixed):
    # The core driven by its own harness (sim/share_trace.c, `confucius core demo`).
    core = share_trace()
    for (start, end), _ in TICKS[:4]:
        assert mean(fixed["samples"], "rt", start, end) == pytest.approx(
            mean(core, "confucius_rt", start, end), abs=0.015)


def test_the_rt_flow_has_the_whole_link_before_the_page_load(fixed):
    assert mean(fixed["samples"], "rt", -500, 0) == 1.0
    rate_bps = mean(fixed["samples"], "rt_bytes", -400, 0) * 8 / 0.050
    assert rate_bps == pytest.approx(20e6, rel=0.03)


@pytest.mark.parametrize("scheduler, share", [("fq", 1 / 10), ("fq_codel", 1 / 10),
                                               ("confucius-external", 1 / 10), ("prio", 1.0),
                                               ("drr-1:1", 1 / 2), ("drr-1:5", 1 / 6), ("pias", 0.0),
                                               ("hhf", 1 / 3)])
def test_other_schedulers_give_their_own_shares(scheduler, share):
    # Fair queueing cuts to the fair share at once; the labelled RT flow's own class has
    # 1 flow of 10 (external); strict priority gives it everything it asks for; the
    # weighted classes their weight's share; PIAS the link to the 9 new flows (22.5 Mbit/s
    # offered), their first 100 kB above the RT flow's, which sent 1.9 MB before them; HHF
    # a third to the RT flow, a heavy hitter at 30 Mbit/s (150 kB in 40 ms), against the
    # others' double quantum.
    run = simulate(f"--scheduler={scheduler}", "--duration=1.5s")
    assert mean(run["samples"], "rt", 0, 900) == pytest.approx(share, abs=0.015)


def assert_conserved(run):
    """Every packet the sources sent reached the disc, and left it sent or dropped, once."""
    disc, sent = run["disc"], run["sent"]["rt"] + run["sent"]["web"]
    assert disc["received"] == sent > 0
    assert disc["in_queue"] == 0 and disc["requeued"] == 0
    assert disc["received"] == disc["dropped_before_enqueue"] + disc["enqueued"]
    assert disc["enqueued"] == disc["dequeued"]
    assert disc["dequeued"] == disc["sent"] + disc["dropped_after_dequeue"]
    assert run["received"]["rt"] + run["received"]["web"] == disc["sent"]
    if run["core"] is not None:
        core = run["core"]
        assert core["qlen"] == 0
        assert core["enqueued"] == disc["received"]
        assert core["dequeued"] == disc["sent"]
        assert core["dropped"] == disc["dropped_after_dequeue"]


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_packets_are_conserved_through_every_scheduler(scheduler):
    run = simulate(f"--scheduler={scheduler}", "--duration=1.5s", "--drain=2s")
    assert_conserved(run)
    assert run["disc"]["dropped_before_enqueue"] + run["disc"]["dropped_after_dequeue"] > 0


@pytest.mark.parametrize("shaper", ["own", "tbf"])
def test_confucius_conserves_packets_whoever_shapes(shaper):
    run = simulate("--scheduler=confucius", f"--shaper={shaper}", "--duration=1.5s", "--drain=2s",
                   "--ns3::ConfuciusQueueDisc::Limit=100")
    assert_conserved(run)
    if shaper == "own":
        assert run["core"]["overlimits"] > 0    # the core's shaper held packets back


@pytest.mark.parametrize("shaper", ["own", "tbf"])
def test_a_simulation_may_end_with_packets_in_confucius_whoever_shapes(shaper):
    # Under TBF a packet left queued at the end went to the parent's drop callback while
    # ns-3 tore the tree down, and the program aborted (bad_function_call).
    run = simulate("--scheduler=confucius", f"--shaper={shaper}", "--rt=udp", "--rt-rate=30Mbps", "--web-flows=0",
                   "--duration=1s", "--drain=0s")
    # TBF peeks: the packet it holds for the next send has left the core but not the disc.
    assert run["core"]["qlen"] > 0 and run["core"]["qlen"] <= run["disc"]["in_queue"] <= run["core"]["qlen"] + 1


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_bottleneck_elsewhere_queues_in_its_fifo_not_in_the_scheduler(where):
    runs = {scheduler: simulate(f"--scheduler={scheduler}", f"--bottleneck={where}", "--duration=1.5s", "--drain=2s")
            for scheduler in ("confucius", "fq_codel")}
    for run in runs.values():    # the router's link at 100 Mbit/s: nothing waits or is dropped there
        assert run["disc"]["dropped_before_enqueue"] + run["disc"]["dropped_after_dequeue"] == 0
        assert 0.95 * 20e6 <= sum(mean(run["samples"], g, 200, 1400) for g in ("rt_bytes", "web_bytes")) * 8 / 0.05
    assert mean(runs["confucius"]["samples"], "rt", 200, 1400) == pytest.approx(
        mean(runs["fq_codel"]["samples"], "rt", 200, 1400), abs=0.02)


def test_the_bottleneck_s_place_is_checked():
    for bad, why in ((["--bottleneck=middle"], "bottleneck must be router, before or after"),
                     (["--bottleneck=after", "--trace=/dev/null"], "a trace sets the router's link"),
                     (["--bottleneck=before", "--router-rate=10Mbps"], "router-rate must be above rate")):
        done = subprocess.run([str(BOTTLENECK), *bad], capture_output=True, text=True)
        assert done.returncode != 0 and why in done.stderr


@pytest.mark.parametrize("scheduler", ["confucius", "pfifo"])
def test_the_link_follows_a_bandwidth_trace(scheduler, tmp_path):
    # 20 Mbit/s, then 5 Mbit/s from 1 s, then 0 for half a second, then 20 again.
    trace = tmp_path / "steps.log"
    trace.write_text("10 20\n11 5\n12 0\n12.5 20\n")
    run = simulate(f"--scheduler={scheduler}", f"--trace={trace}", "--web-flows=0",
                   "--duration=3s", "--drain=2s")
    rows, anchor = run["samples"], 520     # time_ms counts from web-start + rtt/2
    def rate(start_s, end_s):
        return mean(rows, "rt_bytes", start_s * 1000 - anchor, end_s * 1000 - anchor) * 8 / 0.050
    assert rate(0.2, 1.0) == pytest.approx(20e6, rel=0.03)
    assert rate(1.2, 2.0) == pytest.approx(5e6, rel=0.03)
    assert rate(2.1, 2.45) == 0
    assert rate(2.6, 3.0) == pytest.approx(20e6, rel=0.03)
    assert_conserved(run)


def failure(*args: str) -> str:
    result = subprocess.run([str(BOTTLENECK), *args], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and result.stdout == ""
    return result.stderr


def test_lab_schedulers_without_an_ns3_counterpart_are_refused():
    for name in ("cake", "cake-flows"):
        assert f"scheduler {name} cannot be simulated" in failure(f"--scheduler={name}")
    assert "unknown scheduler 'nope'" in failure("--scheduler=nope")


def test_bad_trace_and_bad_options_are_refused(tmp_path):
    trace = tmp_path / "bad.log"
    trace.write_text("0 20\nhalf 10\n")
    assert f"{trace}:2: expected 'time_s Mbps'" in failure(f"--trace={trace}")
    assert "cannot read trace" in failure(f"--trace={tmp_path / 'missing.log'}")
    # The core's own check of its configuration, through the attribute.
    assert "flows must be between 1 and 32768" in failure("--ns3::ConfuciusQueueDisc::Flows=0")
    assert "Weights" in failure("--scheduler=confucius-external",
                                "--ns3::ConfuciusQueueDisc::Weights=4:x")


def test_bad_sessions_are_refused(tmp_path):
    session = tmp_path / "session.txt"
    assert "cannot read the session" in failure(f"--session={session}")
    for text, why in (("", "a session needs at least one page"),
                      ("10 a.txt\n5 b.txt\n", "the pages must start one after another, got '5 b.txt'"),
                      ("10\n", "a line must be 'START_S PAGE_FILE', got '10'"),
                      ("10 a.txt extra\n", "a line must be 'START_S PAGE_FILE', got '10 a.txt extra'")):
        session.write_text(text)
        assert why in failure(f"--session={session}")
    session.write_text("10 a.txt\n")
    assert "one page (--page) or one session (--session), not both" in failure(f"--session={session}",
                                                                              "--page=a.txt")


@pytest.mark.parametrize("args, shares", [
    # A tick every 500 ms: each share lasts two 250 ms windows.
    (["--scheduler=confucius-fixed", "--ns3::ConfuciusQueueDisc::Interval=500ms"],
     [1 / 2, 1 / 2, 1 / 3, 1 / 3]),
    # Pace adaptive never holds with maxhold 0: the fixed schedule although the RT queue stands.
    (["--scheduler=confucius", "--ns3::ConfuciusQueueDisc::MaxHold=0s"], [1 / 2, 1 / 3, 1 / 5, 1 / 9]),
    # Mode external with weights 1:1: the labelled RT class gets half whatever the flows.
    (["--scheduler=confucius-external", "--ns3::ConfuciusQueueDisc::Weights=1:1"], [1 / 2] * 4),
    # A quantum of 64 bytes changes the rounds, not the shares.
    (["--scheduler=confucius-fixed", "--ns3::ConfuciusQueueDisc::Quantum=64"], [1 / 2, 1 / 3, 1 / 5, 1 / 9]),
])
def test_queue_disc_attributes_reach_the_core(args, shares):
    run = simulate(*args, "--duration=1.5s")
    windows = [(0, 250), (250, 500), (500, 750), (750, 1000)]
    assert [mean(run["samples"], "rt", *w) for w in windows] == pytest.approx(shares, abs=0.015)


@pytest.mark.parametrize("scheduler, mode, pace, maxdelay", [
    ("confucius", "flow", "adaptive", 500e6), ("confucius-fixed", "flow", "fixed", 0),
    ("confucius-class", "class", "adaptive", 500e6),
    ("confucius-external", "external", "adaptive", 500e6)])
def test_each_confucius_scheduler_runs_the_core_in_its_mode(scheduler, mode, pace, maxdelay):
    core = simulate(f"--scheduler={scheduler}", "--duration=0.5s", "--buffer=500")["core"]
    assert (core["mode"], core["pace"], core["limit"], core["bandwidth_bps"],
            core["maxdelay_ns"]) == (mode, pace, 500, 20e6, maxdelay)


def test_the_aqm_attributes_reach_the_core():
    defaults = simulate("--scheduler=confucius", "--duration=0.5s")["core"]
    given = simulate("--scheduler=confucius", "--duration=0.5s",
                     "--ns3::ConfuciusQueueDisc::AqmTarget=2ms",
                     "--ns3::ConfuciusQueueDisc::AqmInterval=50ms",
                     "--ns3::ConfuciusQueueDisc::AqmSettle=0s",
                     "--ns3::ConfuciusQueueDisc::UseEcn=false")["core"]
    aqm = ("aqm_target_ns", "aqm_interval_ns", "aqm_settle_ns", "ecn")
    assert [defaults[k] for k in aqm] == [10e6, 100e6, 2e9, True]  # core/confucius.h says why
    assert [given[k] for k in aqm] == [2e6, 50e6, 0, False]


def test_the_isolate_attribute_reaches_the_core():
    assert simulate("--scheduler=confucius", "--duration=0.5s")["core"]["isolate"] == "triple-isolate"
    given = simulate("--scheduler=confucius", "--duration=0.5s",
                     "--ns3::ConfuciusQueueDisc::Isolate=dual-dsthost")["core"]
    assert given["isolate"] == "dual-dsthost"
    assert "name hosts is not a valid enum value" in failure("--ns3::ConfuciusQueueDisc::Isolate=hosts")


def test_aqm_settings_the_core_refuses_are_refused():
    assert "aqm_target must be 0 (no AQM) or between 100us and 60s" in failure(
        "--ns3::ConfuciusQueueDisc::AqmTarget=50us")
    assert "aqm_interval must be between 1ms and 60s" in failure(
        "--ns3::ConfuciusQueueDisc::AqmInterval=0s")
    assert "aqm_settle must be at most 60s" in failure("--ns3::ConfuciusQueueDisc::AqmSettle=61s")


def bulk_tcp(tcp_ecn: str, *args: str) -> dict:
    """One Cubic download through confucius's 1000-packet buffer at 20 Mbit/s, 40 ms: its
    standing queue is the old flow's own, which the AQM signals. At fq_codel's 5 ms and
    with no rest once the download is old, so that 3 s hold several signals (the defaults'
    2 s of rest leave few)."""
    return simulate("--scheduler=confucius", "--rt-rate=0", "--web=tcp", "--web-flows=1",
                    "--duration=3s", "--drain=1s", f"--ns3::TcpSocketBase::UseEcn={tcp_ecn}",
                    "--ns3::ConfuciusQueueDisc::AqmTarget=5ms", "--ns3::ConfuciusQueueDisc::AqmInterval=100ms",
                    "--ns3::ConfuciusQueueDisc::AqmSettle=0s", *args)


@pytest.mark.parametrize("tcp_ecn, disc, signal", [
    ("On", [], "ecn_marks"),                    # ECN negotiated: marked, never dropped
    ("On", ["UseEcn=false"], "aqm_drops"),      # the disc does not mark: dropped instead
    ("Off", [], "aqm_drops"),                   # not ECN-capable: dropped
    ("On", ["AqmTarget=0s"], None),             # no AQM: neither
])
def test_the_aqm_marks_an_ecn_capable_bulk_flow_or_drops_it(tcp_ecn, disc, signal):
    run = bulk_tcp(tcp_ecn, *[f"--ns3::ConfuciusQueueDisc::{a}" for a in disc])
    core, ns3 = run["core"], run["disc"]
    signals = {"ecn_marks": core["ecn_marks"], "aqm_drops": core["aqm_drops"]}
    print(f"TCP ECN {tcp_ecn}, {disc}: {signals}")
    assert {k for k, n in signals.items() if n > 0} == ({signal} if signal else set())
    # ns-3's own counts agree: marks landed in the IP header, drops left the disc.
    assert ns3["marked"] == core["ecn_marks"]
    assert ns3["dropped_after_dequeue"] == core["dropped"] == core["aqm_drops"] + core["delay_drops"]


def test_the_sampled_qdisc_log_counts_the_aqm_signals(tmp_path):
    log = tmp_path / "qdisc.jsonl"
    core = bulk_tcp("On", f"--qdisc-log={log}")["core"]  # sampled after the flow stopped
    last = json.loads(log.read_text().splitlines()[-1])["qdiscs"][0]
    assert (last["ecn_marks"], last["aqm_drops"]) == (core["ecn_marks"], core["aqm_drops"])
    assert last["ecn_marks"] > 0


def test_linux_tcp_defaults_recover_from_losses_as_linux_does(tmp_path):
    """Through an 8-packet FIFO a page loses packets all along: with Linux's least RTO
    (200 ms) and 40 ms delayed ACKs it loads in 7.6 s, with ns-3's own (1 s, 200 ms) in 12.8
    s (measured 2026-12-07); the bound keeps the meaning with a wide margin."""
    page = write_sim_page(named_page("amazon"), tmp_path / "amazon.txt")
    plts = {tcp: simulate("--scheduler=pfifo", "--rt-rate=0", f"--page={page}", "--web-start=1s",
                          "--duration=60s", "--buffer=8", f"--tcp={tcp}")["page"]["plt_s"]
            for tcp in ("linux", "ns3")}
    print(plts)
    assert plts["linux"] < 0.8 * plts["ns3"]
    assert "tcp must be linux or ns3" in failure("--tcp=bsd")


def test_pias_levels_in_ns3_are_the_labs():
    """PiasQueueDisc's default thresholds, which the simulator runs, are the lab's PIAS_THRESHOLDS."""
    from confucius.experiment.schedulers import PIAS_THRESHOLDS

    out = subprocess.run([str(BOTTLENECK), "--PrintAttributes=ns3::PiasQueueDisc"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    [line] = [l for l in out.splitlines() if "PiasQueueDisc::Thresholds=" in l]
    assert line.split("[", 1)[1].rstrip("]") == " ".join(str(t) for t in PIAS_THRESHOLDS)
