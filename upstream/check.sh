#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The checks a netdev maintainer runs on the series (mk/upstream.mk runs them in order):
#
#   upstream/check.sh apply SERIES_DIR BASE_GIT TREE
#       TREE becomes a fresh checkout of the base (a worktree of BASE_GIT at its tag
#       `base`, nothing else in it) and the series is applied with git am.
#   upstream/check.sh checkpatch SERIES_DIR TREE
#       the tree's checkpatch.pl --strict on every patch: any error, warning or check fails.
#   upstream/check.sh object TREE OBJ_DIR SPARSE
#       net/sched/sch_confucius.o of the patched tree built for x86_64 with W=1 and C=1
#       (SPARSE is the sparse binary), out of the source tree in OBJ_DIR: any compiler or
#       sparse warning fails.
#   upstream/check.sh uml TREE OBJ_DIR
#       the User-Mode Linux kernel tdc boots (upstream/uml-tdc.config): OBJ_DIR/linux.
#   upstream/check.sh iproute2 PATCH_DIR IPROUTE2_TREE OUT_DIR
#       the iproute2 patches applied to a copy of the tree and tc built: OUT_DIR/tc.
#   upstream/check.sh checkpatch-iproute2 PATCH_DIR TREE
#       the kernel tree's checkpatch.pl --strict on the iproute2 patches, as iproute2 asks
#       of its patches: with no tree of its own (--no-tree), and without the question
#       whether the kernel's MAINTAINERS needs a new file (iproute2's lists tc/*).
#
# Each prints what it found and exits non-zero on a finding.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
die() { echo "upstream/check.sh: $*" >&2; exit 1; }
jobs=${JOBS:-2}

# The patches of a series directory, in order, without the cover letter.
patches() {
	local dir
	dir=$(realpath "$1")
	find "$dir" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' ! -name '0000-*' | sort
}

check_apply() {
	local series=$1 base=$2 tree=$3
	local -a list
	mapfile -t list < <(patches "$series")
	[ "${#list[@]}" -gt 0 ] || die "no patches in $series"
	git -C "$base" rev-parse -q --verify base >/dev/null || die "$base has no tag base (upstream/fetch-base.sh)"
	if [ ! -e "$tree/.git" ]; then
		git -C "$base" worktree prune
		git -C "$base" worktree add -q --detach "$(realpath -m "$tree")" base
	fi
	git -C "$tree" am --abort >/dev/null 2>&1 || true
	git -C "$tree" checkout -q -f --detach base
	git -C "$tree" clean -q -f -d -x
	git -C "$tree" -c user.name=check -c user.email=check@localhost am -q "${list[@]}" ||
		die "the series does not apply to $(git -C "$tree" log -1 --format=%s base)"
	echo "applied ${#list[@]} patches to $(git -C "$tree" log -1 --format=%s base):"
	git -C "$tree" log --format='  %h %s' base..HEAD
}

check_checkpatch() {
	local series=$1 tree=$2 patch found=0 out
	shift 2
	for patch in $(patches "$series"); do
		# From the tree's root, so that checkpatch knows the tree (MAINTAINERS, spelling,
		# SPDX tags through spdxcheck.py, which needs the system's python3: Debian's PLY
		# and GitPython are installed for it, not for another python3 earlier in PATH).
		out=$(cd "$tree" && PATH=/usr/bin:$PATH scripts/checkpatch.pl --strict --quiet --show-types \
			"$@" "$patch" 2>&1) || true
		if [ -n "$out" ]; then
			echo "checkpatch --strict on $(basename "$patch"):"
			echo "$out"
			found=1
		else
			echo "checkpatch --strict: $(basename "$patch") clean"
		fi
	done
	[ "$found" = 0 ] || die "checkpatch has findings"
}

# A configuration with the qdisc built in: tinyconfig and what net/sched needs. The base
# is made once; the options are set every time, so that a run stopped between the two
# steps leaves nothing that a later run would trust; olddefconfig brings it up to date.
configure_x86() {
	local tree=$1 obj=$2
	[ -f "$obj/.config" ] || make -s -C "$tree" O="$obj" tinyconfig
	"$tree/scripts/config" --file "$obj/.config" -e 64BIT -e NET -e INET -e NET_SCHED \
		-e NET_CLS_ACT -e NET_SCH_CONFUCIUS
	make -s -C "$tree" O="$obj" olddefconfig
	grep -qx 'CONFIG_NET_SCH_CONFUCIUS=y' "$obj/.config" || die "Kconfig dropped NET_SCH_CONFUCIUS"
}

