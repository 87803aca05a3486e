#!/bin/bash
# SPDX-License-Identifier: MIT
# Prepares a kernel tree for building sch_confucius.ko for one router architecture:
#   prepare.sh SRC OUT ARCH CROSS_COMPILE DEFCONFIG
# SRC is a clean linux-source-6.1 tree (shared by every architecture); OUT receives the
# configuration and generated headers (`make O=OUT`): DEFCONFIG merged with cross.config,
# then `modules_prepare`. No vmlinux is built, so OUT has no Module.symvers; the module's
# undefined symbols are checked against the source's exports instead (check-symbols.sh).
set -euo pipefail

src=$(realpath "${1:?usage: prepare.sh SRC OUT ARCH CROSS_COMPILE DEFCONFIG}")
out=$(realpath -m "$2")
arch=$3 cross=$4 defconfig=$5
here=$(cd "$(dirname "$0")" && pwd)
jobs=${JOBS:-$(nproc)}

command -v "${cross}gcc" >/dev/null || { echo "cross: ${cross}gcc missing (mk/apt-packages.txt)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"
kmake() { make -C "$src" O="$out" ARCH="$arch" CROSS_COMPILE="$cross" "$@"; }

kmake "$defconfig" >/dev/null
"$src"/scripts/kconfig/merge_config.sh -m -O "$out" "$out/.config" "$here/cross.config" >/dev/null
kmake olddefconfig >/dev/null

# Kconfig silently drops an option whose dependencies are not met: name each one.
missing=0
while read -r line; do
	case $line in
	CONFIG_*=*) grep -qx "$line" "$out/.config" || { echo "cross: Kconfig dropped $line" >&2; missing=1; } ;;
	esac
done < "$here/cross.config"
[ "$missing" = 0 ]

kmake -j"$jobs" modules_prepare
