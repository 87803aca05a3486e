# SPDX-License-Identifier: MIT
"""Scenario files: a complete one is read as written; each mistake is refused with a message
that names the file, the key and what would be right."""

from pathlib import Path

import pytest

from confucius.experiment import grid
from confucius.experiment import scenario as sc

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO.parent / "shared" / "traces"

GOOD = """
name = "good"
description = "every section"
seed = 3
repetitions = 2
engine = "uml"

[link]
rate = "20mbit"
rtt = "40ms"
buffer = "300kb"

[schedulers]
names = ["pfifo", "confucius", "confucius-500ms", "drr-1:5"]
[schedulers.variants]
confucius-500ms = { base = "confucius", options = "interval 500ms" }

[rt]
controllers = ["gcc", "tcp-bbr", ["gcc", "copa"], "fixed-8mbit", "pion-gcc"]
fps = 30
max_rate = "15mbit"
retransmit = "200ms"

[warmup]
min = "4s"
max = "30s"
hold = "2s"
tolerance = 0.2
min_share = 0.6
retries = 1

[web]
pages = ["amazon", "p0002"]
sample = 2
mode = "continuous"
interval = "20s"
pages_per_run = 3
[web.sweep]
flows = [5, 10]
sizes = ["15kb"]

[[bulk]]
cca = "cubic"
start = "5s"
duration = "10s"

[probes]
interval = "10ms"
"""


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_complete_scenario_is_read_as_written(tmp_path):
    s = sc.load(write(tmp_path, GOOD))
    assert (s.name, s.seed, s.repetitions, s.duration_s) == ("good", 3, 2, None)
    assert s.link.rate_bps == 20e6 and s.link.rtt_s == pytest.approx(0.04)
    assert s.link.buffer_packets == 300 * 1024 // 1514
    assert [c.name for c in s.schedulers] == ["pfifo", "confucius", "confucius-500ms", "drr-1:5"]
    assert s.scheduler("confucius-500ms") == sc.SchedulerChoice("confucius-500ms", "confucius", "interval 500ms")
    assert s.rt_sets[-1] == (sc.RtFlow("pion-gcc"),)
    assert ["+".join(f.label for f in flows) for flows in s.rt_sets] == \
        ["gcc", "tcp-bbr", "gcc+copa", "fixed-8mbit", "pion-gcc"]
    assert s.rt.fps == 30 and s.rt.max_rate_bps == 15e6 and s.rt.port == 5000 and s.rt.retransmit_s == 0.2
    assert s.warmup == sc.Warmup(min_s=4, max_s=30, hold_s=2, tolerance=0.2, min_share=0.6, retries=1)
    assert [r.key for r in s.web.pages] == ["amazon", "p0002", "p0000", "p0001",
                                            "flows-5-size-15360", "flows-10-size-15360"]
    assert (s.web.mode, s.web.interval_s, s.web.pages_per_run) == ("continuous", 20, 3)
    assert s.bulk == (sc.Bulk("cubic", 5, 10),)
    assert s.probes == sc.Probes(0.01)
    assert s.engine == "uml"
    assert len(s.digest) == 16


def test_defaults_fill_what_is_left_out(tmp_path):
    s = sc.load(write(tmp_path, 'name = "d"\nduration = "30s"\n[link]\nrate = "10mbit"\n'
                                '[schedulers]\nnames = ["fq_codel"]\n[rt]\ncontrollers = ["copa"]\n'))
    assert s.link.buffer_packets == 1000 and s.link.rtt_s == pytest.approx(0.04) and s.link.shaper == "own"
    assert s.link.shaping == "egress"
    assert s.rt.fps == 60 and s.rt.retransmit_s == 0 and s.web is None and s.bulk == () and s.probes is None
    assert s.rt.cpu == "realtime"
    assert s.engine == "qemu"
    assert (s.warmup.tolerance, s.warmup.min_share, s.warmup.retries) == (0.1, 0.5, 2)


def test_the_repository_scenarios_are_valid():
    for path in sorted((REPO / "scenarios").glob("*.toml")):
        if "shared/traces" in path.read_text() and not TRACES.is_dir():
            continue
        names = [s.name for s in grid.load_points(path)]   # a grid's points are named after it
        assert names == [path.stem] or all(n.startswith(f"{path.stem}-") for n in names), path


