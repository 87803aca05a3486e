# SPDX-License-Identifier: MIT
"""A minimal rtnetlink client for qdiscs, standard library only.

It sends what tc would send, and what tc never would (unknown attributes, wrong sizes,
values out of range), so the kernel's validation can be tested directly. Used by guest
scripts inside the lab VM.
"""

from __future__ import annotations

import socket
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

# Guest scripts run as `python3 -S` (no site-packages: they cost seconds over 9p under
# emulation), so the package is found from the repository itself.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from confucius.lab.rtnl import (  # noqa: E402
    NLA_F_NESTED, NLM_F_DUMP, NLM_F_REQUEST, NLMSG_DONE, NLMSG_ERROR, TCA_KIND, TCA_STATS2, TCA_STATS_APP,
    TCA_STATS_QUEUE, attr, netns, parse_attrs)

RTM_NEWQDISC, RTM_DELQDISC, RTM_GETQDISC = 36, 37, 38
NLM_F_ACK = 0x4
NLM_F_REPLACE, NLM_F_EXCL, NLM_F_CREATE = 0x100, 0x200, 0x400
TCA_OPTIONS = 2
SOL_NETLINK, NETLINK_CAP_ACK, NETLINK_EXT_ACK = 270, 10, 11
NLMSGERR_ATTR_MSG = 1
TC_H_ROOT = 0xFFFFFFFF

# Flags for the three ways tc installs a qdisc.
ADD = NLM_F_CREATE | NLM_F_EXCL
CHANGE = 0
REPLACE = NLM_F_CREATE | NLM_F_REPLACE


@dataclass
class Reply:
    error: int           # 0, or a negative errno
    message: str         # the extack message, if any


class Rtnl:
    def __init__(self, namespace: str | None = None):
        """A netlink socket of the given network namespace (default: this thread's)."""
        with netns(namespace):
            self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)

        self.sock.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        # Acks carry only the request's header, so the extack attributes follow at once.
        self.sock.setsockopt(SOL_NETLINK, NETLINK_CAP_ACK, 1)
        self.sock.bind((0, 0))
        self.seq = 0
        self.namespace = namespace

    def index(self, dev: str) -> int:
        """The ifindex of a device in this socket's namespace."""
        with netns(self.namespace):
            return socket.if_nametoindex(dev)

    def close(self) -> None:
        self.sock.close()

    def _send(self, kind: int, flags: int, payload: bytes) -> int:
        self.seq += 1
        header = struct.pack("IHHII", 16 + len(payload), kind, flags | NLM_F_REQUEST, self.seq, 0)
        self.sock.send(header + payload)
        return self.seq

    def _messages(self):
        while True:
            data = self.sock.recv(1 << 20)
            offset = 0
            while offset + 16 <= len(data):
                length, kind, flags, seq, _ = struct.unpack_from("IHHII", data, offset)
                yield kind, data[offset + 16:offset + length]
                offset += (length + 3) & ~3

    @staticmethod
    def _tcmsg(ifindex: int, handle: int, parent: int) -> bytes:
        return struct.pack("BxHiIII", socket.AF_UNSPEC, 0, ifindex, handle, parent, 0)

    def qdisc(self, flags: int, ifindex: int, kind: str | None, options: bytes | None,
              handle: int = 0, parent: int = TC_H_ROOT, message: int = RTM_NEWQDISC) -> Reply:
        """Send one qdisc request; `options` are the bytes inside TCA_OPTIONS."""
        payload = self._tcmsg(ifindex, handle, parent)
        if kind is not None:
            payload += attr(TCA_KIND, kind.encode() + b"\0")
        if options is not None:
            payload += attr(TCA_OPTIONS | NLA_F_NESTED, options)
        self._send(message, flags | NLM_F_ACK, payload)
        for kind_, body in self._messages():
            if kind_ == NLMSG_ERROR:
                (error,) = struct.unpack_from("i", body)
                tlvs = parse_attrs(body[20:])
                text = tlvs.get(NLMSGERR_ATTR_MSG, b"").rstrip(b"\0").decode(errors="replace")
                return Reply(error, text)

    def dump_qdiscs(self):
        """Every qdisc the kernel holds in this namespace, as it dumps them."""
        self._send(RTM_GETQDISC, NLM_F_DUMP, self._tcmsg(0, 0, 0))
        for kind, body in self._messages():
            if kind == NLMSG_DONE:
                return
            if kind == NLMSG_ERROR:
                raise OSError(-struct.unpack_from("i", body)[0], "qdisc dump failed")
            if kind != RTM_NEWQDISC:
                continue
            _, _, index, handle, parent, _ = struct.unpack_from("BxHiIII", body)
            tlvs = parse_attrs(body[20:])
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


@dataclass
class Qdisc:
    ifindex: int
    handle: int
    parent: int
    kind: str
    tlvs: dict[int, bytes]


TCA_STATS_BASIC = 1


def qdisc_stats(ifindex: int, kind: str, rtnl: Rtnl | None = None) -> dict | None:
    """Basic, queue and application (xstats) statistics of the root qdisc `kind` on ifindex."""
    own = rtnl is None
    rtnl = rtnl or Rtnl()
    try:
        qdisc = rtnl.root_qdisc(ifindex, kind)
    finally:
        if own:
            rtnl.close()
    if qdisc is None:
        return None
    stats = parse_attrs(qdisc.tlvs.get(TCA_STATS2, b""))
    nbytes, packets = struct.unpack_from("QI", stats[TCA_STATS_BASIC])
    qlen, backlog, drops, requeues, overlimits = struct.unpack_from("5I", stats[TCA_STATS_QUEUE])
    return {"bytes": nbytes, "packets": packets, "qlen": qlen, "backlog": backlog,
            "drops": drops, "overlimits": overlimits, "app": stats.get(TCA_STATS_APP, b"")}


# struct tc_confucius_xstats of type TC_CONFUCIUS_XSTATS_QDISC, kernel/include/uapi/linux/pkt_sched_confucius.h
XSTATS_QDISC = 0
XSTATS = struct.Struct("=II" "IIQQQQIIII8I8I8I" "QQQQQQII" "Q")
XSTATS_FIELDS = ("type", "pad0", "new_flows", "old_flows", "new_weight", "ticks", "holds", "moves",
                 "max_sojourn_us", "memory_used", "classes", "pad")
SNAPSHOT_FIELDS = ("enqueued_packets", "enqueued_bytes", "sent_packets", "sent_bytes",
                   "dropped_packets", "dropped_bytes", "backlog_packets", "backlog_bytes")


def confucius_xstats(app: bytes) -> dict:
    values = XSTATS.unpack_from(app)
    named = dict(zip(XSTATS_FIELDS, values[:12]))
    if named["type"] != XSTATS_QDISC:
        raise ValueError(f"xstats of type {named['type']}, not the qdisc's")
    named["class_flows"] = list(values[12:20])
    named["class_packets"] = list(values[20:28])
    named["class_bytes"] = list(values[28:36])
    named.update(zip(SNAPSHOT_FIELDS, values[36:44]))
    named["delay_drops"] = values[44]
    return named


if __name__ == "__main__":
    # `python rtnl.py DEV KIND`: that qdisc's statistics as JSON (run inside a namespace).
    import json
    import sys

    dev, kind = sys.argv[1:3]
    stats = qdisc_stats(socket.if_nametoindex(dev), kind)
    if stats and kind == "confucius":
        stats.update(confucius_xstats(stats["app"]))
    if stats:
        del stats["app"]
    print(json.dumps(stats))
