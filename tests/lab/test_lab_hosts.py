# SPDX-License-Identifier: MIT
"""Two client hosts behind the one bottleneck, and the router's NAT (issue 46 item 4): the
topology's exact commands with one client (unchanged) and two, with NAT on and off; the
scenario fields that ask for them, and their errors; the keys, which name them only when
asked for; the guest's per-host byte counters read from /proc/net/dev, the run folder's
hosts.jsonl stored in host_bytes and read back, and the schema upgrade that added it."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from confucius.experiment import db as lab_db, db_runs, keys, scenario as sc
from confucius.experiment.db import Database
from confucius.experiment.results import ResultsError
from confucius.lab import topology as topo
from confucius.lab.cli import app as lab_app
from confucius.lab.guest.hosts import rx_bytes
from confucius.lab.run_folder import read_run
from test_lab_bulk_rtt import run_info
from test_lab_db import LOAD_START, SCENARIO, database_of_schema, make_run, schema_version

HOSTS_TOML = Path(__file__).resolve().parents[2] / "scenarios" / "hosts.toml"
# /proc/net/dev as a UML 6.1 guest's client namespace showed it (the router namespace's
# devices, names longer than the column included).
NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
cli2-rtr: 20511717   13596    0    0    0     0          0         0   402650    6721    0    0    0     0       0          0
"""


def steps(**kwargs) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    return [(s.argv, s.lines) for s in topo.Topology(qdisc="cake bandwidth 20mbit", rate=None, **kwargs).steps()]


def test_one_client_without_nat_is_the_dumbbell_as_before():
    script = topo.Topology(qdisc="cake bandwidth 20mbit", rate=None).script()
    assert "netns add srv\nnetns add rtr\nnetns add cli\nlink add srv-rtr type veth peer name rtr-srv\n" \
           "link add cli-rtr type veth peer name rtr-cli\nEOF" in script
    for absent in ("lan", "cli2", "proxy_arp", "nft", "198.19.0.3"):
        assert absent not in script


def test_two_clients_join_the_router_s_client_side_through_the_lan_hop():
    made = steps(clients=2)
    assert made[0] == (("ip", "-batch", "-"), (
        "netns add srv", "netns add rtr", "netns add lan", "netns add cli", "netns add cli2",
        "link add srv-rtr type veth peer name rtr-srv", "link add lan-rtr type veth peer name rtr-cli",
        "link add cli-rtr type veth peer name lan-cli", "link add cli2-rtr type veth peer name lan-cli2"))
    assert (("ip", "-n", "lan", "-batch", "-"), (
        "link set lo up", "addr add 198.19.0.254/32 dev lan-rtr", "link set lan-rtr up", "link set lan-cli up",
        "link set lan-cli2 up", "route add 198.19.0.1/32 dev lan-rtr", "route add 198.19.0.2/32 dev lan-cli",
        "route add 198.19.0.3/32 dev lan-cli2", "route add default via 198.19.0.1 dev lan-rtr")) in made
    assert (("ip", "-n", "cli2", "-batch", "-"), (
        "link set lo up", "addr add 198.19.0.3/16 dev cli2-rtr", "link set cli2-rtr up",
        "route add default via 198.19.0.1")) in made
    assert (("ip", "netns", "exec", "lan", "sysctl", "-qw", "net.ipv4.conf.all.proxy_arp=1",
             "net.ipv4.neigh.lan-rtr.proxy_delay=0", "net.ipv4.neigh.lan-cli.proxy_delay=0",
             "net.ipv4.neigh.lan-cli2.proxy_delay=0"), ()) in made
    assert (("ip", "netns", "exec", "lan", "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
             "net.ipv6.conf.default.disable_ipv6=1", "net.ipv4.ip_forward=1"), ()) in made


def test_each_client_has_its_own_netem_and_the_router_s_client_side_the_only_qdisc_under_test():
    tc = [(argv, lines) for argv, lines in steps(clients=2) if argv[0] == "tc"]
    assert tc == [(("tc", "-n", "srv", "-batch", "-"), ("qdisc add dev srv-rtr root netem delay 20000us limit 1000000",)),
                  (("tc", "-n", "cli", "-batch", "-"), ("qdisc add dev cli-rtr root netem delay 20000us limit 1000000",)),
                  (("tc", "-n", "cli2", "-batch", "-"), ("qdisc add dev cli2-rtr root netem delay 20000us limit 1000000",)),
                  (("tc", "-n", "rtr", "-batch", "-"), ("qdisc add dev rtr-cli root handle 1: cake bandwidth 20mbit",))]


