# SPDX-License-Identifier: MIT
"""Send one qdisc request with raw netlink attributes, bypassing tc's front end.

tc refuses bad values before anything reaches the kernel, so the kernel's own checks
(netlink policy, extack messages) are only reachable with a request built by hand:

    nlqdisc.py change DEV confucius limit=u32:0 class_weights=weights:1,2
    nlqdisc.py add DEV confucius --parent 1:10 --handle 10: flows=u32:64

Attributes are named as in kernel/include/uapi/linux/pkt_sched_confucius.h without the
TCA_CONFUCIUS_ prefix (any case; confucius.lab.kernelabi holds them), or given by number;
values are u16:, u32:, u64: or hex:
(the payload as is), nest:HEX (the payload as is, the attribute marked nested) or
weights:W1,W2,... (nested CLASS_WEIGHT u32s, as the kernel takes class weights).
Like tc: exit 0 on success; on a refusal print "Error: <the kernel's message>" and exit 2;
exit 1 on bad usage. A command-line face for confucius.lab.rtnl, which does the netlink work.

qdisc_config(dev) reads back what the kernel holds (kind, handles, raw options) for
comparisons that must not depend on any front end.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import sys
from pathlib import Path

# Run in the guest as `python3 -S` (no site-packages: they cost seconds over 9p under
# emulation), so the package is found from the repository itself.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from confucius.lab import kernelabi, rtnl  # noqa: E402

COMMANDS = {"add": rtnl.ADD, "change": rtnl.CHANGE, "replace": rtnl.REPLACE}
VALUE_FORMATS = {"u16": "=H", "u32": "=I", "u64": "=Q"}


class UsageError(ValueError):
    pass


def encode_option(spec: str, numbers: dict[str, int]) -> bytes:
    name, sep, typed = spec.partition("=")
    kind, sep2, value = typed.partition(":")
    if not sep or not sep2:
        raise UsageError(f"expected NAME=TYPE:VALUE, got {spec!r}")
    number = int(name) if name.isdigit() else numbers.get(name.lower())
    if number is None:
        raise UsageError(f"unknown attribute {name!r}; known: {', '.join(numbers)}")
    if kind == "hex":
        return rtnl.attr(number, bytes.fromhex(value))
    if kind == "nest":
        return rtnl.attr(number | rtnl.NLA_F_NESTED, bytes.fromhex(value))
    if kind == "weights":
        weights = b"".join(rtnl.attr(numbers["class_weight"], struct.pack("=I", int(w, 0)))
                           for w in value.split(",") if w)
        return rtnl.attr(number | rtnl.NLA_F_NESTED, weights)
    if kind not in VALUE_FORMATS:
        raise UsageError(f"unknown value type {kind!r} in {spec!r}")
    return rtnl.attr(number, struct.pack(VALUE_FORMATS[kind], int(value, 0)))


def tc_handle(text: str) -> int:
    """tc's "MAJ:MIN" (hex) notation; "root" is the root."""
    if text == "root":
        return rtnl.TC_H_ROOT
    major, _, minor = text.partition(":")
    return (int(major or "0", 16) << 16) | int(minor or "0", 16)


def qdisc_config(dev: str) -> list[tuple[int, int, str, str]]:
    """(handle, parent, kind, options as hex) of every qdisc on `dev`, as the kernel dumps them."""
    ifindex = socket.if_nametoindex(dev)
    with rtnl.Rtnl() as conn:
        return sorted((q.handle, q.parent, q.kind, q.tlvs.get(rtnl.TCA_OPTIONS, b"").hex())
                      for q in conn.dump_qdiscs() if q.ifindex == ifindex)


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
    return parser


def execute(argv: list[str]) -> tuple[int, str]:
    """Run one request; (exit status, what to print on stderr) as main() reports them."""
    try:
        args = _parser().parse_args(argv)
        options = b"".join(encode_option(spec, kernelabi.ATTRIBUTES) for spec in args.options)
        ifindex = socket.if_nametoindex(args.dev)
        parent, handle = tc_handle(args.parent), tc_handle(args.handle)
    except (ValueError, OSError, struct.error) as err:
        return 1, f"nlqdisc: {err}"
    with rtnl.Rtnl() as conn:
        reply = conn.qdisc(COMMANDS[args.command], ifindex, args.kind, options,
                           handle=handle, parent=parent)
    if reply.error:
        return 2, f"Error: {reply.message or os.strerror(-reply.error)}"
    return 0, ""


def main(argv: list[str] | None = None) -> int:
    status, text = execute(sys.argv[1:] if argv is None else argv)
    if text:
        print(text, file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