def test_ingress_shaping_and_cake_with_its_ingress_keyword(tmp_path):
    text = GOOD.replace('buffer = "300kb"', 'buffer = "300kb"\nshaping = "ingress"').replace(
        'confucius-500ms = {', 'cake-ingress = { base = "cake", options = "ingress" }\nconfucius-500ms = {').replace(
        '"drr-1:5"]', '"drr-1:5", "cake-ingress"]')
    s = sc.load(write(tmp_path, text))
    assert s.link.shaping == "ingress"
    assert s.scheduler("cake-ingress") == sc.SchedulerChoice("cake-ingress", "cake", "ingress")
    trace = tmp_path / "t.log"
    trace.write_text("0 12.5\n0.5 3\n")
    assert sc.load(write(tmp_path, text), trace=trace).link.shaping == "ingress"  # the IFB follows it


def test_a_trace_given_on_the_command_line_replaces_the_rate(tmp_path):
    trace = tmp_path / "t.log"
    trace.write_text("0 12.5\n0.5 3\n")
    s = sc.load(write(tmp_path, GOOD), trace=trace)
    assert s.link.rate_bps is None and s.link.trace == trace.resolve()
    assert s.digest != sc.load(write(tmp_path, GOOD)).digest


def write_traces(folder: Path, traces: dict[str, str]) -> None:
    for name, text in traces.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


TRACE_SET = {"set/a/t1.log": "0 10\n0.2 20\n", "set/a/t2.log": "5 1\n5.5 2\n6 3\n",
             "set/b/t1.log": "0 7\n", "set/b/notes.txt": "0 4\n"}


@pytest.mark.parametrize("value, names", [
    ('"set/a"', ["t1.log", "t2.log"]),
    ('"set/*/t1.log"', ["a/t1.log", "b/t1.log"]),
    ('["set/a", "set/b/*.log", "set/a/t1.log"]', ["a/t1.log", "a/t2.log", "b/t1.log"]),
])
def test_a_set_of_traces_is_read_from_directories_and_globs_and_named_within_it(tmp_path, value, names):
    write_traces(tmp_path, TRACE_SET)
    s = sc.load(write(tmp_path, GOOD.replace('rate = "20mbit"', f"traces = {value}\ntrace_scale = 2")))
    traces = s.link.traces
    assert (s.link.rate_bps, s.link.trace, s.link.trace_scale) == (None, None, 2.0)
    assert [traces.name(f) for f in traces.files] == names
    assert all(f.is_absolute() and f.is_file() for f in traces.files)


def test_a_set_of_traces_is_part_of_the_scenarios_identity(tmp_path):
    write_traces(tmp_path, TRACE_SET)
    path = write(tmp_path, GOOD.replace('rate = "20mbit"', 'traces = "set/a"'))
    before = sc.load(path).digest
    (tmp_path / "set/a/t2.log").write_text("5 1\n5.5 2\n6 4\n")
    assert sc.load(path).digest != before


def test_a_trace_given_on_the_command_line_replaces_a_set(tmp_path):
    write_traces(tmp_path, TRACE_SET)
    s = sc.load(write(tmp_path, GOOD.replace('rate = "20mbit"', 'traces = "set/a"')), trace=tmp_path / "set/b/t1.log")
    assert s.link.traces is None and s.link.trace == (tmp_path / "set/b/t1.log").resolve()


TRACE_MISTAKES = [
    (('rate = "20mbit"', 'rate = "20mbit"\ntraces = "set/a"'), ["link.rate", "not rate and traces"]),
    (('rate = "20mbit"', 'trace = "t.log"\ntraces = "set/a"'), ["link.trace", "not trace and traces"]),
    (('rate = "20mbit"', 'traces = "set/c"'), ["link.traces", "'set/c' names no file"]),
    (('rate = "20mbit"', 'traces = ["set/a", "set/*.log"]'), ["link.traces", "'set/*.log' names no file"]),
    (('rate = "20mbit"', 'traces = []'), ["link.traces", "a directory, a glob or a list"]),
    (('rate = "20mbit"', 'traces = ["set/a", 3]'), ["link.traces", "a directory, a glob or a list"]),
    (('rate = "20mbit"', 'traces = "set/bad"'), ["link.traces", "bad/x.log:2: expected 'time_s Mbps'"]),
    (('rate = "20mbit"', 'traces = "set/empty"'), ["link.traces", "no 'time_s Mbps' lines"]),
    (('rate = "20mbit"', 'traces = "set/a"\ntrace_offset = "3s"'), ["link.trace_offset", "draws its offset"]),
]


