# SPDX-License-Identifier: MIT
"""Pages over HTTP/2 in the lab: `[web] http` chooses each page's HTTP/2 domains on the host
(web/protocols.py), the run's spec carries them, and the guest hands them to web-client as
`--h2` (tests/tools/test_web_netns.py loads such pages over real kernel TCP)."""

import subprocess

from confucius.lab import runner
from confucius.lab.contract import PageSpec, RunSpec
from confucius.lab.guest import pages
from confucius.web.page import Page, WebObject

PAGE = Page("p0001", (WebObject("o0", "d0.web.test", 1000), WebObject("o1", "d3.web.test", 2000, "o0")))


def test_the_pages_http2_domains_follow_the_scenarios_http(tmp_path):
    for http, expected in (("h1", []), ("h2", ["d0.web.test", "d3.web.test"])):
        inputs = runner.write_inputs([PAGE], tmp_path / http, str, http)
        assert inputs["pages"] == [{"id": "p0001", "file": str(tmp_path / http / "page-0.json"), "http2": expected}]


def test_the_guest_asks_web_client_for_http2_on_those_domains(tmp_path, monkeypatch):
    spec = RunSpec.parse(_spec_with_page({"id": "p0001", "file": "/in/page-0.json", "key": "p0001",
                                          "unit_key": "u", "http2": ["d0.web.test", "d3.web.test"]}))
    asked = []
    monkeypatch.setattr(pages.subprocess, "run",
                        lambda argv, **_: asked.append(argv) or subprocess.CompletedProcess(argv, 0, "", ""))
    pages.load_page(spec, spec.pages[0], 0, tmp_path)
    [argv] = asked
    assert argv[-4:] == ["--h2", "d0.web.test", "--h2", "d3.web.test"]
    assert PageSpec.from_dict({"id": "p", "file": "f", "key": "k", "unit_key": "u"}).http2 == []


def _spec_with_page(page: dict) -> dict:
    from test_lab_db import hand_spec

    data = hand_spec("u1")
    data["pages"] = [page]
    return data
