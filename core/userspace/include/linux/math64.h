/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#ifndef CFC_SHIM_LINUX_MATH64_H
#define CFC_SHIM_LINUX_MATH64_H

#include <linux/types.h>

/* The kernel spells 64-bit division out, for its 32-bit architectures. */
static inline u64 div64_u64(u64 dividend, u64 divisor)
{
	return dividend / divisor;
}

static inline u64 div_u64(u64 dividend, u32 divisor)
{
	return dividend / divisor;
}

#endif /* CFC_SHIM_LINUX_MATH64_H */
