/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The attributes the kernel's build gives every file (it forces
 * <linux/compiler_types.h> on each); here <linux/types.h> brings them.
 */
#ifndef CFC_SHIM_LINUX_COMPILER_TYPES_H
#define CFC_SHIM_LINUX_COMPILER_TYPES_H

#define __packed	__attribute__((__packed__))
#define __aligned(x)	__attribute__((__aligned__(x)))

#endif /* CFC_SHIM_LINUX_COMPILER_TYPES_H */
