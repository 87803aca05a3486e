# SPDX-License-Identifier: MIT
"""Per-CCA scenarios: bulk CCA mixes through one bottleneck, a buffer policy and a
classifier (TOML, checked like the lab's: errors name the file, the key and the fix).

    name = "percca-equal"
    engine = "uml"                    # or "qemu", or "ns3" (the simulator: build/sim/percca)
    seeds = [1, 2, 3]                 # one run per seed and point (the classifier's draw; uml: the guest's too)
    duration = "30s"                  # measured, after the warm-up
    warmup = "5s"
    sample_interval = "500ms"         # throughput and queue-occupancy samples

    [link]
    rate = "100mbit"
    rtt = "40ms"                      # every flow's round-trip propagation delay
    buffer = "auto"                   # C·RTT/√N packets (paper 003 §III-A), or packets, or "1mb"

    [flows]                           # flows per CCA, any TCP CCA of the lab kernel
    reno = 10
    cubic = 10
    bbr = 10

    [queues]
    policies = ["shared", "per-cca"]  # and/or "per-class"
    classes = [["reno", "cubic"], ["bbr"]]   # per-class: every CCA in one class
    service = "flows"                 # queues weighted by the flows mapped to them (the paper's),
                                      # "weights", "optimised" (the advanced model's optimal
                                      # rates for the expected draw, §III-F), "optimised-draws"
                                      # (the best weights over the draws with this draw's flows
                                      # per class) or "active" (confucius: its backlogged flows)
    weights = [1, 1]                  # one whole number per queue (service = "weights")
    optimise_params = "paper003"      # the optimised services: the operator's model (default:
                                      # the classifier's params)
    qdisc = "confucius"               # mode external; or "drr" (tail-drop pfifo per queue)

    [classifier]
    kind = "f1"                       # ideal | f1 | accuracy | published
    f1 = [0.6, 0.83, 0.95]            # kind f1: one point each
    accuracy = { reno = 0.9, cubic = 0.9, bbr = 0.95 }   # kind accuracy
    name = "dragonfly"                # kind published: deepcci | dragonfly (paper 003 Table I)
    intervals = ["1s", "5s", "10s"]   # kind published
    params = "paper003"               # g_i for kind f1 and the models: a preset or a JSON file
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path

from confucius.experiment import engines
from confucius.experiment.scenario import MTU_BYTES, ScenarioError, Table, buffer_packets, read_text, read_top
from confucius.models import presets
from confucius.models import aggressiveness
from confucius.models.aggressiveness import AggressivenessParams
from confucius.models.percca import lowest_f1
from confucius.models.validate import ModelInputError
from confucius.units import UnitError, parse_time

from .classifier import KINDS, Classifier
from .models import check_optimiser

POLICIES = ("shared", "per-cca", "per-class")
SERVICES = ("flows", "weights", "optimised", "optimised-draws", "active")
OPTIMISED = ("optimised", "optimised-draws")
QDISCS = ("confucius", "drr")
FIRST_PORT = 6000


def kernel_ccas(engine: str) -> tuple[str, ...]:
    """TCP CCAs the engine has: its kernel's (engines.Engine.ccas: UML's built in by its
    config fragment, qemu's the Debian kernel's modules), or under ns3 those the per-CCA
    program lists (its own table, not the bottleneck program's)."""
    if engine == "ns3":
        return tuple(sorted(_simulator()["ccas"]))
    return engines.engine(engine).ccas()


@dataclass(frozen=True)
class Point:
    """One run: a policy, a classifier (None for the shared buffer) and a seed."""
    policy: str
    classifier: Classifier | None
    seed: int

    @property
    def key(self) -> str:
        return f"{self.policy}/{self.classifier.label if self.classifier else '-'}/seed={self.seed}"


@dataclass(frozen=True)
class Scenario:
    name: str
    path: Path
    text: str
    engine: str
    seeds: tuple[int, ...]
    duration_s: float
    warmup_s: float
    sample_s: float
    rate_bps: float
    rtt_s: float
    buffer: int
    flows: tuple[tuple[str, int], ...]          # (cca, count) in file order
    policies: tuple[str, ...]
    classes: tuple[tuple[str, ...], ...]         # per-class grouping
    service: str
    weights: tuple[int, ...]
    qdisc: str
    classifiers: tuple[Classifier, ...]
    params: AggressivenessParams
    params_source: str
    optimise_params: AggressivenessParams | None = None   # the optimised services; None: params
    description: str = ""
    digest: str = field(default="")

    @property
    def ccas(self) -> list[str]:
        return [c for c, _ in self.flows]

    @property
    def counts(self) -> list[int]:
        return [n for _, n in self.flows]

    def groups(self, policy: str) -> list[list[int]]:
        """Each queue's CCA indices under `policy`."""
        if policy == "per-class":
            return [[self.ccas.index(c) for c in group] for group in self.classes]
        return [[i] for i in range(len(self.flows))]

    def points(self) -> list[Point]:
        points = []
        for policy in self.policies:
            classifiers = [None] if policy == "shared" else self.classifiers
            points += [Point(policy, c, s) for c, s in product(classifiers, self.seeds)]
        return points


def _simulator() -> dict:
    from . import ns3
    try:
        return ns3.describe()
    except ns3.SimError as err:
        raise ScenarioError(f"engine ns3: {err}") from None


def _check_simulated(top: Table, qdisc: str, policies: tuple[str, ...]) -> None:
    """The lab's queue discs that ns-3 lacks, refused with the simulator's reason."""
    missing = _simulator()["missing"]
    if qdisc in missing and any(p != "shared" for p in policies):
        raise ScenarioError(f"{top.path}: queues.qdisc: {qdisc!r} cannot be simulated: {missing[qdisc]} "
                            "(use qdisc = \"confucius\" or a lab engine)")


def default_buffer(rate_bps: float, rtt_s: float, flows: int) -> int:
    """C·RTT/√N in full-size packets (paper 003 §III-A, after McKeown et al. [30])."""
    return max(1, round(rate_bps * rtt_s / 8 / MTU_BYTES / math.sqrt(flows)))


def _read_flows(t: Table | None, path: Path, ccas: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    if t is None:
        raise ScenarioError(f"{path}: [flows] is required: flows per CCA, e.g. reno = 10")
    flows = []
    for cca in list(t.data):
        if cca not in ccas:
            raise t.error(cca, f"unknown TCP congestion control (the kernel has {', '.join(ccas)})")
        flows.append((cca, t.integer(cca, None, 0, 1000)))
    t.done()
    if sum(n for _, n in flows) == 0 or len(flows) < 2:
        raise t.error(None, "give at least two CCAs and at least one flow")
    return tuple(flows)


def _read_link(t: Table | None, path: Path, flows: int) -> tuple[float, float, int]:
    if t is None:
        raise ScenarioError(f"{path}: [link] is required (rate, rtt, buffer)")
    rate = t.rate("rate")
    if rate is None:
        raise t.error("rate", "is required, e.g. \"100mbit\"")
    rtt = t.time("rtt", "40ms")
    value = t.get("buffer", "auto")
    buffer = default_buffer(rate, rtt, flows) if value == "auto" else buffer_packets(t, value)
    t.done()
    return rate, rtt, buffer


def _read_queues(t: Table | None, path: Path, ccas: list[str]) -> tuple:
    if t is None:
        raise ScenarioError(f"{path}: [queues] is required (policies)")
    policies = t.strings("policies")
    if not policies or any(p not in POLICIES for p in policies) or len(set(policies)) != len(policies):
        raise t.error("policies", f"must list some of {', '.join(POLICIES)} once each, got {policies!r}")
    classes = _read_classes(t, ccas, "per-class" in policies)
    service = t.choice("service", "flows", SERVICES)
    weights = t.get("weights")
    queue_counts = {len(ccas) if p == "per-cca" else len(classes) for p in policies if p != "shared"}
    if service == "weights":
        if (not isinstance(weights, list) or not all(isinstance(w, int) and not isinstance(w, bool)
                                                     and w >= 1 for w in weights)):
            raise t.error("weights", f"service = \"weights\" needs one whole number >= 1 per queue, got {weights!r}")
        if queue_counts != {len(weights)}:
            raise t.error("weights", f"{len(weights)} weights for {sorted(queue_counts)} queues")
    elif weights is not None:
        raise t.error("weights", "apply only with service = \"weights\"")
    qdisc = t.choice("qdisc", "confucius", QDISCS)
    if service == "active" and qdisc != "confucius":
        raise t.error("service", "\"active\" (served by backlogged flows) is the confucius qdisc's own count; "
                                 "drr weighs its queues by flows or weights")
    optimise = _read_optimise_params(t, service)
    t.done()
    return tuple(policies), classes, service, tuple(weights or ()), qdisc, optimise


def _read_optimise_params(t: Table, service: str) -> AggressivenessParams | None:
    spec = t.string("optimise_params")
    if spec is None:
        return None
    if service not in OPTIMISED:
        raise t.error("optimise_params", "applies only with service = \"optimised\" or \"optimised-draws\"")
    return _load_params(t, spec, "optimise_params")


def _read_classes(t: Table, ccas: list[str], needed: bool) -> tuple[tuple[str, ...], ...]:
    value = t.get("classes")
    if value is None:
        if needed:
            raise t.error("classes", "per-class queues need classes, e.g. [[\"reno\", \"cubic\"], [\"bbr\"]]")
        return ()
    if (not isinstance(value, list) or not value
            or not all(isinstance(g, list) and g and all(isinstance(c, str) for c in g) for g in value)):
        raise t.error("classes", f"must be a list of lists of CCA names, got {value!r}")
    named = [c for group in value for c in group]
    if sorted(named) != sorted(ccas):
        raise t.error("classes", f"must name every CCA of [flows] ({', '.join(ccas)}) exactly once, "
                                 f"got {value!r}")
    return tuple(tuple(g) for g in value)


def _load_params(t: Table, spec: str, key: str = "params") -> AggressivenessParams:
    try:
        if spec in presets.PARAMETERS:
            return presets.PARAMETERS[spec]
        path = (t.path.parent / spec) if not Path(spec).is_absolute() else Path(spec)
        if not path.is_file():
            raise t.error(key, f"{spec!r} is neither a preset ({', '.join(presets.PARAMETERS)}) "
                               "nor a parameter file (confucius model percca-fit --write)")
        return aggressiveness.load(path)
    except ModelInputError as err:
        raise t.error(key, str(err)) from None


def _read_classifier(t: Table | None, path: Path, ccas: list[str], needs: bool) -> tuple:
    if t is None:
        if needs:
            raise ScenarioError(f"{path}: per-CCA or per-class queues need a [classifier] (kind = \"ideal\" ...)")
        t = Table({}, "classifier", path)
    kind = t.choice("kind", "ideal", KINDS)
    spec = t.string("params", "paper003")
    params = _load_params(t, spec)
    if kind == "f1":
        values = t.get("f1")
        if not isinstance(values, list) or not values or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 1 for v in values):
            raise t.error("f1", f"kind f1 needs a list of F1 scores in (0, 1], got {values!r}")
        missing = [c for c in ccas if c not in params.g]
        if missing:
            raise t.error("params", f"no training aggressiveness g for {', '.join(missing)} "
                                    "(needed by Eq. 7): fit it with confucius model percca-fit")
        classifiers = tuple(Classifier("f1", f1=float(v)) for v in values)
        _check_f1(t, classifiers, [params.g[c] for c in ccas])
    elif kind == "accuracy":
        acc = t.get("accuracy")
        if not isinstance(acc, dict) or sorted(acc) != sorted(ccas) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 1 for v in acc.values()):
            raise t.error("accuracy", f"needs an F1 in (0, 1] for each of {', '.join(ccas)}, got {acc!r}")
        classifiers = (Classifier("accuracy", accuracy=tuple((c, float(acc[c])) for c in ccas)),)
    elif kind == "published":
        classifiers = _read_published(t, ccas)
    else:
        classifiers = (Classifier("ideal"),)
    t.done()
    return classifiers, params, spec


