#!/usr/bin/env python
# SPDX-License-Identifier: MIT
"""Robustness of sch_confucius inside the lab VM (run by test_kernel_robustness_vm.py).

1. 1000 random option sets (valid and invalid, what tc would never send too) through
   netlink: a rejected one must leave the dumped configuration unchanged and carry a
   message; an accepted one must show in the dump.
2. A flood of 100 000+ distinct UDP flows (pktgen through the qdisc, FLOOD_PACKETS
   packets, each with a pair of ports of its own) into a shaped qdisc: memory stays
   under memlimit; changes and replacements under load succeed.
3. Module removal under load: delete the qdisc, rmmod, re-add (autoload), repeatedly.
4. Creating and destroying large qdiscs leaves no memory behind.
5. A class dump of hundreds of flows read one small netlink message at a time while
   flows are forgotten between messages: no flow remembered throughout is skipped or
   listed twice (the walk resumes at a bucket, not at a count of remembered flows).
6. Confucius as HTB's leaves with a small maxdelay, under bursts of UDP several times
   HTB's rate, so that its dequeue drops until its queue is empty, over and over: the
   counters of both qdiscs and of HTB's classes agree and return to 0 once idle.
Results go to $RESULTS/robustness.json; the kernel log is checked by the test.
"""

import json
import os
import random
import re
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.environ["LAB_REPO"])  # run as `python3 -S`: no site-packages
from confucius.lab import kernelabi, rtnl  # noqa: E402

KIND = "confucius"
(BANDWIDTH64, LIMIT, MEMLIMIT, FLOWS, QUANTUM, INTERVAL, MODE, CLASSES, HYSTERESIS,
 RECLASSIFY, CLASS_WEIGHTS, PACE, TARGET, MAXHOLD, MAXDELAY, CLASS_WEIGHT, AQM_TARGET,
 AQM_INTERVAL, ECN, AQM_SETTLE, ISOLATE, NAT) = (
    kernelabi.ATTRIBUTES[name] for name in (
        "bandwidth64", "limit", "memlimit", "flows", "quantum", "interval", "mode", "classes",
        "hysteresis", "reclassify", "class_weights", "pace", "target", "maxhold", "maxdelay",
        "class_weight", "aqm_target", "aqm_interval", "ecn", "aqm_settle", "isolate", "nat"))
U32_RANGES = {LIMIT: (1, 1 << 20), MEMLIMIT: (64 << 10, 1 << 31), FLOWS: (1, 32768),
              QUANTUM: (64, 65536), INTERVAL: (1000, 60_000_000), MODE: (0, 2),
              CLASSES: (1, 8), HYSTERESIS: (0, 50), RECLASSIFY: (1000, 60_000_000),
              PACE: (0, 1), TARGET: (1000, 60_000_000), MAXHOLD: (0, 60_000_000),
              MAXDELAY: (0, 60_000_000), AQM_TARGET: (0, 60_000_000),
              AQM_INTERVAL: (1000, 60_000_000), ECN: (0, 1), AQM_SETTLE: (0, 60_000_000),
              ISOLATE: (0, 3), NAT: (0, 1)}
