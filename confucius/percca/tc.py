# SPDX-License-Identifier: MIT
"""The bottleneck's tc lines for a buffer policy, and the filters an external classifier
would install: each flow's destination port mapped to the queue of its classified CCA.

    shared     one tail-drop FIFO of the whole buffer under HTB at the link rate (the
               paper's shared buffer; the classifier plays no part)
    per-cca / per-class, qdisc "confucius":
               `confucius mode external classes Q bandwidth C limit B weights ...` at the
               root, u32 filters on the destination port choosing class 1:q. Classes are
               FIFO inside, weighted by the flows mapped to them (the paper's service), by
               given weights, or (service "active", no weights) by their backlogged flows
               as the qdisc counts them; one buffer of B packets, overflow dropped from the
               fattest flow.
    per-cca / per-class, qdisc "drr":
               DRR under HTB at the link rate, one tail-drop pfifo of B/Q packets per queue
               (the paper's isolated queues statically sharing the buffer), quantum one MTU
               times the queue's flows (or its weight); u32 filters choose class 10:q.
"""

from __future__ import annotations

from confucius.lab import topology

MTU_FRAME = 1514
BOTTLENECK_DEVICE = topology.BOTTLENECK[1]


def _u32(parent: str, port: int, classid: str) -> str:
    return (f"filter add dev {BOTTLENECK_DEVICE} parent {parent} protocol ip prio 1 "
            f"u32 match ip dport {port} 0xffff classid {classid}")


def _under_htb(qdisc: str, rate_bps: float) -> list[str]:
    """`qdisc` as handle 10: under an HTB class at the rate, the lab's bottleneck for
    qdiscs that do not shape by themselves (UML's two-packet bucket)."""
    return topology.bottleneck_commands(qdisc, f"{rate_bps:.0f}bit", topology.htb_burst_s("uml"))


def shared_fifo(rate_bps: float, buffer: int) -> list[str]:
    return _under_htb(f"pfifo limit {buffer}", rate_bps)


def mapped_flows(queues: int, flow_ports: list[tuple[int, int]]) -> list[int]:
    """Each queue's number of flows, at least 1 (an empty queue's weight serves nothing)."""
    return [max(1, sum(1 for _, q in flow_ports if q == queue)) for queue in range(queues)]


def class_weights(queues: int, weights: list[int] | None, flow_ports: list[tuple[int, int]],
                  active: bool = False) -> list[int] | None:
    """The confucius classes' weights: given, else the flows mapped to each queue; None
    with `active` (the qdisc's own count of backlogged flows). ns-3's queue disc takes the same."""
    if active:
        return None
    return list(weights or mapped_flows(queues, flow_ports))


def confucius_external(rate_bps: float, buffer: int, queues: int, weights: list[int] | None,
                       flow_ports: list[tuple[int, int]], active: bool = False) -> list[str]:
    """`flow_ports`: (destination port, queue 0..Q-1) of every flow; `weights` None: the
    flows mapped to each queue, or with `active` the qdisc's own count of backlogged flows."""
    options = f"mode external classes {queues} bandwidth {rate_bps:.0f}bit limit {buffer}"
    chosen = class_weights(queues, weights, flow_ports, active)
    if chosen is not None:
        options += " weights " + ":".join(str(w) for w in chosen)
    return [f"qdisc add dev {BOTTLENECK_DEVICE} root handle 1: confucius {options}",
            *(_u32("1:", port, f"1:{queue + 1:x}") for port, queue in flow_ports)]


def drr_queues(rate_bps: float, buffer: int, queues: int, weights: list[int] | None,
               flow_ports: list[tuple[int, int]]) -> list[str]:
    shares = weights or mapped_flows(queues, flow_ports)
    per_queue = max(1, -(-buffer // queues))
    lines = _under_htb("drr", rate_bps)
    for queue, share in enumerate(shares):
        lines += [f"class add dev {BOTTLENECK_DEVICE} parent 10: classid 10:{queue + 1:x} "
                  f"drr quantum {MTU_FRAME * share}",
                  f"qdisc add dev {BOTTLENECK_DEVICE} parent 10:{queue + 1:x} handle {0x101 + queue:x}: "
                  f"pfifo limit {per_queue}"]
    # DRR drops what no filter classifies: ARP and the like go to the first queue.
    catch_all = (f"filter add dev {BOTTLENECK_DEVICE} parent 10: protocol all prio 2 "
                 "matchall classid 10:1")
    return [*lines, *(_u32("10:", port, f"10:{queue + 1:x}") for port, queue in flow_ports), catch_all]


def bottleneck(policy: str, qdisc: str, rate_bps: float, buffer: int, queues: int,
               weights: list[int] | None, flow_ports: list[tuple[int, int]], active: bool = False) -> list[str]:
    """The router's tc batch lines for one run."""
    if policy == "shared":
        return shared_fifo(rate_bps, buffer)
    if qdisc == "confucius":
        return confucius_external(rate_bps, buffer, queues, weights, flow_ports, active)
    return drr_queues(rate_bps, buffer, queues, weights, flow_ports)