check_object() {
	local tree=$1 obj=$2 sparse log
	sparse=$(realpath -m "$3")
	[ -x "$sparse" ] || die "no sparse at $sparse (make kmod-compat fetches it)"
	obj=$(realpath -m "$obj")
	mkdir -p "$obj"
	configure_x86 "$tree" "$obj"
	nice make -s -C "$tree" O="$obj" -j"$jobs" prepare >"$obj/prepare.log" 2>&1 ||
		die "the tree did not prepare, see $obj/prepare.log"
	rm -f "$obj/net/sched/sch_confucius.o"
	log=$obj/object.log
	nice make -C "$tree" O="$obj" -j"$jobs" W=1 C=1 CHECK="$sparse" net/sched/sch_confucius.o >"$log" 2>&1 ||
		{ cat "$log"; die "net/sched/sch_confucius.o did not build"; }
	grep -q 'CHECK .*net/sched/sch_confucius.c' "$log" || { cat "$log"; die "sparse did not run"; }
	if grep -E 'warning:|error:' "$log"; then
		die "net/sched/sch_confucius.o builds with warnings (W=1 C=1)"
	fi
	echo "net/sched/sch_confucius.o: W=1 C=1 (sparse $("$sparse" --version)) without a warning"
}

check_uml() {
	local tree=$1 obj=$2 line missing=0
	obj=$(realpath -m "$obj")
	mkdir -p "$obj"
	make -s -C "$tree" O="$obj" ARCH=um tinyconfig
	"$tree/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$here/uml-tdc.config" >/dev/null
	make -s -C "$tree" O="$obj" ARCH=um olddefconfig
	# Kconfig silently drops an option whose dependencies are not met: name each one.
	while read -r line; do
		case $line in
		CONFIG_*=*) grep -qx "$line" "$obj/.config" || { echo "Kconfig dropped $line" >&2; missing=1; } ;;
		esac
	done <"$here/uml-tdc.config"
	[ "$missing" = 0 ] || die "the UML configuration lost options"
	nice make -s -C "$tree" O="$obj" ARCH=um -j"$jobs" linux >"$obj/build.log" 2>&1 ||
		{ tail -n 30 "$obj/build.log"; die "the UML kernel did not build, see $obj/build.log"; }
	echo "UML kernel: $obj/linux ($(grep -c '=y$' "$obj/.config") options built in)"
}

check_iproute2() {
	local patches_dir=$1 tree=$2 out=$3 copy patch
	out=$(realpath -m "$out")
	copy=$out/iproute2
	rm -rf "$copy"
	mkdir -p "$out"
	cp -a "$tree" "$copy"
	for patch in $(patches "$patches_dir"); do
		patch -s -d "$copy" -p1 --forward <"$patch" || die "$(basename "$patch") does not apply to $tree"
	done
	(cd "$copy" && ./configure >"$out/configure.log" 2>&1) || die "configure failed, see $out/configure.log"
	nice make -s -C "$copy" -j"$jobs" SUBDIRS="lib tc" >"$out/make.log" 2>&1 ||
		{ tail -n 20 "$out/make.log"; die "the patched iproute2 did not build, see $out/make.log"; }
	if grep -q 'q_confucius\.c:.*warning' "$out/make.log"; then
		grep 'q_confucius\.c' "$out/make.log"
		die "q_confucius.c builds with warnings in iproute2"
	fi
	cp "$copy/tc/tc" "$out/tc"
	echo "iproute2: $(basename "$tree") with $(patches "$patches_dir" | wc -l) patches, tc built: $out/tc"
}

what=${1:-}
shift || true
case $what in
apply) [ $# = 3 ] || die "usage: check.sh apply SERIES_DIR BASE_GIT TREE"; check_apply "$@" ;;
checkpatch) [ $# = 2 ] || die "usage: check.sh checkpatch SERIES_DIR TREE"; check_checkpatch "$@" ;;
object) [ $# = 3 ] || die "usage: check.sh object TREE OBJ_DIR SPARSE"; check_object "$@" ;;
uml) [ $# = 2 ] || die "usage: check.sh uml TREE OBJ_DIR"; check_uml "$@" ;;
checkpatch-iproute2) [ $# = 2 ] || die "usage: check.sh checkpatch-iproute2 PATCH_DIR TREE"
	check_checkpatch "$@" --no-tree --ignore FILE_PATH_CHANGES ;;
iproute2) [ $# = 3 ] || die "usage: check.sh iproute2 PATCH_DIR IPROUTE2_TREE OUT_DIR"; check_iproute2 "$@" ;;
*) die "usage: check.sh apply|checkpatch|object|uml|iproute2|checkpatch-iproute2 ..." ;;
esac