@pytest.mark.parametrize("clients", [1, 2])
def test_nat_masquerades_what_the_router_sends_towards_the_server(clients):
    nft = [(argv, lines) for argv, lines in steps(clients=clients, nat=True) if "nft" in argv]
    assert nft == [(("ip", "netns", "exec", "rtr", "nft", "-f", "-"), (
        "add table ip lab_nat",
        "add chain ip lab_nat postrouting { type nat hook postrouting priority srcnat ; }",
        'add rule ip lab_nat postrouting oifname "rtr-srv" masquerade'))]
    assert not [argv for argv, _ in steps(clients=clients) if "nft" in argv]


@pytest.mark.parametrize("kwargs, message", [
    ({"clients": 0}, "clients must be a whole number from 1 to 2, got 0"),
    ({"clients": 3}, "clients must be a whole number from 1 to 2, got 3"),
    ({"clients": True}, "clients must be a whole number"),
    ({"nat": "yes"}, "nat must be true or false"),
])
def test_bad_hosts_or_nat_are_refused(kwargs, message):
    with pytest.raises(topo.TopologyError, match=message):
        topo.Topology(**kwargs)


def test_client_hosts_by_number():
    assert topo.client_host(1) == ("cli", "198.19.0.2") and topo.client_host(2) == ("cli2", "198.19.0.3")
    with pytest.raises(topo.TopologyError, match="between 1 and 2, got 3"):
        topo.client_host(3)


def test_the_topology_command_builds_two_hosts_and_nat_on_request():
    shown = CliRunner().invoke(lab_app, ["topology", "up", "--show", "--clients", "2", "--nat"])
    assert shown.exit_code == 0 and shown.stdout == topo.Topology(clients=2, nat=True).script()
    refused = CliRunner().invoke(lab_app, ["topology", "up", "--show", "--clients", "3"])
    assert refused.exit_code != 0 and "clients must be a whole number from 1 to 2, got 3" in refused.output


# --------------------------------------------------------------------------- the scenario

def load_hosts(tmp_path: Path, edit=lambda text: text) -> sc.Scenario:
    path = tmp_path / "hosts.toml"
    path.write_text(edit(HOSTS_TOML.read_text()))
    return sc.load(path)


def test_hosts_toml_puts_eight_downloads_on_host_two(tmp_path):
    scenario = load_hosts(tmp_path)
    assert scenario.link.clients == 2 and not scenario.link.nat
    assert [(b.cca, b.host, b.start_s, b.duration_s) for b in scenario.bulk] == [("cubic", 2, 0.0, None)] * 8
    assert [s.name for s in scenario.schedulers] == ["fq_codel", "cake", "cake-flows", "confucius", "confucius-flows",
                                                       "confucius-dsthost"]
    assert [s.options for s in scenario.schedulers[-2:]] == ["isolate flows", "isolate dual-dsthost"]


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("clients = 2", "clients = 3"), r"link.clients: must be between 1 and 2, got 3"),
    (lambda t: t.replace("clients = 2", "clients = \"two\""), r"link.clients: must be a whole number"),
    (lambda t: t.replace("clients = 2\n", ""), r"bulk\[0\].host: the link has 1 client host: set \[link\] "
                                               r"clients = 2 to download on host 2"),
    (lambda t: t.replace("host = 2", "host = 0", 1), r"bulk\[0\].host: must be between 1 and 2, got 0"),
    (lambda t: t.replace("clients = 2", "clients = 2\nnat = 1"), r"link.nat: must be true or false, got 1"),
])
def test_bad_host_fields_are_refused_with_the_key_and_the_fix(tmp_path, edit, message):
    with pytest.raises(sc.ScenarioError, match=message):
        load_hosts(tmp_path, edit)


def test_nat_is_read_for_either_engine(tmp_path):
    for engine in ("qemu", "uml"):
        edit = lambda t: t.replace("clients = 2", "clients = 2\nnat = true").replace(
            'name = "hosts"', f'name = "hosts"\nengine = "{engine}"')
        assert load_hosts(tmp_path, edit).link.nat


