#!/usr/bin/env python
# SPDX-License-Identifier: MIT
"""router/confucius.qos inside the lab's kernel (run by test_qos_vm.py under UML, in
virtual time).

Two namespaces joined by a veth pair: `rtr` runs the script on its end, `wan0`; `peer`
is the rest of the Internet. Results go to $RESULTS/qos.json:

1. `bad`: each bad command line (or missing module, or missing tc plugin) with its exit
   status, its error and the namespace's qdiscs and links afterwards; `baseline` is that
   state before anything ran.
2. `started`: the qdiscs, the ingress filter and the IFB after `start`, and the qdiscs'
   counters before and after pings each way; `stopped`: the state after `stop`; `sqm`:
   the script used as sqm-scripts uses a recipe.
3. `rates`: the receivers' goodput of 200-byte UDP datagrams each way and of a TCP flow
   out (its GSO packets are split in the qdisc), shaped by the script without and with
   `LINKLAYER=ethernet OVERHEAD=100`.
"""

import json
import os
import subprocess
import time

SCRIPT = os.path.join(os.environ["LAB_REPO"], "router", "confucius.qos")
RTR, PEER = "rtr", "peer"
IFACE, PEER_IFACE, IFB = "wan0", "wan0p", "ifb4wan0"
RTR_ADDRESS, PEER_ADDRESS = "198.18.0.1", "198.18.0.2"
# Modest, as every packet costs host CPU even in virtual time: at 4 Mbit/s the shaper lets
# 2066 datagrams/s through without stab, 1462 with it, and 3000 are asked for. (The senders
# do not lose the rest: the qdisc's backlog holds their socket's send buffer, through
# the veth, so they wait.)
RATE_KBIT = 4000
PAYLOAD = 200           # UDP payload, bytes
UDP_OFFERED_BPS = 4_800_000  # payload: 3000 datagrams/s
SECONDS, OMIT = 4, 1    # per measurement; the first second fills the queue
QUEUE = {"EQDISC_OPTS": "limit 1000", "IQDISC_OPTS": "limit 1000"}  # 0.3 s at most of UDP
STAB = {"LINKLAYER": "ethernet", "OVERHEAD": "100"}


def run(*argv, env=None, check=True):
    return subprocess.run(argv, capture_output=True, text=True, check=check,
                          env=None if env is None else {**os.environ, **env})


def in_ns(ns, *argv):
    return ["ip", "netns", "exec", ns, *argv]


def qos(*args, env=None, wrap=()):
    """The script as a router would run it (its #! is /bin/sh), in the router's namespace."""
    done = run(*in_ns(RTR, *wrap, SCRIPT, *args), env=env, check=False)
    return {"args": list(args), "env": env or {}, "rc": done.returncode,
            "stdout": done.stdout, "stderr": done.stderr}


def tc_json(*argv):
    return json.loads(run(*in_ns(RTR, "tc", "-j", *argv)).stdout or "[]")


def state():
    """What the script may change: the router namespace's qdiscs and links."""
    qdiscs = sorted([q["dev"], q["kind"], q["handle"], q.get("parent", "root")]
                    for q in tc_json("qdisc", "show"))
    links = sorted(link["ifname"] for link in json.loads(run(*in_ns(RTR, "ip", "-j", "link")).stdout))
    return {"qdiscs": qdiscs, "links": links}


def topology():
    for ns in (RTR, PEER):
        run("ip", "netns", "add", ns)
        run(*in_ns(ns, "ip", "link", "set", "lo", "up"))
    run("ip", "link", "add", IFACE, "netns", RTR, "type", "veth", "peer", PEER_IFACE, "netns", PEER)
    for ns, dev, address in ((RTR, IFACE, RTR_ADDRESS), (PEER, PEER_IFACE, PEER_ADDRESS)):
        run(*in_ns(ns, "ip", "addr", "add", f"{address}/24", "dev", dev))
        run(*in_ns(ns, "ip", "link", "set", dev, "up"))


