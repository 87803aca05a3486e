# SPDX-License-Identifier: MIT
"""The project's tc cases (tests/kernel/tc_cases) as the kernel's tdc runs them.

The project's runner knows more than tdc: commands of its own (`nlqdisc` for raw netlink,
`udp` for traffic, `sleep`), an address to send to, a check that a refused command left
the kernel's configuration as it was, and the error message. tdc runs each case in a
namespace of its own (its nsPlugin) with a dummy device, and checks the exit status and
the verification's output. A case comes over when what it checks is what tdc checks:

- `$DEV` is tdc's `$DUMMY`, `ip` its `$IP`;
- the error message (`expStderr`) is not compared: the exit status still says who refused;
- a case keeps its id, which no case of tdc's own may have (the series is refused if one
  does: the project's case takes a fresh id);
- a refused add with nothing before it is checked by no confucius qdisc being there;
  other cases that check only that nothing changed stay behind, as do the ones that need
  the runner's own commands or traffic, the ones about loading the module (tdc's kernel
  may have it built in), the ones known to fail (`xfail`), and the ones
  whose expected JSON holds a list of plain values, which tdc's matcher cannot compare.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

RUNNER_COMMANDS = ("nlqdisc", "udp", "sleep")
# About the module's loading, which a kernel tdc runs in may have built in.
MODULE_COMMANDS = re.compile(r"/proc/modules|\b(modprobe|rmmod|lsmod|modinfo)\b")
ORDER = ("add", "change", "replace_delete", "show", "htb", "invalid")


class CaseError(ValueError):
    """The project's cases cannot be converted as they are."""


def _commands(case: dict) -> list[str]:
    return [*case["setup"], case["cmdUnderTest"], case["verifyCmd"], *case["teardown"]]


def _for_tdc(command: str) -> str:
    command = re.sub(r"^ip\b", "$IP", command.strip())
    return command.replace("$DEV", "$DUMMY")


def convertible(case: dict) -> bool:
    """Whether tdc can check what the case checks."""
    for command in _commands(case):
        if not isinstance(command, str):
            return False
        words = command.split()
        if (words and words[0] in RUNNER_COMMANDS) or "$PEER" in command or MODULE_COMMANDS.search(command):
            return False
    if "xfail" in case or _has_plain_list(case.get("matchJSON")):
        return False
    checks_output = "matchPattern" in case or "matchJSON" in case
    return checks_output or (not case["setup"] and int(case["expExitCode"]) != 0)


def _has_plain_list(value) -> bool:
    """Whether a matchJSON holds a list of plain values (class weights, say), which tdc's
    matcher cannot compare: it looks each one up as a key."""
    if isinstance(value, dict):
        return any(_has_plain_list(v) for v in value.values())
    if isinstance(value, list):
        return any(not isinstance(v, (dict, list)) or _has_plain_list(v) for v in value)
    return False


def convert(case: dict) -> dict:
    """One case in tdc's form, its fields in the order of the neighbouring files."""
    out = {
        "id": case["id"],
        "name": case["name"],
        "category": ["qdisc", "confucius", *[c for c in case["category"] if c not in ("qdisc", "confucius")]],
        "plugins": {"requires": "nsPlugin"},
        "setup": [_for_tdc(c) for c in case["setup"]],
        "cmdUnderTest": _for_tdc(case["cmdUnderTest"]),
        "expExitCode": str(case["expExitCode"]),
    }
    if "matchPattern" in case or "matchJSON" in case:
        out["verifyCmd"] = _for_tdc(case["verifyCmd"])
        if "matchJSON" in case:
            out["matchJSON"] = case["matchJSON"]
        if "matchPattern" in case:
            out["matchPattern"] = case["matchPattern"]
            out["matchCount"] = str(case["matchCount"])
    else:  # a refused add: nothing may have been created
        out["verifyCmd"] = "$TC qdisc show dev $DUMMY"
        out["matchPattern"] = "qdisc confucius"
        out["matchCount"] = "0"
    out["teardown"] = [_for_tdc(c) for c in case["teardown"]]
    return out


def load(directory: Path) -> list[dict]:
    """The project's cases, file by file in ORDER (then any other file by name)."""
    files = sorted(directory.glob("*.json"), key=lambda p: (ORDER.index(p.stem) if p.stem in ORDER
                                                            else len(ORDER), p.name))
    if not files:
        raise CaseError(f"no tc cases in {directory}")
    return [case for path in files for case in json.loads(path.read_text())]


def tdc_cases(directory: Path, taken_ids: set[str]) -> list[dict]:
    """The convertible cases of `directory`; refused if one has an id that one of tdc's
    other cases (`taken_ids`) has, as tdc would run both under it."""
    everything = load(directory)
    ids = [case["id"] for case in everything]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise CaseError(f"tc case ids used twice in {directory}: {', '.join(duplicates)}")
    cases = [convert(case) for case in everything if convertible(case)]
    taken = {i.lower() for i in taken_ids}
    clashes = sorted(case["id"] for case in cases if case["id"].lower() in taken)
    if clashes:
        raise CaseError(f"tc case ids that tdc's own cases have too, give them fresh ones in "
                        f"{directory}: {', '.join(clashes)}")
    return cases


def dumps(cases: list[dict]) -> str:
    """The JSON as the tc-tests files are written: four spaces, a newline at the end."""
    return json.dumps(cases, indent=4, ensure_ascii=False) + "\n"
