#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# DKMS builds the module from a confucius-dkms package for one kernel, on this machine but
# without writing to it, and leaves the module in OUT_DIR (test_deb.py).
# Usage: dkms_build.sh DKMS_DEB KERNEL_VERSION OUT_DIR   (as root)
#
# The package is unpacked into OUT_DIR/root, and dkms add and build run in a private mount
# namespace whose /var/lib/dkms is a tmpfs: the DKMS tree and the module signing key that
# dkms makes on first use live and die there. Left in OUT_DIR: sch_confucius.ko, make.log
# and dkms.log.
set -euo pipefail

deb=$(realpath "${1:?usage: dkms_build.sh DKMS_DEB KERNEL_VERSION OUT_DIR}")
kernel=${2:?usage: dkms_build.sh DKMS_DEB KERNEL_VERSION OUT_DIR}
out=$(realpath -m "${3:?usage: dkms_build.sh DKMS_DEB KERNEL_VERSION OUT_DIR}")
name=$(dpkg-deb -f "$deb" Package)
name=${name%-dkms}
version=$(dpkg-deb -f "$deb" Version)

[ "$(id -u)" -eq 0 ] || { echo "dkms_build.sh: needs root (a private mount namespace)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
dpkg-deb -x "$deb" "$out/root"

# shellcheck disable=SC2016  # expanded by the inner shell
unshare --mount --propagation private bash -euo pipefail -c '
	name=$1 version=$2 kernel=$3 out=$4
	mount -t tmpfs tmpfs /var/lib/dkms
	set -- -m "$name" -v "$version" --sourcetree "$out/root/usr/src"
	dkms add "$@"
	dkms build "$@" -k "$kernel"
	built=/var/lib/dkms/$name/$version/$kernel/$(uname -m)
	cp "$built/module/sch_confucius.ko" "$built/log/make.log" "$out/"
' dkms_build "$name" "$version" "$kernel" "$out" >"$out/dkms.log" 2>&1 ||
	{ echo "dkms_build.sh: DKMS failed, see $out/dkms.log:" >&2; tail -n 20 "$out/dkms.log" >&2; exit 1; }
