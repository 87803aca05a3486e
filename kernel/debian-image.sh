#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Unpack, once, the Debian kernel image whose headers the module was built against, for the
# lab's qemu engine (confucius/lab/vm.py, flavour 6.12):
#
#   kernel/debian-image.sh HEADERS_DEB APT_DIR OUT_DIR
#
# HEADERS_DEB is the linux-headers-RELEASE-amd64 package kernel/fetch-kernel-trees.sh
# fetched through its apt of our own in APT_DIR; the image is linux-image-RELEASE-amd64 of
# the same version (the module's vermagic must match it), downloaded through the same apt
# (mk/private-apt.sh) and unpacked with dpkg -x
# into OUT_DIR/modules (nothing is installed: /boot and /lib/modules stay Debian 12's).
# depmod then indexes its module tree, as the package's postinst would.
set -euo pipefail

usage="usage: kernel/debian-image.sh HEADERS_DEB APT_DIR OUT_DIR"
headers=${1:?$usage}
apt_dir=$(realpath -m "${2:?$usage}")
out=$(realpath -m "${3:?$usage}")

die() { echo "kernel/debian-image.sh: $*" >&2; exit 1; }

for tool in apt-get dpkg dpkg-deb depmod; do
	command -v "$tool" >/dev/null || die "$tool is missing (make deps)"
done
[ -f "$headers" ] || die "$headers missing (make kmod-compat fetches it)"
[ -f "$apt_dir/sources.list" ] || die "no apt of ours in $apt_dir (make kmod-compat makes it)"
# shellcheck source=mk/private-apt.sh
. "$(dirname "$0")/../mk/private-apt.sh"
private_apt "$apt_dir"

package=$(dpkg-deb -f "$headers" Package)
version=$(dpkg-deb -f "$headers" Version)
release=${package#linux-headers-}
image=linux-image-$release

rm -rf "$out"
mkdir -p "$out/debs"
(cd "$out/debs" && apt-get -qq "${apt_opts[@]}" download "$image=$version") ||
	die "could not download $image=$version"
dpkg -x "$out"/debs/"$image"_*.deb "$out/modules"
rm -rf "$out/debs"
[ -f "$out/modules/boot/vmlinuz-$release" ] || die "$image has no boot/vmlinuz-$release"
depmod -b "$out/modules" "$release"
ln -s "modules/boot/vmlinuz-$release" "$out/vmlinuz"
