# SPDX-License-Identifier: MIT
"""Per-CCA scenarios are read and checked: what a good file gives, and that every bad key
is refused with an error that names it."""

import pytest

from confucius.experiment.scenario import ScenarioError
from confucius.percca import mix_scenario
from confucius.percca.mix_scenario import default_buffer, parse

GOOD = """
name = "mix"
seeds = [1, 2]
duration = "20s"
warmup = "3s"
[link]
rate = "100mbit"
rtt = "40ms"
[flows]
reno = 3
cubic = 3
bbr = 3
[queues]
policies = ["shared", "per-cca", "per-class"]
classes = [["reno", "cubic"], ["bbr"]]
[classifier]
kind = "f1"
f1 = [0.6, 0.95]
"""


def read(text, tmp_path):
    return parse(text, tmp_path / "s.toml")


def test_a_good_scenario_gives_its_points_and_the_papers_buffer(tmp_path):
    sc = read(GOOD, tmp_path)
    assert sc.ccas == ["reno", "cubic", "bbr"] and sc.counts == [3, 3, 3]
    # C·RTT/√N: 100 Mbit/s · 40 ms = 330 full-size packets, over √9.
    assert sc.buffer == round(100e6 * 0.04 / 8 / 1514 / 3) == 110
    # Paper 003's set-up: 404 frames of 1514 bytes (the paper states 460 packets).
    assert default_buffer(1.5e9, 0.04, 150) == 404
    keys = [p.key for p in sc.points()]
    assert keys[:2] == ["shared/-/seed=1", "shared/-/seed=2"]
    assert "per-class/f1=0.95/seed=2" in keys and len(keys) == 2 + 2 * 2 * 2
    assert sc.groups("per-class") == [[0, 1], [2]] and sc.groups("per-cca") == [[0], [1], [2]]


def test_published_classifiers_take_the_papers_table(tmp_path):
    text = GOOD.replace('kind = "f1"\nf1 = [0.6, 0.95]', 'kind = "published"\nname = "dragonfly"\nintervals = ["5s"]')
    (c,) = read(text, tmp_path).classifiers
    assert c.label == "dragonfly@5s"


@pytest.mark.parametrize("change, field", [
    (("reno = 3", "renoo = 3"), "flows.renoo"),
    (("reno = 3", "reno = -1"), "flows.reno"),
    (('rate = "100mbit"', 'rate = "fast"'), "link.rate"),
    (('rtt = "40ms"', 'rtt = "-5ms"'), "link.rtt"),
    (('policies = ["shared", "per-cca", "per-class"]', 'policies = ["fifo"]'), "queues.policies"),
    (('classes = [["reno", "cubic"], ["bbr"]]', 'classes = [["reno"], ["bbr"]]'), "queues.classes"),
    (('classes = [["reno", "cubic"], ["bbr"]]', 'weights = [1, 2]'), "queues.classes"),
    (("f1 = [0.6, 0.95]", "f1 = [1.5]"), "classifier.f1"),
    (("f1 = [0.6, 0.95]", "f1 = [0.05]"), "classifier.f1"),   # below Eq. 12's floor
    (('kind = "f1"', 'kind = "oracle"'), "classifier.kind"),
    (("seeds = [1, 2]", "seeds = [1, 1]"), "seeds"),
    (("[classifier]", 'service = "active"\nqdisc = "drr"\n[classifier]'), "queues.service"),
    (('duration = "20s"', 'duration = "20s"\ncolour = "red"'), "top level"),
])
def test_bad_fields_are_named(tmp_path, change, field):
    with pytest.raises(ScenarioError, match=field.replace(".", r"\.")):
        read(GOOD.replace(*change), tmp_path)


def test_weights_must_match_the_queues(tmp_path):
    text = GOOD.replace('policies = ["shared", "per-cca", "per-class"]', 'policies = ["per-class"]')
    with pytest.raises(ScenarioError, match=r"queues\.weights: 3 weights for \[2\] queues"):
        read(text.replace("[classifier]", 'service = "weights"\nweights = [1, 2, 3]\n[classifier]'), tmp_path)
    sc = read(text.replace("[classifier]", 'service = "weights"\nweights = [2, 1]\n[classifier]'), tmp_path)
    assert sc.weights == (2, 1)


