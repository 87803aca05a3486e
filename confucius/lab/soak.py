# SPDX-License-Identifier: MIT
"""The debug kernel's soak (issue 15): sch_confucius under mixed traffic and a
`tc qdisc change` every second, inside a debug kernel (KASAN, lockdep, kmemleak, UBSAN,
debug objects): the UML one (`make uml-debug`) or the x86_64 one under qemu with 2 vCPUs
and DEBUG_ATOMIC_SLEEP (`make debug-kernel-x86`); then what the kernel's checkers found.

The guest side is tests/kernel/guest_soak.py. This side boots it, then reads the run's
results: the kernel log cut into reports (each with its kind, title and whether it
involves our module, whose frames are resolved to file:line), kmemleak's findings after
the soak, slab usage before and after, the traffic carried and the changes applied. Any
kernel report, and any leak kmemleak traces to our module, is a release blocker: the
summary says so and the command exits 1.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import kernels
from .engine import KERNEL_PROBLEM, REPO, LabError, VMResult

GUEST = REPO / "tests" / "kernel" / "guest_soak.py"
MODULE = "sch_confucius"
# The kernels the soak runs in (kernels.KERNELS): the debug kernels, and `uml` for a
# trial of the soak itself, without the checkers.
KERNELS = ("uml-debug", "uml", "x86-debug")
# What the guest's traffic is scaled by in each engine (SOAK_SCALE, guest_soak.py): the
# x86 kernel runs emulated (TCG) and carries far less than UML, which runs natively.
TRAFFIC_SCALE = {"uml": 1.0, "qemu": 0.1}
# Wall-clock seconds the run may take beyond the soak: boot, the suites' set-up, two
# kmemleak scans of a debug kernel and the tear-down.
OVERHEAD_S = 900.0
# A report ends at its trace's end marker, at a rule of '=' (KASAN, lockdep) or after
# this many lines.
REPORT_LINES = 80
REPORT_END = re.compile(r"---\[ end trace|^=+$")
TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\]\s?")
# The first line of every stack dump (dump_stack, WARN, a checker's report).
DUMP_START = re.compile(r"^CPU: \d+ PID: \d+ Comm: ")
# The line before a lockdep report's own dump, which a long report reaches after REPORT_LINES.
LOCKDEP_TAIL = "stack backtrace:"
# A stack frame of our module: "func+0x1a/0x40 [sch_confucius]". Frames the unwinder
# marks with "?" are stale words on the stack, not callers: they do not count.
MODULE_FRAME = re.compile(rf"\] (\w+\+0x[0-9a-f]+/0x[0-9a-f]+) \[{MODULE}\]")
KMEMLEAK_OBJECT = re.compile(r"^unreferenced object 0x[0-9a-f]+ \(size (\d+)\)")
KMEMLEAK_COMM = re.compile(r'comm "([^"]*)"')


@dataclass
class Report:
    title: str
    lines: list[str]
    in_module: bool = False
    module_frames: list[str] = field(default_factory=list)   # func+off/len: file:line


def _strip(line: str) -> str:
    return TIMESTAMP.sub("", line.rstrip())


def _starts_report(line: str) -> bool:
    return bool(KERNEL_PROBLEM.search(line)) and "Call Trace:" not in line


def _starts_bare_dump(line: str, previous: str, current: Report | None) -> bool:
    """A stack dump outside any report: some code called dump_stack() after a message of
    its own, which the dump follows."""
    return bool(DUMP_START.match(line)) and current is None and previous != LOCKDEP_TAIL


def _past_trace(report: Report, line: str) -> bool:
    """A dump without an end marker ends at the first line after its call trace that is
    not one of its frames (these are indented)."""
    return "Call Trace:" in report.lines and not line.startswith(" ")


def kernel_reports(log: str) -> list[Report]:
    """The kernel log cut into reports: each starts at a line the lab counts as a
    problem (engine.KERNEL_PROBLEM), or at the message before a stack dump of its own,
    and runs to its end marker (a bare dump: to its call trace's end)."""
    reports: list[Report] = []
    current: Report | None = None
    bare = False
    previous = ""
    for line in map(_strip, log.splitlines()):
        if current is not None and bare and _past_trace(current, line):
            current = None
        if _starts_bare_dump(line, previous, current):
            current, bare = Report(title=previous, lines=[previous, line]), True
            reports.append(current)
        # A headline after the first few lines of a report starts the next one.
        elif _starts_report(line) and (current is None or len(current.lines) >= 3):
            current, bare = Report(title=line, lines=[line]), False
            reports.append(current)
        elif current is not None:
            current.lines.append(line)
            if (REPORT_END.search(line) and len(current.lines) > 3) or len(current.lines) >= REPORT_LINES:
                current = None
        previous = line
    for report in reports:
        report.in_module = any(_names_module(line) for line in report.lines)
    return reports


def _names_module(line: str) -> bool:
    return MODULE in line and "] ? " not in line


def kmemleak_objects(report: str) -> list[Report]:
    """kmemleak's report cut into its unreferenced objects, each with its backtrace."""
    objects: list[Report] = []
    for line in report.splitlines():
        if KMEMLEAK_OBJECT.match(line.strip()):
            objects.append(Report(title=line.strip(), lines=[line.strip()]))
        elif objects:
            objects[-1].lines.append(line.rstrip())
    for leak in objects:
        leak.in_module = any(_names_module(line) for line in leak.lines)
    return objects


def slab_usage(slabinfo: str) -> dict[str, int]:
    """Bytes held by each slab cache (objects allocated times object size)."""
    usage = {}
    for line in slabinfo.splitlines():
        if line.startswith(("slabinfo", "#")) or not line.strip():
            continue
        name, _active, num_objs, objsize = line.split()[:4]
        usage[name] = int(num_objs) * int(objsize)
    return usage


def slab_deltas(before: str, after: str, top: int = 8) -> dict:
    """Total slab bytes before and after, and the caches that grew most."""
    old, new = slab_usage(before), slab_usage(after)
    growth = {name: new.get(name, 0) - old.get(name, 0) for name in set(old) | set(new)}
    grown = sorted((item for item in growth.items() if item[1] > 0), key=lambda item: -item[1])
    return {"before_bytes": sum(old.values()), "after_bytes": sum(new.values()),
            "grew": dict(grown[:top]),
            "module_caches": {name: delta for name, delta in growth.items() if "confucius" in name}}


def resolve_frames(reports: list[Report], module: Path, source: Path) -> None:
    """Our module's frames in each report, as file:line (the faddr2line of the kernel
    `source` on the module built with debug information)."""
    script = source / "scripts" / "faddr2line"
    for report in reports:
        frames = sorted({m.group(1) for line in report.lines for m in MODULE_FRAME.finditer(line)})
        for frame in frames:
            where = "?"
            if script.is_file() and module.is_file():
                done = subprocess.run([str(script), str(module), frame], capture_output=True, text=True)
                where = " | ".join(line.split(" at ", 1)[-1] for line in done.stdout.splitlines()
                                   if " at " in line) or "?"
            report.module_frames.append(f"{frame}: {where}")


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.is_file() else ""


def summarise(results: Path, module: Path | None = None, source: Path | None = None) -> dict:
    """What the soak in `results` (a run's results folder) carried and what the kernel's
    checkers found there (frames in `module` resolved with the kernel `source`'s tools)."""
    soak = json.loads(_read(results / "soak.json") or "{}")
    reports = kernel_reports(_read(results / "dmesg.txt") or _read(results / "console.log"))
    leaks = kmemleak_objects(_read(results / "kmemleak.txt"))
    if module is not None and source is not None:
        resolve_frames(reports + leaks, module, source)
    boot_leaks = kmemleak_objects(_read(results / "kmemleak-boot.txt"))
    summary = {
        "completed": bool(soak),
        "seconds": soak.get("seconds"),
        "traffic": soak.get("traffic", {}),
        "changes": soak.get("changes", 0),
        "changes_refused": soak.get("refused", []),
        "seconds_with_change": soak.get("seconds_with_change"),
        "change_window_s": soak.get("change_window_s"),
        "change_reply_ms": soak.get("reply_ms"),
        "changer_error": soak.get("changer_error"),
        "module_removed": soak.get("module_removed"),
        "kmemleak_ran": soak.get("kmemleak", True),
        "kernel_reports": [asdict(r) for r in reports],
        "kmemleak": [asdict(r) for r in leaks],
        "kmemleak_at_boot": len(boot_leaks),
        "slab": (slab_deltas(_read(results / "slabinfo-before.txt"), _read(results / "slabinfo-after.txt"))
                 if (results / "slabinfo-after.txt").is_file() else {}),
    }
    summary["kmemleak_elsewhere_by_comm"] = _by_comm(leak for leak in leaks if not leak.in_module)
    # With SLUB and module memory known to kmemleak (kernel/uml/debug.*) a boot leaves no
    # unreferenced object, so each one is a finding, traced to our module or not: an skb
    # our qdisc leaked, say, was allocated by the stack, not by us.
    summary["blockers"] = (len(reports) + len(leaks) + len(boot_leaks)
                           + (0 if summary["completed"] else 1) + (1 if summary["changer_error"] else 0))
    return summary


def _by_comm(leaks) -> dict[str, int]:
    counts: dict[str, int] = {}
    for leak in leaks:
        found = KMEMLEAK_COMM.search("\n".join(leak.lines))
        comm = found.group(1) if found else "?"
        counts[comm] = counts.get(comm, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def format_summary(summary: dict) -> str:
    """The summary as text, one fact a line (the same facts as its JSON)."""
    seconds = summary["seconds"]
    out = [f"soak: {'completed' if summary['completed'] else 'DID NOT COMPLETE'}"
           + ("" if seconds is None else f" after {seconds:.0f} s of traffic")]
    for name, figures in summary["traffic"].items():
        out.append(f"traffic {name}: {json.dumps(figures)}")
    out.append(f"tc qdisc change: {summary['changes']} applied, {len(summary['changes_refused'])} refused")
    out += [f"  refused: {r['options']}: {r['error']}" for r in summary["changes_refused"][:5]]
    if summary["seconds_with_change"] is not None:
        out.append(f"  a change applied in {summary['seconds_with_change']} of {summary['change_window_s']} seconds;"
                   f" tc's reply in {summary['change_reply_ms']['median']} ms (median),"
                   f" {summary['change_reply_ms']['max']} ms at most")
    if summary["changer_error"]:
        out.append(f"  the changer stopped: {summary['changer_error']}")
    out.append(f"module removed at the end: {summary['module_removed']}")
    slab = summary["slab"]
    if slab:
        out.append(f"slab: {slab['before_bytes'] / 1024:.0f} KiB before, {slab['after_bytes'] / 1024:.0f} KiB after")
        out += [f"  grew: {name} +{delta / 1024:.1f} KiB" for name, delta in slab["grew"].items()]
        out += [f"  our cache {name}: {delta:+d} B" for name, delta in slab["module_caches"].items()]
    if summary["kmemleak_ran"]:
        out.append(f"kmemleak after the soak: {len(summary['kmemleak'])} unreferenced objects"
                   f" ({sum(r['in_module'] for r in summary['kmemleak'])} from {MODULE});"
                   f" {summary['kmemleak_at_boot']} at boot (the module loaded, before the soak)")
    else:
        out.append("kmemleak: not in this kernel (a trial of the soak, not the debug kernel's soak)")
    elsewhere = summary["kmemleak_elsewhere_by_comm"]
    if elsewhere:
        out.append("  not from our module, by program: "
                   + ", ".join(f"{comm} {count}" for comm, count in elsewhere.items()))
    out.append(f"kernel log: {len(summary['kernel_reports'])} reports"
               f" ({sum(r['in_module'] for r in summary['kernel_reports'])} involve {MODULE})")
    module_leaks = [leak for leak in summary["kmemleak"] if leak["in_module"]]
    for report in summary["kernel_reports"] + module_leaks:
        out.append(f"  {'[' + MODULE + '] ' if report['in_module'] else ''}{report['title']}")
        out += [f"    at {frame}" for frame in report["module_frames"]]
    out.append("RELEASE BLOCKER: see above" if summary["blockers"]
               else "no kernel report, no unreferenced object")
    return "\n".join(out)


def _boot(kernel: kernels.GuestKernel, results: Path, minutes: float, echo: bool) -> VMResult:
    """The guest side run in the soak kernel `kernel`."""
    return kernel.run(GUEST, results_dir=results, timeout=minutes * 60 + OVERHEAD_S, echo=echo,
                      env={"SOAK_MINUTES": str(minutes), "SOAK_SCALE": str(TRAFFIC_SCALE[kernel.engine])})


def run(minutes: float, out: Path, echo: bool = True, kernel: str = "uml-debug") -> dict:
    """Boot a debug kernel (KERNELS; or, for a trial of the soak itself, the lab's UML
    kernel, which has none of the checkers), soak for `minutes` and write summary.txt and
    summary.json into `out` (the run's own files in out/run)."""
    if not minutes > 0:
        raise LabError(f"the soak needs a positive number of minutes, got {minutes!r}")
    guest = kernels.named(kernel, KERNELS, "soak kernel")
    results = out / "run"
    results.mkdir(parents=True, exist_ok=True)
    result = _boot(guest, results, minutes, echo)
    summary = summarise(results, guest.modules / f"{MODULE}.ko", guest.source)
    summary["kernel"] = kernel
    summary["guest"] = {"returncode": result.returncode, "wall_s": round(result.duration, 1),
                        "timed_out": result.timed_out, "output_tail": result.output[-2000:]}
    if result.returncode != 0:
        summary["blockers"] += 1
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    (out / "summary.txt").write_text(format_summary(summary) + "\n")
    return summary
