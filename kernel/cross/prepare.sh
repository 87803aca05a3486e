#!/bin/bash
# SPDX-License-Identifier: MIT
# Prepares a kernel tree for building sch_confucius.ko for one router architecture (and,
# with an empty CROSS_COMPILE, the x86 debug kernel of mk/debug-x86.mk):
#   prepare.sh SRC OUT ARCH CROSS_COMPILE DEFCONFIG FRAGMENT[,FRAGMENT...] [TARGET...]
# SRC is a clean kernel source tree, Debian's linux-source-6.1 or -6.12 (shared by every
# architecture); OUT receives the configuration and what the targets build (`make O=OUT`):
# DEFCONFIG merged with the fragments' options (comma-separated, merged in that order),
# then the targets, `modules_prepare` when none is named. Without a
# vmlinux OUT has no Module.symvers; the module's undefined symbols are then checked
# against the source's exports instead (check-symbols.sh).
set -euo pipefail

src=$(realpath "${1:?usage: prepare.sh SRC OUT ARCH CROSS_COMPILE DEFCONFIG FRAGMENT[,FRAGMENT...] [TARGET...]}")
out=$(realpath -m "$2")
arch=$3 cross=$4 defconfig=$5
fragments=()
IFS=, read -ra names <<<"$6"
for name in "${names[@]}"; do fragments+=("$(realpath -e "$name")"); done
shift 6
targets=("${@:-modules_prepare}")
jobs=${JOBS:-$(nproc)}

command -v "${cross}gcc" >/dev/null || { echo "cross: ${cross}gcc missing (mk/apt-packages.txt)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"
kmake() { make -C "$src" O="$out" ARCH="$arch" CROSS_COMPILE="$cross" "$@"; }

kmake "$defconfig" >/dev/null
"$src"/scripts/kconfig/merge_config.sh -m -O "$out" "$out/.config" "${fragments[@]}" >/dev/null
kmake olddefconfig >/dev/null

# Kconfig silently drops an option whose dependencies are not met, and another option's
# `select` can turn on one a fragment turns off: name each one.
missing=0
while read -r line; do
	case $line in
	CONFIG_*=*) grep -qx "$line" "$out/.config" || { echo "cross: Kconfig dropped $line" >&2; missing=1; } ;;
	"# CONFIG_"*" is not set")
		option=${line#\# }; option=${option%% *}
		! grep -q "^$option=" "$out/.config" || { echo "cross: Kconfig set $option, which a fragment turns off" >&2; missing=1; } ;;
	esac
done < <(cat "${fragments[@]}")
[ "$missing" = 0 ]

kmake -j"$jobs" "${targets[@]}"