LAST_ATTRIBUTE = max(kernelabi.ATTRIBUTES.values())
BANDWIDTH_BYTES = (1000, (1 << 47) // 8)
# pktgen's UDP ports, each a [min, max) range it steps through by one per packet (no
# *_RND flag): the (source, destination) pair repeats only after 64 511 x 2 packets, as
# the two counts are coprime, so every packet up to then is a flow of its own. (Random
# ports drew with repetition, and from one destination port, pktgen's maxima being
# exclusive: ~54 000 distinct flows out of ~120 000 packets in the debug kernel.)
FLOOD_SRC_PORTS = (1024, 65535)
FLOOD_DST_PORTS = (1, 3)
FLOOD_TUPLES = (FLOOD_SRC_PORTS[1] - FLOOD_SRC_PORTS[0]) * (FLOOD_DST_PORTS[1] - FLOOD_DST_PORTS[0])
FLOOD_PACKETS = 110_000
FLOOD_TIMEOUT_S = 240
# The flood's shaped rates in bytes/s (1 and 2 Mbit/s): below what pktgen sends even in
# the debug kernel on a busy host (3 100-3 300 packets/s of 200 bytes, ~5 Mbit/s), so
# that the queue overflows and its memory limit is what holds it.
FLOOD_RATES = (125_000, 250_000)
rng = random.Random(20261122)


def sh(*argv, check=True):
    return subprocess.run(argv, capture_output=True, text=True, check=check)


def log_uniform(low, high):
    return int(round(low * (high / max(low, 1)) ** rng.random())) if low else rng.randint(0, high)


def u32_value(kind):
    low, high = U32_RANGES[kind]
    roll = rng.random()
    if roll < 0.6:
        return min(high, max(low, log_uniform(max(low, 1), high) if low else rng.randint(low, high)))
    if roll < 0.85:
        return rng.choice([low - 1, low, high, high + 1]) & 0xFFFFFFFF
    return rng.getrandbits(32)


def random_attribute(current_flows):
    # A stray attribute too: CLASS_WEIGHT outside its nest, or one past the last.
    stray = rng.choice([CLASS_WEIGHT, rng.randint(LAST_ATTRIBUTE + 1, 40)])
    kind = rng.choice([*U32_RANGES, BANDWIDTH64, CLASS_WEIGHTS, stray])
    if rng.random() < 0.1:  # a wrong size
        return kind, os.urandom(rng.choice([0, 1, 2, 3, 5, 6, 7, 9]))
    if kind in U32_RANGES:
        value = current_flows if kind == FLOWS and rng.random() < 0.5 else u32_value(kind)
        return kind, struct.pack("I", value)
    if kind == BANDWIDTH64:
        value = rng.choice([0, log_uniform(*BANDWIDTH_BYTES), rng.getrandbits(64), 999])
        return kind, struct.pack("Q", value)
    if kind == CLASS_WEIGHTS:  # nested CLASS_WEIGHT u32s, one too many now and then
        return kind | rtnl.NLA_F_NESTED, class_weights([rng.randint(0, 9) for _ in range(rng.randint(0, 9))])
    return kind, os.urandom(4)


def class_weights(weights):
    return b"".join(rtnl.attr(CLASS_WEIGHT, struct.pack("I", w)) for w in weights)


def encode(attrs):
    return b"".join(rtnl.attr(kind, payload) for kind, payload in attrs)


def expected_after(before, attrs):
    """What an accepted change must show: every attribute given, as sent."""
    after = dict(before)
    for kind, payload in attrs:
        if kind == CLASS_WEIGHTS | rtnl.NLA_F_NESTED:  # the kernel dumps every class's
            given = [struct.unpack_from("I", payload, at + 4)[0] for at in range(0, len(payload), 8)]
            after[CLASS_WEIGHTS] = class_weights(given + [0] * (kernelabi.MAX_CLASSES - len(given)))
        elif kind in U32_RANGES or kind == BANDWIDTH64:
            after[kind] = payload
    return after


def random_option_sets(ifindex, count):
    nl = rtnl.Rtnl()
    found = {"ops": 0, "accepted": 0, "rejected": 0, "changed_on_reject": [],
             "reject_without_message": [], "accepted_not_shown": [], "errors": {}}
    nl.qdisc(rtnl.ADD, ifindex, KIND, b"")
    for i in range(count):
        before = nl.options(ifindex, KIND)
        current_flows = struct.unpack("I", before[FLOWS])[0] if before else 1024
        attrs = [random_attribute(current_flows) for _ in range(rng.randint(0, 5))]
        if before is None or rng.random() < 0.05:
            flags = rtnl.ADD
        else:
            flags = rng.choice([rtnl.CHANGE, rtnl.CHANGE, rtnl.REPLACE])
        reply = nl.qdisc(flags, ifindex, KIND, encode(attrs))
        after = nl.options(ifindex, KIND)
        found["ops"] += 1
        found["errors"][str(reply.error)] = found["errors"].get(str(reply.error), 0) + 1
        if reply.error:
            found["rejected"] += 1
            if after != before:
                found["changed_on_reject"].append(i)
            if reply.error in (-22, -34) and not reply.message:  # EINVAL, ERANGE
                found["reject_without_message"].append(i)
        else:
            found["accepted"] += 1
            want = expected_after(before or {}, attrs) if before else None
            if want and any(after.get(k) != v for k, v in want.items() if k != rtnl.TCA_KIND):
                found["accepted_not_shown"].append(i)
        if rng.random() < 0.02:  # now and then start from scratch
            nl.qdisc(0, ifindex, None, None, message=rtnl.RTM_DELQDISC)
    nl.qdisc(0, ifindex, None, None, message=rtnl.RTM_DELQDISC)
    found["readded_with_defaults"] = nl.qdisc(rtnl.ADD, ifindex, KIND, b"").error
    nl.close()
    return found


def pktgen(dev, count=0):
    """pktgen sending UDP through the qdisc (queue_xmit) on dev, a new pair of ports each
    packet (FLOOD_SRC_PORTS, FLOOD_DST_PORTS)."""
    sh("modprobe", "pktgen")
    thread = "/proc/net/pktgen/kpktgend_0"
    for line in ("rem_device_all", f"add_device {dev}"):
        open(thread, "w").write(line + "\n")
    config = [f"count {count}", "clone_skb 0", "pkt_size 200", "delay 0", "xmit_mode queue_xmit",
              "dst 198.51.100.2", "dst_mac 02:00:00:00:00:02",
              f"udp_src_min {FLOOD_SRC_PORTS[0]}", f"udp_src_max {FLOOD_SRC_PORTS[1]}",
              f"udp_dst_min {FLOOD_DST_PORTS[0]}", f"udp_dst_max {FLOOD_DST_PORTS[1]}"]
    for line in config:
        open(f"/proc/net/pktgen/{dev}", "w").write(line + "\n")
    done = threading.Thread(target=lambda: open("/proc/net/pktgen/pgctrl", "w").write("start\n"))
    done.start()
    return done


def stop_pktgen(thread):
    open("/proc/net/pktgen/pgctrl", "w").write("stop\n")
    thread.join(timeout=30)


def pktgen_offered(dev):
    """Packets pktgen has handed to the qdisc so far: those it took and those it refused."""
    current = open(f"/proc/net/pktgen/{dev}").read()
    sofar, errors = re.search(r"pkts-sofar: (\d+)\s+errors: (\d+)", current).groups()
    return int(sofar) + int(errors)


def wait_for_packets(dev, packets, timeout):
    end = time.monotonic() + timeout
    while pktgen_offered(dev) < packets and time.monotonic() < end:
        time.sleep(0.2)


def sample_memory(ifindex, stop, box):
    nl = rtnl.Rtnl()
    while not stop.is_set():
        stats = rtnl.qdisc_stats(ifindex, KIND, nl)
        if stats:
            box.append(rtnl.confucius_xstats(stats["app"])["memory_used"])
        time.sleep(0.05)
    nl.close()


def valid_change():
    attrs = [(LIMIT, struct.pack("I", rng.choice([100, 1000, 10240]))),
             (MODE, struct.pack("I", rng.randint(0, 2))),
             (CLASSES, struct.pack("I", rng.randint(1, 8))),
             (INTERVAL, struct.pack("I", rng.choice([10_000, 250_000]))),
             (BANDWIDTH64, struct.pack("Q", rng.choice(FLOOD_RATES)))]
    return encode(rng.sample(attrs, rng.randint(1, len(attrs))))


def flood(ifindex, memlimit, flows):
    nl = rtnl.Rtnl()
    nl.qdisc(0, ifindex, None, None, message=rtnl.RTM_DELQDISC)
    options = encode([(BANDWIDTH64, struct.pack("Q", FLOOD_RATES[0])), (MEMLIMIT, struct.pack("I", memlimit)),
                      (FLOWS, struct.pack("I", flows))])
    created = nl.qdisc(rtnl.ADD, ifindex, KIND, options)
    memory, changes = [], []
    gen = pktgen("d0")
    sampling = threading.Event()
    sampler = threading.Thread(target=sample_memory, args=(ifindex, sampling, memory))
    sampler.start()
    time.sleep(1)
    for _ in range(100):  # change and replace while the flood runs
        flags = rng.choice([rtnl.CHANGE, rtnl.REPLACE])
        body = valid_change() + rtnl.attr(MEMLIMIT, struct.pack("I", memlimit))
        changes.append(nl.qdisc(flags, ifindex, KIND, body).error)
        time.sleep(0.03)
    wait_for_packets("d0", FLOOD_PACKETS, FLOOD_TIMEOUT_S)
    sampling.set()
    sampler.join()
    stop_pktgen(gen)
    offered = pktgen_offered("d0")
    sent = open("/proc/net/pktgen/d0").read()
    # Counters are read at different instants of a dump: compare them once the queue is idle.
    while (stats := rtnl.qdisc_stats(ifindex, KIND, nl))["qlen"]:
        time.sleep(0.1)
    nl.close()
    xs = rtnl.confucius_xstats(stats["app"])
    # Every packet pktgen offered went through the qdisc's enqueue, which counted it;
    # the first FLOOD_TUPLES of them are distinct flows.
    seen = min(offered, xs["enqueued_packets"])
    return {"created": created.error, "memlimit": memlimit, "flows": flows,
            "pktgen_offered": offered, "distinct_flows": min(seen, FLOOD_TUPLES),
            "max_memory": max(memory, default=-1), "samples": len(memory),
            "change_errors": [e for e in changes if e], "changes": len(changes),
            "drops": stats["drops"], "sent": stats["packets"],
            "enqueued": xs["enqueued_packets"], "backlog_packets": stats["qlen"],
            "pktgen": [line.strip() for line in sent.splitlines() if "pps" in line or "Result" in line]}


def removal_under_load(ifindex, rounds):
    nl = rtnl.Rtnl()
    gen = pktgen("d0")
    outcome = []
    for _ in range(rounds):
        nl.qdisc(0, ifindex, None, None, message=rtnl.RTM_DELQDISC)
        removed = False
        for _ in range(50):
            if sh("rmmod", "sch_confucius", check=False).returncode == 0:
                removed = True
                break
            time.sleep(0.1)
        added = nl.qdisc(rtnl.ADD, ifindex, KIND, encode([(BANDWIDTH64, struct.pack("Q", 1_250_000))]))
        outcome.append({"removed": removed, "readded": added.error})
        time.sleep(0.3)
    stop_pktgen(gen)
    nl.close()
    return outcome


def mem_available_kb():
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])


