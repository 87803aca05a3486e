# SPDX-License-Identifier: MIT
"""The per-CCA models' aggressiveness fitted from the lab's own runs (paper 003 §II-E,
§III-G), and the fitted advanced model checked against independent runs.

A fit file (TOML, checked like a scenario: errors name the key) describes the runs:

    name = "percca-fit"
    engine = "uml"
    seeds = [1]                       # runs per mix
    duration = "12s"
    warmup = "3s"

    [link]                            # as in a per-CCA scenario; one buffer for every mix
    rate = "150mbit"
    rtt = "40ms"
    buffer = "auto"                   # C·RTT/√N for `pairs.flows` flows, or packets

    [pairs]                           # g_ij(x) = w·e^(m·x): each pair of `ccas`, shared FIFO
    ccas = ["reno", "cubic", "bbr"]
    flows = 15                        # flows in each pair run
    first = [3, 8, 12]                # flows of the pair's first CCA: x = first / flows

    [training]                        # g_i (Eq. 6): every CCA with this many flows, shared FIFO
    flows = 5

    [validate]                        # independent runs (by scenario name) the fit is checked on
    scenarios = ["percca-equal", "percca-few-sharks"]

Each mix becomes a per-CCA scenario of its own (`<name>-reno3-bbr12`, `<name>-equal`) with
one policy, the shared FIFO, so it is run, stored and reported like any other.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from confucius.experiment import db_percca
from confucius.experiment.db import Database
from confucius.experiment.scenario import ScenarioError, buffer_packets, read_text, read_top
from confucius.models import fitting, presets
from confucius.models.aggressiveness import AggressivenessParams
from confucius.models.validate import ModelInputError

from . import mix_scenario
from . import stored


class FitError(RuntimeError):
    """The database lacks what the fit or its validation needs."""


@dataclass(frozen=True)
class FitPlan:
    name: str
    path: Path
    mixes: tuple[mix_scenario.Scenario, ...]   # the pair runs, then the training run
    validate: tuple[str, ...]

    @property
    def mix_names(self) -> list[str]:
        return [sc.name for sc in self.mixes]


def _toml(value) -> str:
    """A TOML value for the generated scenarios (strings, numbers, lists of them)."""
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def _mix_text(name: str, description: str, common: dict, link: dict, flows: dict) -> str:
    lines = [f"name = {_toml(name)}", f"description = {_toml(description)}",
             *(f"{k} = {_toml(v)}" for k, v in common.items()), "", "[link]",
             *(f"{k} = {_toml(v)}" for k, v in link.items()), "", "[flows]",
             *(f"{c} = {n}" for c, n in flows.items()), "", "[queues]", 'policies = ["shared"]']
    return "\n".join(lines) + "\n"


def _read_pairs(t, path: Path, engine: str) -> tuple[list[str], int, list[int]]:
    if t is None:
        raise ScenarioError(f"{path}: [pairs] is required (ccas, flows, first)")
    ccas = t.strings("ccas")
    if len(ccas) < 2 or len(set(ccas)) != len(ccas):
        raise t.error("ccas", f"name two or more different CCAs, got {ccas!r}")
    known = mix_scenario.kernel_ccas(engine)
    unknown = [c for c in ccas if c not in known]
    if unknown:
        raise t.error("ccas", f"{', '.join(unknown)}: not a TCP congestion control of the {engine} "
                              f"kernel (it has {', '.join(known)})")
    flows = t.integer("flows", None, 2, 1000)
    if flows is None:
        raise t.error("flows", "is required: the flows in each pair run, e.g. 15")
    first = t.get("first")
    if (not isinstance(first, list) or not all(isinstance(n, int) and not isinstance(n, bool)
                                               and 0 < n < flows for n in first)
            or len(set(first)) < 2 or len(set(first)) != len(first)):
        raise t.error("first", f"needs two or more different flow counts of the pair's first CCA, "
                               f"each between 1 and {flows - 1} (x = first / flows), got {first!r}")
    t.done()
    return ccas, flows, first


def _read_training(t, ccas: list[str]) -> dict[str, int] | None:
    if t is None:
        return None
    per_cca = t.integer("flows", None, 1, 1000)
    if per_cca is None:
        raise t.error("flows", "is required: the flows of each CCA in the training run")
    t.done()
    return {c: per_cca for c in ccas}


def _read_validate(t) -> tuple[str, ...]:
    if t is None:
        return ()
    names = t.strings("scenarios")
    if not names:
        raise t.error("scenarios", "name the scenarios whose runs check the fit, e.g. [\"percca-equal\"]")
    t.done()
    return tuple(names)


def parse(text: str, path: Path, *, engine: str | None = None) -> FitPlan:
    path = Path(path)
    top, name = read_top(text, path, engine)
    common = {"engine": top.choice("engine", "uml", ("qemu", "uml"))}
    for key in ("seeds", "duration", "warmup", "sample_interval"):
        if top.has(key):
            common[key] = top.get(key)
    link_table = top.table("link")
    if link_table is None:
        raise ScenarioError(f"{path}: [link] is required (rate, rtt, buffer)")
    ccas, flows, first = _read_pairs(top.table("pairs"), path, common["engine"])
    training = _read_training(top.table("training"), ccas)
    validate = _read_validate(top.table("validate"))
    description = top.string("description", "")
    top.done()
    rate, rtt = link_table.rate("rate"), link_table.time("rtt", "40ms")
    if rate is None:
        raise link_table.error("rate", "is required, e.g. \"150mbit\"")
    value = link_table.get("buffer", "auto")
    buffer = (mix_scenario.default_buffer(rate, rtt, flows) if value == "auto"
              else buffer_packets(link_table, value))
    link_table.done()
    # As written in the fit file (the stored scenarios read as the user wrote them), with
    # the buffer resolved once for the pair runs' flows.
    link = {"rate": link_table.get("rate"), "rtt": link_table.get("rtt", "40ms"), "buffer": buffer}
    mixes = []
    for i, j in combinations(ccas, 2):
        for n in first:
            text_ = _mix_text(f"{name}-{i}{n}-{j}{flows - n}", f"{path.name}: {i} against {j}, x = {n}/{flows}",
                              common, link, {i: n, j: flows - n})
            mixes.append(_mix(text_, path, engine))
    if training:
        mixes.append(_mix(_mix_text(f"{name}-equal", f"{path.name}: g_i (Eq. 6), equal flows", common,
                                    link, training), path, engine))
    return FitPlan(name, path, tuple(mixes), validate)


def _mix(text: str, path: Path, engine: str | None) -> mix_scenario.Scenario:
    """A generated mix, checked as any scenario (CCAs the kernel has, seeds, times)."""
    return mix_scenario.parse(text, path, engine=engine)


def load(path, *, engine: str | None = None) -> FitPlan:
    path = Path(path)
    return parse(read_text(path, "fit file"), path, engine=engine)


# ---------------------------------------------------------------------------------- fitting

@dataclass(frozen=True)
class Fit:
    params: AggressivenessParams
    pairs: list[fitting.RelativeFit]
    g: dict[str, float]
    samples: list[tuple]                # (cca_i, cca_j, x_i, thr_i, thr_j) the fit used


def fit_database(db: Database, names: list[str]) -> Fit:
    """g_i and g_ij from the shared-buffer runs of the scenarios `names` (measured only:
    nothing is taken from the paper's values)."""
    pairs, per_cca = stored.fit_measurements(db, names)
    if not pairs:
        raise FitError(f"no two-CCA shared-buffer runs of {', '.join(names)} in the database: "
                       "run them first (confucius percca fit FILE --run)")
    try:
        fits = fitting.fit_pairs(pairs)
        g = fitting.training_aggressiveness(per_cca) if per_cca else {}
        params = fitting.params_from_fits(g, fits)
    except ModelInputError as err:
        raise FitError(f"the measured runs cannot be fitted: {err}") from None
    return Fit(params, fits, g, pairs)


# ------------------------------------------------------------------------------- validation

@dataclass(frozen=True)
class Check:
    scenario: str
    point: str
    policy: str
    classifier: str
    seed: int
    measured: float
    fitted: float | None            # the advanced model on the run's draw, fitted parameters
    paper003: float | None          # the same with paper 003's parameters


@dataclass(frozen=True)
class Error:
    runs: int
    mean: float | None              # None: the model could not say for any run
    worst: float | None


def validate(db: Database, names: list[str], params: AggressivenessParams) -> list[Check]:
    """The advanced model's MinThr for every stored run of the scenarios `names`, on the
    run's own draw and weights, with the fitted parameters and with the paper's. A scenario
    with no successful run yet has nothing to check: `unchecked` names it."""
    found = stored.scenarios(db, set(names))
    if not found:
        return []
    runs = db_percca.successful_runs_of(db, list(found))
    checks = []
    for run in runs:
        sc = found[run["name"]]
        checks.append(Check(run["name"], run["point_key"], run["policy"], run["classifier"], run["seed"],
                            run["min_thr"], stored.predicted_on_draw(db, sc, run, "advanced", params),
                            stored.predicted_on_draw(db, sc, run, "advanced", presets.PARAMETERS["paper003"])))
    return checks


def unchecked(names: tuple[str, ...] | list[str], checks: list[Check]) -> list[str]:
    """The named scenarios that no check covers: not run yet, or every run failed."""
    covered = {c.scenario for c in checks}
    return [n for n in names if n not in covered]


def error(checks: list[Check], which: str = "fitted") -> Error:
    """Mean and worst absolute difference of MinThr, model against lab, over the runs."""
    gaps = [abs(getattr(c, which) - c.measured) for c in checks if getattr(c, which) is not None]
    if not gaps:
        return Error(0, None, None)
    return Error(len(gaps), statistics.fmean(gaps), max(gaps))
