# SPDX-License-Identifier: MIT
"""`confucius model …`: the fluid model's bounds and numerical solution, and the per-CCA
queueing models, with quantities as people write them (`40ms`, `20mbit`, `15kb`)."""

import json
import math
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from ..units import UnitError, parse_rate, parse_size, parse_time
from . import aggressiveness, bounds, cca, fitting, fluid, percca, policies, presets
from .fluid_scenario import FluidScenario
from .validate import ModelInputError, flow_count

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Fluid model of Confucius and per-CCA queueing models.")

DEFAULT_OUT = Path("results/models")


@contextmanager
def _user_errors():
    """Bad input ends the command with one clear line and exit status 2."""
    try:
        yield
    except (ModelInputError, UnitError) as err:
        Console(stderr=True).print(f"[red]error:[/red] {err}", highlight=False)
        raise typer.Exit(2)


def _emit_json(data) -> None:
    typer.echo(json.dumps(data, indent=2, default=_json_value))


def _json_value(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _json_number(x):
    """JSON has no infinity or NaN: write them as null."""
    return None if x is None or not math.isfinite(x) else x


def _number_ms(seconds) -> str:
    """Milliseconds without the unit, for columns whose header carries it."""
    if seconds is None:
        return "—"
    return "∞" if math.isinf(seconds) else f"{seconds * 1e3:.1f}"


def _ms(seconds) -> str:
    if seconds is None:
        return "—"
    if math.isinf(seconds):
        return "∞"
    return f"{seconds * 1e3:.1f} ms"


# --- the fluid model's scenario, shared by `bounds`, `fluid` and `figures` ---

Flows = Annotated[int, typer.Option("--flows", "-n", help="N: new flows arriving at t = 0.")]
Rate = Annotated[str, typer.Option(help="Link capacity C, e.g. 20mbit.")]
Size = Annotated[str, typer.Option(help="B: size of each new flow, e.g. 15kb (tc units).")]
Burst = Annotated[str, typer.Option(help="B0: initial burst of each new flow (FIFO, Eq. 9b); "
                                         "default 10 segments of 1460 bytes.")]
Q0 = Annotated[str, typer.Option("--q0", help="q0: the CCA's queueing-delay target.")]
Tau = Annotated[Optional[str], typer.Option(help="τ: the CCA's feedback loop; default one RTT.")]
CcaName = Annotated[str, typer.Option("--cca", help="CCA whose probing period sets k: "
                                      f"{', '.join(cca.PROBING_PERIOD_RTTS)} (Appx. B.5).")]
Rtt = Annotated[str, typer.Option(help="Round-trip time, e.g. 40ms.")]
KOpt = Annotated[Optional[str], typer.Option(
    "--k", help="Responsiveness k directly: 1000 (s^-2) or 0.001/ms^2.")]
Period = Annotated[Optional[str], typer.Option(help="Probing period; k = (2π/period)².")]
Interval = Annotated[str, typer.Option(help="Confucius' doubling interval 1/λ.")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON only (for scripts).")]
Out = Annotated[Path, typer.Option(help="Directory for the figures.")]

_K_FORM = re.compile(r"^\s*([0-9.eE+-]+)\s*(?:/\s*([a-zA-Z]+)\s*(?:\^\s*2|2|²))?\s*$")


def parse_responsiveness(text: str) -> float:
    """k in s^-2 from `1000`, `1000/s^2` or `0.001/ms^2` (the unit read by parse_time)."""
    match = _K_FORM.match(text)
    try:
        number = float(match.group(1)) if match else None
    except ValueError:
        number = None
    if number is None:
        raise ModelInputError(f"cannot read k {text!r}: expected a number in s^-2, or a "
                              "number per squared time unit such as 0.001/ms^2")
    try:
        unit = parse_time("1" + match.group(2)) if match.group(2) else 1.0
    except UnitError:
        raise ModelInputError(f"cannot read k {text!r}: {match.group(2)!r} is not a time unit "
                              "(use s, ms or us, as in 0.001/ms^2)")
    return number / unit ** 2


def _responsiveness(cca_name: str, rtt: float, k: Optional[str], period: Optional[str]):
    """k and a note on where it came from."""
    if k is not None and period is not None:
        raise ModelInputError("give either --k or --period, not both")
    if k is not None:
        return parse_responsiveness(k), "given"
    if period is not None:
        return cca.responsiveness_from_period(parse_time(period)), f"period {period}"
    periods = cca.PROBING_PERIOD_RTTS.get(cca_name.lower())
    return cca.responsiveness(cca_name, rtt), f"{cca_name}: {periods:g} RTTs"


def build_scenario(flows, rate, size, burst, q0, tau, cca_name, rtt, k, period, interval):
    rtt_s = parse_time(rtt)
    k_value, k_source = _responsiveness(cca_name, rtt_s, k, period)
    sc = FluidScenario(flows=flows, capacity=parse_rate(rate), flow_size=8 * parse_size(size),
                       initial_burst=8 * parse_size(burst), q0=parse_time(q0),
                       tau=parse_time(tau) if tau is not None else rtt_s, k=k_value,
                       lam=1.0 / _positive_interval(interval))
    return sc, k_source


def _positive_interval(text: str) -> float:
    value = parse_time(text)
    if value <= 0:
        raise ModelInputError(f"the doubling interval must be positive, got {text!r}")
    return value


def _scenario_json(sc: FluidScenario, k_source: str) -> dict:
    return {"flows": sc.flows, "capacity_bps": sc.capacity, "flow_size_bits": sc.flow_size,
            "initial_burst_bits": sc.initial_burst, "q0_s": sc.q0, "tau_s": sc.tau,
            "k_per_s2": sc.k, "k_source": k_source, "lambda_per_s": sc.lam,
            "probing_period_s": cca.probing_period(sc.k)}


def _scenario_caption(sc: FluidScenario, k_source: str) -> str:
    return (f"N={sc.flows}, C={sc.capacity / 1e6:g} Mbit/s, B={sc.flow_size / 8:g} B, "
            f"B0={sc.initial_burst / 8:g} B, q0={_ms(sc.q0)}, τ={_ms(sc.tau)}, "
            f"k={sc.k:.4g} s^-2 = {sc.k * 1e-6:.4g} ms^-2 ({k_source}), "
            f"1/λ={_ms(1 / sc.lam)}")


# --- bounds ---

def bounds_report(sc: FluidScenario) -> dict:
    table = bounds.table1(sc)
    ramp, total = policies.ramp_end("confucius", sc), sc.flows * sc.flow_size
    f0, f1, f2 = bounds.confucius_series_coefficients(sc.k, sc.q0, sc.tau)
    peaks = {}
    for name in ("fq", "cbq") + (("fifo",) if policies.fifo_share(sc) > 0 else ()):
        share = float(policies.share(name, sc, 0.0))
        value, exact = bounds.first_peak_constant_share(share, sc.k, sc.q0, sc.tau)
        peaks[name] = {"q_max_s": value, "exact": exact}
    return {
        "table1": {p: {"q_max_s": _json_number(q), "fct_degradation_s": d}
                   for p, (q, d) in table.items()},
        "confucius": {
            "series_F0_s": f0, "series_F1_s2": f1, "series_F2_s3": f2,
            "q_max_series_eq29_s": bounds.q_max_confucius_series(sc.k, sc.q0, sc.tau, sc.lam),
            "fct_degradation_eq31_s": bounds.fct_degradation_confucius(sc.flows, sc.lam),
            "fct_degradation_exact_eq9d_s":
                bounds.fct_degradation_confucius_exact(sc.flows, sc.lam),
            "fct_degradation_exact_paper002_s":
                bounds.fct_degradation_confucius002_exact(sc.flows, sc.lam),
            "flows_outlast_ramp": policies.web_service("confucius", sc, ramp) < total,
            "fct_degradation_eq8_numeric_s":
                policies.fct("confucius", sc) - policies.fct("fq", sc),
        },
        "fct_fq_eq15_s": bounds.fct_fq(sc.flows, sc.flow_size, sc.capacity),
        "first_peak_constant_share": peaks,
    }


_EQUATIONS = {"fq": "Eq. 14, 15", "fifo": "Eq. 18", "cbq": "Eq. 19, 20",
              "confucius": "Eq. 30, 32"}


@app.command("bounds")
def bounds_command(flows: Flows = 10, rate: Rate = "20mbit", size: Size = "15kb",
                   burst: Burst = "14600", q0: Q0 = "0ms", tau: Tau = None,
                   cca_name: CcaName = "copa", rtt: Rtt = "40ms", k: KOpt = None,
                   period: Period = None, interval: Interval = "250ms",
                   as_json: JsonFlag = False):
    """Closed forms of paper 000 Table 1 / paper 002 Table I (q_max and T_P − T_FQ)."""
    with _user_errors():
        sc, k_source = build_scenario(flows, rate, size, burst, q0, tau, cca_name, rtt, k,
                                      period, interval)
        report = bounds_report(sc)
    if as_json:
        _emit_json({"scenario": _scenario_json(sc, k_source), **report})
        return
    console = Console()
    console.print(_scenario_caption(sc, k_source), highlight=False)
    table = Table(title="Table 1 (paper 000) — closed-form approximations")
    for column in ("policy", "q_max", "T_P − T_FQ", "equations"):
        table.add_column(column, justify="left" if column in ("policy", "equations")
                         else "right")
    for policy, row in report["table1"].items():
        q_max = row["q_max_s"] if row["q_max_s"] is not None else math.inf
        table.add_row(policy, _ms(q_max), _ms(row["fct_degradation_s"]), _EQUATIONS[policy])
    console.print(table)
    details = Table(title="More closed forms", show_header=True)
    details.add_column("quantity")
    details.add_column("value", justify="right")
    conf = report["confucius"]
    details.add_row("Confucius q_max, unsimplified series f(λ) (Eq. 29)",
                    _ms(conf["q_max_series_eq29_s"]))
    outlast = "" if conf["flows_outlast_ramp"] else " [assumes flows outlast the ramp: " \
        "not so for this B]"
    details.add_row(f"Confucius T − T_FQ as printed (Eq. 31){outlast}",
                    _ms(conf["fct_degradation_eq31_s"]))
    details.add_row(f"Confucius T − T_FQ, Eq. 8 integrated exactly (Eq. 9d){outlast}",
                    _ms(conf["fct_degradation_exact_eq9d_s"]))
    details.add_row(f"Confucius T − T_FQ, Eq. 8 exactly, paper 002 curve{outlast}",
                    _ms(conf["fct_degradation_exact_paper002_s"]))
    details.add_row("Confucius T − T_FQ, Eq. 8 solved for this N and B (Eq. 9d)",
                    _ms(conf["fct_degradation_eq8_numeric_s"]))
    details.add_row("T_FQ (Eq. 15)", _ms(report["fct_fq_eq15_s"]))
    for name, peak in report["first_peak_constant_share"].items():
        how = "exact" if peak["exact"] else "approximate: peak after 2τ"
        details.add_row(f"{name} first peak of the model, derived ({how})",
                        _ms(peak["q_max_s"]))
    console.print(details)


# --- fluid ---

def _policy_list(text: str) -> list:
    names = list(policies.POLICIES + policies.CLOSED_LOOP_POLICIES) if text == "all" else \
        [p.strip().lower() for p in text.split(",") if p.strip()]
    if not names:
        raise ModelInputError("no policy given")
    for name in names:
        policies.check_policy(name, closed_loop=True)
    return names


def fluid_report(sc: FluidScenario, names: list, gain: str, release: bool,
                 duration: Optional[float], step: Optional[float]) -> tuple:
    """Rows (one per policy) and the solved runs."""
    table1 = bounds.table1(sc)
    t_fq = policies.fct("fq", sc)
    rows, runs = [], []
    for name in names:
        try:
            fluid.check_solvable(name, sc)
        except ModelInputError as err:
            rows.append({"policy": name, "skipped": str(err)})
            continue
        check = fluid.convergence(name, sc, gain=gain, release=release, duration=duration,
                                  step=step)
        run = check.run
        runs.append(run)
        closed = table1["confucius" if name.startswith("confucius") else name][0]
        t_p = fluid.fct_eq8(run, sc) if name in policies.CLOSED_LOOP_POLICIES else policies.fct(name, sc)
        rows.append({
            "policy": name, "q_max_s": run.q_max, "t_at_q_max_s": run.t_at_q_max,
            "q_max_table1_s": _json_number(closed),
            "model_over_table1": _json_number(run.q_max / closed) if closed else None,
            "fct_eq8_s": t_p, "fct_degradation_s": None if t_p is None else t_p - t_fq,
            "fct_work_conserving_s": fluid.fct_work_conserving(run, sc),
            "step_s": run.step, "duration_s": float(run.t[-1]),
            "q_max_change_when_step_halved": check.relative_change,
        })
    return rows, runs


@app.command("fluid")
def fluid_command(policy: Annotated[str, typer.Option(
                      help="Comma-separated policies, or all: "
                           f"{', '.join(policies.POLICIES + policies.CLOSED_LOOP_POLICIES)}.")
                  ] = "all",
                  flows: Flows = 10, rate: Rate = "20mbit", size: Size = "15kb",
                  burst: Burst = "14600", q0: Q0 = "0ms", tau: Tau = None,
                  cca_name: CcaName = "copa", rtt: Rtt = "40ms", k: KOpt = None,
                  period: Period = None, interval: Interval = "250ms",
                  gain: Annotated[str, typer.Option(
                      help="Scale of k in Eq. 4: 'served' (k·r(t−τ), default) or 'link' "
                           "(k·C).")] = "served",
                  release: Annotated[bool, typer.Option(
                      help="Give the link back to the real-time flow once the new flows "
                           "have received N·B (work-conserving count); the paper keeps r(t) "
                           "as in Eq. 9 for ever.")] = False,
                  duration: Annotated[Optional[str], typer.Option(
                      help="Time simulated after the burst; default covers the ramp, ten "
                           "oscillations and the new flows' completion.")] = None,
                  step: Annotated[Optional[str], typer.Option(
                      help="Integration step (rounded to divide τ).")] = None,
                  plot: Annotated[bool, typer.Option(help="Write q(t), s(t), r(t) to --out.")
                              ] = False,
                  out: Out = DEFAULT_OUT, as_json: JsonFlag = False):
    """Solve the fluid model (Eqs. 4–9) numerically: q(t), s(t), r(t), q_max, FCT."""
    with _user_errors():
        sc, k_source = build_scenario(flows, rate, size, burst, q0, tau, cca_name, rtt, k,
                                      period, interval)
        fluid.check_gain(gain)
        names = _policy_list(policy)
        rows, runs = fluid_report(sc, names, gain, release,
                                  parse_time(duration) if duration is not None else None,
                                  parse_time(step) if step is not None else None)
    plot_path = str(_plots().fluid_timeseries(runs, sc, out)) if plot and runs else None
    if as_json:
        _emit_json({"scenario": _scenario_json(sc, k_source), "gain": gain,
                    "release": release, "policies": rows, "plot": plot_path})
        return
    Console().print(_scenario_caption(sc, k_source), highlight=False)
    table = Table(title=f"Fluid model, numerical solution ({gain} gain"
                        f"{', link released at completion' if release else ''})")
    for column in ("policy", "q_max (ms)", "at t (ms)", "Table 1 (ms)", "÷ Table 1",
                   "FCT Eq. 8 (ms)", "T_P − T_FQ (ms)", "FCT work-cons. (ms)",
                   "q_max Δ at h/2"):
        table.add_column(column, justify="left" if column == "policy" else "right",
                         no_wrap=column == "policy")
    skipped = [row for row in rows if "skipped" in row]
    for row in rows:
        if "skipped" in row:
            continue
        ratio = row["model_over_table1"]
        closed = row["q_max_table1_s"]
        table.add_row(row["policy"], _number_ms(row["q_max_s"]),
                      _number_ms(row["t_at_q_max_s"]),
                      _number_ms(closed if closed is not None else math.inf),
                      f"{ratio:.3f}" if ratio is not None else "—",
                      _number_ms(row["fct_eq8_s"]), _number_ms(row["fct_degradation_s"]),
                      _number_ms(row["fct_work_conserving_s"]),
                      f"{row['q_max_change_when_step_halved'] * 100:.2f} %")
    steps = sorted({f"{r['step_s'] * 1e3:.3g}" for r in rows if "step_s" in r})
    table.caption = f"Heun step {', '.join(steps)} ms; Δ = change of q_max when it is halved"
    Console().print(table)
    for row in skipped:
        Console().print(f"{row['policy']} skipped: {row['skipped']}", highlight=False)
    if plot_path:
        Console().print(f"wrote {plot_path}")


def _plots():
    from . import plots  # matplotlib is only imported when a figure is asked for
    return plots


# --- per-CCA queueing ---

def _named_numbers(text: str, what: str, read) -> dict:
    """`reno=50,cubic=50` -> {"reno": read("50"), ...}."""
    values = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ModelInputError(f"cannot read {what} {text!r}: expected name=value pairs "
                                  "separated by commas, e.g. reno=50,cubic=50,bbr=50")
        try:
            values[name.strip().lower()] = read(value.strip())
        except ValueError:
            raise ModelInputError(f"cannot read {what} for {name.strip()}: {value!r}")
    return values


def _load_params(spec: str) -> aggressiveness.AggressivenessParams:
    if spec in presets.PARAMETERS:
        return presets.PARAMETERS[spec]
    path = Path(spec)
    if not path.exists():
        raise ModelInputError(f"{spec!r} is neither a preset ({', '.join(presets.PARAMETERS)}) "
                              "nor a parameter file")
    return aggressiveness.load(path)


def _counts(params, flows_text: Optional[str], scenario_name: str) -> list:
    given = _named_numbers(flows_text, "flow counts", float) if flows_text else \
        presets.scenario(scenario_name)
    for name in given:
        params.index(name)
    return [flow_count(f"flows of {c}", given.get(c, 0)) for c in params.ccas]


def _distribution(params, counts, f1: Optional[float], classifier: Optional[str],
                  classifier_interval: str, accuracy_text: Optional[str]):
    """A, and a note on how the classifier was described."""
    chosen = [x is not None for x in (f1, classifier, accuracy_text)]
    if sum(chosen) > 1:
        raise ModelInputError("give one of --f1, --classifier, --accuracy")
    if classifier is not None or accuracy_text is not None:
        if classifier is not None:
            interval = parse_time(classifier_interval)
            acc = presets.classifier_accuracy(classifier, interval)
            note = f"{classifier}, {interval:g} s interval (paper 003 Table I)"
        else:
            acc = _named_numbers(accuracy_text, "per-CCA accuracy", float)
            note = "per-CCA accuracy given"
        missing = [c for c in params.ccas if c not in acc]
        if missing:
            raise ModelInputError(f"no accuracy for {', '.join(missing)}")
        return percca.flow_distribution_from_accuracy([acc[c] for c in params.ccas],
                                                      counts), note
    f1 = 0.83 if f1 is None else f1
    return percca.flow_distribution(f1, params.training_g(), counts), f"F1 = {f1:g} (Eq. 7–13)"


def _classes(params, text: str) -> list:
    return [[params.index(name.strip()) for name in group.split("+")]
            for group in text.split(",")]


def percca_report(params, counts, a, classes_text: Optional[str], models: list,
                  optimise: bool) -> list:
    arrangements = [("shared buffer", percca.shared_buffer(a)), ("per-CCA", a)]
    if classes_text:
        arrangements.append((f"per-class {classes_text}",
                             percca.merge_queues(a, _classes(params, classes_text))))
    outcomes = []
    for label, queues in arrangements:
        for model in models:
            outcomes.append(percca.evaluate(queues, params, counts, label, model))
            if optimise and queues.shape[1] > 1:
                outcomes.append(percca.evaluate(queues, params, counts, label, model, True))
    return outcomes


@app.command("percca")
def percca_command(
        flows: Annotated[Optional[str], typer.Option(
            help="Flows per CCA, e.g. reno=50,cubic=50,bbr=50 (default: --scenario).")] = None,
        scenario: Annotated[str, typer.Option(
            help=f"Paper 003's flow counts: {', '.join(presets.SCENARIOS)}.")] = "equal",
        f1: Annotated[Optional[float], typer.Option(
            "--f1", help="Classifier accuracy F1 in (0, 1] (Eq. 7–13); default 0.83.")] = None,
        classifier: Annotated[Optional[str], typer.Option(
            help=f"Published classifier instead of --f1: "
                 f"{', '.join(presets.CLASSIFIERS)}.")] = None,
        classifier_interval: Annotated[str, typer.Option(
            "--interval", help="The classifier's interval: 1s, 5s or 10s.")] = "1s",
        accuracy: Annotated[Optional[str], typer.Option(
            help="Per-CCA accuracies instead of --f1, e.g. reno=0.8,cubic=0.8,bbr=0.95.")
        ] = None,
        params: Annotated[str, typer.Option(
            help="Aggressiveness parameters: a preset (paper003) or a JSON file from "
                 "`percca-fit`.")] = "paper003",
        classes: Annotated[Optional[str], typer.Option(
            help="Also model per-CCA-class queues, e.g. reno+cubic,bbr.")] = None,
        model: Annotated[str, typer.Option(help="simple, advanced or both.")] = "both",
        optimise: Annotated[bool, typer.Option(
            "--optimise/--no-optimise",
            help="Also choose the service rates that maximise MinThr (§III-F).")] = True,
        matrix: Annotated[bool, typer.Option(help="Show the flow distribution A.")] = False,
        as_json: JsonFlag = False):
    """Per-CCA queueing models of paper 003: MinThr for shared, per-CCA, per-class queues."""
    with _user_errors():
        prm = _load_params(params)
        counts = _counts(prm, flows, scenario)
        a, classifier_note = _distribution(prm, counts, f1, classifier, classifier_interval,
                                           accuracy)
        if model not in ("both",) + percca.MODELS:
            raise ModelInputError(f"unknown model {model!r}: choose simple, advanced or both")
        models = list(percca.MODELS) if model == "both" else [model]
        outcomes = percca_report(prm, counts, a, classes, models, optimise)
    if as_json:
        _emit_json({
            "ccas": list(prm.ccas), "flows": dict(zip(prm.ccas, counts)),
            "classifier": classifier_note, "flow_distribution": a,
            "row_sums": a.sum(axis=1), "diagonal_sum": float(a.trace()),
            "outcomes": [{"arrangement": o.arrangement, "model": o.model,
                          "service_rates": "optimised" if o.optimised else "per flow",
                          "queue_rates": o.rates, "min_thr": o.min_thr,
                          "normalised_throughput": {c: _json_number(v) for c, v in
                                                    zip(prm.ccas, o.normalised)}}
                         for o in outcomes]})
        return
    console = Console()
    table = Table(title="Per-CCA queueing (paper 003), MinThr = min_i avgThr_i / fair share",
                  caption=f"flows: {dict(zip(prm.ccas, counts))}; classifier: "
                          f"{classifier_note}; parameters: {params}")
    for column in ("queues", "model", "service rates", "MinThr", *prm.ccas, "queue rates"):
        table.add_column(column, justify="left" if column in ("queues", "model",
                                                              "service rates") else "right")
    for o in outcomes:
        table.add_row(o.arrangement, o.model, "optimised" if o.optimised else "∝ flows",
                      f"{o.min_thr:.3f}", *[("—" if math.isnan(v) else f"{v:.3f}")
                                            for v in o.normalised],
                      " ".join(f"{r:.3f}" for r in o.rates))
    console.print(table)
    if matrix:
        grid = Table(title="Flow distribution A (row: CCA, column: classified as)",
                     caption=f"row sums = N_i/N, diagonal sum = {a.trace():.4f}")
        grid.add_column("CCA")
        for name in prm.ccas:
            grid.add_column(name, justify="right")
        for name, row in zip(prm.ccas, a):
            grid.add_row(name, *[f"{v:.4f}" for v in row])
        console.print(grid)


def _fit_measurements(pairs: Optional[Path], shared: Optional[Path]) -> tuple:
    """(pair rows for fit_pairs, per-CCA per-flow throughput for Eq. 6) from the CSV files
    (`confucius report percca-fit-inputs` writes them from the lab's runs; `confucius percca
    fit` fits the lab's runs directly)."""
    if pairs is None and shared is None:
        raise ModelInputError("give --pairs and/or --shared measurements")
    return (fitting.read_pairs_csv(pairs) if pairs else [],
            fitting.read_shared_csv(shared) if shared else {})


@app.command("percca-fit")
def percca_fit_command(
        pairs: Annotated[Optional[Path], typer.Option(
            help="CSV cca_i,cca_j,x_i,thr_i,thr_j from two-CCA shared-buffer runs.")] = None,
        shared: Annotated[Optional[Path], typer.Option(
            help="CSV cca,thr: per-flow throughput per CCA, shared buffer, equal counts.")
        ] = None,
        base: Annotated[str, typer.Option(
            help="Take what is not measured from this preset or file; 'none' for nothing.")
        ] = "paper003",
        write: Annotated[Optional[Path], typer.Option(
            help="Write the parameters as JSON for `percca --params`.")] = None,
        as_json: JsonFlag = False):
    """Fit g_i (Eq. 6) and g_ij(x) = w·e^(m·x) (§II-E) from measured throughputs."""
    with _user_errors():
        pair_rows, shared_values = _fit_measurements(pairs, shared)
        fits = fitting.fit_pairs(pair_rows) if pair_rows else []
        g = fitting.training_aggressiveness(shared_values) if shared_values else {}
        base_params = None if base == "none" else _load_params(base)
        result = fitting.params_from_fits(g, fits, base_params)
    if write is not None:
        write.parent.mkdir(parents=True, exist_ok=True)
        write.write_text(json.dumps(result.to_json(), indent=2) + "\n")
    if as_json:
        _emit_json({"fits": [{"i": f.i, "j": f.j, "w": f.w, "m": f.m, "r_squared": f.r_squared,
                              "samples": f.samples} for f in fits],
                    "g": g, "params": result.to_json(),
                    "written": str(write) if write else None})
        return
    console = Console()
    table = Table(title="Relative aggressiveness g_ij(x_i) = w·e^(m·x_i)")
    for column in ("i", "j", "w", "m", "R²", "samples"):
        table.add_column(column, justify="left" if column in ("i", "j") else "right")
    for f in fits:
        table.add_row(f.i, f.j, f"{f.w:.4g}", f"{f.m:.4g}", f"{f.r_squared:.3f}",
                      str(f.samples))
    console.print(table)
    if g:
        console.print("training aggressiveness (Eq. 6): " +
                      ", ".join(f"g_{c} = {v:.4f}" for c, v in g.items()))
    if write is not None:
        console.print(f"wrote {write}")


# --- figures ---

@app.command("figures")
def figures_command(flows: Flows = 10, rate: Rate = "20mbit", size: Size = "15kb",
                    burst: Burst = "14600", q0: Q0 = "5ms", tau: Tau = None,
                    cca_name: CcaName = "copa", rtt: Rtt = "40ms", k: KOpt = None,
                    period: Period = None, interval: Interval = "250ms",
                    params: Annotated[str, typer.Option(
                        help="Per-CCA parameters: preset or JSON file.")] = "paper003",
                    points: Annotated[int, typer.Option(
                        help="Points per Fig. 19 sweep (each one solves the model).")] = 15,
                    out: Out = DEFAULT_OUT, as_json: JsonFlag = False):
    """All model figures: Fig. 19 (000), Fig. 9 (002), q(t) per policy, Figs. 2–6 (003)."""
    with _user_errors():
        sc, _ = build_scenario(flows, rate, size, burst, q0, tau, cca_name, rtt, k, period,
                               interval)
        prm = _load_params(params)
        plots = _plots()
        runs = [fluid.solve(p, sc) for p in policies.POLICIES
                if p != "fifo" or policies.fifo_share(sc) > 0]
        paths = [plots.fluid_timeseries(runs, sc, out), plots.available_bandwidth(sc, out),
                 *plots.bound_sweeps(sc, out, points), *plots.percca_figures(prm, out)]
    if as_json:
        _emit_json({"figures": [str(p) for p in paths]})
        return
    for path in paths:
        Console().print(f"wrote {path}")


def main() -> None:  # `python -m confucius.models.cli`
    app()


if __name__ == "__main__":
    sys.exit(main())
