#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fetch, once, a kernel tree the module is built against beside Debian 12's own (6.1):
#
#   kernel/fetch-kernel-trees.sh 6.12 OUT_DIR   Debian 12's 6.12 headers (bookworm-security)
#   kernel/fetch-kernel-trees.sh 7.3 OUT_DIR    the newest Debian packages (experimental)
#
# and print the directory to give `make -C` (mk/kernel.mk's kmod-compat builds).
#
# 6.12: linux-headers-6.12.*+deb12-amd64, its -common and linux-kbuild packages, unpacked
# with dpkg -x (nothing is installed). Their Makefile includes the -common tree by its
# absolute /usr/src path, which is pointed at the unpacked copy.
#
# 7.3: Debian builds it for sid (gcc-16, glibc 2.38), so its headers' host tools do not
# run here. The tree is linux-source-7.3 instead, configured with the headers package's
# .config (olddefconfig settles what this gcc and pahole can do) and prepared with
# modules_prepare; the headers package's Module.symvers lets modpost check our imports.
# The kernel refuses Debian 12's sparse (it needs __typeof_unqual__), so the sparse of
# the same archive is built from its source too: OUT_DIR/sparse/bin/sparse.
#
# The packages come through an apt configuration of our own in OUT_DIR/apt, with the
# archives this machine's apt already uses; /etc/apt is left untouched.
set -euo pipefail

tree=${1:?usage: kernel/fetch-kernel-trees.sh 6.12|7.3 OUT_DIR}
out=$(realpath -m "${2:?usage: kernel/fetch-kernel-trees.sh 6.12|7.3 OUT_DIR}")
apt_dir=$out/apt

die() { echo "kernel/fetch-kernel-trees.sh: $*" >&2; exit 1; }

for tool in apt-get apt-cache dpkg gcc make bc flex bison; do
	command -v "$tool" >/dev/null || die "$tool is missing (make deps)"
done

# The archive URI this machine's apt uses for Debian ($1 = debian or debian-security).
archive_uri() {
	apt-cache policy | awk -v want="/$1" '$2 ~ want"$" { print $2; exit }'
}

# shellcheck source=mk/private-apt.sh
. "$(dirname "$0")/../mk/private-apt.sh"
private_apt "$apt_dir"

apt_setup() {
	local main security
	main=$(archive_uri debian)
	security=$(archive_uri debian-security)
	[ -n "$main" ] && [ -n "$security" ] ||
		die "this machine's apt has no Debian and Debian security archives (apt-get update?)"
	cat >"$apt_dir/sources.list" <<-END
	deb $security bookworm-security main
	deb $main experimental main
	deb-src $main experimental main
	deb-src $main sid main
	END
	apt-get -qq "${apt_opts[@]}" update
}

# The newest version of package $1 the archives offer.
newest() {
	apt-cache "${apt_opts[@]}" show "$1" 2>/dev/null |
		sed -n 's/^Version: //p' | sort -V | tail -n1
}

# Download packages "name=version" into $1.
download() {
	local dir=$1
	shift
	mkdir -p "$dir"
	(cd "$dir" && apt-get -qq "${apt_opts[@]}" download "$@") || die "could not download $*"
}

fetch_612() {
	local release version dir=$out/6.12 root
	release=$(apt-cache "${apt_opts[@]}" pkgnames linux-headers-6.12. |
		sed -n 's/^linux-headers-\(6\.12\.[0-9]*+deb12\)-amd64$/\1/p' | sort -V | tail -n1)
	[ -n "$release" ] || die "bookworm-security offers no linux-headers-6.12.*+deb12-amd64"
	version=$(newest "linux-headers-$release-amd64")
	rm -rf "$dir"
	download "$dir/debs" "linux-headers-$release-amd64=$version" \
		"linux-headers-$release-common=$version" "linux-kbuild-${release}=$version"
	root=$dir/root
	for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$root"; done
	sed -i "s|^include /usr/src/|include $root/usr/src/|" \
		"$root/usr/src/linux-headers-$release-amd64/Makefile"
	ln -s "root/usr/src/linux-headers-$release-amd64" "$dir/build"
	touch "$dir/.ready"
}

# Debian's sparse from the newest archive, built from its source: only the sparse binary.
fetch_sparse() {
	local dir=$out/sparse src
	rm -rf "$dir"
	mkdir -p "$dir"
	(cd "$dir" && apt-get -qq "${apt_opts[@]}" source sparse >/dev/null) ||
		die "could not fetch sparse's source"
	src=$(find "$dir" -mindepth 1 -maxdepth 1 -type d -name 'sparse-*' | head -n1)
	# Debian pins its compiler (gcc-16) in the Makefile: use ours.
	nice make -s -C "$src" -j2 CC=gcc sparse >"$dir/build.log" 2>&1 ||
		die "sparse did not build, see $dir/build.log"
	mkdir -p "$dir/bin"
	ln -s "../$(basename "$src")/sparse" "$dir/bin/sparse"
}

fetch_73() {
	local version dir=$out/7.3 src
	version=$(newest linux-source-7.3)
	[ -n "$version" ] || die "experimental offers no linux-source-7.3"
	rm -rf "$dir"
	download "$dir/debs" "linux-source-7.3=$version" \
		"linux-headers-7.3-amd64=$version" "linux-headers-7.3-common=$version"
	dpkg -x "$dir"/debs/linux-source-7.3_*.deb "$dir/source"
	dpkg -x "$dir"/debs/linux-headers-7.3-amd64_*.deb "$dir/headers"
	src=$dir/src
	mkdir -p "$src"
	nice tar -xJf "$dir"/source/usr/src/linux-source-7.3.tar.xz -C "$src" --strip-components=1
	rm -rf "$dir/source" "$dir/debs"
	cp "$dir/headers/usr/src/linux-headers-7.3-amd64/.config" "$src/.config"
	# pahole is left out (PAHOLE=false, also when building the module): no BTF, so the
	# tree does not depend on the pahole this machine has.
	(cd "$src" && nice make -s -j2 PAHOLE=false olddefconfig &&
		nice make -s -j2 PAHOLE=false modules_prepare) >"$dir/prepare.log" 2>&1 ||
		die "7.3 tree did not prepare, see $dir/prepare.log"
	cp "$dir/headers/usr/src/linux-headers-7.3-amd64/Module.symvers" "$src/"
	rm -rf "$dir/headers"
	ln -s src "$dir/build"
	fetch_sparse
	touch "$dir/.ready"
}

case $tree in
6.12 | 7.3) ;;
*) die "unknown tree $tree: 6.12 or 7.3" ;;
esac
if [ ! -f "$out/$tree/.ready" ]; then
	apt_setup
	"fetch_${tree//./}" >&2
fi
echo "$out/$tree/build"