def create_destroy(ifindex, rounds):
    """Each round allocates a 4 MiB table (32768 flows), every other one in mode class with
    2 MiB of heaps besides: a leak would show in hundreds of MB."""
    nl = rtnl.Rtnl()
    errors = []

    def cycle(n):
        for i in range(n):
            attrs = [(FLOWS, struct.pack("I", 32768)), (MODE, struct.pack("I", i % 2))]
            errors.append(nl.qdisc(rtnl.ADD, ifindex, KIND, encode(attrs)).error)
            errors.append(nl.qdisc(0, ifindex, None, None, message=rtnl.RTM_DELQDISC).error)
        time.sleep(2)  # qdiscs are freed after an RCU grace period

    nl.qdisc(0, ifindex, None, None, message=rtnl.RTM_DELQDISC)
    cycle(3)  # warm the allocator's caches first
    before = mem_available_kb()
    cycle(rounds)
    nl.close()
    return {"rounds": rounds, "errors": [e for e in errors if e],
            "mem_before_kb": before, "mem_after_kb": mem_available_kb()}


def forwards(ifindex):
    """Packets sent out of d0 pass through the qdisc (its Sent counter grows)."""
    before = rtnl.qdisc_stats(ifindex, KIND)["packets"]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for port in range(9000, 9020):
            s.sendto(b"x" * 100, ("198.51.100.2", port))
    time.sleep(0.5)
    return rtnl.qdisc_stats(ifindex, KIND)["packets"] - before


