# SPDX-License-Identifier: MIT
"""The soak's summariser (confucius/lab/soak.py) on kernel logs written the way the
kernel's checkers print, and the debug kernel's config fragment against the kernel's
own Kconfig. The soak itself runs only under `make soak`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from confucius.lab import soak
from confucius.lab.engine import REPO

# A KASAN report in our module, a lockdep report elsewhere, and ordinary lines around them.
LOG = """\
[    0.000000] Linux version 6.1.0 (uml)
[   12.345678] sch_confucius: loading out-of-tree module taints kernel.
[   40.100000] ==================================================================
[   40.100001] BUG: KASAN: slab-out-of-bounds in confucius_enqueue+0x2a4/0x9c0 [sch_confucius]
[   40.100002] Read of size 8 at addr 000000006b2c1f08 by task iperf3/812
[   40.100003]
[   40.100004] Call Trace:
[   40.100005]  [<e95a57b1>] confucius_enqueue+0x2a4/0x9c0 [sch_confucius]
[   40.100006]  dev_qdisc_enqueue+0x3c/0x120
[   40.100007]  __dev_queue_xmit+0x8d1/0x1530
[   40.100008] ==================================================================
[   41.000000] veth: a line that reports nothing
[   50.000000] ======================================================
[   50.000001] WARNING: possible circular locking dependency detected
[   50.000002] 6.1.0 #1 Not tainted
[   50.000003] ------------------------------------------------------
[   50.000004] kworker/0:1/33 is trying to acquire lock:
[   50.000005]  (rtnl_mutex){+.+.}-{3:3}, at: linkwatch_event+0xe/0x40
[   50.000006]  [<e95a57b1>] ? confucius_enqueue+0xa2c/0x13a6 [sch_confucius]
[   51.000000] eth0: link up
"""

KMEMLEAK = """\
unreferenced object 0x000000006c1f2200 (size 512):
  comm "tc", pid 901, jiffies 4295001234 (age 12.340s)
  hex dump (first 32 bytes):
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
  backtrace:
    [<000000006012abcd>] __kmalloc+0x1a0/0x2f0
    [<0000000061234567>] confucius_init+0x88/0x300 [sch_confucius]
unreferenced object 0x000000006c1f3300 (size 64):
  comm "swapper", pid 1, jiffies 4294937296 (age 90.120s)
  backtrace:
    [<000000006012abcd>] kmem_cache_alloc+0x100/0x200
"""

SLAB_BEFORE = """\
slabinfo - version: 2.1
# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables
skbuff_head_cache    100    120    256   16    1 : tunables  120   60    0 : slabdata      8      8      0
kmalloc-512          300    320    512    8    1 : tunables   54   27    0 : slabdata     40     40      0
"""
SLAB_AFTER = """\
slabinfo - version: 2.1
# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables
skbuff_head_cache    100    120    256   16    1 : tunables  120   60    0 : slabdata      8      8      0
kmalloc-512          330    400    512    8    1 : tunables   54   27    0 : slabdata     50     50      0
"""


def test_log_is_cut_into_reports_with_their_culprit():
    reports = soak.kernel_reports(LOG)
    assert [r.title for r in reports] == [
        "BUG: KASAN: slab-out-of-bounds in confucius_enqueue+0x2a4/0x9c0 [sch_confucius]",
        "WARNING: possible circular locking dependency detected"]
    # The second names our module only in a frame the unwinder marks "?" (a stale word).
    assert [r.in_module for r in reports] == [True, False]
    assert reports[0].lines[-1].startswith("=====")  # the report ends at its rule
    assert "eth0: link up" in reports[1].lines       # no end marker: runs on


# Two warnings that each call dump_stack() after a message of their own (UML's format),
# then a lockdep report long enough to be cut before its own dump.
BARE_DUMPS = """\
[    3.680000] kmemleak: Adding scan area to unknown object at 0xea5e0020
[    3.680000] CPU: 0 PID: 52 Comm: modprobe Tainted: G           O       6.1.192 #1
[    3.680000] Stack:
[    3.680000]  6f7a6520 60f13b60 41b58ab3 60ff2cde
[    3.680000] Call Trace:
[    3.680000]  [<60d519e5>] kmemleak_scan_area+0x8d/0x393
[    3.680000]  [<60149913>] kmemleak_load_module+0x165/0x179
[    3.690000] kmemleak: Adding scan area to unknown object at 0xea5d7748
[    3.690000] CPU: 0 PID: 52 Comm: modprobe Tainted: G           O       6.1.192 #1
[    3.690000] Call Trace:
[    3.690000]  [<60149913>] kmemleak_load_module+0x165/0x179
[    3.700000] sch_confucius: a line that reports nothing
[    9.000000] WARNING: suspicious RCU usage
""" + "".join(f"[    9.000000] filler {n}\n" for n in range(90)) + """\
[    9.000000] stack backtrace:
[    9.000000] CPU: 0 PID: 22 Comm: init Not tainted 6.1.192 #1
[    9.000000] Call Trace:
"""


def test_a_dump_after_a_message_of_its_own_is_a_report():
    reports = soak.kernel_reports(BARE_DUMPS)
    assert [r.title for r in reports] == [
        "kmemleak: Adding scan area to unknown object at 0xea5e0020",
        "kmemleak: Adding scan area to unknown object at 0xea5d7748",
        "WARNING: suspicious RCU usage"]
    # Each dump ends with its call trace; the next line is not part of it.
    assert reports[0].lines[-1].endswith("kmemleak_load_module+0x165/0x179")
    assert "sch_confucius: a line that reports nothing" not in reports[1].lines
    assert not any(r.in_module for r in reports)


def test_a_clean_log_has_no_report():
    assert soak.kernel_reports("[    1.0] NET: Registered PF_PACKET protocol family\n") == []


def test_kmemleak_objects_and_their_origin():
    leaks = soak.kmemleak_objects(KMEMLEAK)
    assert [leak.title for leak in leaks] == ["unreferenced object 0x000000006c1f2200 (size 512):",
                                             "unreferenced object 0x000000006c1f3300 (size 64):"]
    assert [leak.in_module for leak in leaks] == [True, False]


def test_slab_deltas_name_the_caches_that_grew():
    deltas = soak.slab_deltas(SLAB_BEFORE, SLAB_AFTER)
    assert deltas["after_bytes"] - deltas["before_bytes"] == 80 * 512
    assert deltas["grew"] == {"kmalloc-512": 80 * 512}


def test_summary_of_a_run_counts_every_finding_as_a_blocker(tmp_path):
    (tmp_path / "dmesg.txt").write_text(LOG)
    (tmp_path / "kmemleak.txt").write_text(KMEMLEAK)
    (tmp_path / "slabinfo-before.txt").write_text(SLAB_BEFORE)
    (tmp_path / "slabinfo-after.txt").write_text(SLAB_AFTER)
    (tmp_path / "soak.json").write_text(json.dumps({
        "seconds": 1800.2, "changes": 1799, "refused": [], "module_removed": True,
        "seconds_with_change": 1799, "change_window_s": 1800, "reply_ms": {"median": 9.5, "max": 1210.0},
        "traffic": {"tcp_up": {"bytes": 1, "mbit_s": 40.0}}}))
    summary = soak.summarise(tmp_path)
    # Two kernel reports and both leaks, ours and swapper's (listed by program).
    assert summary["blockers"] == 4
    assert summary["kmemleak_elsewhere_by_comm"] == {"swapper": 1}
    text = soak.format_summary(summary)
    print(text)
    assert "after 1800 s of traffic" in text and "1799 applied" in text
    assert "a change applied in 1799 of 1800 seconds" in text and "1210.0 ms at most" in text
    assert "[sch_confucius] BUG: KASAN" in text and "RELEASE BLOCKER" in text
    assert "[sch_confucius] unreferenced object 0x000000006c1f2200" in text
    assert "swapper 1" in text
    # The same facts in both forms.
    assert json.loads(json.dumps(summary))["changes"] == 1799


def test_an_object_left_at_boot_is_a_blocker_too(tmp_path):
    """The boot scan runs after the module's load: a leak in its init shows there."""
    (tmp_path / "soak.json").write_text(json.dumps({"seconds": 60.0, "traffic": {}, "changes": 60}))
    (tmp_path / "kmemleak-boot.txt").write_text(KMEMLEAK.split("unreferenced object 0x000000006c1f3300")[0])
    summary = soak.summarise(tmp_path)
    assert summary["kmemleak_at_boot"] == 1 and summary["blockers"] == 1


