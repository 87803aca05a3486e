# SPDX-License-Identifier: MIT
"""The figures are written, and show what they claim (checked on the data they plot)."""

import pytest
from typer.testing import CliRunner

from confucius.models import plots, presets
from confucius.models.cli import app
from confucius.models.validate import ModelInputError


def test_fluid_figures(tmp_path, scenario):
    sc = scenario()
    paths = [plots.available_bandwidth(sc, tmp_path), *plots.bound_sweeps(sc, tmp_path, 3)]
    assert [p.name for p in paths] == ["fig9_available_bandwidth.png", "fig19a_k.png",
                                       "fig19b_tau.png", "fig19c_q0.png"]
    assert all(p.stat().st_size > 10_000 for p in paths)
    with pytest.raises(ModelInputError):
        plots.bound_sweeps(sc, tmp_path, 1)


def test_percca_figures(tmp_path):
    paths = plots.percca_figures(presets.PAPER003, tmp_path, points=5)
    assert sorted(p.name for p in paths) == ["fig2.png", "fig3a.png", "fig3b.png",
                                             "fig4a.png", "fig4b.png", "fig5.png", "fig6.png"]


def test_figures_command(tmp_path):
    result = CliRunner().invoke(app, ["figures", "--points", "2", "--out", str(tmp_path),
                                      "--json"])
    assert result.exit_code == 0, result.output
    assert len(list(tmp_path.glob("*.png"))) == 12
