# SPDX-License-Identifier: MIT
"""Whether this host's FP state fits the lab's User-Mode Linux kernel, asked before it boots.

UML saves and restores every guest process's FP registers with ptrace's NT_X86_XSTATE
regset, in a buffer whose size is fixed when the kernel is built (HOST_FP_SIZE). The host
takes a PTRACE_SETREGSET of at least its own XSAVE size, cutting a longer one to it, and
answers EFAULT to a shorter one: on a host whose XSAVE area is larger than the kernel's
buffer, init dies at its first context switch ("ptrace set fp regs failed, errno = 14",
then a kernel panic). kernel/uml/patches/0004-host-fp-size.patch sets the buffer above
every known layout (AMX: 11 008 bytes) and makes the kernel refuse such a host itself;
`check` says the same in one line before a boot, from the tree the kernel was built in.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import re
import signal
from pathlib import Path

from .engine import LabError

PTRACE_TRACEME = 0
PTRACE_GETREGSET = 0x4204
PTRACE_SETREGSET = 0x4205
NT_X86_XSTATE = 0x202
# Larger than any XSAVE layout: the host fills what it has and says how much.
PROBE_BYTES = 1 << 20

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.restype = ctypes.c_long


class _IoVec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


def _ptrace(request: int, pid: int, note: int, iov: _IoVec) -> int:
    """ptrace(2) on an iovec: 0, or the errno it failed with."""
    if _libc.ptrace(ctypes.c_long(request), ctypes.c_long(pid), ctypes.c_void_p(note),
                    ctypes.byref(iov)) == 0:
        return 0
    return ctypes.get_errno()


class _StoppedChild:
    """A child of ours, stopped under ptrace, whose regsets can be read and written."""

    def __enter__(self) -> int:
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover (the child)
            _libc.ptrace(ctypes.c_long(PTRACE_TRACEME), 0, None, None)
            os.kill(os.getpid(), signal.SIGSTOP)
            os._exit(0)
        _, status = os.waitpid(self.pid, os.WUNTRACED)
        if not os.WIFSTOPPED(status):
            raise LabError(f"xsave: the probe's child did not stop (status {status})")
        return self.pid

    def __exit__(self, *exc) -> None:
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)


def _get(pid: int, buffer: ctypes.Array) -> tuple[int, int]:
    """PTRACE_GETREGSET of `pid`'s XSAVE area into `buffer`: the errno (0: done) and the
    number of bytes the host wrote."""
    iov = _IoVec(ctypes.cast(buffer, ctypes.c_void_p), len(buffer))
    return _ptrace(PTRACE_GETREGSET, pid, NT_X86_XSTATE, iov), iov.iov_len


def _set(pid: int, buffer: ctypes.Array) -> int:
    """PTRACE_SETREGSET of `pid`'s XSAVE area from `buffer`, whole: the errno (0: taken)."""
    return _ptrace(PTRACE_SETREGSET, pid, NT_X86_XSTATE,
                   _IoVec(ctypes.cast(buffer, ctypes.c_void_p), len(buffer)))


@functools.cache
def host_bytes() -> int:
    """The size of this host's XSAVE area, as ptrace hands it to UML; 0 when the host has
    no XSAVE regset (UML then falls back to the legacy FP registers)."""
    with _StoppedChild() as pid:
        err, length = _get(pid, ctypes.create_string_buffer(PROBE_BYTES))
    if err in (errno.ENODEV, errno.EINVAL, errno.EIO):
        return 0
    if err:
        raise LabError(f"xsave: PTRACE_GETREGSET failed: {os.strerror(err)}")
    return length


def set_errno(size: int) -> int:
    """The errno with which this host answers a PTRACE_SETREGSET of `size` bytes of XSAVE
    state read from the same process, as UML makes at every context switch (0: taken)."""
    buffer = ctypes.create_string_buffer(size)
    with _StoppedChild() as pid:
        err, _ = _get(pid, buffer)
        return err or _set(pid, buffer)


def kernel_bytes(tree: Path, target: str = "uml") -> int:
    """HOST_FP_SIZE, in bytes, of the UML kernel built in `tree` (by `make target`)."""
    constants = tree / "include" / "generated" / "user_constants.h"
    try:
        match = re.search(r"^#define HOST_FP_SIZE (\d+)\b", constants.read_text(), re.M)
    except OSError as err:
        raise LabError(f"cannot read {constants}: {err}; run `make {target}`") from None
    if match is None:
        raise LabError(f"{constants} defines no HOST_FP_SIZE; run `make {target}`")
    return int(match.group(1)) * ctypes.sizeof(ctypes.c_ulong)


def check(tree: Path, target: str = "uml") -> None:
    """LabError, in one line, if the UML kernel built in `tree` (by `make target`) cannot
    run on this host."""
    host, room = host_bytes(), kernel_bytes(tree, target)
    if host > room:
        raise LabError(f"this host's XSAVE area is {host} bytes and the UML kernel built in {tree} "
                       f"keeps {room} per process: it cannot run here; rebuild it with `make {target}` "
                       "(kernel/uml/patches/0004-host-fp-size.patch) or use --engine qemu")
