# SPDX-License-Identifier: MIT
"""The tc-testing style cases of tc_cases/, run in one boot of the lab VM.

tc_runner.py runs every case inside Debian's kernel (or the kernel CONFUCIUS_TEST_KERNEL
names, see guest_kernel.py) with the module built for that kernel, twice in the same boot:
with the system tc and the plugin from build/tc, then with the in-tree tc (tc/intree.sh:
iproute2's own tc with confucius built in, build/tc/intree/tc) and no plugin to load. It
writes what it found; each case then shows here as one test per tc. The tests not marked `vm` check the cases themselves and the runner's
helpers on the host.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import guest_kernel
import nlqdisc
import tc_runner
from confucius.lab import kernelabi, vm

CASES = tc_runner.load_cases()
INTREE = vm.TC_PLUGINS / "intree"
# The results file of each tc, and how the guest runs the cases with it. The in-tree tc
# gets a plugin directory without q_confucius.so (tc/intree.sh makes it empty), since tc
# would load a plugin before looking in its own binary.
TCS = {
    "system": ("tc_results.json", "python3 -S tests/kernel/tc_runner.py"),
    "intree": ("tc_results_intree.json", f"TC_LIB_DIR={INTREE / 'no-plugins'} python3 -S "
                                         f"tests/kernel/tc_runner.py --tc {INTREE / 'tc'}"),
}
# Generous, as it only ends a hang: in the x86 debug kernel under emulation, with the host
# at load 6 on its two cores, 192 of the cases took 15 min (4 min on a quiet host), and
# they run once per tc.
VM_TIMEOUT_S = 3600.0
OPTIONS = ("bandwidth", "limit", "memlimit", "flows", "quantum", "interval", "mode", "classes",
           "hysteresis", "reclassify", "weights", "pace", "target", "maxhold", "maxdelay", "aqm_target",
           "aqm_interval", "aqm_settle", "ecn", "isolate", "nat")
# The UAPI attribute of an option, where its name differs (see nlqdisc.py).
NETLINK_NAMES = {"bandwidth": "bandwidth64", "weights": "class_weights"}


def _param(case: dict):
    marks = [pytest.mark.vm]
    if "xfail" in case:
        marks.append(pytest.mark.xfail(reason=case["xfail"], strict=True))
    slug = re.sub(r"[^a-z0-9]+", "-", case["name"].lower()).strip("-")
    return pytest.param(case, id=f"{case['id']}-{slug}", marks=marks)


@pytest.fixture(scope="module")
def guest(tmp_path_factory) -> vm.VMResult:
    for built in (vm.TC_PLUGINS / "q_confucius.so", INTREE / "tc",
                  guest_kernel.project_modules() / "sch_confucius.ko"):
        if not built.is_file():
            pytest.fail(f"{built} is missing: run `make tc tc-intree kmod` first")
    results = tmp_path_factory.mktemp("tc_cases")
    # python -S: the runner needs the standard library only, and site-packages cost seconds
    # to scan over 9p under emulation.
    script = "\n".join(f'{command} --output "$RESULTS/{results_file}"' for results_file, command in TCS.values())
    return guest_kernel.run(script, results_dir=results, timeout=VM_TIMEOUT_S)


@pytest.fixture(scope="module")
def outcomes(guest) -> dict[str, dict[str, dict]]:
    """Each tc's outcomes, by case id."""
    found = {}
    for tc, (results_file, _) in TCS.items():
        path = guest.results_dir / results_file
        if not path.is_file():
            pytest.fail(f"the runner wrote no results for the {tc} tc; guest output:\n{guest.output[-3000:]}")
        found[tc] = {outcome["id"]: outcome for outcome in json.loads(path.read_text())}
    return found