def _check_f1(t: Table, classifiers, g) -> None:
    low = lowest_f1(g)
    bad = [c.f1 for c in classifiers if c.f1 < low]
    if bad:
        raise t.error("f1", f"{bad} below {low:.4f}, the lowest F1 these CCAs' aggressiveness allows (Eq. 12)")


def _read_published(t: Table, ccas: list[str]) -> tuple[Classifier, ...]:
    name = t.choice("name", None, tuple(presets.CLASSIFIERS))
    table = presets.CLASSIFIERS[name]
    known = sorted(next(iter(table.values())))
    if sorted(ccas) != known:
        raise t.error("name", f"{name}'s published figures cover {', '.join(known)}; [flows] has "
                              f"{', '.join(ccas)}")
    values = t.get("intervals", [f"{d:g}s" for d in table])
    try:
        seconds = [parse_time(v) for v in values] if isinstance(values, list) else None
    except UnitError as err:
        raise t.error("intervals", str(err)) from None
    if not seconds or any(s not in table for s in seconds):
        raise t.error("intervals", f"{name} is published for {', '.join(f'{d:g}s' for d in table)}, "
                                   f"got {values!r}")
    return tuple(Classifier("published", name=name, interval_s=s) for s in seconds)


def _check_optimisable(scenario: Scenario) -> None:
    """Every point of an optimised service needs the advanced model (§III-F) with
    parameters its optimiser can use."""
    params = scenario.optimise_params or scenario.params
    for policy in (p for p in scenario.policies if p != "shared"):
        for classifier in scenario.classifiers:
            try:
                check_optimiser(scenario.service, scenario.ccas, scenario.counts, policy,
                                scenario.groups(policy), classifier, params)
            except (ModelInputError, KeyError) as err:
                raise ScenarioError(f"{scenario.path}: queues.service: \"{scenario.service}\" needs the advanced "
                                    f"model's optimum for {policy} at {classifier.label}, which these "
                                    f"parameters cannot give ({err}): set queues.optimise_params") from None


