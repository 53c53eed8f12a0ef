/* SPDX-License-Identifier: MIT */
/*
 * Between the fake driver (fakecuda.c) and the fake GDRCopy (fakegdr.c)
 * in the same library: what lies behind a device address.
 */
#ifndef OVR_FAKECUDA_INT_H
#define OVR_FAKECUDA_INT_H

#include <stdbool.h>
#include <stdint.h>

#define FAKE_GPU_PAGE (1ull << 16) /* GDRCopy's GPU page */

struct fake_span {
	int fd; /* the allocation's memfd (valid while @ref is held) */
	uint64_t fd_off; /* where the span starts in it */
	bool rdma; /* the allocation may be pinned for GPUDirect RDMA */
	void *ref; /* a reference on the allocation: fakecuda_span_put */
};

/*
 * [addr, addr + len) starts inside one accessible mapping and ends
 * within the GPU pages of its allocation: 0 and *@sp (holding the
 * allocation until fakecuda_span_put), or -EINVAL.
 */
int fakecuda_span_get(uint64_t addr, uint64_t len, struct fake_span *sp);
void fakecuda_span_put(void *ref);

#endif
