#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The base the series is made against, as a git tree: upstream/fetch-base.sh OUT_DIR
# prints OUT_DIR/git, a repository whose tag `base` is the newest mainline release this
# machine can reach: Debian experimental's linux-source-7.3 (7.3-rc7). torvalds/linux is
# 8.6 GB, and the archive here serves no source package of linux (its orig tarball, without
# Debian's patches, is refused), so the base carries Debian's patches, and the cover
# letter says so.
#
# The package comes through an apt configuration of our own in OUT_DIR/apt (as
# kernel/fetch-kernel-trees.sh does); /etc/apt is left untouched. Once fetched,
# OUT_DIR/.ready holds the version and nothing is fetched again.
set -euo pipefail

out=$(realpath -m "${1:?usage: upstream/fetch-base.sh OUT_DIR}")
# The mainline series the base belongs to: Debian's version 7.3~rc7-1~exp1 is 7.3-rc7.
series=${UPSTREAM_BASE_SERIES:-7.3}
apt_dir=$out/apt

die() { echo "upstream/fetch-base.sh: $*" >&2; exit 1; }

for tool in apt-get apt-cache dpkg git tar xz; do
	command -v "$tool" >/dev/null || die "$tool is missing (make deps)"
done

# shellcheck source=mk/private-apt.sh
. "$(dirname "$0")/../mk/private-apt.sh"

apt_setup() {
	local main
	main=$(apt-cache policy | awk '$2 ~ "/debian$" { print $2; exit }')
	[ -n "$main" ] || die "this machine's apt has no Debian archive (apt-get update?)"
	private_apt "$apt_dir"
	echo "deb $main experimental main" >"$apt_dir/sources.list"
	apt-get -qq "${apt_opts[@]}" update
}

# The newest version of linux-source-SERIES (7.3~rc7-1~exp1).
newest_version() {
	apt-cache "${apt_opts[@]}" show "linux-source-$series" 2>/dev/null |
		sed -n 's/^Version: //p' | sort -V | tail -n1
}

# Debian's version as the kernel names it: 7.3~rc7-1~exp1 -> 7.3-rc7.
mainline_name() {
	local upstream=${1%-*}
	echo "${upstream/\~/-}"
}

fetch() {
	local version name tarball
	version=$(newest_version)
	[ -n "$version" ] || die "experimental offers no linux-source-$series"
	name=$(mainline_name "$version")
	rm -rf "$out/download" "$out/git"
	mkdir -p "$out/download"
	(cd "$out/download" && apt-get -qq "${apt_opts[@]}" download "linux-source-$series=$version") ||
		die "could not download linux-source-$series $version"
	dpkg -x "$out"/download/linux-source-*.deb "$out/download/deb"
	tarball=$out/download/deb/usr/src/linux-source-$series.tar.xz
	[ -f "$tarball" ] || die "linux-source-$series $version holds no $tarball"
	mkdir -p "$out/git"
	nice tar -xJf "$tarball" -C "$out/git" --strip-components=1
	grep -q "^EXTRAVERSION = ${name#"$series"}\$" "$out/git/Makefile" ||
		die "$tarball is not $name (its Makefile says otherwise)"
	commit_base "$name" "linux-source-$series $version"
	rm -rf "$out/download"
	echo "$name $version" >"$out/.ready"
}

# One commit holding the whole tree, tagged `base`; the date is the tarball's own, so
# that the base's commit id depends on its content only.
commit_base() {
	local name=$1 package=$2 date
	date=$(stat -c %Y "$out/git/Makefile")
	local -a git=(git -C "$out/git" -c user.name="Linux $name" -c user.email=base@localhost
		-c core.autocrlf=false -c gc.auto=0)
	"${git[@]}" init -q
	"${git[@]}" add -A -f .
	GIT_AUTHOR_DATE="@$date +0000" GIT_COMMITTER_DATE="@$date +0000" \
		"${git[@]}" commit -q -m "Linux $name" -m "Debian's $package, unpacked."
	"${git[@]}" tag base
}

if [ ! -f "$out/.ready" ]; then
	apt_setup
	fetch >&2
fi
echo "$out/git"
