# SPDX-License-Identifier: MIT
"""The real-kernel laboratory: Debian's kernel under qemu (vm), network topologies (topology)."""
