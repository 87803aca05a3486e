# SPDX-License-Identifier: MIT
"""Seed 003's per-CCA queueing in ns-3 (sim/ns3/percca.cc, `confucius percca run --engine
ns3`): the program's options, and a small scenario from the planner through the simulator
into a fresh database, read back by `confucius report percca`'s own code.

Figures are in simulated time, so host load cannot move them (a seed repeats a run)."""

import json
import subprocess
from pathlib import Path

import pytest

from confucius.experiment.db import Database
from confucius.experiment.scenario import ScenarioError
from confucius.percca import mix_scenario, runner
from confucius.report import percca as report

REPO = Path(__file__).resolve().parents[2]
PERCCA = REPO / "build" / "sim" / "percca"
# Reno against BBR at 20 Mbit/s, 40 ms, 50 packets; 1 s warm-up + 3 s measured.
TINY = """
name = "percca-tiny-ns3"
engine = "ns3"
seeds = [1]
duration = "3s"
warmup = "1s"
[link]
rate = "20mbit"
rtt = "40ms"
buffer = 50
[flows]
reno = 3
bbr = 3
[queues]
policies = ["shared", "per-cca"]
[classifier]
kind = "ideal"
"""
# Measured (seed 1): Reno had 0.096 of its fair share in the shared FIFO, 1.018 in its own
# queue (MinThr 0.982; the seed at full scale: 11.9 % shared). Asserted with room either side.
SHARED_AT_MOST = 0.3
PER_CCA_AT_LEAST = 0.8


def percca(*args: str) -> subprocess.CompletedProcess:
    if not PERCCA.is_file():
        pytest.fail(f"{PERCCA} is not built: run `make sim`")
    return subprocess.run([str(PERCCA), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, message", [
    (["--flows=vegas:1"], "unknown CCA 'vegas'"),
    (["--flows=reno:0"], "queue of 'reno:0' must be 1 to"),
    (["--flows=reno:1,bbr:2", "--policy=shared"], "policy shared has one queue"),
    (["--flows=reno:1", "--policy=fifo"], "policy must be shared or external"),
    (["--flows=reno:1", "--policy=external", "--qdisc=drr"], "ns-3 has no DRR"),
    (["--flows=reno:1,bbr:3", "--policy=external", "--queues=2"], "queues must be at least"),
    (["--flows=reno:1", "--buffer=0"], "buffer must be at least 1 packet"),
    ([], "give each flow as CCA:QUEUE"),
])
def test_bad_options_are_refused_with_the_reason(args, message):
    done = percca(*args)
    assert done.returncode == 2 and message in done.stderr and not done.stdout


def test_unknown_options_are_refused():
    assert percca("--bogus=1").returncode != 0


def test_scenarios_with_what_ns3_lacks_are_refused(tmp_path):
    drr = TINY.replace('policies = ["shared", "per-cca"]', 'policies = ["per-cca"]\nqdisc = "drr"')
    with pytest.raises(ScenarioError, match="queues.qdisc: 'drr' cannot be simulated: ns-3 has no DRR"):
        mix_scenario.parse(drr, tmp_path / "drr.toml")
    with pytest.raises(ScenarioError, match="unknown TCP congestion control"):
        mix_scenario.parse(TINY.replace("bbr = 3", "vegas = 3"), tmp_path / "vegas.toml")


def test_a_seed_repeats_a_run_exactly():
    args = ["--flows=reno:1,bbr:2", "--policy=external", "--weights=1:1", "--rate=10Mbps",
            "--warmup=0s", "--duration=1s", "--seed=7"]
    first, second = (json.loads(percca(*args).stdout) for _ in range(2))
    assert [f["bytes"] for f in first["flows"]] == [f["bytes"] for f in second["flows"]]
    assert first["queues"][1]["samples"] == second["queues"][1]["samples"]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The tiny scenario run through the planner and the simulator into a fresh database."""
    root = tmp_path_factory.mktemp("percca-ns3")
    path = root / "tiny.toml"
    path.write_text(TINY)
    sc = mix_scenario.load(path)
    outcomes = runner.run_scenario(sc, root / "db.sqlite", root / "runs", progress=lambda line: None)
    assert [error for _, _, error in outcomes] == [None, None]
    return root / "db.sqlite"


def test_per_cca_queues_protect_reno_from_bbr_unlike_the_shared_fifo(stored):
    with Database(stored) as db:
        rows = {r.policy: r for r in report.point_rows(db, "percca-tiny-ns3")}
        reno = dict(db.query("SELECT r.policy, c.normalised FROM percca_ccas c JOIN percca_runs r "
                             "ON r.id = c.run_id WHERE c.cca = 'reno'"))
    print(f"Reno of its fair share: shared FIFO {reno['shared']:.3f}, per-CCA queues {reno['per-cca']:.3f}; "
          f"MinThr {rows['shared'].min_thr:.3f} and {rows['per-cca'].min_thr:.3f}")
    assert reno["shared"] <= SHARED_AT_MOST < PER_CCA_AT_LEAST <= reno["per-cca"]
    assert rows["shared"].min_thr == pytest.approx(reno["shared"])
    assert rows["per-cca"].link_share > 0.9


def test_runs_are_stored_as_simulated_with_what_ns3_ran(stored):
    with Database(stored) as db:
        runs = db.query("SELECT * FROM percca_runs ORDER BY policy")
        queues = db.query("SELECT q.* FROM percca_queues q JOIN percca_runs r ON r.id = q.run_id "
                          "WHERE r.policy = 'per-cca' ORDER BY q.queue")
        flows = db.query("SELECT COUNT(*) FROM percca_flows")[0][0]
        samples = db.query("SELECT COUNT(*) FROM percca_occupancy")[0][0]
    assert [(r["engine"], r["time_mode"], r["status"]) for r in runs] == [("ns3", "simulated", "ok")] * 2
    assert runs[0]["guest_kernel"].startswith("ns-3 ") and runs[0]["window_s"] == 3.0
    per_cca = json.loads(runs[0]["tc_commands"])
    assert per_cca[0] == "percca" and "--policy=external" in per_cca and "--weights=3:3" in per_cca
    assert [(q["ccas"], q["flows"]) for q in queues] == [("reno", 3), ("bbr", 3)]
    assert all(q["max_packets"] >= q["mean_packets"] >= 0 and q["drops"] is not None for q in queues)
    assert flows == 12 and samples > 0
