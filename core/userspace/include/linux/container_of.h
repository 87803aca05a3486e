/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#ifndef CFC_SHIM_LINUX_CONTAINER_OF_H
#define CFC_SHIM_LINUX_CONTAINER_OF_H

#include <stddef.h>

/* The structure a member belongs to; C++ (the ns-3 host) takes it too. */
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#endif /* CFC_SHIM_LINUX_CONTAINER_OF_H */