def test_the_keys_name_hosts_and_nat_only_when_asked_for(tmp_path):
    def key(edit) -> str:
        scenario = load_hosts(tmp_path, edit)
        return keys.cell_key(scenario, keys.Cell(scenario.schedulers[0], scenario.rt_sets[0], 0))

    one_client = lambda t: t.replace("clients = 2\n", "").replace("host = 2\n", "")
    explicit = lambda t: one_client(t).replace("rtt = \"40ms\"", "rtt = \"40ms\"\nclients = 1\nnat = false") \
                                      .replace("cca = \"cubic\"", "cca = \"cubic\"\nhost = 1")
    assert key(one_client) == key(explicit)
    assert len({key(one_client), key(lambda t: t), key(lambda t: t.replace("host = 2", "host = 1", 1)),
                key(lambda t: t.replace("clients = 2", "clients = 2\nnat = true"))}) == 4
    scenario = load_hosts(tmp_path, one_client)
    conditions = keys.conditions(scenario, keys.Cell(scenario.schedulers[0], scenario.rt_sets[0], 0))
    assert "clients" not in conditions.key_input()["link"] and "host" not in conditions.key_input()["bulk"][0]


# --------------------------------------------------------------------------- the counters

def test_a_host_s_received_bytes_are_read_from_proc_net_dev():
    assert rx_bytes(NET_DEV, "cli2-rtr") == 20511717 and rx_bytes(NET_DEV, "lo") == 0
    with pytest.raises(RuntimeError, match="no device cli-rtr"):
        rx_bytes(NET_DEV, "cli-rtr")


def two_host_run(folder: Path, samples: list[dict]) -> Path:
    make_run(folder, "u1")
    spec = json.loads((folder / "spec.json").read_text())
    spec["topology"]["clients"] = 2
    (folder / "spec.json").write_text(json.dumps(spec))
    (folder / "hosts.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    return folder


def test_the_counters_travel_from_the_run_folder_into_host_bytes(tmp_path):
    samples = [{"time_ns": LOAD_START + i * 200_000_000, "rx_bytes": [1000 * i, 50_000 * i]} for i in range(3)]
    run = read_run(two_host_run(tmp_path / "run", samples))
    assert run.host_bytes == [(s["time_ns"], s["rx_bytes"]) for s in samples]
    with Database(tmp_path / "lab.sqlite") as db:
        db_runs.store_run(db, db.scenario_id("handmade", "abc", "h.toml", SCENARIO), run_info(tmp_path), run)
        assert [tuple(r) for r in db_runs.host_byte_rows(db, 1)] == [
            (s["time_ns"], host, count) for s in samples for host, count in enumerate(s["rx_bytes"], 1)]


@pytest.mark.parametrize("sample", [{"time_ns": 5, "rx_bytes": [1]}, {"time_ns": 5, "rx_bytes": [1, -2]},
                                    {"time_ns": 5, "rx_bytes": [1, 2.5]}])
def test_a_bad_counter_sample_makes_the_run_folder_unreadable(tmp_path, sample):
    with pytest.raises(ResultsError, match=r"hosts.jsonl: the sample at 5 ns has .*, not 2 byte counts"):
        read_run(two_host_run(tmp_path / "run", [sample]))


def test_a_one_client_run_has_no_host_bytes(tmp_path):
    assert read_run(make_run(tmp_path / "run", "u1")).host_bytes == []


def test_a_database_of_schema_11_gains_host_bytes(tmp_path):
    path = database_of_schema(tmp_path / "lab.sqlite", 11, "DROP TABLE host_bytes")
    with lab_db.Database(path) as db:
        assert db.query("SELECT COUNT(*) FROM host_bytes")[0][0] == 0
        assert schema_version(db) == str(lab_db.SCHEMA_VERSION)


def test_a_variant_names_an_isolate_mode_but_no_word_starts_with_a_dash(tmp_path):
    edit = lambda t: t.replace('options = "isolate dual-dsthost"', 'options = "isolate -dsthost"')
    with pytest.raises(sc.ScenarioError, match=r"options for confucius-dsthost must be plain tc words"):
        load_hosts(tmp_path, edit)