# 5. The class dump. A flow is forgotten `interval` after its last packet (a new flow's
# keep time): the kept flows send again long before that, the passing ones send once,
# PASSING_GAP_S apart, so that they are forgotten one by one across the slow dump.
DUMP_INTERVAL_S = 3.0
KEPT_PORTS = range(20000, 20200)
KEEP_PERIOD_S = 0.1
PASSING_PORTS = range(30000, 30300)
PASSING_GAP_S = 0.005
# A fresh socket read with a 4 KiB buffer gets one page-sized message (~15 classes) per
# read, as the kernel sizes each dump message by the largest read so far; the slow dump
# pauses between reads, and the kernel fills the next message at each read.
DUMP_RECV = 4096
DUMP_PAUSE_S = 0.04


def netlink_messages(data):
    offset = 0
    while offset + 16 <= len(data):
        length, kind = struct.unpack_from("IH", data, offset)
        yield kind, data[offset + 16:offset + length]
        offset += (length + 3) & ~3


def flow_buckets(ifindex, pause):
    """The buckets of the flows one class dump (RTM_GETTCLASS) lists, in its order, read
    one message at a time with `pause` seconds between reads; and the number of reads."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    sock.bind((0, 0))
    request = rtnl.TCMSG.pack(socket.AF_UNSPEC, 0, ifindex, 0, 0, 0)
    sock.send(struct.pack("IHHII", 16 + len(request), rtnl.RTM_GETTCLASS,
                          rtnl.NLM_F_REQUEST | rtnl.NLM_F_DUMP, 1, 0) + request)
    buckets, reads = [], 0
    with sock:
        while True:
            data, _, flags, _ = sock.recvmsg(DUMP_RECV)
            reads += 1
            if flags & socket.MSG_TRUNC:
                raise RuntimeError("a dump message did not fit the read buffer")
            for kind, body in netlink_messages(data):
                if kind == rtnl.NLMSG_DONE:
                    return buckets, reads
                if kind == rtnl.NLMSG_ERROR:
                    raise OSError(-struct.unpack_from("i", body)[0], "class dump failed")
                minor = rtnl.TCMSG.unpack_from(body)[3] & 0xFFFF
                if kind == rtnl.RTM_NEWTCLASS and minor >= kernelabi.FLOW_MINOR:
                    buckets.append(minor - kernelabi.FLOW_MINOR)
            time.sleep(pause)


def keep_sending(address, stop, gaps):
    """One packet to each kept port every KEEP_PERIOD_S until stopped; `gaps` gets the time
    between rounds, which must stay well under the keep time for the flows to be kept."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        last = time.monotonic()
        while not stop.is_set():
            for port in KEPT_PORTS:
                s.sendto(b"k" * 64, (address, port))
            now = time.monotonic()
            gaps.append(now - last)
            last = now
            stop.wait(KEEP_PERIOD_S)


