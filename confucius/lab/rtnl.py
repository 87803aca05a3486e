# SPDX-License-Identifier: MIT
"""rtnetlink for the lab and the tests, standard library only: the one client.

It reads Confucius's per-flow classes fast, for the guest's sampler, and sends qdisc
requests with their options as raw bytes, so that the tests can send what tc never would
(unknown attributes, wrong sizes, values out of range) and read the kernel's extack.

The guest samples the bottleneck's flows every 20 ms around each page load, under TCG.
Starting `tc -s class show` per sample costs 0.2-0.5 s there, and pyroute2 (which can dump
the classes of a qdisc kind it does not know, and hands TCA_STATS_APP over as hex) parses
every attribute into objects: 7.5 ms of CPU per 60-class dump on the host, ten times that
under emulation (vm/README.md weighs it). Here one socket sends a class dump and reads back
only the attributes the sampler needs. The qdisc's own layouts are kernelabi's.

    with Rtnl("rtr") as nl:
        flows = nl.confucius_flows(nl.index("rtr-cli"))
        reply = nl.qdisc(ADD, nl.index("rtr-cli"), "confucius", attr(LIMIT, ...))
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import socket
import struct
from dataclasses import dataclass

from . import kernelabi

RTM_NEWQDISC, RTM_DELQDISC, RTM_GETQDISC = 36, 37, 38
RTM_NEWTCLASS, RTM_GETTCLASS = 40, 42
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 0x1, 0x4, 0x300
NLM_F_REPLACE, NLM_F_EXCL, NLM_F_CREATE = 0x100, 0x200, 0x400
NLA_F_NESTED = 0x8000
TCA_KIND, TCA_OPTIONS, TCA_STATS2 = 1, 2, 7
TCA_STATS_BASIC, TCA_STATS_QUEUE, TCA_STATS_APP = 1, 3, 4
SOL_NETLINK, NETLINK_CAP_ACK, NETLINK_EXT_ACK = 270, 10, 11
NLMSGERR_ATTR_MSG = 1
TC_H_ROOT = 0xFFFFFFFF
CLONE_NEWNET = 0x40000000
TCMSG = struct.Struct("BxHiIII")
NLMSGHDR = struct.Struct("IHHII")

# Flags for the three ways tc installs a qdisc.
ADD = NLM_F_CREATE | NLM_F_EXCL
CHANGE = 0
REPLACE = NLM_F_CREATE | NLM_F_REPLACE


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
    found = kernelabi.xstats(app)
    if found is None or found[0] != kernelabi.XSTATS_FLOW:
        return None
    flow = found[1]
    if flow["state"] not in kernelabi.FLOW_STATES:
        return None
    return {"bucket": flow["bucket"], "state": kernelabi.FLOW_STATES[flow["state"]],
            "class": flow["class_id"], "weight": flow["weight"] / kernelabi.WEIGHT_ONE,
            "packets": flow["packets"], "bytes": flow["bytes"], "deficit": flow["deficit"],
            "sojourn_us": flow["sojourn_us"], "sport": flow["sport"], "dport": flow["dport"],
            "ip_proto": flow["ip_proto"]}


def confucius_xstats(app: bytes) -> dict:
    """The qdisc's TCA_STATS_APP (struct tc_confucius_xstats of type QDISC), by field."""
    found = kernelabi.xstats(app)
    if found is None or found[0] != kernelabi.XSTATS_QDISC:
        raise ValueError(f"not the qdisc's xstats: {app.hex()}")
    return found[1]


@dataclass
class Reply:
    error: int           # 0, or a negative errno
    message: str         # the extack message, if any


@dataclass
class Qdisc:
    ifindex: int
    handle: int
    parent: int
    kind: str
    tlvs: dict[int, bytes]