def test_f1_needs_aggressiveness_for_every_cca(tmp_path):
    text = GOOD.replace("bbr = 3", "bbr = 3\nvegas = 3").replace('["bbr"]]', '["bbr", "vegas"]]')
    with pytest.raises(ScenarioError, match=r"classifier\.params: no training aggressiveness g for vegas"):
        read(text, tmp_path)
    # An ideal classifier needs none: any kernel CCA goes.
    assert read(text.replace('kind = "f1"\nf1 = [0.6, 0.95]', 'kind = "ideal"'), tmp_path).ccas[-1] == "vegas"


def test_published_figures_cover_only_their_ccas(tmp_path):
    text = GOOD.replace("cubic = 3\n", "").replace('["reno", "cubic"]', '["reno"]')
    text = text.replace('kind = "f1"\nf1 = [0.6, 0.95]', 'kind = "published"\nname = "deepcci"')
    with pytest.raises(ScenarioError, match=r"classifier\.name: deepcci's published figures cover bbr, cubic, reno"):
        read(text, tmp_path)


def test_the_uml_kernels_ccas_come_from_its_config():
    assert {"reno", "cubic", "bbr"} <= set(mix_scenario.kernel_ccas("uml"))


def test_the_repository_percca_scenarios_are_valid():
    from confucius.lab.engine import REPO
    paths = sorted((REPO / "scenarios" / "percca").glob("*.toml"))
    assert paths
    for path in paths:
        assert mix_scenario.load(path).name == path.stem, path


OPTIMISED = GOOD.replace('policies = ["shared", "per-cca", "per-class"]', 'policies = ["per-cca"]') \
    .replace("[classifier]", 'service = "optimised"\n[classifier]')


def test_optimised_service_installs_the_optimisers_rates_as_weights(tmp_path):
    from confucius.models import percca as model
    from confucius.percca import models, runner
    from confucius.percca.classifier import expected_distribution
    sc = read(OPTIMISED, tmp_path)
    point = next(p for p in sc.points() if p.classifier.f1 == 0.6)
    weights = runner.point_weights(sc, point)
    # The advanced model's optimum (§III-F) on the classifier's expected A, in hundredths.
    a = expected_distribution(point.classifier, sc.ccas, sc.counts, sc.params)
    rates, best = model.optimal_rates(model.packet_shares(a, model.advanced_aggressiveness(a, sc.params)),
                                      sc.counts)
    assert weights == tuple(max(1, round(r * models.WEIGHT_SCALE)) for r in rates)
    assert abs(sum(weights) - models.WEIGHT_SCALE) <= len(weights)
    flows = runner.flows_of(sc, point)
    root = runner.tc_lines(sc, point, flows, weights)[0]
    assert root.endswith("weights " + ":".join(map(str, weights)))
    # What the run stores beside it: the model with these (rounded) weights, near the optimum.
    predicted = models.predicted_min_thr(sc.ccas, sc.counts, "per-cca", sc.groups("per-cca"), point.classifier,
                                         weights, sc.params, "advanced")
    assert predicted == pytest.approx(best, abs=0.03)
    # Proportional service at the same point is what the optimiser improves on.
    proportional = models.predicted_min_thr(sc.ccas, sc.counts, "per-cca", sc.groups("per-cca"),
                                            point.classifier, (), sc.params, "advanced")
    print(f"F1 0.6: optimised weights {weights}, model MinThr {predicted:.3f} against {proportional:.3f}")
    assert predicted > proportional


