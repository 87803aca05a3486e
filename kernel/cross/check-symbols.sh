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

# x86 exports its return and indirect-branch thunks, which the compiler calls from the
# module under retpolines and return thunks, with __EXPORT_THUNK (arch/x86/lib/retpoline.S),
# some under names pasted from a prefix and each register of asm/GEN-for-each-reg.h.
EXPORT_MACROS='(EXPORT_SYMBOL(_GPL|_NS|_NS_GPL)?|__EXPORT_THUNK)'
exported_names() {
	grep -rhoE --include='*.[chS]' "$EXPORT_MACROS"'\(\s*\w+' \
		--exclude-dir=arch --exclude-dir=Documentation --exclude-dir=tools --exclude-dir=samples \
		"$src" "$src/arch/$srcarch" | sed -E 's/.*\(\s*//'
	local regs=$src/arch/$srcarch/include/asm/GEN-for-each-reg.h prefix reg
	[ -f "$regs" ] || return 0
	grep -rhoE "$EXPORT_MACROS"'\(\s*\w+\s*##\s*reg\)' "$src/arch/$srcarch" |
		sed -E 's/.*\(\s*(\w+)\s*##.*/\1/' | sort -u | while read -r prefix; do
			sed -nE 's/^GEN\((\w+)\)$/\1/p' "$regs" | while read -r reg; do echo "$prefix$reg"; done
		done
}
exports=$(exported_names | sort -u)
undefined=$("$nm" -u "$module" | awk '{ print $2 }' | sort -u)
unresolved=$(comm -23 <(echo "$undefined") <(echo "$exports"))
if [ -n "$unresolved" ]; then
	echo "cross: $(basename "$module") ($srcarch) needs symbols the kernel does not export:" >&2
	echo "$unresolved" | sed 's/^/  /' >&2
	exit 1
fi
echo "cross: $(basename "$module") ($srcarch): all $(echo "$undefined" | wc -l) undefined symbols are kernel exports"