@pytest.mark.parametrize("change, words", TRACE_MISTAKES, ids=[m[0][1][:30] for m in TRACE_MISTAKES])
def test_mistakes_in_a_set_of_traces_are_refused(tmp_path, change, words):
    write_traces(tmp_path, {**TRACE_SET, "set/bad/x.log": "0 1\nfast 2\n", "set/empty/x.log": "# none\n"})
    assert_refused(tmp_path, GOOD, change, words)


def test_an_engine_given_on_the_command_line_replaces_the_scenarios(tmp_path):
    path = write(tmp_path, GOOD)
    s = sc.load(path, engine="qemu")
    assert s.engine == "qemu" and s.digest != sc.load(path).digest
    with pytest.raises(sc.ScenarioError, match="engine: must be one of qemu, uml, got 'kvm'"):
        sc.load(path, engine="kvm")


def test_the_kernel_generation_is_6_1_unless_the_scenario_or_the_command_line_says(tmp_path):
    path = write(tmp_path, GOOD)
    assert sc.load(path).kernel == "6.1"
    chosen = sc.load(write(tmp_path, GOOD.replace('engine = "uml"', 'engine = "uml"\nkernel = "6.12"')))
    assert chosen.kernel == "6.12"
    overridden = sc.load(path, kernel="6.12")
    assert overridden.kernel == "6.12" and overridden.digest != sc.load(path).digest
    with pytest.raises(sc.ScenarioError, match="kernel: must be one of 6.1, 6.12, got '5.15'"):
        sc.load(path, kernel="5.15")


