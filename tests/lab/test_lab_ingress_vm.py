# SPDX-License-Identifier: MIT
"""Shaping at the router's ingress, through the whole pipeline under User-Mode Linux: the
bottleneck's record redirects the WAN side's ingress to the IFB, the IFB's qdisc carries the
download (its counters grow by about what the link delivers), and the router's egress towards
the client has no shaper left."""

import json
import sys
from pathlib import Path

import pytest

from confucius.experiment import engines, scenario as sc, schedulers as sched
from confucius.lab import runner, uml
from confucius.experiment.db import Database

pytestmark = pytest.mark.vm

INSTALL_SCRIPT = f"""#!{sys.executable}
import json, os, subprocess, sys
from confucius.lab import topology as t

found = {{}}
for name, commands in json.loads(sys.argv[1]).items():
    try:
        t.Topology(qdisc=None, rate=None, shaping="ingress").up()
        t.install_bottleneck(commands)
        show = subprocess.run(["tc", "-n", t.ROUTER, "-j", "qdisc", "show"], capture_output=True, text=True)
        found[name] = {{"qdiscs": [[q["dev"], q["kind"]] for q in json.loads(show.stdout)]}}
        t.set_rate("7mbit", "ingress")
        found[name]["after_rate"] = "".join(
            subprocess.run(["tc", "-n", t.ROUTER, what, "show", "dev", t.IFB_DEVICE],
                           capture_output=True, text=True).stdout for what in ("qdisc", "class"))
    except Exception as err:
        found[name] = {{"error": str(err)}}
json.dump(found, open(os.path.join(os.environ["RESULTS"], "install.json"), "w"))
"""


# Every scheduler but those that mark packets as the router forwards them (pias), which an
# IFB on the ingress sees before: refused there (test_lab_schedulers.py).
ON_THE_IFB = [name for name, s in sched.SCHEDULERS.items() if not s.levels]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    if not uml.KERNEL_BINARY.is_file():
        pytest.skip("no UML kernel: run `make uml`")
    commands = {name: sched.tc_setup(name, rate_bps=20e6, buffer_packets=500, rt_ports=[5000],
                                     shaping="ingress").commands(0.0)
                for name in ON_THE_IFB}
    results = tmp_path_factory.mktemp("install")
    engines.engine("uml").boot(INSTALL_SCRIPT, results_dir=results, timeout=400,
                                args=[json.dumps(commands)]).check()
    return json.loads((results / "install.json").read_text())


@pytest.mark.parametrize("name", ON_THE_IFB)
def test_every_scheduler_installs_on_the_ifb_and_its_rate_changes(installed, name):
    entry = installed[name]
    assert "error" not in entry, entry.get("error")
    devices = {}
    for dev, kind in entry["qdiscs"]:
        devices.setdefault(dev, []).append(kind)
    assert sched.SCHEDULERS[name].kind in devices["rtr-ifb"]
    # A bandwidth trace changes the rate there: the shaper's own option, or HTB's class.
    option = "bandwidth 7Mbit" if sched.SCHEDULERS[name].shapes_itself else "rate 7Mbit"
    assert option in entry["after_rate"]
    assert devices["rtr-cli"] == ["noqueue"] and "ingress" in devices["rtr-srv"]


INGRESS = """
name = "ingress-check"
description = "a GCC flow and a small page, cake shaping at the router's ingress"
engine = "uml"
[link]
rate = "20mbit"
rtt = "40ms"
shaping = "ingress"
[schedulers]
names = ["cake-ingress"]
[schedulers.variants]
cake-ingress = { base = "cake", options = "ingress" }
[rt]
controllers = ["gcc"]
start_rate = "5mbit"
[warmup]
min = "4s"
max = "10s"
[web]
pages = ["flows-5-size-102400"]
settle = "3s"
"""


@pytest.fixture(scope="module")
def ingress_run(tmp_path_factory):
    if not uml.KERNEL_BINARY.is_file():
        pytest.skip("no UML kernel: run `make uml`")
    base = tmp_path_factory.mktemp("ingress")
    path = base / "ingress.toml"
    path.write_text(INGRESS)
    scenario = sc.load(path)
    report = runner.run_matrix(scenario, db_path=base / "lab.sqlite", results_root=base / "runs",
                               resume=False, attempts=1, max_failures=1, progress=False)
    assert report.failed == 0
    with Database(base / "lab.sqlite") as db:
        [(run_id, commands, results_dir)] = db.query("SELECT id, tc_commands, results_dir FROM runs")
        stats = db.query("SELECT time_ns, kind, bytes, packets FROM qdisc_stats WHERE run_id = ? "
                         "AND parent = 'root' ORDER BY time_ns", (run_id,))
    events = json.loads((Path(results_dir) / "events.json").read_text())
    return json.loads(commands), stats, events


def test_the_record_redirects_the_wan_ingress_to_the_ifb(ingress_run):
    commands, _, events = ingress_run
    assert events["tc_commands"] == commands
    assert commands[:2] == ["qdisc add dev rtr-srv handle ffff: ingress",
                            "filter add dev rtr-srv parent ffff: protocol all prio 1 matchall "
                            "action mirred egress redirect dev rtr-ifb"]
    assert commands[2].startswith("qdisc add dev rtr-ifb root handle 1: cake bandwidth 20000000bit")
    assert commands[2].endswith(" ingress")


def test_the_ifb_s_qdisc_carries_the_download(ingress_run):
    _, stats, _ = ingress_run
    assert {kind for _, kind, _, _ in stats} == {"cake"}
    (t0, _, bytes0, _), (t1, _, bytes1, packets1) = stats[0], stats[-1]
    seconds = (t1 - t0) / 1e9
    mbps = (bytes1 - bytes0) * 8 / seconds / 1e6
    print(f"IFB's cake: {packets1} packets, {mbps:.1f} Mbit/s on average over {seconds:.0f} s")
    assert packets1 > 1000 and bytes1 > bytes0
    # A GCC flow and a page through a 20 Mbit/s shaper: most of the rate, never more.
    assert 5 < mbps <= 20.5


def test_the_client_side_egress_has_no_shaper(ingress_run):
    _, _, events = ingress_run
    by_device = {}
    for line in events["tc_show"].splitlines():
        words = line.split()
        by_device.setdefault(words[words.index("dev") + 1], []).append(words[1])
    assert by_device["rtr-cli"] == ["noqueue"]
    assert by_device["rtr-ifb"] == ["cake"]
    assert "ingress" in by_device["rtr-srv"]
