#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the tc plugin BUILD_DIR/q_confucius.so against Debian's source package of iproute2,
# so that it matches the `tc` that loads it, then check that this tc loads it.
# Usage: tc/build.sh BUILD_DIR [SUITE]            (make tc; SUITE by hand, see below)
#
# Without SUITE: the source of the iproute2 version installed on this machine, from the
# archive and suite its binary package came from (`apt-cache madison`); checked with the
# system tc ($TC). With SUITE (e.g. sid): the newest iproute2 that Debian suite has, from the
# same archive; checked with $TC, which must then be a tc of that release (the in-tree tc,
# tc/intree.sh). Either way through a deb-src list of our own in BUILD_DIR/apt: the
# system's apt configuration is left untouched. The configured source tree is cached in
# BUILD_DIR/src, or in $IPROUTE2_SRC when set (the Debian package build reuses the tree of
# `make tc` that way); a suite's tree is kept until removed, so a build needs no network
# once it is there, though the suite moves on.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:?usage: tc/build.sh BUILD_DIR [SUITE]}")
suite=${2:-}
CC=${CC:-cc}
TC=${TC:-/usr/sbin/tc}
src_cache=$(realpath -m "${IPROUTE2_SRC:-$build/src}")
apt_dir=$build/apt

die() { echo "tc/build.sh: $*" >&2; exit 1; }
# shellcheck source=tc/iproute2-tree.sh
. "$repo/tc/iproute2-tree.sh"

installed_version() {
	dpkg-query -W -f='${Version}' iproute2 2>/dev/null || die "iproute2 is not installed (make deps)"
}

# "URI SUITE COMPONENT" of every archive that offers iproute2 version $1.
archives_of() {
	apt-cache madison iproute2 |
		awk -F'|' -v want="$1" '
			{ gsub(/ /, "", $2) }
			$2 == want && $3 ~ / Packages$/ {
				split($3, f, " "); split(f[2], sc, "/")
				print f[1] " " sc[1] " " sc[2]
			}' | sort -u
}

# The deb-src lines to fetch from: the installed version's archives, or SUITE of the
# first of them (the Debian mirror this machine uses).
source_lines() {
	local installed
	installed=$(installed_version)
	if [ -z "$suite" ]; then
		archives_of "$installed" | awk '{ print "deb-src " $0 }'
	else
		archives_of "$installed" | awk -v suite="$suite" 'NR == 1 { print "deb-src " $1 " " suite " main" }'
	fi
}

# shellcheck source=mk/private-apt.sh
. "$(dirname "$0")/../mk/private-apt.sh"
private_apt "$apt_dir"

# Our own apt lists of the source packages (the system's stay as they are).
update_lists() {
	source_lines >"$apt_dir/sources.list"
	[ -s "$apt_dir/sources.list" ] || die "no apt archive offers the installed iproute2 (apt-get update?)"
	apt-get -qq "${apt_opts[@]}" update
}

# The newest iproute2 source version in our lists.
newest_source_version() {
	apt-cache "${apt_opts[@]}" showsrc iproute2 | sed -n 's/^Version: //p' | sort -V | tail -n 1
}

# Download and unpack iproute2 $1 into $2 (apt-get source applies Debian's patches).
download_source() {
	local version=$1 src=$2
	find "$src" -mindepth 1 -maxdepth 1 ! -name version -exec rm -rf {} +
	(cd "$src" && apt-get -qq "${apt_opts[@]}" source "iproute2=$version" >/dev/null) ||
		die "the Debian archive did not give the source of iproute2 $version (apt-get source failed)"
}

# The Debian version to build against when it is known without the network: the installed
# one, or the one fetched for the suite before (the suite moves on; we keep what we have).
known_version() {
	if [ -z "$suite" ]; then
		installed_version
	elif [ -f "$src_cache/version" ]; then
		cat "$src_cache/version"
	fi
}

# Fetch and configure iproute2 $1 (the suite's newest when empty) into the cache, with
# its version in $src_cache/version.
fetch_tree() {
	local version=$1 tree
	mkdir -p "$src_cache"
	update_lists
	[ -n "$version" ] || version=$(newest_source_version)
	[ -n "$version" ] || die "the Debian suite $suite has no iproute2 source"
	echo "$version" >"$src_cache/version"
	tree=$(cached_tree "$src_cache")
	download_source "$version" "$src_cache"
	[ -f "$tree/configure" ] || die "iproute2 $version did not unpack into $tree"
	# configure writes config.mk, the feature flags tc was built with.
	(cd "$tree" && ./configure >"$src_cache/configure.log" 2>&1) ||
		die "iproute2's configure failed, see $src_cache/configure.log"
	touch "$tree/.configured-$version"
}

compile_plugin() {
	local tree=$1 out=$build/q_confucius.so
	local -a flags config_flags deb_flags
	# Both are lists of words, split on purpose: config.mk's CFLAGS lines and Debian's
	# hardening flags (what Debian built tc with).
	# shellcheck disable=SC2207
	config_flags=($(sed -n 's/^CFLAGS += //p' "$tree/config.mk"))
	# shellcheck disable=SC2207
	deb_flags=($(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CFLAGS)
		   $(dpkg-buildflags --get LDFLAGS))
	flags=(
		-std=gnu11 -D_GNU_SOURCE "${config_flags[@]}" "${deb_flags[@]}"
		-DCONFUCIUS_VERSION="\"$(<"$repo/VERSION")\""
		-DQDISC_UTIL_CONST="$(callback_const "$tree")"
		-Wall -Wextra -Wno-unused-parameter -Wmissing-prototypes -Werror
		# Only confucius_qdisc_util is exported.
		-fPIC -shared -fvisibility=hidden
		# The core's header is kernel C, for the plugin's check that its bounds are the
		# kernel's: the userspace copy of the kernel headers it uses comes first.
		-I"$repo/core/userspace/include"
		-I"$tree/include" -I"$tree/include/uapi" -I"$tree/tc"
		-I"$repo/kernel/include/uapi" -I"$repo/core"
	)
	"$CC" "${flags[@]}" -o "$out.tmp" "$repo/tc/q_confucius.c"
	mv "$out.tmp" "$out"
}

# tc falls back silently to "Unknown qdisc" when dlopen fails, so ask it for the usage text
# with every symbol bound at load time: that fails unless tc exports all the plugin needs.
# The last line, the plugin's version, is the plugin's own: a tc with confucius built in
# (the in-tree tc) does not print it, so this tells that tc loaded this file.
check_plugin_loads() {
	local usage
	usage=$(LD_BIND_NOW=1 TC_LIB_DIR=$build "$TC" qdisc add dev lo root confucius help 2>&1 || true)
	if ! grep -q '^Usage: \.\.\. confucius' <<<"$usage" || ! grep -q '(q_confucius.so, ' <<<"$usage"; then
		die "$TC does not load $build/q_confucius.so:"$'\n'"$usage"
	fi
}

[ -x "$TC" ] || die "no tc at $TC to check the plugin with"
mkdir -p "$build"
version=$(known_version)
if [ -z "$version" ] || [ "$(cat "$src_cache/version" 2>/dev/null)" != "$version" ] ||
	[ ! -f "$(cached_tree "$src_cache")/.configured-$version" ]; then
	fetch_tree "$version" >&2
	version=$(<"$src_cache/version")
fi
tree=$(cached_tree "$src_cache")
compile_plugin "$tree"
check_plugin_loads
echo "built $build/q_confucius.so against iproute2 $version"