def parse(text: str, path: Path, *, engine: str | None = None) -> Scenario:
    path = Path(path)
    top, name = read_top(text, path, engine)
    engine_name = top.choice("engine", "uml", tuple(engines.REGISTRY))
    flows = _read_flows(top.table("flows"), path, kernel_ccas(engine_name))
    ccas = [c for c, _ in flows]
    rate, rtt, buffer = _read_link(top.table("link"), path, sum(n for _, n in flows))
    policies, classes, service, weights, qdisc, optimise = _read_queues(top.table("queues"), path, ccas)
    if engine_name == "ns3":
        _check_simulated(top, qdisc, policies)
    classifiers, params, spec = _read_classifier(top.table("classifier"), path, ccas,
                                                 any(p != "shared" for p in policies))
    seeds = top.get("seeds", [1])
    if not isinstance(seeds, list) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise top.error("seeds", f"must be a list of distinct whole numbers >= 0, got {seeds!r}")
    scenario = Scenario(
        name=name, path=path, text=text, engine=engine_name, seeds=tuple(seeds),
        duration_s=top.time("duration", "30s"), warmup_s=top.time("warmup", "5s", positive=False),
        sample_s=top.time("sample_interval", "500ms"), rate_bps=rate, rtt_s=rtt, buffer=buffer,
        flows=flows, policies=policies, classes=classes, service=service, weights=weights,
        qdisc=qdisc, classifiers=classifiers, params=params, params_source=spec,
        optimise_params=optimise, description=top.string("description", ""))
    top.done()
    if service in OPTIMISED:
        _check_optimisable(scenario)
    digest = hashlib.sha256(f"{text}\0engine={engine_name}".encode()).hexdigest()[:16]
    object.__setattr__(scenario, "digest", digest)
    return scenario


def load(path, *, engine: str | None = None) -> Scenario:
    path = Path(path)
    return parse(read_text(path), path, engine=engine)