def _report(outcome: dict) -> str:
    lines = [f"case {outcome['id']} {outcome['name']}:", *outcome["problems"], "transcript:"]
    for step in outcome["transcript"]:
        lines.append(f"  $ {step['cmd']}  -> {step['rc']}")
        lines += [f"    {line}" for line in (step["stdout"] + step["stderr"]).splitlines()[:20]]
    return "\n".join(lines)


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
@pytest.mark.parametrize("tc", list(TCS))
def test_case(tc, case, outcomes):
    outcome = outcomes[tc].get(case["id"])
    assert outcome is not None, "the runner did not reach this case (see test_runner_ran_every_case)"
    assert outcome["passed"], _report(outcome)


@pytest.mark.vm
def test_runner_ran_every_case(guest, outcomes):
    assert guest.returncode == 0, guest.output[-3000:]
    for tc in TCS:
        assert sorted(outcomes[tc]) == sorted(case["id"] for case in CASES), tc
    print(f"{len(CASES)} cases with {len(TCS)} tcs, VM run {guest.duration:.0f} s (boot {guest.boot_time:.1f} s)")


@pytest.mark.vm
def test_kernel_log_is_clean(guest, outcomes):
    """No WARN, BUG, oops or leak report from the module while the cases ran."""
    assert "sch_confucius" in guest.dmesg  # the module did load: the log is the one that counts
    assert guest.kernel_problems() == []


# --------------------------------------------------------------------------- on the host

@pytest.mark.parametrize("category", ["add", "change", "invalid", "netlink"])
@pytest.mark.parametrize("option", OPTIONS)
def test_every_option_is_covered(option, category):
    """Each option is added, changed and refused through tc, and refused by the kernel."""
    if category == "netlink":
        word = rf"\b{NETLINK_NAMES.get(option, option)}="
    else:
        word = rf"\b{option}( |$)"  # ecn is a word of its own, maybe the command's last
    assert any(category in case["category"] and re.search(word, case["cmdUnderTest"]) for case in CASES)


def test_cases_have_unique_ids():
    assert len({case["id"] for case in CASES}) == len(CASES) > 100


def test_malformed_cases_are_reported(tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps([{"id": "x", "name": "no command"}]))
    with pytest.raises(ValueError, match="missing cmdUnderTest"):
        tc_runner.load_cases(tmp_path)
    (tmp_path / "bad.json").write_text(json.dumps([{**CASES[0], "matchCount": 1}]))
    with pytest.raises(ValueError, match="matchPattern and matchCount go together"):
        tc_runner.load_cases(tmp_path)


def test_json_match_is_a_subset_match():
    actual = [{"kind": "confucius", "options": {"limit": 5, "mode": "flow"}, "qlen": 0}]
    assert tc_runner.json_mismatches(actual, [{"options": {"limit": 5}}]) == []
    assert tc_runner.json_mismatches(actual, [{"options": {"limit": 6}}]) == ["$[0].options.limit: expected 6, got 5"]
    assert tc_runner.json_mismatches(actual, [{"weights": [1]}]) == ["$[0].weights: missing"]
    assert tc_runner.json_mismatches(actual, []) != []
    assert tc_runner.json_mismatches({"x": True}, {"x": 1}) != []


def test_raw_netlink_tool_encodes_by_the_uapi_attributes():
    numbers = kernelabi.ATTRIBUTES
    assert nlqdisc.encode_option("limit=u32:7", numbers) == bytes([8, 0, numbers["limit"], 0, 7, 0, 0, 0])
    nested = bytes([20, 0, numbers["class_weights"], 0x80]) + bytes([8, 0, numbers["class_weight"], 0, 4, 0, 0, 0]) * 2
    assert nlqdisc.encode_option("class_weights=weights:4,4", numbers) == nested


def test_raw_netlink_tool_refuses_bad_usage_without_sending():
    assert nlqdisc.execute(["change", "lo", "confucius", "speed=u32:1"])[0] == 1
    assert nlqdisc.execute(["change", "lo", "confucius", "limit=float:1"])[0] == 1
    assert nlqdisc.execute(["change", "no-such-device0", "confucius", "limit=u32:1"])[0] == 1
    assert nlqdisc.execute(["frob", "lo", "confucius"])[0] == 1
