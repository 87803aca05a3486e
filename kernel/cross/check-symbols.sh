#!/bin/bash
# SPDX-License-Identifier: MIT
# Every symbol the module leaves undefined must be exported by the kernel, or it will not
# load: check-symbols.sh SRC SRCARCH MODULE NM. The cross trees have no vmlinux (hence no
# Module.symvers, and modpost skips this check), so the exports are read from the source:
# EXPORT_SYMBOL* outside arch/, plus arch/SRCARCH. This is what catches a 64-bit division
# left to the compiler on a 32-bit target: it calls libgcc (__aeabi_uldivmod, __udivdi3),
# which the kernel does not export.
set -euo pipefail
export LC_ALL=C

src=${1:?usage: check-symbols.sh SRC SRCARCH MODULE NM} srcarch=$2 module=$3 nm=$4

exports=$(grep -rhoE --include='*.[chS]' 'EXPORT_SYMBOL(_GPL|_NS|_NS_GPL)?\(\s*\w+' \
		--exclude-dir=arch --exclude-dir=Documentation --exclude-dir=tools --exclude-dir=samples \
		"$src" "$src/arch/$srcarch" | sed -E 's/.*\(\s*//' | sort -u)
undefined=$("$nm" -u "$module" | awk '{ print $2 }' | sort -u)
unresolved=$(comm -23 <(echo "$undefined") <(echo "$exports"))
if [ -n "$unresolved" ]; then
	echo "cross: $(basename "$module") ($srcarch) needs symbols the kernel does not export:" >&2
	echo "$unresolved" | sed 's/^/  /' >&2
	exit 1
fi
echo "cross: $(basename "$module") ($srcarch): all $(echo "$undefined" | wc -l) undefined symbols are kernel exports"
