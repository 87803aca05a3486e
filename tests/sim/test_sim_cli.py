# SPDX-License-Identifier: MIT
"""`confucius sim episode`: the ns-3 motivating example from the command line."""

import json
import subprocess
import sys

from typer.testing import CliRunner

from confucius.sim.bottleneck import named_page, run_bottleneck, write_sim_page
from confucius.sim.cli import app

runner = CliRunner()


def test_episode_prints_the_videos_metrics_per_scheduler_as_json():
    result = runner.invoke(app, ["episode", "--schedulers", "confucius,fq_codel", "--page", "none", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["scheduler"]: r for r in json.loads(result.output)}
    assert set(rows) == {"confucius", "fq_codel"}
    assert rows["confucius"]["stall_s"] < rows["fq_codel"]["stall_s"]
    assert all(r["page_s"] is not None and r["simulated_s"] > 10 for r in rows.values())


def test_episode_refuses_what_the_simulator_cannot_run():
    result = runner.invoke(app, ["episode", "--schedulers", "cake"])
    assert result.exit_code == 2 and "cake cannot be simulated" in result.output
    result = runner.invoke(app, ["episode", "--rate", "fast"])
    assert result.exit_code == 2 and "rate" in result.output


def test_the_command_is_registered_as_confucius_sim_episode():
    result = subprocess.run([sys.executable, "-m", "confucius", "sim", "episode", "--help"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "--schedulers" in result.stdout


def test_the_demos_page_loads_whole_in_the_simulator(tmp_path):
    page = named_page("amazon")
    path = write_sim_page(page, tmp_path / "amazon.txt")
    assert len(path.read_text().splitlines()) == len(page.objects)
    run = run_bottleneck(["--scheduler=fq_codel", "--rt-rate=0", f"--page={path}", "--web-start=1s",
                          "--duration=30s"])
    assert run["page"]["objects_done"] == len(page.objects) and run["page"]["plt_s"] > 0
    assert len(page.domains) <= run["page"]["connections"] <= 6 * len(page.domains)


def test_a_page_file_that_is_not_one_is_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = runner.invoke(app, ["episode", "--page", str(bad)])
    assert result.exit_code == 2 and "page" in result.output