def dump_while_forgetting():
    """A fast dump, a slow one while passing flows are forgotten, a fast one: every flow
    in both fast dumps was remembered throughout and must be in the slow one, once."""
    ifindex = dummy("dd0", "198.51.102")
    nl = rtnl.Rtnl()
    created = nl.qdisc(rtnl.ADD, ifindex, KIND, encode([(INTERVAL, struct.pack("I", int(DUMP_INTERVAL_S * 1e6)))]))
    stop, gaps = threading.Event(), []
    keeper = threading.Thread(target=keep_sending, args=("198.51.102.2", stop, gaps))
    start = time.monotonic()
    keeper.start()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for port in PASSING_PORTS:
            s.sendto(b"p" * 64, ("198.51.102.2", port))
            time.sleep(PASSING_GAP_S)
    time.sleep(max(0.0, start + DUMP_INTERVAL_S - time.monotonic()))  # the first are forgotten now
    before, _ = flow_buckets(ifindex, 0)
    during, reads = flow_buckets(ifindex, DUMP_PAUSE_S)
    after, _ = flow_buckets(ifindex, 0)
    stop.set()
    keeper.join()
    nl.qdisc(0, ifindex, None, None, message=rtnl.RTM_DELQDISC)
    nl.close()
    return {"created": created.error, "before": before, "during": during, "after": after,
            "reads": reads, "max_keep_gap_s": max(gaps[1:], default=0.0), "interval_s": DUMP_INTERVAL_S}


# 6. HTB's leaves. Each class gets bursts of BURST_ROUNDS packets on each of its flows,
# several times its ceiling, then a pause: the packets left once the burst's first have
# gone have waited longer than maxdelay, and one dequeue drops them all, emptying the
# leaf. The flows pause for less than `interval`, so they stay remembered and become
# old flows, the ones maxdelay applies to.
HTB_CLASSES = {0x10: "1mbit", 0x20: "1mbit"}
HTB_CEIL = "4mbit"
LEAF_OPTIONS = ["maxdelay", "5ms", "interval", "100ms"]
LEAF_PORTS = range(40000, 40004)
BURST_ROUNDS = 6
BURST_PAUSE_S = 0.02
LOAD_S = 8
PACKET = b"h" * 1000


def tc(*args):
    return sh("tc", *args).stdout


def tc_json(*args):
    return json.loads(tc("-s", "-j", *args) or "[]")


def htb_with_confucius_leaves(dev):
    tc("qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10")
    tc("class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", HTB_CEIL)
    for minor, rate in HTB_CLASSES.items():
        tc("class", "add", "dev", dev, "parent", "1:1", "classid", f"1:{minor:x}", "htb",
           "rate", rate, "ceil", HTB_CEIL)
        tc("qdisc", "add", "dev", dev, "parent", f"1:{minor:x}", "handle", f"{minor:x}:", KIND, *LEAF_OPTIONS)