def without_module(*args):
    """start with the project's modules hidden from modprobe (a private mount namespace
    with an empty extra/): the script must find sch_confucius missing. First of all, while
    nothing has loaded the module yet."""
    extra = f"/lib/modules/{os.uname().release}/extra"
    shell = f'mount -t tmpfs none {extra} && exec "$0" "$@"'
    return qos(*args, wrap=("unshare", "--mount", "sh", "-c", shell))


def bad_inputs():
    start = ("start", IFACE, str(RATE_KBIT), str(RATE_KBIT))
    cases = [without_module(*start),
             qos(),
             qos("start"),
             qos("start", "nosuch0", "10000", "10000"),
             qos("start", IFACE, "ten", "10000"),
             qos("start", IFACE, "10000", "-5"),
             qos("start", IFACE, "10000", "4"),
             qos("start", IFACE, "0", "0"),
             qos("start", IFACE, "10000"),
             qos(*start, env={"LINKLAYER": "ptm"}),
             qos(*start, env={"LINKLAYER": "ethernet", "OVERHEAD": "lots"}),
             qos(*start, env={"LINKLAYER": "ethernet", "OVERHEAD": "1000"}),
             qos(*start, env={"OVERHEAD": "20"}),
             qos(*start, env={"TC_LIB_DIR": "/nonexistent"}),
             qos(*start, env={"EECN": "yes"}),
             # Refused by tc, after the checks: egress first, then ingress (the
             # interface's root qdisc and the IFB were in place by then).
             qos(*start, env={"EQDISC_OPTS": "limit 0"}),
             qos(*start, env={"IQDISC_OPTS": "limit 0"})]
    for case in cases:
        case["state"] = state()
    return cases


def counters(dev):
    qdisc = tc_json("-s", "qdisc", "show", "dev", dev, "root")[0]
    return {"packets": qdisc["packets"], "bytes": qdisc["bytes"]}


def ping(ns, address, count=50):
    run(*in_ns(ns, "ping", "-q", "-c", str(count), "-i", "0.01", "-s", "100", address))


def started_and_stopped():
    env = {"LINKLAYER": "ethernet", "OVERHEAD": "100", "STAB_MPU": "64"}
    start = qos("start", IFACE, "20000", "10000", env=env)
    found = {"start": start, "state": state(),
             "wan0": tc_json("-d", "qdisc", "show", "dev", IFACE),
             "ifb": tc_json("-d", "qdisc", "show", "dev", IFB),
             "filters": tc_json("filter", "show", "dev", IFACE, "ingress"),
             "again": qos("start", IFACE, "20000", "10000")}
    found["again"]["state"] = state()
    before = {"egress": counters(IFACE), "ingress": counters(IFB)}
    ping(PEER, RTR_ADDRESS)
    after_in = {"egress": counters(IFACE), "ingress": counters(IFB)}
    ping(RTR, PEER_ADDRESS)
    after_out = {"egress": counters(IFACE), "ingress": counters(IFB)}
    found["counters"] = {"before": before, "after_ping_in": after_in, "after_ping_out": after_out}
    stop = qos("stop", IFACE)
    stopped = {"stop": stop, "state": state(), "again": qos("stop", IFACE)}
    stopped["again"]["state"] = state()
    return found, stopped


