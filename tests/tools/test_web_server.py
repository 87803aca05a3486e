# SPDX-License-Identifier: MIT
"""web-server over loopback: exact sizes, keep-alive, and proper refusals of bad requests."""

import random
import socket
import subprocess
import time

import pytest

from webtools import running_server, web_binaries


@pytest.fixture(scope="module")
def server():
    _, server_bin = web_binaries()
    port = random.randint(20000, 40000)
    with running_server(server_bin, None, ["--listen", "127.0.0.1", "--listen", "127.0.0.2",
                                           "--port", str(port), "--cca", "cubic"]):
        yield port


def _exchange(port: int, request: bytes, host: str = "127.0.0.1", sock=None):
    """Sends one request and reads one response: (status line, headers, body, socket)."""
    sock = sock or socket.create_connection((host, port), timeout=5)
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    while len(body) < int(headers["Content-Length"]):
        chunk = sock.recv(65536)
        assert chunk, "connection closed before the announced body"
        body += chunk
    return lines[0], headers, body, sock


def test_answers_exactly_the_asked_bytes_on_one_kept_connection(server):
    sock = None
    for size in (0, 1, 15360, 1_000_000):
        status, headers, body, sock = _exchange(
            server, f"GET /o?bytes={size} HTTP/1.1\r\nHost: d0.web.test\r\n\r\n".encode(), sock=sock)
        assert status == "HTTP/1.1 200 OK"
        assert int(headers["Content-Length"]) == size == len(body)
    sock.close()


def test_listens_on_every_address(server):
    status, _, body, sock = _exchange(server, b"GET /x?bytes=7 HTTP/1.1\r\nHost: a\r\n\r\n", host="127.0.0.2")
    sock.close()
    assert status.endswith("200 OK") and body == b"x" * 7


@pytest.mark.parametrize("request_line, status", [
    (b"GET /no-size HTTP/1.1\r\n\r\n", "400"),
    (b"GET /x?bytes=-5 HTTP/1.1\r\n\r\n", "400"),
    (b"GET /x?bytes=12abc HTTP/1.1\r\n\r\n", "400"),
    (b"POST /x?bytes=5 HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "405"),
    (b"\x16\x03\x01 not http\r\n\r\n", "400"),
])
def test_refuses_bad_requests(server, request_line, status):
    line, headers, body, sock = _exchange(server, request_line)
    sock.close()
    assert line.split()[1] == status
    assert int(headers["Content-Length"]) == len(body) > 0


def test_closes_after_a_malformed_request(server):
    _, headers, _, sock = _exchange(server, b"\x00garbage\r\n\r\n")
    assert headers["Connection"] == "close"
    assert sock.recv(1) == b""
    sock.close()


def test_an_idle_connection_is_closed_after_the_idle_time():
    _, server_bin = web_binaries()
    port = random.randint(20000, 40000)
    with running_server(server_bin, None, ["--listen", "127.0.0.1", "--port", str(port), "--idle", "1"]):
        _, _, _, sock = _exchange(port, b"GET /x?bytes=3 HTTP/1.1\r\nHost: a\r\n\r\n")
        sock.settimeout(5)
        started = time.monotonic()
        assert sock.recv(1) == b"", "the server closes the idle connection"
        assert 0.9 < time.monotonic() - started < 3
        sock.close()


@pytest.mark.parametrize("value", ["0", "3601", "1.5", "soon"])
def test_refuses_an_idle_time_it_cannot_keep(value):
    _, server_bin = web_binaries()
    done = subprocess.run([str(server_bin), "--listen", "127.0.0.1", "--idle", value],
                          capture_output=True, text=True, timeout=5)
    assert done.returncode == 2 and f"--idle takes whole seconds 1-3600, not {value!r}" in done.stderr.replace('"', "'")