MISTAKES = [
    # (change to GOOD: old -> new, words the message must contain)
    (('name = "good"', 'name = "bad name"'), ["name", "letters, digits"]),
    (('rtt = "40ms"', 'rtt_ms = 40'), ["link", "unknown key rtt_ms", "allowed", "rtt"]),
    (('rate = "20mbit"', 'rate = "20 furlongs"'), ["link.rate", "cannot read rate"]),
    (('rate = "20mbit"', 'rate = "20mbit"\ntrace = "t.log"'), ["link.rate", "one of rate", "not rate and trace"]),
    (('rate = "20mbit"', 'trace = "no/such.log"'), ["link.trace", "no such file"]),
    (('buffer = "300kb"', 'buffer = 0'), ["link.buffer", "at least 1 packet"]),
    (('buffer = "300kb"', 'shaper = "tbf"'), ["link.shaper", "own, htb"]),
    (('buffer = "300kb"', 'shaping = "wan"'), ["link.shaping", "egress, ingress", "'wan'"]),
    (('buffer = "300kb"', 'shaping = 1'), ["link.shaping", "must be a string"]),
    (('buffer = "300kb"', 'bottleneck = "middle"'), ["link.bottleneck", "router, before, after"]),
    (('buffer = "300kb"', 'router_rate = "100mbit"'), ["link.router_rate", 'only with bottleneck = "before"']),
    (('buffer = "300kb"', 'bottleneck = "after"\nrouter_rate = "20mbit"'), ["link.router_rate", "above",
                                                                         "the router is the bottleneck"]),
    (('rate = "20mbit"', 'trace = "t.log"\nbottleneck = "before"'), ["link.bottleneck", "constant rate"]),
    (('"pfifo", "confucius"', '"pfifo", "sfb"'), ["schedulers.names", "unknown scheduler 'sfb'", "fq_codel"]),
    (('options = "interval 500ms"', 'options = "interval 500ms; reboot"'), ["confucius-500ms", "plain tc words"]),
    (('base = "confucius"', 'base = "nosuch"'), ["base", "must be one of"]),
    (('"tcp-bbr"', '"tcp-nosuch"'), ["rt.controllers", "unknown TCP congestion control 'nosuch'", "bbr"]),
    (('"tcp-bbr"', '"quic"'), ["rt.controllers", "unknown controller 'quic'", "tcp-<cca>"]),
    (('"tcp-bbr"', '"gcc"'), ["rt.controllers", "listed twice"]),
    (('fps = 30', 'fps = 30.5'), ["rt.fps", "whole number"]),
    (('fps = 30', 'fps = 30\ncpu = "high"'), ["rt.cpu", "realtime, shared", "'high'"]),
    (('max_rate = "15mbit"', 'max_rate = "15mbit"\nstart_rate = "20mbit"'), ["start_rate", "min_rate <= start_rate"]),
    (('max_rate = "15mbit"', 'max_rate = "15mbit"\nmax_share = 0.3'), ["rt.max_share", "max_rate or max_share"]),
    (('max_rate = "15mbit"', 'max_share = 1.5'), ["rt.max_share", "between 0.01 and 1"]),
    (('max_rate = "15mbit"', 'max_share = 0.04'), ["start_rate", "min_rate <= start_rate"]),   # 0.8 Mbit/s
    (('min = "4s"', 'min = "40s"'), ["warmup.max", "at least min"]),
    (('tolerance = 0.2', 'tolerance = 2'), ["warmup.tolerance", "between"]),
    (('min_share = 0.6', 'min_share = 1.5'), ["warmup.min_share", "between"]),
    (('retries = 1', 'retries = 9'), ["warmup.retries", "5"]),
    (('"amazon", "p0002"', '"amazon", "ebay"'), ["web.pages", "unknown page 'ebay'"]),
    (('"amazon", "p0002"', '"amazon", "amazon"'), ["web.pages", "listed twice"]),
    (('flows = [5, 10]', 'flows = [5, 500]'), ["web.sweep.flows", "1 to 100"]),
    (('mode = "continuous"', 'mode = "burst"'), ["web.mode", "episodes, continuous"]),
    (('cca = "cubic"', 'cca = "tahoe"'), ["bulk[0].cca", "tahoe"]),
    (('interval = "10ms"', 'interval = "10us"'), ["probes.interval", "1ms"]),
    (('seed = 3', 'seed = 3\nduration = "60s"'), ["duration", "remove duration"]),
    (('repetitions = 2', 'repetitions = "two"'), ["repetitions", "whole number"]),
    (('engine = "uml"', 'engine = "docker"'), ["engine", "qemu, uml", "'docker'"]),
    (('engine = "uml"', 'engine = "uml"\nkernel = 6.12'), ["kernel", "must be a string", "6.12"]),
    (('[link]', '[[link]]'), ["link", "must be a table"]),
    (('[probes]', 'probes ='), ["not valid TOML"]),
]


@pytest.mark.parametrize("change, words", MISTAKES, ids=[m[0][1][:30] for m in MISTAKES])
def test_mistakes_are_refused_with_file_key_and_fix(tmp_path, change, words):
    assert_refused(tmp_path, GOOD, change, words)


def test_a_bottleneck_elsewhere_has_the_router_at_100_mbit_s_and_keys_of_its_own(tmp_path):
    from confucius.experiment import keys

    router, before = (sc.parse(GOOD.replace('buffer = "300kb"', f'buffer = "300kb"{extra}'), Path("s.toml"))
                      for extra in ("", '\nbottleneck = "before"'))
    assert (router.link.bottleneck, router.link.router_rate_bps) == ("router", None)
    assert (before.link.bottleneck, before.link.router_rate_bps) == ("before", 100e6)
    cell = keys.Cell(router.schedulers[0], router.rt_sets[0], 0)
    assert "bottleneck" not in keys.conditions(router, cell).key_input()["link"]   # the keys before it stay
    assert keys.cell_key(before, cell) != keys.cell_key(router, cell)


