#!/bin/bash
# SPDX-License-Identifier: MIT
# Boots the arm64 kernel of build/cross/linux-arm64-boot in qemu-system-aarch64 (`virt`
# machine, emulated Cortex-A57) with an initramfs holding only boot-init (PID 1) and the
# module built against that kernel; passes when the guest prints "boot-test: ok".
#   boot-test.sh TREE MODULE INIT LOG
set -euo pipefail

tree=${1:?usage: boot-test.sh TREE MODULE INIT LOG} module=$2 init=$3 log=$4
timeout=${BOOT_TIMEOUT:-300}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# gen_init_cpio (built with the kernel) makes /dev/console without needing mknod.
cat > "$work/list" <<LIST
dir /dev 0755 0 0
nod /dev/console 0600 0 0 c 5 1
dir /proc 0755 0 0
file /init $(realpath "$init") 0755 0 0
file /sch_confucius.ko $(realpath "$module") 0644 0 0
LIST
"$tree/usr/gen_init_cpio" "$work/list" > "$work/initramfs.cpio"

start=$(date +%s)
timeout "$timeout" qemu-system-aarch64 -M virt -cpu cortex-a57 -m 256 -nographic -no-reboot \
	-kernel "$tree/arch/arm64/boot/Image" -initrd "$work/initramfs.cpio" \
	-append "console=ttyAMA0 panic=-1" < /dev/null 2>&1 | tr -d '\r' > "$log" || true
grep '^boot-test:' "$log" || true
if ! grep -qx 'boot-test: ok' "$log"; then
	echo "arm64 boot test failed after $(( $(date +%s) - start )) s; the guest's console: $log" >&2
	exit 1
fi
echo "arm64 boot test: ok in $(( $(date +%s) - start )) s"
