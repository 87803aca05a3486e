# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# Sourced by the build scripts that fetch Debian packages outside the system's apt
# configuration (tc/build.sh, kernel/fetch-kernel-trees.sh): the apt-get and apt-cache
# options of an apt of our own in one folder, whose sources.list the script writes. The
# system's lists and /etc/apt are left as they are.

# private_apt DIR: fill the array apt_opts for the apt kept in DIR, and make its folders.
private_apt() {
	local dir=$1
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/sources.list.d"
	# shellcheck disable=SC2034 # used by the script that sources this file
	apt_opts=(
		-o "Dir::Etc::sourcelist=$dir/sources.list"
		-o "Dir::Etc::sourceparts=$dir/sources.list.d"
		-o "Dir::State::Lists=$dir/lists"
		-o "Dir::Cache=$dir/cache"
		-o "Dir::Cache::pkgcache="
		-o "Dir::Cache::srcpkgcache="
		# The build tree may not be writable by apt's unprivileged download user.
		-o "APT::Sandbox::User=root"
	)
}
