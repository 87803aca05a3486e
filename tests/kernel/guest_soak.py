#!/usr/bin/env python
# SPDX-License-Identifier: MIT
"""The debug kernel's soak (run by `confucius lab soak`, see confucius/lab/soak.py).

Two namespaces joined by a veth pair, sch_confucius shaping each direction. For the
given number of minutes: TCP bulk both ways, a paced UDP flow and a stream of short TCP
connections (a few kB each), while every second one of the two qdiscs gets a
`tc qdisc change` with a random valid option set. Then the traffic stops, the qdiscs are
deleted, the module is removed, and kmemleak scans. Slab usage is read before and after.
Everything goes to $RESULTS: soak.json, slabinfo-before.txt, slabinfo-after.txt,
kmemleak-boot.txt and kmemleak.txt; the kernel log is saved by the lab afterwards.
"""

import json
import os
import random
import socket
import subprocess
import sys
import threading
import time

RESULTS = os.environ["RESULTS"]
KMEMLEAK = "/sys/kernel/debug/kmemleak"
# Every rate below is multiplied by SOAK_SCALE (confucius/lab/soak.py: 0.1 in the x86
# kernel emulated by qemu, which carries about a tenth of what UML does natively), so
# that the shaped rates stay below what the kernel can carry and the queues still fill.
SCALE = float(os.environ.get("SOAK_SCALE", "1"))


def rate(mbit):
    """`mbit` Mbit/s scaled, as tc and iperf3 write it (kbit/s, at least 100)."""
    return f"{max(100, round(mbit * SCALE * 1000))}k"


# One side per namespace: (namespace, device, address, shaped rate at the start).
SIDES = (("soak-a", "va", "10.77.0.1", rate(50) + "bit"), ("soak-b", "vb", "10.77.0.2", rate(20) + "bit"))
SERVER = SIDES[1][2]
SHORT_FLOW_PORT = 9100
rng = random.Random(int(os.environ.get("SOAK_SEED", "15")))


def sh(*argv, check=True):
    return subprocess.run(argv, capture_output=True, text=True, check=check)


def in_ns(ns, *argv):
    return ["ip", "netns", "exec", ns, *argv]


def say(text):
    print(f"soak: {text}", flush=True)


def save(name, text):
    with open(os.path.join(RESULTS, name), "w") as out:
        out.write(text)


# --------------------------------------------------------------------------- set-up

def build_topology():
    for ns, *_ in SIDES:
        sh("ip", "netns", "add", ns)
        sh(*in_ns(ns, "ip", "link", "set", "lo", "up"))
    sh("ip", "link", "add", "va", "netns", "soak-a", "type", "veth", "peer", "name", "vb", "netns", "soak-b")
    for ns, dev, address, rate in SIDES:
        sh(*in_ns(ns, "ip", "addr", "add", f"{address}/24", "dev", dev))
        sh(*in_ns(ns, "ip", "link", "set", dev, "up"))
        receive_in_a_thread(ns, dev)
        sh(*in_ns(ns, "tc", "qdisc", "add", "dev", dev, "root", "confucius", "bandwidth", rate))


def receive_in_a_thread(ns, dev):
    """veth's receive path in a NAPI thread of its own. Otherwise a send runs the peer's
    whole receive path (and the ACK it sends back, and so on) in softirq on the sender's
    stack, which under KASAN outgrows UML's 16 kB kernel stack and kills the guest without
    a word (see vm/README.md)."""
    sh(*in_ns(ns, "ethtool", "-K", dev, "gro", "on"))
    sh(*in_ns(ns, "sh", "-c", f"echo 1 > /sys/class/net/{dev}/threaded"))


def kmemleak(command=None):
    """Write `command` to kmemleak (scan, clear) or read its report."""
    if command is None:
        with open(KMEMLEAK) as report:
            return report.read()
    with open(KMEMLEAK, "w") as control:
        control.write(command + "\n")
    return ""


def leak_scan():
    """Two scans, as the kernel's documentation advises: an object must be unreferenced
    for a whole scan interval before it is reported."""
    for _ in range(2):
        kmemleak("scan")
        time.sleep(6)
    return kmemleak()


# --------------------------------------------------------------------------- random valid changes

def random_options():
    """A random set of valid options for `tc qdisc change` (flows cannot change after
    creation; weights only go with mode external)."""
    choices = {
        "bandwidth": lambda: rng.choice(["unlimited", rate(rng.randint(5, 200)) + "bit"]),
        "limit": lambda: str(rng.randint(100, 20000)),
        "memlimit": lambda: f"{rng.choice([1, 4, 16, 32, 64])}mb",
        "quantum": lambda: str(rng.randint(300, 9000)),
        "interval": lambda: f"{rng.randint(10, 1000)}ms",
        "mode": lambda: rng.choice(["flow", "class", "external"]),
        "classes": lambda: str(rng.randint(1, 8)),
        "hysteresis": lambda: f"{rng.randint(0, 50)}%",
        "reclassify": lambda: f"{rng.randint(1, 1000)}ms",
        "pace": lambda: rng.choice(["fixed", "adaptive"]),
        "target": lambda: f"{rng.randint(1, 500)}ms",
        "maxhold": lambda: f"{rng.randint(0, 5000)}ms",
    }
    picked = rng.sample(sorted(choices), rng.randint(1, 5))
    words = []
    for name in picked:
        words += [name, choices[name]()]
    if "mode" in picked and words[words.index("mode") + 1] == "external" and rng.random() < 0.5:
        # No more weights than the classes the same change sets, which tc refuses.
        most = int(words[words.index("classes") + 1]) if "classes" in picked else 8
        words += ["weights", ":".join(str(rng.randint(1, 9)) for _ in range(rng.randint(1, most)))]
    return words


