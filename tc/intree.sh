#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The in-tree form of the tc front end: a git-format patch that adds the confucius qdisc to
# iproute2's own tc, applied to a copy of an iproute2 source tree and built into a tc that
# knows confucius without a plugin. Usage: tc/intree.sh IPROUTE2_TREE BUILD_DIR (make
# tc-intree, with the configured Debian source tree tc/build.sh fetched).
#
# Writes BUILD_DIR/0001-tc-add-the-confucius-qdisc.patch, made from this repository's
# files for that tree (tc/q_confucius.c, the UAPI header, tc/tc-confucius.8 and one line
# of tc/Makefile), builds BUILD_DIR/tc from BUILD_DIR/iproute2 (the tree, patched) and
# checks that it prints confucius's usage with no plugin to load.
#
# tc/intree.sh --patch-only IPROUTE2_TREE BUILD_DIR writes the patch and stops: for a tree
# that is configured and built elsewhere, as OpenWrt builds its own (openwrt/tc-confucius).
set -euo pipefail

patch_only=
if [ "${1:-}" = --patch-only ]; then patch_only=1; shift; fi

repo=$(cd "$(dirname "$0")/.." && pwd)
tree=$(realpath -e "${1:?usage: tc/intree.sh IPROUTE2_TREE BUILD_DIR}")
build=$(realpath -m "${2:?usage: tc/intree.sh IPROUTE2_TREE BUILD_DIR}")
patch_file=$build/0001-tc-add-the-confucius-qdisc.patch
# The patch's author and date: fixed, so the patch depends on its inputs only.
AUTHOR_NAME="The Confucius authors"
AUTHOR_EMAIL="maintainers@users.noreply.a-seed-e09c00ad.example"
DATE="2026-01-01T00:00:00Z"

die() { echo "tc/intree.sh: $*" >&2; exit 1; }
# shellcheck source=tc/iproute2-tree.sh
. "$repo/tc/iproute2-tree.sh"

[ -f "$tree/tc/Makefile" ] || die "$tree is no iproute2 source tree (make tc fetches one)"
if [ -z "$patch_only" ]; then
	[ -f "$tree/config.mk" ] || die "$tree is not configured (make tc configures it)"
	# Without libmnl, tc prints none of the kernel's error messages (extack), which Debian's
	# tc prints and the tc cases expect.
	pkg-config --exists libmnl || die "libmnl-dev is not installed (make deps): tc needs it for the kernel's error messages"
fi
grep -q '^TCMODULES += q_cake.o$' "$tree/tc/Makefile" ||
	die "$tree/tc/Makefile has no q_cake.o line to add q_confucius.o after"

# q_confucius.c as it reads inside iproute2: the tree's callback signature written in, and
# what only the plugin build uses (the signature's switch, the check against the core)
# left out.
intree_source() {
	local qu_const
	qu_const=$(callback_const "$tree")
	sed -e '/^#ifndef QDISC_UTIL_CONST$/,/^#endif$/d' \
	    -e '/^#if __has_include("confucius.h")$/,/^#endif$/d' \
	    -e "s/QDISC_UTIL_CONST /${qu_const:+$qu_const }/" \
	    "$repo/tc/q_confucius.c"
}

commit_message() {
	cat <<-END
	tc: add the confucius qdisc

	Confucius keeps real-time flows at a low delay when bursts of new flows
	arrive: new flows start at a small weight that doubles every interval,
	so the flows already there lose bandwidth no faster than their
	congestion control follows. This adds its options, its statistics and
	its classes to tc, its UAPI header and the man page tc-confucius(8).
	END
}

# The patch, made in a scratch git repository holding the files it touches.
write_patch() {
	local scratch
	scratch=$(mktemp -d)
	# shellcheck disable=SC2064  # expanded now, on purpose
	trap "rm -rf '$scratch'" RETURN
	local -a git=(git -C "$scratch" -c user.name="$AUTHOR_NAME" -c user.email="$AUTHOR_EMAIL")
	git init -q "$scratch"
	mkdir -p "$scratch/tc"
	cp "$tree/tc/Makefile" "$scratch/tc/Makefile"
	"${git[@]}" add tc/Makefile
	GIT_AUTHOR_DATE=$DATE GIT_COMMITTER_DATE=$DATE "${git[@]}" commit -q -m base
	sed -i 's/^TCMODULES += q_cake.o$/&\nTCMODULES += q_confucius.o/' "$scratch/tc/Makefile"
	intree_source >"$scratch/tc/q_confucius.c"
	install -D -m 0644 "$repo/kernel/include/uapi/linux/pkt_sched_confucius.h" \
		"$scratch/include/uapi/linux/pkt_sched_confucius.h"
	install -D -m 0644 "$repo/tc/tc-confucius.8" "$scratch/man/man8/tc-confucius.8"
	"${git[@]}" add -A
	GIT_AUTHOR_DATE=$DATE GIT_COMMITTER_DATE=$DATE "${git[@]}" commit -q -F <(commit_message)
	"${git[@]}" format-patch -q -1 --stdout >"$patch_file"
}

# Only lib/ (what tc links) and tc/ are built: the rest of iproute2 is not needed here.
# configure runs again in the copy, so that its features are those of the libraries
# installed now; libmnl it must find (see below).
build_tc() {
	local copy=$build/iproute2
	rm -rf "$copy"
	cp -a "$tree" "$copy"
	patch -s -d "$copy" -p1 <"$patch_file"
	(cd "$copy" && ./configure >"$build/configure.log" 2>&1) ||
		die "iproute2's configure failed, see $build/configure.log"
	make -s -C "$copy" -j"${JOBS:-2}" SUBDIRS="lib tc" >"$build/make.log" 2>&1 ||
		die "the patched iproute2 did not build, see $build/make.log:"$'\n'"$(tail -n 20 "$build/make.log")"
	# iproute2's own warning flags (-Wformat=2, -Wmissing-declarations...) hold for ours too.
	if grep -q '^q_confucius\.c:.*warning' "$build/make.log"; then
		die "q_confucius.c builds with warnings in iproute2, see $build/make.log"
	fi
	cp "$copy/tc/tc" "$build/tc.tmp"
	mv "$build/tc.tmp" "$build/tc"
}

# With an empty plugin directory the usage can only come from the confucius built in, and
# it does not end with the plugin's version line.
check_builtin() {
	local usage
	mkdir -p "$build/no-plugins"
	usage=$(TC_LIB_DIR=$build/no-plugins "$build/tc" qdisc add dev lo root confucius help 2>&1 || true)
	if ! grep -q '^Usage: \.\.\. confucius' <<<"$usage" || grep -q '(q_confucius.so, ' <<<"$usage"; then
		die "$build/tc does not know confucius by itself:"$'\n'"$usage"
	fi
}

mkdir -p "$build"
write_patch
if [ -n "$patch_only" ]; then
	echo "wrote $patch_file"
	exit 0
fi
build_tc
check_builtin
echo "built $build/tc: $(basename "$tree") with $(basename "$patch_file")"
