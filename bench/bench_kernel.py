# SPDX-License-Identifier: MIT
"""Per-packet cost and memory of sch_confucius beside fq_codel, cake and fq, in the real kernel.

`make bench-kernel` runs this file on the host. For each of the lab's User-Mode Linux
kernels (6.1 and 6.12) it boots the kernel on the host's clock (uml.run, time mode "real":
UML runs kernel code natively as a host process, and in real time a nanosecond in the
guest is one on the host) and runs this same file inside it as `guest`, which writes
bench.json into the run's results folder; the host then prints the tables.

Per-packet cost: pktgen in queue_xmit mode sends 100-byte UDP packets through the root
qdisc of a dummy device, which frees them: every packet passes the qdisc under test (but
see the bypass below). Flows are source ports, taken in turn, so a flow's next
packet comes after one of every other flow. One pktgen thread on the guest's one CPU is
the bottleneck: elapsed time over packets is the cost of the whole path. The qdisc's own
cost (enqueue, dequeue and the qdisc layer around them) is that minus the path through
the same device with no qdisc (noqueue, its median over the rounds). Every configuration
is measured at every flow count in each round, the order rotated from round to round.
Shaped means the qdisc's own shaper (confucius, cake) or HTB (fq_codel, fq) at a rate far
above what pktgen reaches, so the shaper's arithmetic runs for every packet and no packet
waits or drops; any drop fails the run. The queue is empty whenever a packet arrives, so a
root qdisc that allows it (pfifo, and fq_codel without filters: TCQ_F_CAN_BYPASS) is
bypassed: the packet goes straight to the device and the qdisc only sees an empty dequeue.
Under HTB there is no bypass, so "pfifo shaped" is HTB's own cost and "fq_codel shaped"
less it is fq_codel's enqueue and dequeue.

Memory: pages the page allocator handed out (free pages, per-CPU lists included, from
/proc/zoneinfo) when INSTANCES dummy devices get the qdisc, per instance; per flow slot, the
slope of that between two sizes of the flow table; per flow seen, what the instances hold
after pktgen sent one packet of each of MEMORY_FLOWS flows through each, beyond what the
same traffic leaves behind with no qdisc. Under HTB, as per-subscriber shaping uses it:
1, 100 and 10 000 leaves of each qdisc at its defaults, one per HTB class, per leaf beyond
what as many pfifo leaves take; confucius's own account of itself (`instance_bytes` in
its statistics) beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

FLOWS = (1, 10, 100, 1000, 10000)
SHAPED_RATE = "100gbit"        # far above pktgen's 100-byte packets here (a few Gbit/s)
PACKET_BYTES = 100
DEV = "bench0"
PKTGEN = Path("/proc/net/pktgen")
PKTGEN_THREAD = PKTGEN / "kpktgend_0"
BASELINE = "noqueue"
REFERENCE = "fq_codel"
# HTB with a pfifo leaf: HTB's own cost, taken from its leaves' to give theirs.
HTB_FLOOR = "pfifo shaped"
HTB_LEAVES = ("fq_codel", "fq")
CONFUCIUS_VARIANTS = tuple(f"confucius {mode} {pace}" for mode in ("flow", "class")
                           for pace in ("adaptive", "fixed"))

# The memory part: instances per measurement, the two flow-table sizes of the slope and the
# flows sent through each instance.
INSTANCES = 64
SLOTS_SMALL, SLOTS_LARGE = 1024, 8192
MEMORY_FLOWS = 1000
MEMORY_DEV = "mem"
# Leaves under one HTB, per reading; cake's 1 MiB each stops it at 100 (10 000 would need
# 10 GiB of the guest's memory). The leaves that everything is read against: pfifo.
HTB_INSTANCES = (1, 100, 10000)
HTB_MAX_LEAVES = {"cake": 100}
HTB_FLOOR_LEAF = "pfifo"
HTB_DEV = "htb0"
GUEST_MEMORY = "4G"


def htb_leaf(leaf: str) -> list[str]:
    """A leaf qdisc under one HTB class at SHAPED_RATE: how fq_codel and fq shape. The
    quantum is set so that HTB does not warn about the one it would derive from the rate."""
    return ["qdisc add dev {dev} root handle 1: htb default 1",
            f"class add dev {{dev}} parent 1: classid 1:1 htb rate {SHAPED_RATE} quantum 1514",
            f"qdisc add dev {{dev}} parent 1:1 {leaf}"]


def configurations() -> dict[str, list[str]]:
    """tc batch lines (with {dev}) of every configuration measured, by name; a shaped
    configuration's name ends in ' shaped'. An empty list is the device's noqueue."""
    unshaped = {BASELINE: [], "pfifo": ["qdisc add dev {dev} root pfifo limit 10000"],
                "fq_codel": ["qdisc add dev {dev} root fq_codel"],
                "cake": ["qdisc add dev {dev} root cake"],
                "fq": ["qdisc add dev {dev} root fq"]}
    shaped = {"pfifo shaped": htb_leaf("pfifo limit 10000"), "fq_codel shaped": htb_leaf("fq_codel"),
              "cake shaped": [f"qdisc add dev {{dev}} root cake bandwidth {SHAPED_RATE}"],
              "fq shaped": htb_leaf("fq")}
    for variant in CONFUCIUS_VARIANTS:
        _, mode, pace = variant.split()
        options = f"confucius mode {mode} pace {pace}"
        unshaped[variant] = [f"qdisc add dev {{dev}} root {options}"]
        shaped[f"{variant} shaped"] = [f"qdisc add dev {{dev}} root {options} bandwidth {SHAPED_RATE}"]
    return {**unshaped, **shaped}


# Memory: each qdisc at its defaults, and with its flow table at two sizes where it has one.
MEMORY_CONFIGURATIONS = {
    "fq_codel": ("fq_codel", "fq_codel flows {slots}"),
    "cake": ("cake", None),
    "fq": ("fq", "fq buckets {slots}"),
    "confucius": ("confucius", "confucius flows {slots}"),
}


# --------------------------------------------------------------------------- the guest

def sh(*argv: str, stdin: str | None = None) -> str:
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def tc_batch(lines: list[str]) -> None:
    if lines:
        sh("tc", "-batch", "-", stdin="\n".join(lines) + "\n")


def ip_batch(lines: list[str]) -> None:
    sh("ip", "-batch", "-", stdin="\n".join(lines) + "\n")


def put_root(dev: str, lines: list[str]) -> None:
    """The device's root qdisc replaced by `lines` (noqueue, the dummy device's own, if empty)."""
    subprocess.run(["tc", "qdisc", "del", "dev", dev, "root"], capture_output=True)
    tc_batch([line.format(dev=dev) for line in lines])


def pktgen_write(path: Path, command: str) -> None:
    # pktgen reads one command per write.
    with open(path, "w") as control:
        control.write(command + "\n")


def pktgen_devices(devices: list[str]) -> None:
    pktgen_write(PKTGEN_THREAD, "rem_device_all")
    for dev in devices:
        pktgen_write(PKTGEN_THREAD, f"add_device {dev}")


def pktgen_flows(dev: str, packets: int, flows: int) -> None:
    for command in (f"count {packets}", "clone_skb 0", f"pkt_size {PACKET_BYTES}", "delay 0",
                    "xmit_mode queue_xmit", "dst 198.51.100.2", "dst_mac 02:00:00:00:00:02",
                    "udp_src_min 10000", f"udp_src_max {10000 + flows - 1}",
                    "udp_dst_min 9", "udp_dst_max 9"):
        pktgen_write(PKTGEN / dev, command)


def pktgen_run(devices: list[str]) -> list[tuple[int, int]]:
    """pktgen started on the devices set up; per device, (packets sent, elapsed ns).
    A packet the qdisc did not take is an error, and fails the run."""
    pktgen_write(PKTGEN / "pgctrl", "start")
    outcome = []
    for dev in devices:
        report = (PKTGEN / dev).read_text()
        found = re.search(r"Result: OK: (\d+)\(c\d+\+d\d+\) usec, (\d+) ", report)
        errors = re.search(r"errors: (\d+)", report)
        if not found or not errors:
            raise RuntimeError(f"pktgen on {dev} did not finish:\n{report}")
        if int(errors.group(1)):
            raise RuntimeError(f"pktgen on {dev}: {errors.group(1)} packets not taken by the qdisc")
        outcome.append((int(found.group(2)), int(found.group(1)) * 1000))
    return outcome


def ns_per_packet(lines: list[str], flows: int, packets: int) -> float:
    put_root(DEV, lines)
    pktgen_flows(DEV, packets, flows)
    [(sent, elapsed_ns)] = pktgen_run([DEV])
    return elapsed_ns / sent


def measure_costs(packets: int, repeats: int, flow_counts: list[int]) -> dict[str, dict[str, list[float]]]:
    """ns per packet of every configuration at every flow count, one value per round."""
    sh("ip", "link", "add", DEV, "type", "dummy")
    sh("ip", "link", "set", DEV, "up")
    pktgen_devices([DEV])
    configs = configurations()
    names = list(configs)
    for name in names:  # warm-up: modules loaded, caches grown, nothing kept
        ns_per_packet(configs[name], flow_counts[-1], packets)
    costs: dict[str, dict[str, list[float]]] = {name: {str(f): [] for f in flow_counts} for name in names}
    for round_ in range(repeats):
        for flows in flow_counts:
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                costs[name][str(flows)].append(ns_per_packet(configs[name], flows, packets))
    put_root(DEV, [])
    sh("ip", "link", "del", DEV)
    return costs


def free_bytes() -> int:
    """Free memory in bytes: the buddy allocator's free pages and those on per-CPU lists
    (which MemFree leaves out, and which would hide small allocations)."""
    zoneinfo = Path("/proc/zoneinfo").read_text()
    pages = sum(int(n) for n in re.findall(r"nr_free_pages\s+(\d+)", zoneinfo))
    pages += sum(int(n) for n in re.findall(r"^\s+count:\s+(\d+)", zoneinfo, re.M))
    return pages * os.sysconf("SC_PAGE_SIZE")


def settle() -> None:
    # A qdisc deleted is freed after an RCU grace period: a few of the guest's 10 ms ticks.
    # (No drop_caches: tc's files read again into the page cache would count as the qdisc's.)
    time.sleep(0.1)


def instances_memory(spec: str, devices: list[str], with_traffic: bool) -> tuple[float, float]:
    """Bytes per instance taken by `spec` on every device, and bytes more per instance after
    one packet of each of MEMORY_FLOWS flows went through each."""
    settle()
    before = free_bytes()
    tc_batch([f"qdisc add dev {dev} root {spec}" for dev in devices] if spec != BASELINE else [])
    added = free_bytes()
    if with_traffic:
        for dev in devices:
            pktgen_flows(dev, MEMORY_FLOWS, MEMORY_FLOWS)
        pktgen_run(devices)
    after = free_bytes()
    if spec != BASELINE:
        tc_batch([f"qdisc del dev {dev} root" for dev in devices])
    return (before - added) / len(devices), (added - after) / len(devices)


def measure_memory(instances: int, repeats: int) -> dict[str, dict[str, list[float]]]:
    """Per memory configuration, one value per round of: bytes per instance at the defaults
    and at the two table sizes, and bytes held per flow seen."""
    devices = [f"{MEMORY_DEV}{i}" for i in range(instances)]
    ip_batch([f"link add {dev} type dummy" for dev in devices])
    ip_batch([f"link set {dev} up" for dev in devices])
    pktgen_devices(devices)
    specs = {BASELINE: (BASELINE, None), **MEMORY_CONFIGURATIONS}
    for default, _ in specs.values():  # warm-up: modules loaded, slab caches made
        instances_memory(default, devices, with_traffic=True)
    found: dict[str, dict[str, list[float]]] = {
        name: {"instance": [], "small": [], "large": [], "traffic": []} for name in specs}
    for _ in range(repeats):
        for name, (default, sized) in specs.items():
            instance, traffic = instances_memory(default, devices, with_traffic=True)
            found[name]["instance"].append(instance)
            found[name]["traffic"].append(traffic)
            if sized:
                for size, slots in (("small", SLOTS_SMALL), ("large", SLOTS_LARGE)):
                    found[name][size].append(instances_memory(sized.format(slots=slots), devices,
                                                              with_traffic=False)[0])
    pktgen_devices([])
    ip_batch([f"link del {dev}" for dev in devices])
    return found


def htb_leaves(leaf: str, count: int) -> list[str]:
    """tc batch lines: an HTB root on HTB_DEV with `count` classes, each with a `leaf`."""
    lines = [f"qdisc add dev {HTB_DEV} root handle 1: htb"]
    for i in range(1, count + 1):
        lines += [f"class add dev {HTB_DEV} parent 1: classid 1:{i:x} htb rate 10mbit quantum 1514",
                  f"qdisc add dev {HTB_DEV} parent 1:{i:x} handle {i + 1:x}: {leaf}"]
    return lines


def htb_memory(leaf: str, count: int) -> tuple[int, int]:
    """Bytes taken by an HTB with `count` classes and a `leaf` in each, and confucius's own
    instance_bytes of its first leaf (0 for the others)."""
    settle()
    before = free_bytes()
    tc_batch(htb_leaves(leaf, count))
    taken = before - free_bytes()
    reported = 0
    if leaf.startswith("confucius"):
        [first] = [q for q in json.loads(sh("tc", "-s", "-j", "qdisc", "show", "dev", HTB_DEV))
                   if q["handle"] == "2:"]
        reported = first["instance_bytes"]
    put_root(HTB_DEV, [])
    return taken, reported


def measure_htb(counts: list[int], repeats: int) -> dict[str, dict[str, dict[str, list[float]]]]:
    """Per qdisc and leaf count, per round: bytes per leaf beyond a pfifo leaf's (the same
    count read just before), and the qdisc's own account where it gives one."""
    sh("ip", "link", "add", HTB_DEV, "type", "dummy")
    leaves = {name: default for name, (default, _) in MEMORY_CONFIGURATIONS.items()}
    for leaf in (HTB_FLOOR_LEAF, *leaves.values()):  # warm-up: modules loaded, caches made
        htb_memory(leaf, 2)
    found: dict[str, dict[str, dict[str, list[float]]]] = {
        name: {str(n): {"per_leaf": [], "reported": []} for n in counts
               if n <= HTB_MAX_LEAVES.get(name, n)} for name in leaves}
    for _ in range(repeats):
        for count in counts:
            floor, _ = htb_memory(HTB_FLOOR_LEAF, count)
            for name, leaf in leaves.items():
                if str(count) in found[name]:
                    taken, reported = htb_memory(leaf, count)
                    found[name][str(count)]["per_leaf"].append((taken - floor) / count)
                    found[name][str(count)]["reported"].append(reported)
    sh("ip", "link", "del", HTB_DEV)
    return found


