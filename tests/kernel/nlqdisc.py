# SPDX-License-Identifier: MIT
"""Send one qdisc request with raw netlink attributes, bypassing tc's front end.

tc refuses bad values before anything reaches the kernel, so the kernel's own checks
(netlink policy, extack messages) are only reachable with a request built by hand:

    nlqdisc.py change DEV confucius limit=u32:0 class_weights=hex:0100000002000000
    nlqdisc.py add DEV confucius --parent 1:10 --handle 10: flows=u32:64

Attributes are named as in kernel/include/uapi/linux/pkt_sched_confucius.h without the
TCA_CONFUCIUS_ prefix (any case), or given by number; values are u16:, u32:, u64: or hex:.
--flat sends the options without NLA_F_NESTED. Like tc: exit 0 on success; on a refusal
print "Error: <the kernel's message>" and exit 2; exit 1 on bad usage.

qdisc_config(dev) reads back what the kernel holds (kind, handles, raw options) for
comparisons that must not depend on any front end.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import struct
import sys
from pathlib import Path

UAPI = Path(__file__).resolve().parents[2] / "kernel/include/uapi/linux/pkt_sched_confucius.h"

NETLINK_ROUTE = 0
SOL_NETLINK = 270
NETLINK_CAP_ACK, NETLINK_EXT_ACK = 10, 11
RTM_NEWQDISC, RTM_GETQDISC = 36, 38
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 0x1, 0x4, 0x300
NLM_F_REPLACE, NLM_F_EXCL, NLM_F_CREATE = 0x100, 0x200, 0x400
NLM_F_ACK_TLVS = 0x200
NLMSGERR_ATTR_MSG = 1
NLA_F_NESTED = 0x8000
TCA_KIND, TCA_OPTIONS = 1, 2
TC_H_ROOT = 0xFFFFFFFF
# The flags `tc qdisc add|change|replace` sends.
COMMANDS = {"add": NLM_F_CREATE | NLM_F_EXCL, "change": 0, "replace": NLM_F_CREATE | NLM_F_REPLACE}
VALUE_FORMATS = {"u16": "=H", "u32": "=I", "u64": "=Q"}


class UsageError(ValueError):
    pass


def attribute_numbers(header: Path = UAPI) -> dict[str, int]:
    """TCA_CONFUCIUS_* names (lower case, prefix dropped) to numbers, read from the UAPI enum."""
    text = header.read_text()
    block = re.search(r"enum\s*{([^}]*TCA_CONFUCIUS_UNSPEC[^}]*)}", text)
    if not block:
        raise UsageError(f"no TCA_CONFUCIUS_ enum in {header}")
    numbers, next_value = {}, 0
    for name, value in re.findall(r"^\s*(TCA_CONFUCIUS_\w+)\s*(?:=\s*(\d+))?\s*,", block.group(1), re.M):
        next_value = int(value) if value else next_value
        numbers[name.removeprefix("TCA_CONFUCIUS_").lower()] = next_value
        next_value += 1
    return numbers


def attribute(nla_type: int, payload: bytes) -> bytes:
    header = struct.pack("=HH", 4 + len(payload), nla_type)
    return header + payload + b"\0" * (-len(payload) % 4)


def encode_option(spec: str, numbers: dict[str, int]) -> bytes:
    name, sep, typed = spec.partition("=")
    kind, sep2, value = typed.partition(":")
    if not sep or not sep2:
        raise UsageError(f"expected NAME=TYPE:VALUE, got {spec!r}")
    number = int(name) if name.isdigit() else numbers.get(name.lower())
    if number is None:
        raise UsageError(f"unknown attribute {name!r}; known: {', '.join(numbers)}")
    if kind == "hex":
        return attribute(number, bytes.fromhex(value))
    if kind not in VALUE_FORMATS:
        raise UsageError(f"unknown value type {kind!r} in {spec!r}")
    return attribute(number, struct.pack(VALUE_FORMATS[kind], int(value, 0)))


def tc_handle(text: str) -> int:
    """tc's "MAJ:MIN" (hex) notation; "root" is the root."""
    if text == "root":
        return TC_H_ROOT
    major, _, minor = text.partition(":")
    return (int(major or "0", 16) << 16) | int(minor or "0", 16)


def request(command: str, ifindex: int, kind: str, options: list[bytes], *, parent: int,
            handle: int, flat: bool) -> bytes:
    tcmsg = struct.pack("=BxxxiIII", socket.AF_UNSPEC, ifindex, handle, parent, 0)
    nest_type = TCA_OPTIONS if flat else TCA_OPTIONS | NLA_F_NESTED
    body = tcmsg + attribute(TCA_KIND, kind.encode() + b"\0") + attribute(nest_type, b"".join(options))
    flags = NLM_F_REQUEST | NLM_F_ACK | COMMANDS[command]
    return struct.pack("=IHHII", 16 + len(body), RTM_NEWQDISC, flags, 1, 0) + body


