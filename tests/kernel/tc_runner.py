# SPDX-License-Identifier: MIT
"""Run the tc-testing style cases of tests/kernel/tc_cases/ and write their results as JSON.

Runs inside the lab VM (as root, the project's module loadable, TC_LIB_DIR pointing at the
plugin, or --tc naming a tc with confucius built in), all cases in one boot; tests/kernel/test_tc_cases.py reads the results file. The
case format is described in tests/kernel/tc_cases/README.md. Usage:

    python tests/kernel/tc_runner.py --output RESULTS.json [--tc TC] [--only ID ...]
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import shlex
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import nlqdisc  # noqa: E402  (beside this file, not a package)

CASES_DIR = HERE / "tc_cases"
COMMAND_TIMEOUT_S = 30
# Linux's SO_SNDBUFFORCE (the socket module names only SO_SNDBUF), and what a datagram
# costs the send buffer beyond its payload (its sk_buff; generous).
SO_SNDBUFFORCE = 32
DATAGRAM_OVERHEAD = 4096
# What makes a command need bash.
SHELL_SYNTAX = re.compile(r"[|&;<>()`*?~]|\$\w")

REQUIRED = {"id": str, "name": str, "category": list, "setup": list, "cmdUnderTest": str,
            "expExitCode": int, "verifyCmd": str, "teardown": list}
OPTIONAL = {"expStderr": str, "matchPattern": str, "matchCount": int, "matchJSON": (dict, list),
            "verifyUnchanged": bool, "xfail": str}


# --------------------------------------------------------------------------- the cases

def case_problems(case: dict) -> list[str]:
    """What is wrong with the form of one case (empty when it is well formed)."""
    problems = [f"missing {key}" for key in REQUIRED if key not in case]
    for key, value in case.items():
        wanted = REQUIRED.get(key) or OPTIONAL.get(key)
        if wanted is None:
            problems.append(f"unknown field {key}")
        elif not isinstance(value, wanted) or (wanted is int and isinstance(value, bool)):
            problems.append(f"{key} has the wrong type")
    if ("matchPattern" in case) != ("matchCount" in case):
        problems.append("matchPattern and matchCount go together")
    if not any(key in case for key in ("matchPattern", "matchJSON", "verifyUnchanged")):
        problems.append("nothing to verify: give matchPattern, matchJSON or verifyUnchanged")
    for key in ("setup", "teardown"):
        if not all(isinstance(cmd, str) for cmd in case.get(key, [])):
            problems.append(f"{key} must be a list of commands")
    return problems


def load_cases(directory: Path = CASES_DIR) -> list[dict]:
    """Every case, file by file in name order; raises ValueError on a malformed file or case."""
    cases: list[dict] = []
    for path in sorted(directory.glob("*.json")):
        try:
            loaded = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{path.name}: not JSON: {err}") from err
        if not isinstance(loaded, list):
            raise ValueError(f"{path.name}: expected a list of cases")
        for case in loaded:
            problems = case_problems(case) if isinstance(case, dict) else ["not an object"]
            if problems:
                raise ValueError(f"{path.name}: case {case.get('id', '?')}: {'; '.join(problems)}")
            cases.append(case)
    seen: set[str] = set()
    for case in cases:
        if case["id"] in seen:
            raise ValueError(f"duplicate case id {case['id']}")
        seen.add(case["id"])
    return cases


# --------------------------------------------------------------------------- checks

def json_mismatches(actual, expected, where: str = "$") -> list[str]:
    """Where `actual` differs from `expected`: objects need the expected keys (others may
    be there too), lists the same length with matching elements, values equality."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {json.dumps(actual)}"]
        found = []
        for key, value in expected.items():
            if key not in actual:
                found.append(f"{where}.{key}: missing")
            else:
                found += json_mismatches(actual[key], value, f"{where}.{key}")
        return found
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: expected a list of {len(expected)}, got {json.dumps(actual)}"]
        return [m for i, (a, e) in enumerate(zip(actual, expected))
                for m in json_mismatches(a, e, f"{where}[{i}]")]
    if type(actual) is not type(expected) and not (
            isinstance(actual, (int, float)) and isinstance(expected, (int, float))
            and not isinstance(actual, bool) and not isinstance(expected, bool)):
        return [f"{where}: expected {json.dumps(expected)}, got {json.dumps(actual)}"]
    return [] if actual == expected else [f"{where}: expected {json.dumps(expected)}, got {json.dumps(actual)}"]


