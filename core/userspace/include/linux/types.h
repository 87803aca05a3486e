/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The kernel's <linux/types.h> for the core's userspace hosts: the UAPI types
 * (__u32 ...) from the system's header, the kernel's own names for them, bool,
 * NULL and struct list_head, which the kernel defines here too.
 */
#ifndef CFC_SHIM_LINUX_TYPES_H
#define CFC_SHIM_LINUX_TYPES_H

#include_next <linux/types.h>
#include <stddef.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif
#include <linux/compiler_types.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s8 s8;
typedef __s16 s16;
typedef __s32 s32;
typedef __s64 s64;

struct list_head {
	struct list_head *next, *prev;
};

#endif /* CFC_SHIM_LINUX_TYPES_H */
