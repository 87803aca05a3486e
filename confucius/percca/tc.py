# SPDX-License-Identifier: MIT
"""The bottleneck's tc lines for a buffer policy, and the filters an external classifier
would install: each flow's destination port mapped to the queue of its classified CCA.

    shared     one tail-drop FIFO of the whole buffer under HTB at the link rate (the
               seed's shared buffer; the classifier plays no part)
    per-cca / per-class, qdisc "confucius":
               `confucius mode external classes Q bandwidth C limit B [weights ...]`
               at the root, u32 filters on the destination port choosing class 1:q. Classes
               are FIFO inside and served by their backlogged flows, or by `weights`; one
               buffer of B packets, overflow dropped from the fattest flow.
    per-cca / per-class, qdisc "drr":
               DRR under HTB at the link rate, one tail-drop pfifo of B/Q packets per queue
               (the seed's isolated queues statically sharing the buffer), quantum one MTU
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


def confucius_external(rate_bps: float, buffer: int, queues: int, weights: list[int] | None,
                       flow_ports: list[tuple[int, int]]) -> list[str]:
    """`flow_ports`: (destination port, queue 0..Q-1) of every flow."""
    options = f"mode external classes {queues} bandwidth {rate_bps:.0f}bit limit {buffer}"
    if weights:
        options += " weights " + ":".join(str(w) for w in weights)
    return [f"qdisc add dev {BOTTLENECK_DEVICE} root handle 1: confucius {options}",
            *(_u32("1:", port, f"1:{queue + 1}") for port, queue in flow_ports)]


def drr_queues(rate_bps: float, buffer: int, queues: int, weights: list[int] | None,
               flow_ports: list[tuple[int, int]]) -> list[str]:
    flows = [sum(1 for _, q in flow_ports if q == queue) for queue in range(queues)]
    shares = weights if weights else [max(n, 1) for n in flows]
    per_queue = max(1, -(-buffer // queues))
    lines = _under_htb("drr", rate_bps)
    for queue, share in enumerate(shares):
        lines += [f"class add dev {BOTTLENECK_DEVICE} parent 10: classid 10:{queue + 1} "
                  f"drr quantum {MTU_FRAME * share}",
                  f"qdisc add dev {BOTTLENECK_DEVICE} parent 10:{queue + 1} handle {queue + 101}: "
                  f"pfifo limit {per_queue}"]
    # DRR drops what no filter classifies: ARP and the like go to the first queue.
    catch_all = (f"filter add dev {BOTTLENECK_DEVICE} parent 10: protocol all prio 2 "
                 "matchall classid 10:1")
    return [*lines, *(_u32("10:", port, f"10:{queue + 1}") for port, queue in flow_ports), catch_all]


def bottleneck(policy: str, qdisc: str, rate_bps: float, buffer: int, queues: int,
               weights: list[int] | None, flow_ports: list[tuple[int, int]]) -> list[str]:
    """The router's tc batch lines for one run."""
    if policy == "shared":
        return shared_fifo(rate_bps, buffer)
    build = confucius_external if qdisc == "confucius" else drr_queues
    return build(rate_bps, buffer, queues, weights, flow_ports)
