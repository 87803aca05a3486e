/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#ifndef CFC_SHIM_LINUX_BITOPS_H
#define CFC_SHIM_LINUX_BITOPS_H

/* Position of the most significant set bit, 1..32; 0 for 0. */
static inline int fls(unsigned int x)
{
	return x ? 32 - __builtin_clz(x) : 0;
}

#endif /* CFC_SHIM_LINUX_BITOPS_H */