def class_sockets():
    """A UDP socket per HTB class: its priority names the class (HTB takes skb->priority)."""
    sockets = []
    for minor in HTB_CLASSES:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, 0x10000 | minor)
        sockets.append(s)
    return sockets


def bursts(address, seconds):
    """Bursts to every flow of every class for `seconds`; returns the packets sent."""
    sockets, sent = class_sockets(), 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(BURST_ROUNDS):
            for s in sockets:
                for port in LEAF_PORTS:  # UDP without IP_RECVERR: a qdisc's drop is no error
                    s.sendto(PACKET, (address, port))
                    sent += 1
        time.sleep(BURST_PAUSE_S)
    for s in sockets:
        s.close()
    return sent


def class_queues(dev):
    """qlen and backlog of each class on dev, by handle, read over netlink (Debian 12's
    tc prints HTB's classes as JSON that does not parse)."""
    with rtnl.Rtnl() as dump:
        found = {}
        for handle, kind, tlvs in dump.classes(dump.index(dev)):
            queue = rtnl.parse_attrs(tlvs[rtnl.TCA_STATS2])[rtnl.TCA_STATS_QUEUE]
            qlen, backlog = struct.unpack_from("II", queue)
            found[f"{handle >> 16:x}:{handle & 0xFFFF:x}"] = {"kind": kind, "qlen": qlen, "backlog": backlog}
        return found


def htb_idle(dev, timeout):
    """The statistics of the qdiscs and classes on dev once its root holds nothing (or
    `timeout` has passed), then half a second later, so that a count left behind shows."""
    end = time.monotonic() + timeout
    while tc_json("qdisc", "show", "dev", dev)[0]["qlen"] and time.monotonic() < end:
        time.sleep(0.1)
    time.sleep(0.5)
    return {"qdiscs": tc_json("qdisc", "show", "dev", dev), "classes": class_queues(dev)}


def htb_leaf_drops():
    ifindex = dummy("hb0", "198.51.103")
    htb_with_confucius_leaves("hb0")
    offered = bursts("198.51.103.2", LOAD_S)
    found = {"offered": offered, **htb_idle("hb0", 10)}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:  # still forwarding
        for port in LEAF_PORTS:
            s.sendto(b"x" * 100, ("198.51.103.2", port))
    found["after"] = htb_idle("hb0", 10)
    rtnl.Rtnl().qdisc(0, ifindex, None, None, message=rtnl.RTM_DELQDISC)
    return found


def dummy(dev, prefix):
    """A dummy device with prefix.1/24, prefix.2 its neighbour, and no IPv6 (whose own
    packets would add flows the tests did not send)."""
    sh("ip", "link", "add", dev, "type", "dummy")
    sh("sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1", check=False)  # absent without IPv6
    sh("ip", "addr", "add", f"{prefix}.1/24", "dev", dev)
    sh("ip", "link", "set", dev, "up")
    sh("ip", "neigh", "add", f"{prefix}.2", "lladdr", "02:00:00:00:00:02", "dev", dev)
    return socket.if_nametoindex(dev)


def main():
    sh("ip", "link", "add", "d0", "type", "dummy")
    sh("ip", "addr", "add", "198.51.100.1/24", "dev", "d0")
    sh("ip", "link", "set", "d0", "up")
    sh("ip", "neigh", "add", "198.51.100.2", "lladdr", "02:00:00:00:00:02", "dev", "d0")
    ifindex = socket.if_nametoindex("d0")
    found = {"options": random_option_sets(ifindex, 1000)}
    found["forwarded_after_options"] = forwards(ifindex)
    found["flood_1024"] = flood(ifindex, 1 << 20, 1024)
    found["flood_32768"] = flood(ifindex, 1 << 20, 32768)
    found["removal"] = removal_under_load(ifindex, 8)
    found["forwarded_after_removal"] = forwards(ifindex)
    found["create_destroy"] = create_destroy(ifindex, 40)
    found["class_dump"] = dump_while_forgetting()
    found["htb_leaf"] = htb_leaf_drops()
    json.dump(found, open(os.path.join(os.environ["RESULTS"], "robustness.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
