/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#ifndef CFC_SHIM_LINUX_MATH_H
#define CFC_SHIM_LINUX_MATH_H

#include <linux/types.h>

/* A 32-bit value scaled into [0, ep_ro), as the kernel's. */
static inline u32 reciprocal_scale(u32 val, u32 ep_ro)
{
	return (u32)(((u64)val * ep_ro) >> 32);
}

#endif /* CFC_SHIM_LINUX_MATH_H */
