# SPDX-License-Identifier: MIT
"""rtnetlink for the lab, standard library only: Confucius's per-flow classes, read fast.

The guest samples the bottleneck's flows every 20 ms around each page load, under TCG.
Starting `tc -s class show` per sample costs 0.2-0.5 s there, and pyroute2 (which can dump
the classes of a qdisc kind it does not know, and hands TCA_STATS_APP over as hex) parses
every attribute into objects: 7.5 ms of CPU per 60-class dump on the host, ten times that
under emulation. Here one socket sends a class dump and reads back only the attributes the
sampler needs.

    with ClassDump("rtr") as dump:
        flows = dump.confucius_flows(dump.index("rtr-cli"))

tests/kernel/rtnl.py builds its qdisc requests on the same helpers.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import socket
import struct

RTM_NEWTCLASS, RTM_GETTCLASS = 40, 42
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLA_F_NESTED = 0x8000
TCA_KIND, TCA_STATS2 = 1, 7
TCA_STATS_QUEUE, TCA_STATS_APP = 3, 4
CLONE_NEWNET = 0x40000000
TCMSG = struct.Struct("BxHiIII")

# kernel/include/uapi/linux/pkt_sched_confucius.h: flows are classes from this minor on.
FLOW_MINOR = 0x8000
# struct tc_confucius_xstats: type, pad, then (for TC_CONFUCIUS_XSTATS_FLOW)
# struct tc_confucius_fl_stats: bucket, state, class_id, weight, packets, bytes, deficit,
# sojourn_us, sport, dport, ip_proto, pad[3].
XSTATS_FLOW = 2
FLOW_XSTATS = struct.Struct("=II" "6IiI" "HHB3x")
FLOW_STATES = {1: "new", 2: "old"}
WEIGHT_ONE = 65536          # weights are fixed point, 1/65536


def attr(kind: int, payload: bytes) -> bytes:
    data = struct.pack("HH", 4 + len(payload), kind) + payload
    return data + b"\0" * (-len(data) % 4)


def parse_attrs(data: bytes) -> dict[int, bytes]:
    found, offset = {}, 0
    while offset + 4 <= len(data):
        length, kind = struct.unpack_from("HH", data, offset)
        if length < 4:
            break
        found[kind & ~NLA_F_NESTED] = data[offset + 4:offset + length]
        offset += (length + 3) & ~3
    return found


@contextlib.contextmanager
def netns(name: str | None):
    """Run the block (this thread) in network namespace `name` (as made by `ip netns add`).
    Sockets keep the namespace they were made in, so one opened here can be used after."""
    if name is None:
        yield
        return
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {name}")
        yield
    finally:
        libc.setns(own, CLONE_NEWNET)
        os.close(own)
        os.close(target)


def flow_xstats(app: bytes) -> dict | None:
    """A flow class's TCA_STATS_APP (struct tc_confucius_xstats), or None when its type
    says it is a class of old flows (or the flow was forgotten during the dump)."""
    if len(app) < FLOW_XSTATS.size:
        return None
    (kind, _, bucket, state, class_id, weight, packets, nbytes, deficit, sojourn_us,
     sport, dport, ip_proto) = FLOW_XSTATS.unpack_from(app)
    if kind != XSTATS_FLOW or state not in FLOW_STATES:
        return None
    return {"bucket": bucket, "state": FLOW_STATES[state], "class": class_id, "weight": weight / WEIGHT_ONE,
            "packets": packets, "bytes": nbytes, "deficit": deficit, "sojourn_us": sojourn_us,
            "sport": sport, "dport": dport, "ip_proto": ip_proto}


class ClassDump:
    """One netlink socket in a namespace, for class dumps (RTM_GETTCLASS)."""

    def __init__(self, namespace: str | None = None):
        with netns(namespace):
            self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
        self.sock.bind((0, 0))
        self.namespace = namespace
        self.seq = 0

    def __enter__(self) -> ClassDump:
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()

    def index(self, dev: str) -> int:
        """The ifindex of a device in this socket's namespace."""
        with netns(self.namespace):
            return socket.if_nametoindex(dev)

    def classes(self, ifindex: int):
        """(handle, kind, attributes) of every class on the device, as the kernel dumps them."""
        self.seq += 1
        request = TCMSG.pack(socket.AF_UNSPEC, 0, ifindex, 0, 0, 0)
        self.sock.send(struct.pack("IHHII", 16 + len(request), RTM_GETTCLASS, NLM_F_REQUEST | NLM_F_DUMP,
                                   self.seq, 0) + request)
        while True:
            data = self.sock.recv(1 << 20)
            offset = 0
            while offset + 16 <= len(data):
                length, kind, _, seq, _ = struct.unpack_from("IHHII", data, offset)
                body = data[offset + 16:offset + length]
                offset += (length + 3) & ~3
                if seq != self.seq:
                    continue  # the end of an earlier dump that was not read to its end
                if kind == NLMSG_DONE:
                    return
                if kind == NLMSG_ERROR:
                    raise OSError(-struct.unpack_from("i", body)[0], "class dump failed")
                if kind == RTM_NEWTCLASS:
                    handle = TCMSG.unpack_from(body)[3]
                    tlvs = parse_attrs(body[TCMSG.size:])
                    yield handle, tlvs.get(TCA_KIND, b"").rstrip(b"\0").decode(), tlvs

    def confucius_flows(self, ifindex: int) -> list[dict]:
        """The flows of the Confucius qdisc(s) on the device: their class statistics."""
        flows = []
        for handle, kind, tlvs in self.classes(ifindex):
            if kind != "confucius" or handle & 0xFFFF < FLOW_MINOR:
                continue
            flow = flow_xstats(parse_attrs(tlvs.get(TCA_STATS2, b"")).get(TCA_STATS_APP, b""))
            if flow is not None:
                flows.append(flow)
        return flows
