# SPDX-License-Identifier: MIT
"""`confucius lab run/matrix/plan` and `confucius report` refuse bad input with a message and
change nothing (the commands that boot VMs are exercised in test_lab_sanity_vm.py)."""

from pathlib import Path

from typer.testing import CliRunner

from confucius.lab.cli import app as lab_app
from confucius.report.cli import app as report_app

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]


def text(result) -> str:
    return " ".join(result.output.split())


def test_plan_lists_the_runs_of_a_scenario():
    result = runner.invoke(lab_app, ["plan", str(REPO / "scenarios" / "demo.toml")])
    assert result.exit_code == 0, result.output
    assert "demo: 6 runs, 6 measurements" in text(result)


def test_a_malformed_scenario_is_refused_before_anything_runs(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[link]\nrate = "fast"\n')
    db = tmp_path / "lab.sqlite"
    for command in ("run", "matrix", "plan"):
        result = runner.invoke(lab_app, [command, str(bad), "--db", str(db)])
        assert result.exit_code == 2, result.output
        assert f"{bad}: link.rate: cannot read rate 'fast'" in text(result)
    assert not db.exists()


def test_unknown_schedulers_on_the_command_line_are_refused(tmp_path):
    result = runner.invoke(lab_app, ["run", str(REPO / "scenarios" / "demo.toml"), "-s", "pfifo,sfq",
                                     "--db", str(tmp_path / "lab.sqlite")])
    assert result.exit_code == 2
    assert "scheduler sfq not in the scenario" in text(result)
    assert not (tmp_path / "lab.sqlite").exists()


def test_an_unknown_engine_is_refused_before_anything_runs(tmp_path):
    db = tmp_path / "lab.sqlite"
    for command in ("run", "matrix", "plan"):
        result = runner.invoke(lab_app, [command, str(REPO / "scenarios" / "demo.toml"), "--engine", "kvm",
                                         "--db", str(db)])
        assert result.exit_code == 2, result.output
        assert "engine: must be one of qemu, uml, got 'kvm'" in text(result)
    for options in (["--engine", "kvm"], ["--time-mode", "basic"], ["--kernel", "nope"],
                    ["--engine", "uml", "--kernel", "nope"]):
        result = runner.invoke(lab_app, ["vm", "run", "-c", "true", "--results", str(tmp_path / "r"), *options])
        assert result.exit_code == 2, result.output
    assert not db.exists() and not (tmp_path / "r").exists()


def test_the_plan_under_the_uml_engine_lists_the_same_runs():
    result = runner.invoke(lab_app, ["plan", str(REPO / "scenarios" / "demo.toml"), "--engine", "uml"])
    assert result.exit_code == 0, result.output
    assert "demo: 6 runs, 6 measurements" in text(result)


def test_reports_without_a_database_say_what_to_run(tmp_path):
    result = runner.invoke(report_app, ["summary", "--db", str(tmp_path / "none.sqlite")])
    assert result.exit_code == 2
    assert "no results database" in text(result) and "confucius lab run" in text(result)
    assert not (tmp_path / "none.sqlite").exists()


def test_plan_lists_each_point_of_a_grid_and_refuses_what_the_lab_cannot_load(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text((REPO / "scenarios" / "demo.toml").read_text().replace('rate = "20mbit"\n', "")
                    + '\n[grid]\nlink.rate = ["20mbit", "50mbit"]\n')
    result = runner.invoke(lab_app, ["plan", str(grid)])
    assert result.exit_code == 0, result.output
    assert "demo-20mbit: 6 runs, 6 measurements" in text(result) and "demo-50mbit: 6 runs" in text(result)
    result = runner.invoke(lab_app, ["plan", str(REPO / "scenarios" / "home.toml")])
    assert result.exit_code == 2, result.output
    assert "web.http = 'table3': the lab's web-client speaks HTTP/1.1 and HTTP/2, not HTTP/3" in text(result)
