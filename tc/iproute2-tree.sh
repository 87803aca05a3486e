# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# What tc/build.sh and tc/intree.sh both read from an iproute2 source tree (sourced).

# iproute2 6.9 made struct qdisc_util's callbacks take a const struct qdisc_util *: prints
# "const" for a tree that has that. The tree's own declaration says which it is; a release
# number would also have to know every distribution's backports of that change.
callback_const() {
	if grep -q 'parse_qopt)(const struct qdisc_util' "$1/tc/tc_util.h"; then
		echo const
	fi
}

# The source tree tc/build.sh configured in source cache $1: the upstream release of the
# Debian version it wrote into $1/version (1:6.1.0-3 -> $1/iproute2-6.1.0).
cached_tree() {
	local version upstream
	version=$(cat "$1/version")
	upstream=${version#*:}
	echo "$1/iproute2-${upstream%-*}"
}
