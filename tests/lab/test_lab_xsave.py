# SPDX-License-Identifier: MIT
"""The host's side of UML's FP state (confucius/lab/xsave.py, kernel/uml/patches/0004): the
host takes a PTRACE_SETREGSET of XSAVE state at least as long as its own area and refuses a
shorter one, so one large buffer serves every host; the lab's kernel holds this host's area,
and a kernel that cannot is refused in one line before it boots."""

import errno
import os

import pytest

from confucius.lab import uml, xsave
from confucius.lab.engine import LabError

pytestmark = pytest.mark.skipif(os.uname().machine != "x86_64", reason="NT_X86_XSTATE is x86's")


@pytest.fixture(scope="module")
def host():
    size = xsave.host_bytes()
    if size == 0:
        pytest.skip("this host has no XSAVE regset")
    return size


def test_the_host_area_has_the_legacy_region_and_its_header(host):
    # 512 bytes of FXSAVE state and the 64-byte XSAVE header come first in every layout.
    assert host >= 576 and host % 64 == 0


def test_the_host_takes_its_own_size_and_any_longer_buffer(host):
    assert xsave.set_errno(host) == 0
    assert xsave.set_errno(host + 8) == 0
    assert xsave.set_errno(16384) == 0


def test_the_host_refuses_a_shorter_buffer_with_efault(host):
    # What killed UML's init on hosts with AMX: a 2696-byte buffer against 11 008.
    assert xsave.set_errno(host - 64) == errno.EFAULT


@pytest.mark.parametrize("flavour", sorted(uml.FLAVOURS))
def test_each_uml_kernel_holds_this_host_s_area(host, flavour):
    tree = uml.FLAVOURS[flavour][0] / "src"
    if not (tree.parent / "linux").is_file():
        pytest.skip(f"no UML kernel {flavour}: run `make {uml.make_target(flavour)}`")
    assert xsave.kernel_bytes(tree) == 16384 >= host
    xsave.check(tree)


def _tree_keeping(tmp_path, longs: int):
    constants = tmp_path / "include" / "generated" / "user_constants.h"
    constants.parent.mkdir(parents=True)
    constants.write_text(f"#define HOST_FP_SIZE {longs} /* {longs * 8} / sizeof(unsigned long) */\n")
    return tmp_path


def test_a_kernel_too_small_for_the_host_is_refused_in_one_line(tmp_path, host):
    tree = _tree_keeping(tmp_path, host // 8 - 8)
    assert xsave.kernel_bytes(tree) == host - 64
    with pytest.raises(LabError) as refused:
        xsave.check(tree)
    message = str(refused.value)
    assert "\n" not in message
    assert f"XSAVE area is {host} bytes" in message and f"keeps {host - 64}" in message


def test_a_kernel_with_room_to_spare_is_accepted(tmp_path, host):
    xsave.check(_tree_keeping(tmp_path, host // 8 + 1))


def test_a_tree_without_the_constant_names_the_make_target(tmp_path):
    with pytest.raises(LabError, match="make uml-6.12"):
        xsave.kernel_bytes(tmp_path, "uml-6.12")
