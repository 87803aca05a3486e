/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#ifndef CFC_SHIM_LINUX_BITS_H
#define CFC_SHIM_LINUX_BITS_H

/* A host may have its own (iproute2's utils.h has BIT): the same value. */
#ifndef BIT
#define BIT(nr)		(1UL << (nr))
#endif
#ifndef BIT_ULL
#define BIT_ULL(nr)	(1ULL << (nr))
#endif

#endif /* CFC_SHIM_LINUX_BITS_H */
