#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the Debian packages listed in $1 that are missing; no-op when all are present.
# A line is a package name, optionally followed by `non-free`: such a package comes from
# Debian's non-free component, which is enabled first (once: a sources file of our own,
# from the same archive as the system's main component) if no apt source has it yet.
set -euo pipefail
list=${1:?usage: deps.sh PACKAGE-LIST}
NON_FREE_SOURCES=/etc/apt/sources.list.d/confucius-non-free.sources

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# Is non-free already in an apt source (one-line or deb822 format)? non-free-firmware is another component.
has_non_free() {
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
		grep -Eq '^(deb[[:space:]].*|Components:.*)[[:space:]]non-free([[:space:]]|$)'
}

# The archive that serves the system's main component for this release: URI of the first
# deb822 stanza whose Suites has the codename and Components has main, else of a one-line source.
main_archive() {
	local codename=$1
	awk -v suite="$codename" '
		/^[[:space:]]*$/ { if (uri && s && m) { print uri; exit } uri = ""; s = 0; m = 0; next }
		/^URIs:/ { uri = $2 }
		/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) s = 1 }
		/^Components:/ { for (i = 2; i <= NF; i++) if ($i == "main") m = 1 }
		END { if (uri && s && m) print uri }
	' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1 | grep . && return
	grep -hE "^deb[[:space:]]" /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		sed -E 's/\[[^]]*\]//' | awk -v suite="$codename" '$3 == suite && / main/ { print $2; exit }'
}

enable_non_free() {
	has_non_free && return 0
	local codename uri
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	uri=$(main_archive "$codename" || true)
	if [ -z "$codename" ] || [ -z "$uri" ]; then
		echo "deps: $* need Debian's non-free component, and no apt source for '${codename:-?}' main was found" \
			"to add it from: add 'non-free' to the Components of your Debian source and run make again" >&2
		exit 1
	fi
	echo "deps: enabling Debian's non-free component for $* ($NON_FREE_SOURCES: $uri $codename non-free)"
	printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$uri" "$codename" >"$NON_FREE_SOURCES"
}

missing=() non_free=()
while read -r pkg component _; do
	installed "$pkg" && continue
	missing+=("$pkg")
	[ "${component:-}" = non-free ] && non_free+=("$pkg")
done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list")
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: need root to install packages: ${missing[*]}" >&2
	exit 1
fi
[ ${#non_free[@]} -eq 0 ] || enable_non_free "${non_free[@]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