class ResidentTc:
    """One `tc -force -batch -` process in a namespace for the whole soak, fed a command
    at a time. Starting a `tc` per change (exec, the plugin's loading, `ip netns exec`'s
    mount set-up) took about 4 s in the debug kernel, so "every second" was every 4 s;
    a resident tc costs one netlink round trip per change and still goes through tc's
    parser and our plugin, as an operator's change would. tc prints nothing for a
    command that succeeds, so each command is followed by a sentinel, a `show` of the
    namespace's loopback whose one line ends the command's reply."""

    SENTINEL = "qdisc show dev lo"
    SENTINEL_REPLY = "qdisc noqueue 0: root"

    def __init__(self, ns):
        self.proc = subprocess.Popen(in_ns(ns, "tc", "-force", "-batch", "-"), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self._send("")  # returns once tc is up, so that the first change is not late

    def _send(self, command):
        """Write `command` and the sentinel; what tc said before the sentinel's line."""
        self.proc.stdin.write(f"{command}\n{self.SENTINEL}\n")
        self.proc.stdin.flush()
        said = []
        while not (line := self.proc.stdout.readline()).startswith(self.SENTINEL_REPLY):
            if not line:
                raise RuntimeError(f"tc -batch exited with {self.proc.wait()} after: {said}")
            said.append(line.strip())
        return said

    def run(self, command):
        """Run one command; (applied, what tc said about it)."""
        said = self._send(command)
        failed = any(line.startswith("Command failed") for line in said)
        return not failed, " ".join(line for line in said if not line.startswith("Command failed"))

    def close(self):
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


def change_every_second(senders, stop, started, tally):
    """At every whole second of the soak, a random valid `tc qdisc change` to one of the
    two qdiscs, through `senders` (a ResidentTc per namespace). A reply that comes after
    the next second has begun skips the seconds it overran, so that the count of seconds
    with a change tells how often one landed."""
    tick = 0
    try:
        while not stop.wait(max(0.0, started + tick - time.monotonic())):
            ns, dev, _, _ = rng.choice(SIDES)
            words = random_options()
            sent = time.monotonic()
            applied, said = senders[ns].run(f"qdisc change dev {dev} root confucius {' '.join(words)}")
            replied = time.monotonic()
            tally["reply_s"].append(replied - sent)
            if applied:
                tally["changes"] += 1
                tally["seconds_with_change"].add(int(sent - started))
            else:
                tally["refused"].append({"options": " ".join(words), "error": said})
            tick = max(tick + 1, int(replied - started) + 1)
    except (RuntimeError, OSError) as err:
        tally["changer_error"] = str(err)


def change_figures(tally, seconds):
    """What the changer did, for soak.json."""
    replies = sorted(tally["reply_s"]) or [0.0]
    return {"changes": tally["changes"], "refused": tally["refused"],
            "seconds_with_change": len({second for second in tally["seconds_with_change"] if second < seconds}),
            "change_window_s": seconds,
            "changer_error": tally.get("changer_error"),
            "reply_ms": {"median": round(1000 * replies[len(replies) // 2], 1),
                         "max": round(1000 * replies[-1], 1)}}


# --------------------------------------------------------------------------- traffic

def start_servers():
    servers = [subprocess.Popen(in_ns("soak-b", "iperf3", "-s", "-p", str(port)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for port in (5201, 5202, 5203)]
    servers.append(subprocess.Popen(in_ns("soak-b", sys.executable, "-S", __file__, "short-flow-server"),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(1)
    return servers


def iperf(port, seconds, *extra):
    return subprocess.Popen(in_ns("soak-a", "iperf3", "-c", SERVER, "-p", str(port), "-t", str(seconds),
                                  "--connect-timeout", "5000", "-J", *extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def iperf_totals(proc):
    out, err = proc.communicate()
    try:
        end = json.loads(out)["end"]
    except (ValueError, KeyError):
        return {"error": (err or out)[-300:]}
    summary = end.get("sum_received") or end.get("sum", {})
    return {"bytes": summary.get("bytes", 0), "mbit_s": round(summary.get("bits_per_second", 0) / 1e6, 2),
            "lost_percent": summary.get("lost_percent")}


def short_flow_server():
    """Each connection: read a size, send that many bytes back, close."""
    listener = socket.create_server((SERVER, SHORT_FLOW_PORT), backlog=128)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve_one, args=(conn,), daemon=True).start()


def serve_one(conn):
    with conn:
        conn.settimeout(30)
        try:
            size = int(conn.recv(16).decode())
            conn.sendall(b"x" * size)
        except (OSError, ValueError):
            pass


def short_flow_client(seconds):
    """Connections of 2-64 kB, one after another, for `seconds`; prints the counts."""
    done = failed = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        size = rng.randint(2, 64) * 1024
        try:
            with socket.create_connection((SERVER, SHORT_FLOW_PORT), timeout=30) as conn:
                conn.sendall(str(size).encode().ljust(16))
                got = 0
                while got < size:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    got += len(chunk)
            done += got == size
            failed += got != size
        except OSError:
            failed += 1
    print(json.dumps({"completed": done, "failed": failed}))


def short_flows(seconds):
    return subprocess.Popen(in_ns("soak-a", sys.executable, "-S", __file__, "short-flow-client", str(seconds)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def short_flow_totals(proc):
    out, err = proc.communicate()
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": (err or out)[-300:]}


def qdisc_stats():
    return {dev: json.loads(sh(*in_ns(ns, "tc", "-s", "-j", "qdisc", "show", "dev", dev)).stdout)
            for ns, dev, _, _ in SIDES}


# --------------------------------------------------------------------------- the soak

def soak(seconds):
    senders = {ns: ResidentTc(ns) for ns, *_ in SIDES}
    servers = start_servers()
    clients = {"tcp_up": iperf(5201, seconds), "tcp_down": iperf(5202, seconds, "-R"),
               "udp": iperf(5203, seconds, "-u", "-b", rate(8))}
    flows = short_flows(seconds)
    tally = {"changes": 0, "refused": [], "seconds_with_change": set(), "reply_s": []}
    stop = threading.Event()
    started = time.monotonic()
    changer = threading.Thread(target=change_every_second, args=(senders, stop, started, tally))
    changer.start()
    while (elapsed := time.monotonic() - started) < seconds:
        time.sleep(min(60, max(0.1, seconds - elapsed)))
        say(f"{time.monotonic() - started:.0f}/{seconds} s, {tally['changes']} changes applied,"
            f" {len(tally['refused'])} refused")
    stop.set()
    changer.join()
    for sender in senders.values():
        sender.close()
    traffic = {name: iperf_totals(proc) for name, proc in clients.items()}
    traffic["short_flows"] = short_flow_totals(flows)
    stats = qdisc_stats()
    for server in servers:
        server.kill()
        server.wait()
    return {"seconds": round(time.monotonic() - started, 1), "traffic": traffic,
            **change_figures(tally, seconds), "qdiscs": stats}


def tear_down():
    """Qdiscs deleted, namespaces gone, the module removed: whatever it allocated is free."""
    for ns, dev, _, _ in SIDES:
        sh(*in_ns(ns, "tc", "qdisc", "del", "dev", dev, "root"), check=False)
        sh("ip", "netns", "del", ns, check=False)
    time.sleep(2)  # qdiscs are freed after an RCU grace period
    for _ in range(50):
        if sh("rmmod", "sch_confucius", check=False).returncode == 0:
            return True
        time.sleep(0.2)
    return False


def follow_kernel_log():
    """The kernel log copied to $RESULTS as it is written, and every message on the
    console as well: a kernel that dies mid-soak leaves its last words there (the lab
    saves dmesg only after the script, and a dying kernel may not reach dmesg -w)."""
    sh("dmesg", "-n", "8")
    return subprocess.Popen(["dmesg", "-w"], stdout=open(os.path.join(RESULTS, "dmesg-live.txt"), "w"),
                            stderr=subprocess.DEVNULL)


def main():
    seconds = int(float(os.environ.get("SOAK_MINUTES", "30")) * 60)
    follow_kernel_log()
    sh("mount", "-t", "debugfs", "debugfs", "/sys/kernel/debug", check=False)
    # The lab's kernel has no kmemleak: a trial of the soak there skips its scans.
    leak_checked = os.path.exists(KMEMLEAK)
    sh("modprobe", "sch_confucius")
    if leak_checked:
        # Whatever boot itself left unreferenced is kept apart from what the soak leaves.
        save("kmemleak-boot.txt", leak_scan())
        kmemleak("clear")
    save("slabinfo-before.txt", open("/proc/slabinfo").read())
    build_topology()
    say(f"running {seconds} s of mixed traffic with a change every second")
    found = soak(seconds)
    found["module_removed"] = tear_down()
    found["kmemleak"] = leak_checked
    save("slabinfo-after.txt", open("/proc/slabinfo").read())
    if leak_checked:
        save("kmemleak.txt", leak_scan())
    with open(os.path.join(RESULTS, "soak.json"), "w") as out:
        json.dump(found, out, indent=1)
    say("done")


if __name__ == "__main__":
    if sys.argv[1:2] == ["short-flow-server"]:
        short_flow_server()
    elif sys.argv[1:2] == ["short-flow-client"]:
        short_flow_client(float(sys.argv[2]))
    else:
        main()
