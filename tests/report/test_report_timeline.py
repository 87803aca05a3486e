# SPDX-License-Identifier: MIT
"""`confucius report timeline`: the RT flow as the qdisc saw it, under the frame delay of a
load — from a hand-made run stored in a database, with and without per-flow samples."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))

from test_lab_db import LOAD_START, SCENARIO, make_run  # noqa: E402
from test_lab_flows import write_flow_samples  # noqa: E402

from confucius.experiment import db_runs  # noqa: E402
from confucius.experiment.db import Database  # noqa: E402
from confucius.lab.run_folder import read_run  # noqa: E402
from confucius.report import data, plots  # noqa: E402


def stored_page(tmp_path, scheduler: str, with_flows: bool, edit=None) -> tuple[Database, data.PageResult]:
    """The hand-made run under `scheduler`, changed by `edit(folder)` if given, stored."""
    folder = make_run(tmp_path / scheduler, f"u-{scheduler}")
    if with_flows:
        write_flow_samples(folder)
    if edit:
        edit(folder)
    db = Database(tmp_path / "lab.sqlite")
    scenario_id = db.scenario_id("handmade", "abc", "h.toml", SCENARIO)
    db_runs.store_run(db, scenario_id, {"cell_key": scheduler, "scheduler": scheduler, "scheduler_base": scheduler,
                               "scheduler_options": "", "tc_commands": "[]", "controller": "gcc", "rt_flows": "{}",
                               "repetition": 0, "mode": "episodes", "rtt_s": 0.04, "buffer_packets": 1000,
                               "status": "ok", "started_unix": 0.0, "results_dir": str(folder), "spec": "{}",
                               "engine": "qemu", "time_mode": "real"},
                 read_run(folder))
    [result] = [r for r in data.page_results(db, "handmade") if r.scheduler == scheduler]
    return db, result


def test_the_rt_flow_is_found_by_its_port_and_its_share_counts_backlogged_flows(tmp_path):
    db, result = stored_page(tmp_path, "confucius", with_flows=True)
    view = data.rt_view(db, result, before_s=3.0)
    db.close()
    assert len(view.targets) > 0 and all(bps == 16e6 for _, bps in view.targets)
    # Every sample has the RT flow (bucket 7, found by the port of its head packet once it
    # queues); the Web flow of weight 1/4 is backlogged throughout.
    assert len(view.qdisc) == 100
    assert all(q.weight_share == pytest.approx(1 / 1.25) for q in view.qdisc)
    assert [q.bytes for q in view.qdisc[:3]] == [0, 1500, 3000]
    # 1500 B per 20 ms: 0.6 Mbit/s of growth.
    assert all(bps == pytest.approx(0.6e6) for _, bps in view.queue_growth_bps())
    assert view.qdisc[2].time_ns == LOAD_START


def panels_of(monkeypatch, series, out: Path) -> list[str]:
    """Draw the timeline; the y labels of its panels, top to bottom."""
    labels = []
    save = plots._save

    def keep_labels(fig, path):
        labels.extend(ax.get_ylabel() for ax in fig.axes)
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", keep_labels)
    assert plots.timeline(series, out, "handmade") == out and out.stat().st_size > 0
    return labels


def test_the_timeline_draws_the_qdisc_panels_only_where_there_are_samples(tmp_path, monkeypatch):
    db, confucius = stored_page(tmp_path, "confucius", with_flows=True)
    db.close()
    db, pfifo = stored_page(tmp_path, "pfifo", with_flows=False)
    series = {r.scheduler: (r, data.frames_of_page(db, r, 3.0), data.rt_view(db, r, 3.0)) for r in (confucius, pfifo)}
    db.close()
    assert series["pfifo"][2].qdisc == []
    without = panels_of(monkeypatch, [series["pfifo"]], tmp_path / "pfifo.png")
    assert [label.split("\n")[0] for label in without] == ["frame delay (ms)", "sender's target"]
    both = panels_of(monkeypatch, list(series.values()), tmp_path / "both.png")
    assert [label.split("\n")[0] for label in both] == [
        "frame delay (ms)", "sender's target", "RT weight share", "RT queue growth", "RT queue", "RT head packet's"]
