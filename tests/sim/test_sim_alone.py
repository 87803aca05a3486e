# SPDX-License-Identifier: MIT
"""`confucius sim alone`: each simulated load's episode again without its page is the
video the load met until the load's start, and the stall of both is set side by side."""

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from confucius.experiment.scenario import load
from confucius.provenance import program_digest
from confucius.report.data import open_db, page_results
from confucius.sim.alone import compare, episode_of, simulate_alone
from confucius.sim.bottleneck import BOTTLENECK, SimError
from confucius.sim.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def simulated(tmp_path_factory, small_sim_scenario):
    """Two loads under confucius with GCC, simulated into a database."""
    folder = tmp_path_factory.mktemp("alone")
    scenario = folder / "small.toml"
    scenario.write_text(small_sim_scenario("sim-alone", '["confucius"]',
                                           pages='["flows-3-size-30000", "flows-6-size-60000"]'))
    db = folder / "sim.sqlite"
    result = runner.invoke(app, ["run", str(scenario), "--db", str(db)])
    assert result.exit_code == 0, result.output
    return scenario, db


def db_frames(db, flow_session: int) -> dict[int, tuple]:
    with sqlite3.connect(db) as conn:
        return {fid: (size, delay) for fid, size, delay in conn.execute(
            "SELECT f.frame_id, f.size_bytes, f.delay_ms FROM frames f JOIN flows w ON w.id = f.flow_id "
            "WHERE w.kind = 'rt' AND w.session = ?", (flow_session,))}


def test_without_its_page_an_episode_is_the_video_the_load_met_until_the_load(simulated):
    scenario, db = simulated
    database = open_db(db)
    for result in page_results(database):
        [row] = database.query("SELECT spec FROM runs WHERE id = ?", (result.run_id,))
        episode = episode_of(json.loads(row["spec"]), result.page_id, load(scenario))
        assert not any(a.startswith(("--page", "--calm", "--late")) for a in episode.args)
        [alone] = simulate_alone(episode, episode.start_s + 1.0)
        stored = db_frames(db, result.session)
        before = [f for f in alone if f.capture_ns < episode.start_s * 1e9 and f.frame_id in stored]
        assert len(before) >= 30
        assert [(f.size_bytes, f.delay_ms) for f in before] == [stored[f.frame_id] for f in before]


def test_alone_prints_each_cells_stall_with_the_page_and_without(simulated):
    scenario, db = simulated
    [cell] = compare(load(scenario), db)
    assert (cell.scheduler, cell.controller, cell.loads) == ("confucius", "gcc", 2)
    assert 0 <= cell.alone_stall_s and 0 <= cell.alone_stalled <= 2
    result = runner.invoke(app, ["alone", str(scenario), "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    assert '"scheduler": "confucius"' in result.output and '"loads": 2' in result.output


def test_alone_refuses_loads_it_cannot_repeat(simulated, tmp_path):
    scenario, db = simulated
    other = runner.invoke(app, ["alone", str(scenario), "--db", str(db), "-c", "copa"])
    assert other.exit_code == 2 and "holds no loads of scenario 'sim-alone'" in other.output
    rebuilt = tmp_path / "bottleneck"
    rebuilt.write_bytes(BOTTLENECK.read_bytes() + b"\0")
    rebuilt.chmod(0o755)
    with pytest.raises(SimError, match=f"another program .bottleneck: {program_digest(rebuilt)} here, "
                                       f"{program_digest(BOTTLENECK)} recorded"):
        compare(load(scenario), db, rebuilt)
    session = tmp_path / "session.toml"
    session.write_text(scenario.read_text().replace("[web]\n", '[web]\nmode = "continuous"\ninterval = "60s"\n'))
    refused = runner.invoke(app, ["alone", str(session), "--db", str(db)])
    assert refused.exit_code == 2 and "continuous sessions are not repeated alone" in refused.output