def error_message(reply: bytes) -> tuple[int, str]:
    """(errno, the kernel's extack message or '') from an NLMSG_ERROR reply."""
    _, msg_type, flags, _, _ = struct.unpack_from("=IHHII", reply)
    if msg_type != NLMSG_ERROR:
        raise UsageError(f"unexpected netlink reply type {msg_type}")
    (error,) = struct.unpack_from("=i", reply, 16)
    offset = 16 + 4 + 16  # our header, the error, the echoed header (NETLINK_CAP_ACK)
    message = ""
    while flags & NLM_F_ACK_TLVS and offset + 4 <= len(reply):
        length, nla_type = struct.unpack_from("=HH", reply, offset)
        if length < 4:
            break
        if nla_type == NLMSGERR_ATTR_MSG:
            message = reply[offset + 4:offset + length].split(b"\0")[0].decode(errors="replace")
        offset += (length + 3) & ~3
    return -error, message


def send(message: bytes) -> tuple[int, str]:
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE) as sock:
        sock.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        sock.setsockopt(SOL_NETLINK, NETLINK_CAP_ACK, 1)
        sock.sendto(message, (0, 0))
        return error_message(sock.recv(65536))


def attributes(data: bytes, offset: int) -> dict[int, bytes]:
    found = {}
    while offset + 4 <= len(data):
        length, nla_type = struct.unpack_from("=HH", data, offset)
        if length < 4:
            break
        found[nla_type & ~NLA_F_NESTED] = data[offset + 4:offset + length]
        offset += (length + 3) & ~3
    return found


def qdisc_config(dev: str) -> list[tuple[int, int, str, str]]:
    """(handle, parent, kind, options as hex) of every qdisc on `dev`, as the kernel dumps them."""
    ifindex = socket.if_nametoindex(dev)
    tcmsg = struct.pack("=BxxxiIII", socket.AF_UNSPEC, ifindex, 0, 0, 0)
    found = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE) as sock:
        sock.sendto(struct.pack("=IHHII", 16 + len(tcmsg), RTM_GETQDISC, NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
                    + tcmsg, (0, 0))
        while True:
            data, offset = sock.recv(1 << 20), 0
            while offset + 16 <= len(data):
                length, msg_type, _, _, _ = struct.unpack_from("=IHHII", data, offset)
                if msg_type == NLMSG_DONE:
                    return sorted(found)
                if msg_type == NLMSG_ERROR:
                    raise OSError(-struct.unpack_from("=i", data, offset + 16)[0], "qdisc dump failed")
                _, index, handle, parent, _ = struct.unpack_from("=BxxxiIII", data, offset + 16)
                if index == ifindex:
                    attrs = attributes(data[:offset + length], offset + 16 + 20)
                    kind = attrs.get(TCA_KIND, b"").split(b"\0")[0].decode()
                    found.append((handle, parent, kind, attrs.get(TCA_OPTIONS, b"").hex()))
                offset += (length + 3) & ~3


class _Parser(argparse.ArgumentParser):
    """Raises instead of printing and exiting, so that a test runner can call execute()."""

    def error(self, message):
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="nlqdisc", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=sorted(COMMANDS))
    parser.add_argument("dev")
    parser.add_argument("kind")
    parser.add_argument("options", nargs="*", metavar="NAME=TYPE:VALUE")
    parser.add_argument("--parent", default="root")
    parser.add_argument("--handle", default="0:")
    parser.add_argument("--flat", action="store_true", help="options without NLA_F_NESTED")
    return parser


def execute(argv: list[str]) -> tuple[int, str]:
    """Run one request; (exit status, what to print on stderr) as main() reports them."""
    try:
        args = _parser().parse_args(argv)
        numbers = attribute_numbers()
        options = [encode_option(spec, numbers) for spec in args.options]
        ifindex = socket.if_nametoindex(args.dev)
        message = request(args.command, ifindex, args.kind, options, parent=tc_handle(args.parent),
                          handle=tc_handle(args.handle), flat=args.flat)
    except (ValueError, OSError, struct.error) as err:
        return 1, f"nlqdisc: {err}"
    error, text = send(message)
    if error:
        return 2, f"Error: {text or os.strerror(error)}"
    return 0, ""


def main(argv: list[str] | None = None) -> int:
    status, text = execute(sys.argv[1:] if argv is None else argv)
    if text:
        print(text, file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