def test_the_rt_flows_cap_as_a_share_of_the_link_is_that_rate(tmp_path):
    """Seed 002 Fig. 4's utilisation: max_share is the rate it names, keys and all."""
    shared = sc.parse(GOOD.replace('max_rate = "15mbit"', "max_share = 0.75"), Path("s.toml"))
    given = sc.parse(GOOD, Path("s.toml"))
    assert shared.rt == given.rt and shared.rt.max_rate_bps == 15e6
    on_a_trace = GOOD.replace('max_rate = "15mbit"', "max_share = 0.75").replace('rate = "20mbit"', 'trace = "t.log"')
    assert_refused(tmp_path, on_a_trace, ("max_share", "max_share"), ["rt.max_share", "constant link's rate"])


def assert_refused(tmp_path, text, change, words):
    """`text` with one change is refused with a message naming the file and `words`."""
    old, new = change
    assert old in text
    path = write(tmp_path, text.replace(old, new, 1))
    (tmp_path / "t.log").write_text("0 10\n")
    with pytest.raises(sc.ScenarioError) as err:
        sc.load(path)
    message = str(err.value)
    assert str(path) in message
    for word in words:
        assert word in message, message


def test_missing_sections_and_a_missing_file(tmp_path):
    with pytest.raises(sc.ScenarioError, match=r"\[link\] is missing"):
        sc.load(write(tmp_path, 'name = "x"\nduration = "1s"\n'))
    with pytest.raises(sc.ScenarioError, match="needs duration"):
        sc.load(write(tmp_path, GOOD.split("[web]")[0]))
    with pytest.raises(sc.ScenarioError, match="cannot read scenario"):
        sc.load(tmp_path / "absent.toml")


def test_pages_of_a_corpus_directory_must_be_in_it(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "manifest.json").write_text('{"sampled": ["p0000"], "named": ["amazon"]}')
    text = GOOD.replace('pages = ["amazon", "p0002"]', 'pages = ["amazon", "p0002"]\ncorpus = "corpus"')
    with pytest.raises(sc.ScenarioError, match="not in the corpus .*p0002"):
        sc.load(write(tmp_path, text))


FLENT = """
name = "f"
engine = "uml"

[link]
rate = "20mbit"
rtt = "40ms"

[schedulers]
names = ["pfifo", "cake"]

[flent]
tests = ["rrul", "tcp_nup"]
length = "10s"
step = "100ms"
upload_streams = 2
"""


def test_a_flent_scenario_has_one_cell_per_scheduler_and_shapes_the_upload(tmp_path):
    s = sc.load(write(tmp_path, FLENT))
    assert s.flent == sc.Flent(tests=["rrul", "tcp_nup"], length_s=10, step_s=0.1, upload_streams=2)
    assert s.rt_sets == ((),) and s.web is None and s.duration_s is None
    assert s.link.upload_rate_bps == 20e6  # the rate, unless upload_rate says otherwise
    s = sc.load(write(tmp_path, FLENT.replace('rtt = "40ms"', 'rtt = "40ms"\nupload_rate = "5mbit"')))
    assert s.link.upload_rate_bps == 5e6
    s = sc.load(write(tmp_path, FLENT.replace('length = "10s"\nstep = "100ms"\nupload_streams = 2\n', '')))
    assert (s.flent.length_s, s.flent.step_s, s.flent.upload_streams) == (30, 0.2, 4)


FLENT_MISTAKES = [
    (('"rrul", "tcp_nup"', '"rrul", "tcp_download"'), ["flent.tests", "unknown Flent test 'tcp_download'",
                                                      "rrul, rrul_be, tcp_nup, tcp_ndown, voip, voip-rrul"]),
    (('"rrul", "tcp_nup"', ''), ["flent.tests", "list Flent's tests"]),
    (('"rrul", "tcp_nup"', '"rrul", "rrul"'), ["flent.tests", "listed twice"]),
    (('length = "10s"', 'length = "2s"'), ["flent.length", "5s to 600s", "'2s'"]),
    (('length = "10s"', 'length = "10.5s"'), ["flent.length", "whole seconds"]),
    (('step = "100ms"', 'step = "5s"'), ["flent.step", "10ms to 1s"]),
    (('upload_streams = 2', 'upload_streams = 0'), ["flent.upload_streams", "between 1 and 64"]),
    (('upload_streams = 2', 'streams = 2'), ["flent", "unknown key streams"]),
    (('engine = "uml"', 'engine = "uml"\nduration = "60s"'), ["duration", "Flent's own flows"]),
    (('[link]', '[rt]\ncontrollers = ["gcc"]\n[link]'), ["rt", "Flent's own flows"]),
    (('[link]', '[probes]\ninterval = "20ms"\n[link]'), ["probes", "Flent's own flows"]),
    (('rate = "20mbit"', 'trace = "t.log"'), ["link.trace", "constant rate"]),
    (('rate = "20mbit"', 'traces = "t.log"'), ["link.traces", "constant rate"]),
    (('rtt = "40ms"', 'rtt = "40ms"\nupload_rate = "fast"'), ["link.upload_rate", "cannot read rate"]),
    (('"pfifo", "cake"', '"pfifo", "prio"'), ["prio", "need an RT flow"]),
]


