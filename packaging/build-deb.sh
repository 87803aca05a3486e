#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the Debian packages confucius-dkms and confucius-tc into OUT_DIR (make deb).
# Usage: packaging/build-deb.sh OUT_DIR
#
# Stages what the packages are made of (VERSION, core/, kernel/, tc/, the licences) with
# packaging/debian/ as debian/ into OUT_DIR/src/confucius-VERSION, writes debian/changelog
# for VERSION there and runs dpkg-buildpackage in it: the repository itself is not written.
# $IPROUTE2_SRC, when set, is the iproute2 source cache tc/build.sh reuses.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:?usage: packaging/build-deb.sh OUT_DIR}")
version=$(<"$repo/VERSION")
STAGED=(VERSION LICENSE LICENSES core/confucius.h core/confucius_impl.h core/userspace/include
	kernel/Kbuild kernel/sch_confucius.c kernel/include/uapi/linux/pkt_sched_confucius.h
	tc/build.sh tc/iproute2-tree.sh tc/q_confucius.c tc/tc-confucius.8 mk/private-apt.sh)

die() { echo "packaging/build-deb.sh: $*" >&2; exit 1; }

# A Debian upstream version: starts with a digit; letters, digits and . + ~ only (no '-',
# which would start a Debian revision in a native package).
[[ $version =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || die "VERSION \"$version\" is not a valid package version"

maintainer() {
	sed -n 's/^Maintainer: //p' "$repo/packaging/debian/control"
}

write_changelog() {
	cat >"$1/debian/changelog" <<-END
	confucius ($version) unstable; urgency=medium

	  * Built from the Confucius source tree by make deb.

	 -- $(maintainer)  $(date -R)
	END
}

stage_tree() {
	local stage=$1
	mkdir -p "$stage"
	(cd "$repo" && cp -a --parents "${STAGED[@]}" "$stage/")
	cp -a "$repo/packaging/debian" "$stage/debian"
	write_changelog "$stage"
}

stage=$out/src/confucius-$version
rm -rf "$out/src" "$out"/*.deb
stage_tree "$stage"
(cd "$stage" && dpkg-buildpackage --build=binary --no-sign >"$out/src/build.log" 2>&1) ||
	die "dpkg-buildpackage failed, see $out/src/build.log:"$'\n'"$(tail -n 20 "$out/src/build.log")"
mv "$out/src"/*.deb "$out/"
ls "$out"/*.deb