def guest(options: argparse.Namespace) -> None:
    for module in ("pktgen", "dummy", "sch_confucius"):
        sh("modprobe", module)
    costs = measure_costs(options.packets, options.repeats, options.flows)
    memory = measure_memory(options.instances, options.memory_repeats)
    htb = measure_htb(options.htb_instances, options.memory_repeats)
    result = {"kernel": os.uname().release, "packets": options.packets, "repeats": options.repeats,
              "flows": options.flows, "packet_bytes": PACKET_BYTES, "shaped_rate": SHAPED_RATE,
              "configurations": configurations(), "ns_per_packet": costs,
              "instances": options.instances, "memory_flows": MEMORY_FLOWS,
              "slots": [SLOTS_SMALL, SLOTS_LARGE], "memory": memory, "htb": htb}
    Path(options.json).write_text(json.dumps(result, indent=1) + "\n")


def guest_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench_kernel.py guest")
    parser.add_argument("--packets", type=int, required=True)
    parser.add_argument("--repeats", type=int, required=True)
    parser.add_argument("--flows", type=int, nargs="+", required=True)
    parser.add_argument("--instances", type=int, required=True)
    parser.add_argument("--memory-repeats", type=int, required=True)
    parser.add_argument("--htb-instances", type=int, nargs="+", required=True)
    parser.add_argument("--json", required=True)
    guest(parser.parse_args(argv))