def test_optimised_draws_service_beats_proportional_and_the_expected_optimum_on_its_draws(tmp_path):
    import numpy as np

    from confucius.models import percca as model
    from confucius.percca import classifier as cls
    from confucius.percca import models, runner
    sc = read(OPTIMISED.replace('service = "optimised"', 'service = "optimised-draws"'), tmp_path)
    point = next(p for p in sc.points() if p.classifier.f1 == 0.6)
    flows = runner.flows_of(sc, point)
    weights = runner.point_weights(sc, point)
    assert sum(weights) == 100 and runner.point_weights(sc, point) == weights
    assert runner.tc_lines(sc, point, flows, weights)[0].endswith("weights " + ":".join(map(str, weights)))
    # What the optimiser weighs: the draws with this draw's flows per class (a fresh chain).
    index = {c: i for i, c in enumerate(sc.ccas)}
    tables = cls.posterior_tables(cls.conditional(point.classifier, sc.ccas, sc.params),
                                  [index[f.cca] for f in flows], [index[f.classified_as] for f in flows],
                                  seed=1234, samples=400)
    per_class = tables[0].sum(axis=0)
    expected = models.optimised_weights(sc.ccas, sc.counts, "per-cca", sc.groups("per-cca"),
                                        point.classifier, sc.params)
    chosen, proportional, expected_optimum = model.mean_min_thr(
        list(tables), sc.params, sc.counts, np.array([weights, per_class, expected]))
    print(f"F1 0.6, flows per class {per_class.tolist()}: weights {weights} {chosen:.3f}, "
          f"proportional {proportional:.3f}, the expected draw's optimum {expected} {expected_optimum:.3f}")
    assert chosen >= proportional - 0.01 and chosen > expected_optimum


def test_optimised_draws_service_gives_an_empty_class_weight_1_and_serves_per_class_queues(tmp_path):
    from confucius.percca import models, runner
    sc = read(GOOD.replace("[classifier]", 'service = "optimised-draws"\n[classifier]'), tmp_path)
    # A draw that put no flow in CUBIC's class (a CUBIC flow taken for Reno, one for BBR).
    flows = [("reno", "reno")] * 3 + [("cubic", "reno"), ("cubic", "bbr"), ("cubic", "reno")] + [("bbr", "bbr")] * 3
    f1 = sc.classifiers[0]
    weights = models.optimised_weights_over_draws(sc.ccas, sc.counts, "per-cca", sc.groups("per-cca"), f1,
                                                  sc.params, flows, seed=1)
    assert weights[1] == 1 and weights[0] + weights[2] == 100
    merged = models.optimised_weights_over_draws(sc.ccas, sc.counts, "per-class", sc.groups("per-class"), f1,
                                                 sc.params, flows, seed=1)
    assert len(merged) == 2 and sum(merged) == 100
    # Stored beside each run: no prediction for the expected draw, whose weights these are not.
    point = next(p for p in sc.points() if p.policy == "per-cca")
    assert runner._model(sc, point, "advanced", runner.point_weights(sc, point)) is None


@pytest.mark.parametrize("base, change, field", [
    (GOOD, ("[classifier]", 'optimise_params = "paper003"\n[classifier]'), "queues.optimise_params"),
    (OPTIMISED, ('service = "optimised"', 'service = "optimised"\nweights = [1, 1, 1]'), "queues.weights"),
    (OPTIMISED, ('service = "optimised"', 'service = "optimised"\noptimise_params = "nowhere.json"'),
     "queues.optimise_params"),
])
def test_bad_optimised_fields_are_named(tmp_path, base, change, field):
    with pytest.raises(ScenarioError, match=field.replace(".", r"\.")):
        read(base.replace(*change), tmp_path)


@pytest.mark.parametrize("service", ["optimised", "optimised-draws"])
def test_optimised_services_need_the_advanced_models_pairs(tmp_path, service):
    (tmp_path / "g-only.json").write_text('{"ccas": ["reno", "cubic", "bbr"], '
                                          '"g": {"reno": 0.1, "cubic": 0.2, "bbr": 2.7}}')
    text = OPTIMISED.replace('service = "optimised"', f'service = "{service}"\noptimise_params = "g-only.json"')
    with pytest.raises(ScenarioError, match=rf"queues\.service: \"{service}\" needs the advanced model's optimum"):
        read(text, tmp_path)
