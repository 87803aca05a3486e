#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the lab's User-Mode Linux kernel into OUT (build/uml): Debian's linux-source-6.1
# (or the tarball UML_SOURCE_TARBALL names: linux-source-6.12's for build/uml-6.12)
# unpacked afresh, kernel/uml/patches/*.patch applied in name order, `make ARCH=um
# defconfig` merged with kernel/uml/uml.config and then with an optional EXTRA fragment
# (kernel/uml/debug.config for build/uml-debug; its EXTRA.patch, if any, is applied
# too), then the kernel and its modules (the
# modules step writes Module.symvers and scripts/module.lds, which out-of-tree modules
# such as ours need), installed into OUT/modules. The tree stays in OUT/src for
# `make -C OUT/src ARCH=um M=...`; the kernel is OUT/linux.
set -euo pipefail

out=$(realpath -m "${1:?usage: build.sh OUTDIR [EXTRA.config]}")
extra=${2:+$(realpath "$2")}
here=$(cd "$(dirname "$0")" && pwd)
tarball=${UML_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
jobs=${JOBS:-$(nproc)}

[ -f "$tarball" ] || { echo "uml: $tarball missing (apt-get install $(basename "$tarball" .tar.xz))" >&2; exit 1; }

rm -rf "$out/src" "$out/linux" "$out/modules"
mkdir -p "$out/src"
tar -xJf "$tarball" -C "$out/src" --strip-components=1
cd "$out/src"

for patch in "$here"/patches/*.patch; do
	[ -e "$patch" ] || continue
	echo "uml: applying $(basename "$patch")"
	patch -p1 --forward --quiet < "$patch"
done
if [ -n "$extra" ] && [ -f "${extra%.config}.patch" ]; then
	echo "uml: applying $(basename "${extra%.config}.patch")"
	patch -p1 --forward --quiet < "${extra%.config}.patch"
fi

make ARCH=um defconfig >/dev/null
scripts/kconfig/merge_config.sh -m .config "$here/uml.config" $extra >/dev/null
make ARCH=um olddefconfig >/dev/null

# Kconfig silently drops an option whose dependencies are not met: name each one.
missing=0
while read -r line; do
	case $line in
	CONFIG_*=*) grep -qx "$line" .config || { echo "uml: Kconfig dropped $line" >&2; missing=1; } ;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }; opt=${opt%% *}
		grep -q "^$opt=" .config && { echo "uml: $opt still set" >&2; missing=1; } ;;
	esac
done < <(cat "$here/uml.config" $extra)
[ "$missing" = 0 ]

# A fixed build identity (the source's date, not the clock's) and no build directory in
# the debug information, so that a rebuild of the same source, patches and config, in any
# clone, is the same kernel byte for byte: the runs record its digest, and a resumed
# experiment refuses a kernel whose digest differs.
export KBUILD_BUILD_TIMESTAMP="$(LC_ALL=C date -u -d "@$(stat -c %Y "$tarball")")"
export KBUILD_BUILD_USER=confucius KBUILD_BUILD_HOST=uml KBUILD_BUILD_VERSION=1
export KCFLAGS="-ffile-prefix-map=$PWD=." KAFLAGS="-ffile-prefix-map=$PWD=."
make ARCH=um -j"$jobs" linux modules
# The module tree the guest's modprobe reads (modules.dep, modules.builtin ...).
make ARCH=um modules_install INSTALL_MOD_PATH="$out/modules" >/dev/null
# Replaced, not overwritten: a guest running the old kernel keeps its file.
cp linux "$out/linux.new"
mv -f "$out/linux.new" "$out/linux"