@pytest.mark.parametrize("change, words", FLENT_MISTAKES, ids=[m[0][1][:30] or "no tests" for m in FLENT_MISTAKES])
def test_flent_mistakes_are_refused_naming_the_key(tmp_path, change, words):
    assert_refused(tmp_path, FLENT, change, words)


RTT_FAIR = FLENT.replace('tests = ["rrul", "tcp_nup"]',
                         'tests = ["rrul", "rtt_fair_var"]\nserver_rtts = ["20ms", "40ms", "80ms", "160ms"]')


def test_rtt_fair_s_servers_are_read_as_round_trips_in_seconds(tmp_path):
    s = sc.load(write(tmp_path, RTT_FAIR))
    assert s.flent.server_rtts_s == [0.02, 0.04, 0.08, 0.16]
    assert sc.load(write(tmp_path, FLENT)).flent.server_rtts_s == []   # none unless given


RTT_FAIR_MISTAKES = [
    (('"rrul", "rtt_fair_var"', '"rrul"'), ["flent.server_rtts", "only rtt_fair and rtt_fair_var", "remove"]),
    (('server_rtts = ["20ms", "40ms", "80ms", "160ms"]', ''), ["flent.server_rtts", "rtt_fair_var needs servers"]),
    (('"rtt_fair_var"]\nserver_rtts = ["20ms", "40ms", "80ms", "160ms"]', '"rtt_fair"]\nserver_rtts = ["20ms"]'),
     ["flent.server_rtts", "rtt_fair takes 4 servers, got 1"]),
    (('"20ms", "40ms", "80ms", "160ms"', '"20ms"'), ["flent.server_rtts", "rtt_fair_var takes 2 to 15 servers, got 1"]),
    (('"20ms", "40ms", "80ms", "160ms"', '"19ms", "40ms"'), ["flent.server_rtts", "at least half the link's rtt",
                                                            "20 ms", "got 19 ms"]),
    (('"20ms", "40ms", "80ms", "160ms"', '"20ms", "soon"'), ["flent.server_rtts", "soon"]),
    (('"20ms", "40ms", "80ms", "160ms"', '20, 40'), ["flent.server_rtts", "list of round trips"]),
]


@pytest.mark.parametrize("change, words", RTT_FAIR_MISTAKES, ids=[m[1][1][:30] for m in RTT_FAIR_MISTAKES])
def test_rtt_fair_mistakes_are_refused_naming_the_key(tmp_path, change, words):
    assert_refused(tmp_path, RTT_FAIR, change, words)


@pytest.mark.parametrize("link_line", ['shaping = "ingress"', 'upload_rate = "5mbit"'])
def test_pias_is_refused_where_the_router_does_not_mark_the_packets_it_shapes(tmp_path, link_line):
    text = GOOD.replace('"pfifo", "confucius"', '"pias", "confucius"').replace(
        'buffer = "300kb"', f'buffer = "300kb"\n{link_line}')
    with pytest.raises(sc.ScenarioError, match='pias mark the packets the router forwards to the client: only with '
                                               'link.shaping = "egress" and no upload_rate'):
        sc.load(write(tmp_path, text))
    assert [c.name for c in sc.load(write(tmp_path, GOOD.replace('"pfifo", "confucius"', '"pias", "confucius"'))).schedulers][0] == "pias"