def send_udp(peer: str, port: int, count: int, size: int) -> None:
    """`count` datagrams of `size` bytes from one socket: one flow. The datagrams count
    against the socket's send buffer until the shaper lets them out, so the buffer is made
    to hold them all (as root, past wmem_max): the send must not wait for the qdisc."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, count * (size + DATAGRAM_OVERHEAD))
        sock.settimeout(COMMAND_TIMEOUT_S)
        sock.connect((peer, port))
        for _ in range(count):
            sock.send(b"\0" * size)


class Shell:
    """Runs the commands of one case on its device; keeps a transcript.

    $DEV, $PEER and $TC (the tc under test) are replaced in the command text. The builtins (nlqdisc, udp,
    sleep) run in this process, other commands directly, or under bash when they use
    shell syntax: starting a process costs a lot under emulation.
    """

    def __init__(self, dev: str, peer: str, tc: str = "tc"):
        self.vars = {"DEV": dev, "PEER": peer, "TC": tc}
        self.transcript: list[dict] = []

    def expand(self, command: str) -> str:
        return re.sub(r"\$(DEV|PEER|TC)\b", lambda m: self.vars[m.group(1)], command)

    def builtin(self, argv: list[str]) -> tuple[int, str] | None:
        """(status, stderr) of a builtin command, None when argv names none."""
        try:
            if argv[0] == "nlqdisc":
                return nlqdisc.execute(argv[1:])
            if argv[0] == "udp":
                send_udp(self.vars["PEER"], int(argv[1]), int(argv[2]), int(argv[3]) if argv[3:] else 500)
                return 0, ""
            if argv[0] == "sleep":
                time.sleep(float(argv[1]))
                return 0, ""
        except (OSError, ValueError, IndexError) as err:
            return 1, f"{argv[0]}: {err}"
        return None

    def run(self, command: str) -> subprocess.CompletedProcess:
        text = self.expand(command)
        argv = None if SHELL_SYNTAX.search(text) else shlex.split(text)
        done = self.builtin(argv) if argv else None
        if done is not None:
            result = subprocess.CompletedProcess(argv, done[0], "", done[1])
        else:
            result = self.spawn(argv or ["bash", "-c", text])
        self.transcript.append({"cmd": text, "rc": result.returncode,
                                "stdout": result.stdout, "stderr": result.stderr})
        return result

    @staticmethod
    def spawn(argv: list[str]) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired as err:
            return subprocess.CompletedProcess(argv, 124, err.stdout or "", f"timed out: {err}")
        except OSError as err:
            return subprocess.CompletedProcess(argv, 127, "", str(err))


def check_output(case: dict, output: str) -> list[str]:
    problems = []
    if "matchPattern" in case:
        count = len(re.findall(case["matchPattern"], output))
        if count != case["matchCount"]:
            problems.append(f"matchPattern {case['matchPattern']!r} found {count} times, "
                            f"expected {case['matchCount']}")
    if "matchJSON" in case:
        try:
            problems += json_mismatches(json.loads(output), case["matchJSON"])
        except json.JSONDecodeError as err:
            problems.append(f"verifyCmd output is not JSON: {err}")
    return problems


def run_steps(case: dict, shell: Shell, dev: str) -> list[str]:
    """Setup, the command under test and its checks; the problems found."""
    for command in case["setup"]:
        if shell.run(command).returncode != 0:
            return [f"setup command failed: {command}"]
    before = nlqdisc.qdisc_config(dev) if case.get("verifyUnchanged") else None
    problems = []
    done = shell.run(case["cmdUnderTest"])
    if done.returncode != case["expExitCode"]:
        problems.append(f"cmdUnderTest exited {done.returncode}, expected {case['expExitCode']}")
    if "expStderr" in case and not re.search(case["expStderr"], done.stderr):
        problems.append(f"stderr does not match {case['expStderr']!r}")
    if before is not None and nlqdisc.qdisc_config(dev) != before:
        problems.append(f"the kernel's configuration changed: was {before}, is {nlqdisc.qdisc_config(dev)}")
    problems += check_output(case, shell.run(case["verifyCmd"]).stdout)
    for command in case["teardown"]:
        if shell.run(command).returncode != 0:
            problems.append(f"teardown command failed: {command}")
    return problems


def run_case(case: dict, index: int, tc: str = "tc") -> dict:
    """One case on a dummy device of its own: a clean slate, and cases can run side by side."""
    dev, _, peer = device(index)
    shell = Shell(dev, peer, tc)
    started = time.monotonic()
    try:
        problems = run_steps(case, shell, dev)
    except OSError as err:
        problems = [f"netlink: {err}"]
    return {"id": case["id"], "name": case["name"], "passed": not problems, "problems": problems,
            "seconds": round(time.monotonic() - started, 3), "transcript": shell.transcript}


def device(index: int) -> tuple[str, str, str]:
    """Case `index`'s device, its address and the peer its traffic goes to (nobody answers)."""
    net = f"10.{64 + index // 250}.{index % 250}"
    return f"cfc{index}", f"{net}.1/24", f"{net}.2"


def ip_batch(lines: list[str]) -> None:
    subprocess.run(["ip", "-batch", "-"], input="".join(f"{line}\n" for line in lines),
                   text=True, check=True, capture_output=True)


def create_devices(count: int) -> None:
    # No IPv6 on them: router solicitations and MLD reports would be flows of their own
    # in the cases that count flows and packets.
    Path("/proc/sys/net/ipv6/conf/default/disable_ipv6").write_text("1\n")
    lines = []
    for index in range(count):
        dev, address, _ = device(index)
        lines += [f"link add {dev} type dummy", f"link set {dev} up", f"addr add {address} dev {dev}"]
    ip_batch(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the tc-testing style cases.")
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--only", nargs="*", default=None, help="case ids to run")
    parser.add_argument("--jobs", type=int, default=4, help="cases run side by side")
    parser.add_argument("--tc", default="tc", help="the tc the cases run ($TC; default: the system's)")
    args = parser.parse_args(argv)
    cases = [c for c in load_cases() if args.only is None or c["id"] in args.only]
    create_devices(len(cases))
    results = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        run = functools.partial(run_case, tc=args.tc)
        for case, result in zip(cases, pool.map(run, cases, range(len(cases)))):
            results.append(result)
            # Written after every case, so that a run cut short still tells how far it got.
            args.output.write_text(json.dumps(results, indent=1) + "\n")
            verdict = "ok  " if result["passed"] else "FAIL"
            print(f"{verdict} {case['id']} {case['name']} ({result['seconds']:.2f} s)", flush=True)
            for problem in result["problems"]:
                print(f"     {problem}", flush=True)
    # Deleting the devices destroys every qdisc the cases left, through the module's destroy.
    ip_batch([f"link del {device(index)[0]}" for index in range(len(cases))])
    failed = sum(not r["passed"] for r in results)
    print(f"tc cases: {len(results) - failed} passed, {failed} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
