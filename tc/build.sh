#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the tc plugin BUILD_DIR/q_confucius.so against the source of the iproute2 version
# installed on this machine (Debian's source package), so that it matches the `tc` that
# loads it, then check that this tc loads it. Usage: tc/build.sh BUILD_DIR (make tc).
#
# The source comes from the archive and suite that the installed binary package came from
# (`apt-cache madison`), through a deb-src list of our own in BUILD_DIR/apt: the system's apt
# configuration is left untouched. The configured source tree is cached in BUILD_DIR/src, or
# in $IPROUTE2_SRC when set (the Debian package build reuses the tree of `make tc` that way).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:?usage: tc/build.sh BUILD_DIR}")
CC=${CC:-cc}
TC=${TC:-/usr/sbin/tc}
src_cache=$(realpath -m "${IPROUTE2_SRC:-$build/src}")

die() { echo "tc/build.sh: $*" >&2; exit 1; }

installed_version() {
	dpkg-query -W -f='${Version}' iproute2 2>/dev/null || die "iproute2 is not installed (make deps)"
}

# "deb-src URI SUITE COMPONENT" for every archive that offers version $1 of iproute2.
source_lines() {
	apt-cache madison iproute2 |
		awk -F'|' -v want="$1" '
			{ gsub(/ /, "", $2) }
			$2 == want && $3 ~ / Packages$/ {
				split($3, f, " "); split(f[2], sc, "/")
				print "deb-src " f[1] " " sc[1] " " sc[2]
			}' | sort -u
}

# Download and unpack iproute2 $1 into $2 (apt-get source applies Debian's patches).
download_source() {
	local version=$1 src=$2 apt_dir=$build/apt
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/sources.list.d"
	source_lines "$version" >"$apt_dir/sources.list"
	[ -s "$apt_dir/sources.list" ] || die "no apt archive offers iproute2 $version (apt-get update?)"
	local -a apt_opts=(
		-o "Dir::Etc::sourcelist=$apt_dir/sources.list"
		-o "Dir::Etc::sourceparts=$apt_dir/sources.list.d"
		-o "Dir::State::Lists=$apt_dir/lists"
		-o "Dir::Cache=$apt_dir/cache"
		-o "Dir::Cache::pkgcache="
		-o "Dir::Cache::srcpkgcache="
		# The build tree may not be writable by apt's unprivileged download user.
		-o "APT::Sandbox::User=root"
	)
	apt-get -qq "${apt_opts[@]}" update
	rm -rf "$src"
	mkdir -p "$src"
	(cd "$src" && apt-get -qq "${apt_opts[@]}" source "iproute2=$version" >/dev/null)
}

# The configured source tree of the installed iproute2, fetched once; prints its path.
source_tree() {
	local version upstream tree
	version=$(installed_version)
	upstream=${version#*:}
	upstream=${upstream%-*}
	tree=$src_cache/iproute2-$upstream
	if [ ! -f "$tree/.configured-$version" ]; then
		download_source "$version" "$src_cache" >&2
		[ -f "$tree/configure" ] || die "iproute2 $version did not unpack into $tree"
		# configure writes config.mk, the feature flags tc was built with.
		(cd "$tree" && ./configure >"$src_cache/configure.log" 2>&1) ||
			die "iproute2's configure failed, see $src_cache/configure.log"
		touch "$tree/.configured-$version"
	fi
	echo "$tree"
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
		-Wall -Wextra -Wno-unused-parameter -Wmissing-prototypes -Werror
		# Only confucius_qdisc_util is exported; the core's symbols stay inside.
		-fPIC -shared -fvisibility=hidden
		-I"$tree/include" -I"$tree/include/uapi" -I"$tree/tc"
		-I"$repo/kernel/include/uapi" -I"$repo/core"
	)
	"$CC" "${flags[@]}" -o "$out.tmp" "$repo/tc/q_confucius.c" "$repo/core/confucius.c"
	mv "$out.tmp" "$out"
}

# tc falls back silently to "Unknown qdisc" when dlopen fails, so ask it for the usage text
# with every symbol bound at load time: that fails unless tc exports all the plugin needs.
check_plugin_loads() {
	local usage
	usage=$(LD_BIND_NOW=1 TC_LIB_DIR=$build "$TC" qdisc add dev lo root confucius help 2>&1 || true)
	grep -q '^Usage: \.\.\. confucius' <<<"$usage" ||
		die "$TC does not load $build/q_confucius.so:"$'\n'"$usage"
}

mkdir -p "$build"
tree=$(source_tree)
compile_plugin "$tree"
check_plugin_loads
echo "built $build/q_confucius.so against iproute2 $(installed_version)"
