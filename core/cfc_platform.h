/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The one place where the scheduling core meets its host: the Linux kernel,
 * or userspace (tests, fuzzers, benchmarks, the ns-3 queue disc).
 *
 * The core uses fixed-width integer types, offsetof and 64-bit division only;
 * no floating point, no allocation and no other library call.
 */
#ifndef CFC_PLATFORM_H
#define CFC_PLATFORM_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/stddef.h>
#include <linux/math64.h>
#include <linux/bitops.h>

/* 64-bit division is a helper call on 32-bit kernels. */
#define cfc_div64(n, d) div64_u64((n), (d))
/* Position of the highest set bit, 1..32; 0 for 0. */
#define cfc_fls(x) fls(x)
#define CFC_PACKED4 __packed __aligned(4)

#else /* userspace */
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int32_t s32;
typedef int64_t s64;

#define cfc_div64(n, d) ((u64)(n) / (u64)(d))
#define cfc_fls(x) ((x) ? 32 - __builtin_clz(x) : 0)
#define CFC_PACKED4 __attribute__((packed, aligned(4)))
#endif

#define CFC_CONTAINER_OF(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#endif /* CFC_PLATFORM_H */
