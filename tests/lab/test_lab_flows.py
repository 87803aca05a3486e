# SPDX-License-Identifier: MIT
"""Confucius's per-flow classes, sampled in the guest: the xstats blob and the netlink class
dump parsed (messages built here from the UAPI layout), the samples read back from a run
folder and stored, and the schema upgrade that added their table."""

import json
import socket
import sqlite3
import struct

import pytest

from confucius.experiment import db as lab_db, db_runs
from confucius.lab import rtnl
from confucius.experiment.db import Database, DatabaseError
from confucius.lab.run_folder import read_run
from test_lab_db import LOAD_START, SCENARIO, database_of_schema, make_run, schema_version

# struct tc_confucius_xstats is 8 bytes of header and its largest member, the qdisc's
# statistics (kernel/include/uapi/linux/pkt_sched_confucius.h): 216 bytes in all.
XSTATS_SIZE = 216
TYPE_CLASS, TYPE_FLOW = 1, 2
NEW, OLD = 1, 2
RT_PORT = 5000


def flow_blob(bucket=5, state=OLD, class_id=1, weight=65536, packets=3, nbytes=4542, deficit=-120,
              sojourn_us=12_300, sport=43110, dport=RT_PORT, ip_proto=17, kind=TYPE_FLOW) -> bytes:
    blob = struct.pack("=II", kind, 0)
    blob += struct.pack("=IIIIII", bucket, state, class_id, weight, packets, nbytes)
    blob += struct.pack("=iI", deficit, sojourn_us)
    blob += struct.pack("=HHB3x", sport, dport, ip_proto)
    return blob + bytes(XSTATS_SIZE - len(blob))