def as_sqm_recipe():
    """What sqm-scripts' start and stop do with a recipe (sqm-scripts is not packaged
    for Debian), by hand: source it with SQM_LIB_DIR and sqm's variables set, which must
    run nothing; load the qdisc's module, make the IFB, call egress() and ingress(); then
    remove the ingress qdisc, the root qdisc and the IFB as sqm's stop does."""
    start = f"""
        SQM_LIB_DIR=/usr/lib/sqm IFACE={IFACE} UPLINK=10000 DOWNLINK=20000 DEV={IFB}
        TC=tc IP=ip INSMOD='modprobe -q' LINKLAYER=atm OVERHEAD=44 STAB_MPU=0 EECN=NOECN IECN=ECN
        EQDISC_OPTS='isolate triple-isolate nonat' IQDISC_OPTS='nat dual-dsthost ingress'
        . {SCRIPT}
        echo "sourced: $QDISC"
        sqm_prepare_script && ip link add name "$DEV" type ifb && egress && ingress
    """
    found = {"start": run(*in_ns(RTR, "sh", "-c", start), check=False).__dict__,
             "wan0": tc_json("-d", "qdisc", "show", "dev", IFACE),
             "ifb": tc_json("-d", "qdisc", "show", "dev", IFB)}
    found["start"].pop("args")
    run(*in_ns(RTR, "tc", "qdisc", "del", "dev", IFACE, "ingress"))
    run(*in_ns(RTR, "tc", "qdisc", "del", "dev", IFACE, "root"))
    run(*in_ns(RTR, "ip", "link", "del", IFB))
    found["state_after_stop"] = state()
    return found


def goodput(sender, sender_address, receiver, port, *args):
    """bit/s of payload the receiver got from an iperf3 flow sender -> receiver, over the
    intervals after OMIT seconds. The receiver is iperf3's client (--reverse: the server
    sends)."""
    run(*in_ns(sender, "iperf3", "--server", "--daemon", "--one-off", "--port", str(port)))
    time.sleep(0.5)
    report = json.loads(run(*in_ns(receiver, "iperf3", "--client", sender_address, "--port", str(port),
                                   "--reverse", "--json", "--time", str(SECONDS), *args)).stdout)
    intervals = [i["sum"] for i in report["intervals"] if i["sum"]["start"] >= OMIT - 0.01]
    seconds = sum(i["seconds"] for i in intervals)
    return sum(i["bytes"] for i in intervals) * 8 / seconds


def rates(env, shell=()):
    """Goodput out (rtr -> peer, wan0's root) and in (peer -> rtr, through the IFB), the
    script run by `shell` (default: its #!, /bin/sh)."""
    before = state()
    start = qos("start", IFACE, str(RATE_KBIT), str(RATE_KBIT), env=env, wrap=shell)
    assert start["rc"] == 0, start
    udp = ("--udp", "--length", str(PAYLOAD), "--bitrate", str(UDP_OFFERED_BPS))
    found = {"env": env,
             "udp_out": goodput(RTR, RTR_ADDRESS, PEER, 5201, *udp),
             "udp_in": goodput(PEER, PEER_ADDRESS, RTR, 5202, *udp),
             "tcp_out": goodput(RTR, RTR_ADDRESS, PEER, 5203, "--congestion", "cubic")}
    stop = qos("stop", IFACE, wrap=shell)
    assert stop["rc"] == 0 and state() == before, stop
    return found


def timed(seconds, phase, work):
    begin = time.monotonic()
    result = work()
    seconds[phase] = time.monotonic() - begin
    print(f"{phase}: {seconds[phase]:.1f} s", flush=True)
    return result


def main():
    seconds = {}
    topology()
    found = {"baseline": state(), "bad": timed(seconds, "bad", bad_inputs),
             "conntrack": os.path.exists("/proc/sys/net/netfilter/nf_conntrack_max")}
    found["started"], found["stopped"] = timed(seconds, "start_stop", started_and_stopped)
    found["sqm"] = timed(seconds, "sqm", as_sqm_recipe)
    # Once under busybox's shell, as on OpenWrt.
    found["rates"] = {"plain": timed(seconds, "plain", lambda: rates(QUEUE, ("busybox", "sh"))),
                      "stab": timed(seconds, "stab", lambda: rates({**QUEUE, **STAB}))}
    found["seconds"] = seconds
    found["constants"] = {"rate_bps": RATE_KBIT * 1000, "payload": PAYLOAD,
                          "udp_offered_bps": UDP_OFFERED_BPS}
    with open(os.path.join(os.environ["RESULTS"], "qos.json"), "w") as out:
        json.dump(found, out, indent=1)


main()