class Rtnl:
    """One netlink socket in a network namespace (default: this thread's): qdisc requests
    with their acks and extack messages, qdisc and class dumps."""

    def __init__(self, namespace: str | None = None):
        with netns(namespace):
            self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
        self.sock.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        # Acks carry only the request's header, so the extack attributes follow at once.
        self.sock.setsockopt(SOL_NETLINK, NETLINK_CAP_ACK, 1)
        self.sock.bind((0, 0))
        self.namespace = namespace
        self.seq = 0

    def __enter__(self) -> Rtnl:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def index(self, dev: str) -> int:
        """The ifindex of a device in this socket's namespace."""
        with netns(self.namespace):
            return socket.if_nametoindex(dev)

    def _send(self, kind: int, flags: int, payload: bytes) -> None:
        self.seq += 1
        self.sock.send(NLMSGHDR.pack(NLMSGHDR.size + len(payload), kind, flags | NLM_F_REQUEST,
                                     self.seq, 0) + payload)

    def _replies(self):
        """(type, body) of each message answering the last request; earlier answers that
        were not read to their end are skipped."""
        while True:
            data = self.sock.recv(1 << 20)
            offset = 0
            while offset + NLMSGHDR.size <= len(data):
                length, kind, _, seq, _ = NLMSGHDR.unpack_from(data, offset)
                body = data[offset + NLMSGHDR.size:offset + length]
                offset += (length + 3) & ~3
                if seq == self.seq:
                    yield kind, body

    def _dump(self, kind: int, answer: int, ifindex: int):
        """(tcmsg fields, attributes) of every `answer` message of a dump request."""
        self._send(kind, NLM_F_DUMP, TCMSG.pack(socket.AF_UNSPEC, 0, ifindex, 0, 0, 0))
        for kind_, body in self._replies():
            if kind_ == NLMSG_DONE:
                return
            if kind_ == NLMSG_ERROR:
                raise OSError(-struct.unpack_from("i", body)[0], "dump failed")
            if kind_ == answer:
                yield TCMSG.unpack_from(body), parse_attrs(body[TCMSG.size:])

    def qdisc(self, flags: int, ifindex: int, kind: str | None, options: bytes | None,
              handle: int = 0, parent: int = TC_H_ROOT, message: int = RTM_NEWQDISC) -> Reply:
        """Send one qdisc request; `options` are the bytes inside TCA_OPTIONS, as given."""
        payload = TCMSG.pack(socket.AF_UNSPEC, 0, ifindex, handle, parent, 0)
        if kind is not None:
            payload += attr(TCA_KIND, kind.encode() + b"\0")
        if options is not None:
            payload += attr(TCA_OPTIONS | NLA_F_NESTED, options)
        self._send(message, flags | NLM_F_ACK, payload)
        for kind_, body in self._replies():
            if kind_ == NLMSG_ERROR:
                (error,) = struct.unpack_from("i", body)
                tlvs = parse_attrs(body[4 + NLMSGHDR.size:])
                text = tlvs.get(NLMSGERR_ATTR_MSG, b"").rstrip(b"\0").decode(errors="replace")
                return Reply(error, text)

    def dump_qdiscs(self):
        """Every qdisc the kernel holds in this namespace, as it dumps them."""
        for (_, _, index, handle, parent, _), tlvs in self._dump(RTM_GETQDISC, RTM_NEWQDISC, 0):
            yield Qdisc(index, handle, parent, tlvs.get(TCA_KIND, b"").rstrip(b"\0").decode(), tlvs)

    def root_qdisc(self, ifindex: int, kind: str) -> Qdisc | None:
        """The root qdisc of this kind on ifindex, if there is one."""
        found = None
        for qdisc in self.dump_qdiscs():  # read the dump to its end either way
            if qdisc.ifindex == ifindex and qdisc.parent == TC_H_ROOT and qdisc.kind == kind:
                found = qdisc
        return found

    def options(self, ifindex: int, kind: str) -> dict[int, bytes] | None:
        """The TCA_OPTIONS attributes of the root qdisc of this kind on ifindex, as dumped."""
        qdisc = self.root_qdisc(ifindex, kind)
        return None if qdisc is None else parse_attrs(qdisc.tlvs.get(TCA_OPTIONS, b""))

    def classes(self, ifindex: int):
        """(handle, kind, attributes) of every class on the device, as the kernel dumps them."""
        for (_, _, _, handle, _, _), tlvs in self._dump(RTM_GETTCLASS, RTM_NEWTCLASS, ifindex):
            yield handle, tlvs.get(TCA_KIND, b"").rstrip(b"\0").decode(), tlvs

    def confucius_flows(self, ifindex: int) -> list[dict]:
        """The flows of the Confucius qdisc(s) on the device: their class statistics."""
        flows = []
        for handle, kind, tlvs in self.classes(ifindex):
            if kind != "confucius" or handle & 0xFFFF < kernelabi.FLOW_MINOR:
                continue
            flow = flow_xstats(parse_attrs(tlvs.get(TCA_STATS2, b"")).get(TCA_STATS_APP, b""))
            if flow is not None:
                flows.append(flow)
        return flows


# The lab's guest opens it by this name, for its class dumps.
ClassDump = Rtnl


def qdisc_stats(ifindex: int, kind: str, nl: Rtnl | None = None) -> dict | None:
    """Basic, queue and application (xstats) statistics of the root qdisc `kind` on ifindex."""
    own = nl is None
    nl = nl or Rtnl()
    try:
        qdisc = nl.root_qdisc(ifindex, kind)
    finally:
        if own:
            nl.close()
    if qdisc is None:
        return None
    stats = parse_attrs(qdisc.tlvs.get(TCA_STATS2, b""))
    nbytes, packets = struct.unpack_from("QI", stats[TCA_STATS_BASIC])
    qlen, backlog, drops, _, overlimits = struct.unpack_from("5I", stats[TCA_STATS_QUEUE])
    return {"bytes": nbytes, "packets": packets, "qlen": qlen, "backlog": backlog,
            "drops": drops, "overlimits": overlimits, "app": stats.get(TCA_STATS_APP, b"")}
