/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#ifndef CFC_SHIM_LINUX_MATH_H
#define CFC_SHIM_LINUX_MATH_H

#include <linux/types.h>

/* A 32-bit value scaled into [0, ep_ro), as the kernel's. */
static inline u32 reciprocal_scale(u32 val, u32 ep_ro)
{
	return (u32)(((u64)val * ep_ro) >> 32);
}

/* The integer square root, rounded down, as the kernel's: one result bit per step. */
static inline unsigned long int_sqrt(unsigned long x)
{
	unsigned long root = 0, bit = 1ul << (sizeof(x) * 8 - 2);

	while (bit > x)
		bit >>= 2;
	while (bit) {
		if (x >= root + bit) {
			x -= root + bit;
			root = (root >> 1) + bit;
		} else {
			root >>= 1;
		}
		bit >>= 2;
	}
	return root;
}

#endif /* CFC_SHIM_LINUX_MATH_H */
