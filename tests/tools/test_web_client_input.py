# SPDX-License-Identifier: MIT
"""web-client refuses bad input before it opens any connection: exit status 2, a message, no report."""

import json
import subprocess

import pytest

from webtools import web_binaries


def _page(*objects):
    return {"format": "confucius-web-page/1", "id": "t",
            "objects": [dict(zip(("id", "domain", "size", "parent"), o)) for o in objects]}


@pytest.mark.parametrize("content, message", [
    ("{not json", "not a page description"),
    (json.dumps(_page(("r", "a.test", 1, None), ("x", "a.test", 1, "y"), ("y", "a.test", 1, "x"))), "cycle"),
    (json.dumps(_page(("r", "a.test", 1, "nobody"))), "unknown parent"),
    (json.dumps(_page(("r", "a.test", -7, None))), "size must be a whole number"),
    (json.dumps(_page(("r", "a.test", 1, None), ("r", "a.test", 1, None))), "appears twice"),
])
def test_bad_pages(tmp_path, content, message):
    client, _ = web_binaries()
    (tmp_path / "page.json").write_text(content)
    (tmp_path / "hosts").write_text("127.0.0.1 a.test\n")
    done = subprocess.run([str(client), "--page", str(tmp_path / "page.json"), "--hosts", str(tmp_path / "hosts")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and message in done.stderr and done.stdout == ""


@pytest.mark.parametrize("args, message", [
    (["--hosts", "h"], "--page FILE is required"),
    (["--page", "p", "--hosts", "h", "--timeout", "soon"], "cannot read duration"),
    (["--page", "p", "--hosts", "h", "--max-per-domain", "0"], "at least 1"),
    (["--page", "p", "--hosts", "h", "--colour"], "--colour"),
])
def test_bad_options(args, message):
    client, _ = web_binaries()
    done = subprocess.run([str(client), *args], capture_output=True, text=True)
    assert done.returncode == 2 and message in done.stderr


def test_unknown_congestion_control(tmp_path):
    client, _ = web_binaries()
    (tmp_path / "page.json").write_text(json.dumps(_page(("r", "a.test", 1, None))))
    (tmp_path / "hosts").write_text("127.0.0.1 a.test\n")
    done = subprocess.run([str(client), "--page", str(tmp_path / "page.json"), "--hosts", str(tmp_path / "hosts"),
                           "--cca", "no-such-cca"], capture_output=True, text=True)
    assert done.returncode == 2 and "no-such-cca" in done.stderr and "available" in done.stderr


def test_server_refuses_a_bad_hosts_file(tmp_path):
    _, server = web_binaries()
    (tmp_path / "hosts").write_text("999.1.1.1 a.test\n")
    done = subprocess.run([str(server), "--hosts", str(tmp_path / "hosts")], capture_output=True, text=True, timeout=10)
    assert done.returncode == 2 and "line 1" in done.stderr
