# SPDX-License-Identifier: MIT
"""The qdisc's netlink ABI as Python reads and writes it, declared once:
kernel/include/uapi/linux/pkt_sched_confucius.h, the one the kernel and tc are built from.

The attribute numbers (TCA_CONFUCIUS_*), the xstats types and the layouts of struct
tc_confucius_xstats and its members. tests/kernel/test_kernelabi.py compiles a program
against the header that prints every number, offset and size declared here, and compares.
Standard library only: the guest imports it under `python3 -S`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

# enum TCA_CONFUCIUS_*, by their names without the prefix, in lower case.
ATTRIBUTES = {
    "unspec": 0, "pad": 1, "bandwidth64": 2, "limit": 3, "memlimit": 4, "flows": 5, "quantum": 6,
    "interval": 7, "mode": 8, "classes": 9, "hysteresis": 10, "reclassify": 11, "class_weights": 12,
    "pace": 13, "target": 14, "maxhold": 15, "maxdelay": 16, "class_weight": 17, "aqm_target": 18,
    "aqm_interval": 19, "ecn": 20, "aqm_settle": 21, "isolate": 22, "nat": 23,
}
# enum TCA_CONFUCIUS_XSTATS_*: which member of the xstats union a dump carries.
XSTATS_QDISC, XSTATS_CLASS, XSTATS_FLOW = 0, 1, 2
MAX_CLASSES = 8                 # TC_CONFUCIUS_MAX_CLASSES
FLOW_MINOR = 0x8000             # TC_CONFUCIUS_FLOW_MINOR: flows are classes from this minor on
FLOW_STATES = {1: "new", 2: "old"}   # enum tc_confucius_flow_state
WEIGHT_ONE = 65536              # weights are fixed point, 1/65536


@dataclass(frozen=True)
class Layout:
    """A C struct as (field, struct format) pairs in declaration order, explicit padding
    included, so that the standard sizes without alignment ("=") give the C offsets."""

    name: str
    fields: tuple[tuple[str, str], ...]

    @property
    def struct(self) -> struct.Struct:
        return struct.Struct("=" + "".join(fmt for _, fmt in self.fields))

    def offsets(self) -> dict[str, int]:
        """Each field's offset, as offsetof() gives it."""
        found, at = {}, 0
        for field, fmt in self.fields:
            found[field] = at
            at += struct.calcsize("=" + fmt)
        return found

    def unpack(self, data: bytes, offset: int = 0) -> dict:
        """The fields by name; an array field (format with a count) as a list."""
        values, found = iter(self.struct.unpack_from(data, offset)), {}
        for field, fmt in self.fields:
            if fmt[:-1] and fmt[-1] != "s":  # an array: one value per element
                found[field] = [next(values) for _ in range(int(fmt[:-1]))]
            else:
                found[field] = next(values)
        return found


XSTATS_HEADER = Layout("tc_confucius_xstats", (("type", "I"), ("pad", "I")))
QDISC_STATS = Layout("tc_confucius_qd_stats", (
    ("new_flows", "I"), ("old_flows", "I"), ("new_weight", "Q"), ("ticks", "Q"), ("holds", "Q"),
    ("moves", "Q"), ("max_sojourn_us", "I"), ("memory_used", "I"), ("classes", "I"), ("pad", "I"),
    ("class_flows", f"{MAX_CLASSES}I"), ("class_packets", f"{MAX_CLASSES}I"),
    ("class_bytes", f"{MAX_CLASSES}I"),
    ("enqueued_packets", "Q"), ("enqueued_bytes", "Q"), ("sent_packets", "Q"), ("sent_bytes", "Q"),
    ("dropped_packets", "Q"), ("dropped_bytes", "Q"), ("backlog_packets", "I"), ("backlog_bytes", "I"),
    ("delay_drops", "Q"), ("aqm_drops", "Q"), ("ecn_marks", "Q"), ("instance_bytes", "Q"),
))
CLASS_STATS = Layout("tc_confucius_cl_stats", (("flows", "I"), ("packets", "I"), ("bytes", "I"), ("pad", "I")))
FLOW_STATS = Layout("tc_confucius_fl_stats", (
    ("bucket", "I"), ("state", "I"), ("class_id", "I"), ("weight", "I"), ("packets", "I"),
    ("bytes", "I"), ("deficit", "i"), ("sojourn_us", "I"), ("sport", "H"), ("dport", "H"),
    ("ip_proto", "B"), ("pad", "3s"),
))
LAYOUTS = (XSTATS_HEADER, QDISC_STATS, CLASS_STATS, FLOW_STATS)
# The union's members, at the end of the header, by the xstats type that names them.
MEMBERS = {XSTATS_QDISC: QDISC_STATS, XSTATS_CLASS: CLASS_STATS, XSTATS_FLOW: FLOW_STATS}
UNION_OFFSET = XSTATS_HEADER.struct.size


def xstats(app: bytes) -> tuple[int, dict] | None:
    """A TCA_STATS_APP of the qdisc or of a class: (its type, its member's fields), or None
    when it is too short for what its type says (or its type is unknown)."""
    if len(app) < UNION_OFFSET:
        return None
    kind = XSTATS_HEADER.unpack(app)["type"]
    member = MEMBERS.get(kind)
    if member is None or len(app) < UNION_OFFSET + member.struct.size:
        return None
    return kind, member.unpack(app, UNION_OFFSET)
