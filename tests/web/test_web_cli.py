# SPDX-License-Identifier: MIT
"""`confucius web ...` commands."""

import json

from typer.testing import CliRunner

from confucius.web.cli import app
from confucius.web.page import read_page

runner = CliRunner()


def test_sweep_writes_the_named_page(tmp_path):
    result = runner.invoke(app, ["sweep", str(tmp_path / "s.json"), "--flows", "5", "--size", "9mb"])
    assert result.exit_code == 0
    page = read_page(tmp_path / "s.json")
    assert page.id == "flows-5-size-9437184" and len(page.domains) == 5


def test_sweep_refuses_bad_sizes(tmp_path):
    result = runner.invoke(app, ["sweep", str(tmp_path / "s.json"), "--flows", "5", "--size", "lots"])
    assert result.exit_code == 2 and "cannot read size" in " ".join(result.output.split())
    assert not (tmp_path / "s.json").exists()


def test_hosts_for_a_page_and_for_the_corpus(tmp_path):
    runner.invoke(app, ["sweep", str(tmp_path / "s.json"), "--flows", "3", "--size", "15kb"])
    result = runner.invoke(app, ["hosts", str(tmp_path / "h"), "--page", str(tmp_path / "s.json"),
                                 "--network", "10.77.1.0/24"])
    assert result.exit_code == 0
    assert (tmp_path / "h").read_text().splitlines() == [
        "10.77.1.1 d0.web.test", "10.77.1.2 d1.web.test", "10.77.1.3 d2.web.test"]
    result = runner.invoke(app, ["hosts", str(tmp_path / "h2"), "--domains", "300"])
    assert result.exit_code == 2 and "254 host addresses" in " ".join(result.output.split())


def test_validate_reports_each_file(tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps({"format": "confucius-web-page/1", "id": "b", "objects": [
        {"id": "a", "domain": "x", "size": 1, "parent": "a"}]}))
    runner.invoke(app, ["sweep", str(tmp_path / "ok.json"), "--flows", "2", "--size", "1kb"])
    result = runner.invoke(app, ["validate", str(tmp_path / "ok.json"), str(tmp_path / "bad.json")])
    assert result.exit_code == 2
    assert "ok.json: ok" in result.output and "cycle" in result.output


def test_generate_then_stats(tmp_path):
    result = runner.invoke(app, ["generate", str(tmp_path / "c"), "--pages", "8", "--seed", "4", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert len(manifest["sampled"]) == 8 and manifest["seed"] == 4
    assert "active_flows_median" in result.output
    result = runner.invoke(app, ["stats", str(tmp_path / "c")])
    assert result.exit_code == 0 and "page_bytes_median" in result.output
    result = runner.invoke(app, ["generate", str(tmp_path / "c"), "--pages", "8"])
    assert result.exit_code == 2 and "already holds a corpus" in " ".join(result.output.split())