# --------------------------------------------------------------------------- the host

def host_cpu_times() -> list[int]:
    """The host's aggregate CPU times from /proc/stat: user, nice, system, idle, iowait,
    irq, softirq, steal (in ticks)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return [int(n) for n in fields[1:9]]


def host_conditions(before: list[int], after: list[int], load_before: str) -> dict:
    """The host's load over a run: 1-minute load average at its start and end, and the
    shares of CPU time busy (the bench's own core included) and stolen by the hypervisor."""
    spent = [b - a for a, b in zip(before, after)]
    total = sum(spent) or 1
    idle = spent[3] + spent[4]
    return {"load_before": float(load_before.split()[0]),
            "load_after": float(Path("/proc/loadavg").read_text().split()[0]),
            "busy_percent": 100.0 * (total - idle - spent[7]) / total,
            "steal_percent": 100.0 * spent[7] / total}


def run_kernel(flavour: str, options: argparse.Namespace, results: Path) -> dict:
    """This file's guest part run in the UML kernel `flavour` on the host's clock; its
    bench.json with the host's conditions added."""
    from confucius.lab import uml  # the host side only: the guest needs the standard library alone

    command = " ".join([
        "exec", sys.executable, str(Path(__file__).resolve()), "guest",
        "--packets", str(options.packets), "--repeats", str(options.repeats),
        "--flows", *map(str, options.flows), "--instances", str(options.instances),
        "--memory-repeats", str(options.memory_repeats),
        "--htb-instances", *map(str, options.htb_instances), "--json", "/run/lab/results/bench.json"])
    load_before = Path("/proc/loadavg").read_text()
    cpu_before = host_cpu_times()
    with on_one_cpu() as cpu:
        uml.run(command, results_dir=results, timeout=options.timeout, time_mode="real",
                memory=GUEST_MEMORY, flavour=flavour).check()
    found = json.loads((results / "bench.json").read_text())
    found["host"] = {**host_conditions(cpu_before, host_cpu_times(), load_before), "cpu": cpu}
    found["flavour"] = flavour
    found["module_sha256"] = module_digest(uml.modules_dir(flavour) / "sch_confucius.ko")
    return found


@contextlib.contextmanager
def on_one_cpu() -> Iterator[int]:
    """This process, and so the UML processes it starts, held to the host's last CPU: a
    guest that the host moves between cores finds its caches cold, and the readings
    scatter. Yields the CPU's number."""
    allowed = os.sched_getaffinity(0)
    cpu = max(allowed)
    os.sched_setaffinity(0, {cpu})
    try:
        yield cpu
    finally:
        os.sched_setaffinity(0, allowed)


def module_digest(path: Path) -> str:
    """The digest of the module the guest loaded, so a table names what it measured."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def median_range(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def qdisc_costs(found: dict) -> dict[str, dict[str, list[float]]]:
    """Per configuration and flow count, the qdisc's own ns per packet in each round: the
    path's cost minus the noqueue path's median at that flow count (a median, not the same
    round's reading, so that one disturbed baseline does not move a whole round)."""
    raw = found["ns_per_packet"]
    baseline = {flows: statistics.median(values) for flows, values in raw[BASELINE].items()}
    return {name: {flows: [ns - baseline[flows] for ns in values] for flows, values in by_flows.items()}
            for name, by_flows in raw.items() if name != BASELINE}


def leaf_costs(own: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, list[float]]]:
    """fq_codel's and fq's enqueue and dequeue without the root bypass: as HTB's leaf, less
    HTB with a pfifo leaf (its median), which is HTB's own part."""
    floor = {flows: statistics.median(values) for flows, values in own[HTB_FLOOR].items()}
    return {leaf_name(leaf): {flows: [ns - floor[flows] for ns in values]
                              for flows, values in own[f"{leaf} shaped"].items()}
            for leaf in HTB_LEAVES}


def leaf_name(leaf: str) -> str:
    return f"{leaf} as HTB leaf, less HTB"


def reference_for(name: str) -> str:
    """What a row is held against: fq_codel's enqueue and dequeue without the bypass
    (unshaped), HTB with fq_codel (shaped)."""
    return f"{REFERENCE} shaped" if name.endswith(" shaped") else leaf_name(REFERENCE)


def cell(values: list[float]) -> str:
    middle, low, high = median_range(values)
    return f"{middle:.0f} [{low:.0f}, {high:.0f}]"


def cost_rows(rows: dict[str, dict[str, list[float]]], against: dict[str, dict[str, list[float]]],
              flows: list[str], width: int) -> list[str]:
    """One line per row: its cells, the largest median over the smallest across flow counts,
    and its largest ratio to its reference's median."""
    lines = []
    for name, by_flows in rows.items():
        medians = [statistics.median(by_flows[f]) for f in flows]
        reference = [statistics.median(against[reference_for(name)][f]) for f in flows]
        flatness = max(medians) / min(medians) if min(medians) > 0 else float("nan")
        worst = max(m / r if r > 0 else float("nan") for m, r in zip(medians, reference))
        lines.append(f"{name:<32}" + "".join(f"{cell(by_flows[f]):>{width}}" for f in flows)
                     + f"{flatness:>9.2f}{worst:>11.2f}")
    return lines


def cost_table(found: dict) -> list[str]:
    flows = [str(f) for f in found["flows"]]
    own = qdisc_costs(found)
    leaves = leaf_costs(own)
    against = {**own, **leaves}
    width = 22
    return [f"{'ns per packet':<32}" + "".join(f"{f + ' flows':>{width}}" for f in flows)
            + f"{'max/min':>9}{'/fq_codel':>11}",
            f"{'path without a qdisc (noqueue)':<32}"
            + "".join(f"{cell(found['ns_per_packet'][BASELINE][f]):>{width}}" for f in flows),
            "qdisc's own (path minus noqueue's; pfifo and fq_codel unshaped: the root bypass):",
            *cost_rows(own, against, flows, width),
            "enqueue and dequeue without the bypass:",
            *cost_rows(leaves, against, flows, width)]


def memory_table(found: dict) -> list[str]:
    small, large = found["slots"]
    lines = [f"{'memory':<12}{'per instance (KiB)':>24}{'per flow slot (B)':>24}"
             f"{'per flow seen (B)':>24}"]
    base_traffic = found["memory"][BASELINE]["traffic"]
    for name, kinds in found["memory"].items():
        if name == BASELINE:
            continue
        instance = cell([b / 1024 for b in kinds["instance"]])
        slot = (cell([(b - a) / (large - small) for a, b in zip(kinds["small"], kinds["large"])])
                if kinds["small"] else "fixed")
        seen = cell([(t - base) / found["memory_flows"] for t, base in zip(kinds["traffic"], base_traffic)])
        lines.append(f"{name:<12}{instance:>24}{slot:>24}{seen:>24}")
    return lines


def htb_table(found: dict) -> list[str]:
    counts = sorted({int(n) for by_count in found["htb"].values() for n in by_count})
    width = 22
    lines = [f"{'under HTB (KiB per leaf)':<26}" + "".join(f"{f'{n} leaves':>{width}}" for n in counts)
             + f"{'reported':>{width}}"]
    for name, by_count in found["htb"].items():
        cells = [cell([b / 1024 for b in by_count[str(n)]["per_leaf"]]) if str(n) in by_count
                 else "not run" for n in counts]
        reported = {v for n in by_count.values() for v in n["reported"]}
        said = f"{max(reported) / 1024:.1f}" if max(reported, default=0) else "-"
        lines.append(f"{name:<26}" + "".join(f"{c:>{width}}" for c in cells) + f"{said:>{width}}")
    return lines


def report(found: dict) -> str:
    host = found["host"]
    lines = [f"Linux {found['kernel']} (UML flavour {found['flavour']}, real time): pktgen queue_xmit, "
             f"{found['packet_bytes']}-byte UDP onto a dummy device, {found['packets']} packets "
             f"per point, median [min, max] of {found['repeats']} rounds; shaped at "
             f"{found['shaped_rate']} (own shaper, or HTB for pfifo, fq_codel and fq); "
             f"sch_confucius.ko sha256 {found['module_sha256'][:16]}",
             f"host: load {host['load_before']:.2f} -> {host['load_after']:.2f}, CPU busy "
             f"{host['busy_percent']:.0f} % (this bench's core included), steal "
             f"{host['steal_percent']:.1f} %; the guest held to host CPU {host['cpu']}",
             *cost_table(found),
             "max/min: the largest median over the smallest across flow counts; /fq_codel: the "
             "largest ratio of the medians to fq_codel's (unshaped: as HTB leaf, less HTB; "
             "shaped: HTB with fq_codel)",
             "",
             *memory_table(found),
             f"{found['instances']} instances per reading, median [min, max] of "
             f"{len(found['memory'][BASELINE]['traffic'])}; per flow slot: slope between "
             f"{found['slots'][0]} and {found['slots'][1]} (flows, fq: buckets); per flow seen: "
             f"held after {found['memory_flows']} flows' packets, beyond noqueue's",
             "",
             *htb_table(found),
             "under HTB: one leaf per class at its defaults, beyond a pfifo leaf; cake stops at "
             f"{HTB_MAX_LEAVES['cake']} leaves (about 1 MiB each); reported: confucius's own "
             "instance_bytes"]
    return "\n".join(lines) + "\n"


def wait_for_quiet_host(max_load: float, poll_s: float = 60.0) -> None:
    """Return once the host's 1-minute load average is below `max_load`: other work on the
    host's two cores stretches the guest's real-time clock."""
    while (load := float(Path("/proc/loadavg").read_text().split()[0])) >= max_load:
        print(f"bench-kernel: host load {load:.2f}, waiting for it to fall below {max_load}",
              file=sys.stderr, flush=True)
        time.sleep(poll_s)


def host(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench_kernel.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", nargs="+", default=["lab", "6.12"],
                        help="UML flavours to boot (confucius/lab/uml.py FLAVOURS)")
    parser.add_argument("--packets", type=int, default=200000, help="packets per point")
    parser.add_argument("--repeats", type=int, default=9, help="rounds over every point")
    parser.add_argument("--flows", type=int, nargs="+", default=list(FLOWS))
    parser.add_argument("--instances", type=int, default=INSTANCES, help="qdiscs per memory reading")
    parser.add_argument("--memory-repeats", type=int, default=3)
    parser.add_argument("--htb-instances", type=int, nargs="+", default=list(HTB_INSTANCES),
                        help="leaves under one HTB per memory reading")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per kernel")
    parser.add_argument("--out", type=Path, default=Path("results") / "bench-kernel" / time.strftime("%Y%m%d-%H%M%S"))
    parser.add_argument("--max-load", type=float, default=None,
                        help="wait until the host's 1-minute load average is below this before each kernel")
    options = parser.parse_args(argv)
    check_options(parser, options)
    for flavour in options.kernels:
        if options.max_load is not None:
            wait_for_quiet_host(options.max_load)
        found = run_kernel(flavour, options, options.out / flavour)
        text = report(found)
        (options.out / flavour / "table.txt").write_text(text)
        print(text, flush=True)


def check_options(parser: argparse.ArgumentParser, options: argparse.Namespace) -> None:
    if options.packets < 1 or options.repeats < 1 or options.memory_repeats < 1:
        parser.error("--packets, --repeats and --memory-repeats must be at least 1")
    if options.max_load is not None and not options.max_load > 0:
        parser.error("--max-load must be positive")
    if not 1 <= options.instances <= 1024:
        parser.error("--instances must be from 1 to 1024")
    if not options.htb_instances or any(not 1 <= n <= 10000 for n in options.htb_instances):
        parser.error("--htb-instances: leaf counts from 1 to 10000")
    if not options.flows or any(not 1 <= f <= 65536 - 10000 for f in options.flows):
        parser.error("--flows: flow counts from 1 to 55536 (source ports from 10000)")
    from confucius.lab import uml

    unknown = [k for k in options.kernels if k not in uml.FLAVOURS]
    if unknown:
        parser.error(f"--kernels: unknown {', '.join(unknown)}; known: {', '.join(uml.FLAVOURS)}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["guest"]:
        guest_main(sys.argv[2:])
    else:
        host(sys.argv[1:])
