# SPDX-License-Identifier: MIT
"""Reading client reports, and the hosts mapping the lab passes to both programs."""

import json

import pytest

from confucius.web.hosts import address_map, corpus_domains, hosts_text
from confucius.web.client_report import ReportError, client_command, parse_report, run_page_load


def _report(**changes):
    report = {
        "format": "confucius-web-load/1", "page": "p", "ok": True, "error": None,
        "start_unix_us": 1_700_000_000_000_000, "plt_us": 250_000, "cca": "cubic", "max_per_domain": 6,
        "objects_total": 2, "objects_done": 2,
        "connections": [{"id": 0, "domain": "a.test", "server": "10.0.0.1:80", "local_port": 40000,
                         "opened_us": 0, "established_us": 40_000, "objects": 2, "bytes": 3300, "error": None}],
        "objects": [
            {"id": "r", "domain": "a.test", "size": 1000, "parent": None, "depth": 0, "status": "done",
             "connection": 0, "ready_us": 0, "request_us": 40_100, "first_byte_us": 80_000,
             "last_byte_us": 81_000, "received": 1000, "error": None},
            {"id": "c", "domain": "a.test", "size": 2000, "parent": "r", "depth": 1, "status": "done",
             "connection": 0, "ready_us": 81_000, "request_us": 81_100, "first_byte_us": 121_000,
             "last_byte_us": 250_000, "received": 2000, "error": None}],
    }
    report.update(changes)
    return json.dumps(report)


def test_report_becomes_records_in_seconds():
    load = parse_report(_report())
    assert load.plt == 0.25 and load.start_unix == 1_700_000_000.0
    assert load.objects[1].first_byte == 0.121 and load.objects[1].parent == "r"
    assert load.connections[0].established == 0.04
    assert load.connections_per_domain() == {"a.test": 1}
    assert load.peak_active() == 1


def test_a_connection_is_http1_unless_the_report_names_its_protocol():
    # Reports of web-client before HTTP/2 have no protocol; today's and the simulator's name it.
    assert parse_report(_report()).connections[0].protocol == "h1"
    named = json.loads(_report())
    named["connections"][0]["protocol"] = "h2"
    assert parse_report(json.dumps(named)).connections[0].protocol == "h2"


def test_failed_load_keeps_missing_times():
    load = parse_report(_report(ok=False, plt_us=None, error="timeout after 1s"))
    assert load.plt is None and not load.ok


@pytest.mark.parametrize("text, message", [
    ("not json", "not JSON"),
    ('{"format": "something-else"}', "not a confucius-web-load/1 report"),
    (json.dumps({"format": "confucius-web-load/1", "page": "p"}), "lacks or mistypes field"),
])
def test_bad_reports_are_refused(text, message):
    with pytest.raises(ReportError, match=message):
        parse_report(text)


def test_client_command_runs_inside_a_namespace_when_asked():
    command = client_command("/bin/web-client", "p.json", "hosts", port=8080, cca="reno", timeout=5, netns="ns1")
    assert command[:4] == ["ip", "netns", "exec", "ns1"]
    assert command[4:] == ["/bin/web-client", "--page", "p.json", "--hosts", "hosts", "--port", "8080",
                           "--timeout", "5s", "--cca", "reno"]


def test_missing_client_binary_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="make tools"):
        run_page_load(tmp_path / "web-client", "p.json", "hosts")


def test_address_map_gives_one_address_per_domain():
    mapping = address_map(corpus_domains(3), "10.88.0.0/24")
    assert mapping == {"d0.web.test": "10.88.0.1", "d1.web.test": "10.88.0.2", "d2.web.test": "10.88.0.3"}
    assert hosts_text(mapping).splitlines()[0] == "10.88.0.1 d0.web.test"
    with pytest.raises(ValueError, match="2 host addresses"):
        address_map(corpus_domains(3), "10.88.0.0/30")
    with pytest.raises(ValueError, match="not a network"):
        address_map(corpus_domains(1), "10.88.0.300/24")