def test_a_changer_that_stopped_is_a_blocker(tmp_path):
    (tmp_path / "soak.json").write_text(json.dumps({
        "seconds": 60.0, "traffic": {}, "changes": 7, "seconds_with_change": 7, "change_window_s": 60,
        "reply_ms": {"median": 8.0, "max": 20.0}, "changer_error": "tc -batch exited with -9 after: []"}))
    summary = soak.summarise(tmp_path)
    assert summary["blockers"] == 1
    assert "the changer stopped: tc -batch exited" in soak.format_summary(summary)


def test_a_trial_in_a_kernel_without_kmemleak_says_so(tmp_path):
    (tmp_path / "soak.json").write_text(json.dumps({"seconds": 60.0, "traffic": {}, "changes": 60,
                                                    "kmemleak": False}))
    text = soak.format_summary(soak.summarise(tmp_path))
    assert "kmemleak: not in this kernel" in text and "unreferenced objects" not in text


def test_soak_refuses_an_unknown_kernel(tmp_path):
    with pytest.raises(soak.LabError, match="unknown soak kernel 'qemu'; known: uml-debug, uml, x86-debug"):
        soak.run(1, tmp_path, kernel="qemu")
    assert not any(tmp_path.iterdir())


def test_a_run_that_never_finished_is_a_blocker(tmp_path):
    summary = soak.summarise(tmp_path)
    assert summary["blockers"] == 1 and "DID NOT COMPLETE" in soak.format_summary(summary)


def test_soak_refuses_a_duration_that_is_not_positive(tmp_path):
    with pytest.raises(soak.LabError, match="positive"):
        soak.run(0, tmp_path)
    assert not any(tmp_path.iterdir())


# Each debug kernel's fragment and the unpacked linux-source-6.1 tree it is built from.
FRAGMENTS = {
    "uml": (REPO / "kernel" / "uml" / "debug.config", REPO / "build" / "uml" / "src", "make uml"),
    "x86": (REPO / "kernel" / "debug-x86" / "debug.config", REPO / "build" / "cross" / "src",
            "make debug-kernel-x86"),
}


@pytest.mark.parametrize("name", sorted(FRAGMENTS))
def test_debug_fragment_names_only_options_the_kernel_has(name):
    """Every option of a debug kernel's fragment is defined in the kernel's Kconfig (the
    build also fails when Kconfig drops one for unmet dependencies)."""
    path, tree, make = FRAGMENTS[name]
    if not (tree / "Kconfig").is_file():
        pytest.skip(f"no kernel tree in {tree}: run `{make}`")
    named = set(re.findall(r"^(?:# )?CONFIG_(\w+)[= ]", path.read_text(), re.M))
    defined = set()
    for kconfig in tree.rglob("Kconfig*"):
        defined |= set(re.findall(r"^\s*(?:menu)?config (\w+)", kconfig.read_text(errors="replace"), re.M))
    assert named and named <= defined, sorted(named - defined)