def test_a_flow_blob_parses_by_its_type():
    flow = rtnl.flow_xstats(flow_blob(weight=3 * 65536 // 2, state=NEW, class_id=0))
    assert flow == {"bucket": 5, "state": "new", "class": 0, "weight": 1.5, "packets": 3, "bytes": 4542,
                    "deficit": -120, "sojourn_us": 12_300, "sport": 43110, "dport": RT_PORT, "ip_proto": 17}
    assert rtnl.flow_xstats(flow_blob(kind=TYPE_CLASS)) is None     # a class of old flows
    assert rtnl.flow_xstats(flow_blob()[:20]) is None                 # cut short


class FakeSocket:
    """What the kernel answers a class dump with: the given messages, then NLMSG_DONE."""

    def __init__(self, messages: list[tuple[int, bytes]]):
        self.messages = messages
        self.sent = []

    def send(self, data: bytes) -> None:
        self.sent.append(data)

    def recv(self, size: int) -> bytes:
        seq = struct.unpack_from("IHHII", self.sent[-1])[3]
        out = b"".join(struct.pack("IHHII", 16 + len(body), kind, 2, seq, 0) + body
                       for kind, body in self.messages)
        return out + struct.pack("IHHII", 20, rtnl.NLMSG_DONE, 2, seq, 0) + bytes(4)


def class_message(handle: int, kind: str, app: bytes) -> tuple[int, bytes]:
    stats = rtnl.attr(rtnl.TCA_STATS_QUEUE, struct.pack("5I", 3, 4542, 0, 0, 0)) + rtnl.attr(rtnl.TCA_STATS_APP, app)
    body = rtnl.TCMSG.pack(socket.AF_UNSPEC, 0, 4, handle, 0xFFFFFFFF, 0)
    body += rtnl.attr(rtnl.TCA_KIND, kind.encode() + b"\0") + rtnl.attr(rtnl.TCA_STATS2 | rtnl.NLA_F_NESTED, stats)
    return rtnl.RTM_NEWTCLASS, body


def test_a_class_dump_yields_the_confucius_flows_only():
    dump = rtnl.ClassDump.__new__(rtnl.ClassDump)
    dump.seq = 0
    dump.sock = FakeSocket([
        class_message(0x10001, "confucius", struct.pack("=II", TYPE_CLASS, 0) + bytes(XSTATS_SIZE - 8)),
        class_message(0x18005, "confucius", flow_blob(bucket=5)),
        class_message(0x10001, "htb", bytes(40)),              # the shaper above it
        class_message(0x18009, "confucius", flow_blob(bucket=9, sport=80, dport=40000, ip_proto=6))])
    flows = dump.confucius_flows(4)
    assert [(f["bucket"], f["dport"], f["ip_proto"]) for f in flows] == [(5, RT_PORT, 17), (9, 40000, 6)]
    request = dump.sock.sent[0]
    assert struct.unpack_from("IHH", request)[1:] == (rtnl.RTM_GETTCLASS, rtnl.NLM_F_REQUEST | rtnl.NLM_F_DUMP)


def sample(time_ns: int, rt_bytes: int, web_bytes: int) -> str:
    rt = rtnl.flow_xstats(flow_blob(bucket=7, packets=rt_bytes // 1500, nbytes=rt_bytes))
    web = rtnl.flow_xstats(flow_blob(bucket=9, state=NEW, class_id=0, weight=65536 // 4, packets=web_bytes // 1500,
                                     nbytes=web_bytes, sport=80, dport=40001, ip_proto=6))
    return json.dumps({"time_ns": time_ns, "flows": [rt, web]}) + "\n"


def write_flow_samples(folder, count: int = 100, step_ns: int = 20_000_000):
    """Confucius's flows.jsonl around the hand-made run's load: the RT flow (bucket 7)
    queues 1500 B more per sample, a new Web flow (bucket 9, weight 1/4) holds 3000 B;
    the lead (2 samples before the load) comes last, as the sampler writes it."""
    times = [LOAD_START - 2 * step_ns + i * step_ns for i in range(count)]
    lines = [sample(t, 1500 * i, 3000) for i, t in enumerate(times)]
    (folder / "flows.jsonl").write_text("".join(lines[2:] + lines[:2]) + '{"time_ns": 1, "fl')
    return folder


def test_flow_samples_read_back_in_time_order_and_fill_their_table(tmp_path):
    run = read_run(write_flow_samples(make_run(tmp_path / "run", "u1")))
    times = [t for t, _ in run.qdisc_flows]
    assert times == sorted(times) and len(times) == 100
    with Database(tmp_path / "lab.sqlite") as db:
        scenario_id = db.scenario_id("handmade", "abc", "h.toml", SCENARIO)
        run_id = db_runs.store_run(db, scenario_id, {"cell_key": "c1", "scheduler": "confucius", "scheduler_base": "confucius",
                                            "scheduler_options": "", "tc_commands": "[]", "controller": "gcc",
                                            "rt_flows": "{}", "repetition": 0, "mode": "episodes", "rtt_s": 0.04,
                                            "buffer_packets": 1000, "status": "ok", "started_unix": 0.0,
                                            "results_dir": str(tmp_path / "run"), "spec": "{}", "engine": "qemu",
                                            "time_mode": "real"}, run)
        rows = db.query("SELECT * FROM qdisc_flows WHERE run_id=? ORDER BY time_ns, bucket", (run_id,))
    assert len(rows) == 200
    first_rt, first_web = rows[0], rows[1]
    # An empty flow has no head packet: its ports are NULL, not the kernel's zeros.
    assert (first_rt["bucket"], first_rt["bytes"], first_rt["dport"]) == (7, 0, None)
    assert (first_web["state"], first_web["class_id"], first_web["weight"], first_web["sport"]) == ("new", 0, 0.25, 80)
    last_rt = rows[-2]
    assert (last_rt["bytes"], last_rt["dport"], last_rt["ip_proto"], last_rt["sojourn_us"]) == (99 * 1500, RT_PORT, 17,
                                                                                                  12_300)


def test_a_version_2_database_gains_what_it_lacks_and_older_ones_are_refused(tmp_path):
    path = database_of_schema(tmp_path / "lab.sqlite", 2, "DROP TABLE qdisc_flows",
                              "ALTER TABLE runs DROP COLUMN engine", "ALTER TABLE runs DROP COLUMN time_mode")
    with Database(path) as db:
        assert schema_version(db) == str(lab_db.SCHEMA_VERSION)
        assert db.query("SELECT COUNT(*) FROM qdisc_flows")[0][0] == 0
        columns = {r["name"]: r["dflt_value"] for r in db.query("PRAGMA table_info(runs)")}
        assert (columns["engine"], columns["time_mode"]) == ("'qemu'", "'real'")  # every earlier run's
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    with pytest.raises(DatabaseError, match="schema version 1"):
        Database(path)
