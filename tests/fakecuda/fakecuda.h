/* SPDX-License-Identifier: MIT */
/*
 * The fake CUDA driver's own entry points (not CUDA's): what tests and
 * the copy-engine benchmark ask of libfakecuda beyond the driver API, by
 * dlsym on the library $OVRDMA_LIBCUDA names.
 */
#ifndef OVR_FAKECUDA_H
#define OVR_FAKECUDA_H

#include <stdint.h>

struct fakecuda_stats {
	uint64_t syncs; /* cuStreamSynchronize calls */
	uint64_t async_queued; /* async copies queued (pinned host memory) */
	uint64_t async_pageable; /* ... done at once: host memory not pinned */
	uint64_t async_done; /* queued copies performed */
	uint64_t async_failed; /* queued copies failed (injected) */
	uint64_t pending; /* queued copies not performed yet */
	uint64_t sync_copies; /* cuMemcpyHtoD / cuMemcpyDtoH */
	uint64_t host_registered; /* bytes registered now */
	uint64_t host_register_calls;
	uint64_t waits; /* cuStreamWaitEvent calls */
	uint64_t event_records; /* cuEventRecord calls */
	uint64_t event_queries; /* cuEventQuery calls */
	uint64_t event_not_ready; /* ... answered NOT_READY (lazy events) */
	uint64_t event_syncs; /* cuEventSynchronize calls */
	uint64_t sync_memops; /* cuPointerSetAttribute(SYNC_MEMOPS, 1) */
	uint32_t streams, events; /* live */
};

#define FAKECUDA_STATS_SYM "fakecuda_stats"
typedef void (*fakecuda_stats_fn)(struct fakecuda_stats *st);

/*
 * The @nth asynchronous copy queued from now on (1: the next one) fails:
 * it is accepted, never performed, and the synchronisation that reaches
 * it returns CUDA_ERROR_ILLEGAL_ADDRESS. 0: none. The environment
 * variable FAKECUDA_FAIL_ASYNC=N does the same from cuInit on.
 */
#define FAKECUDA_FAIL_SYM "fakecuda_fail_async"
typedef void (*fakecuda_fail_fn)(uint64_t nth);

/*
 * Lazy events: from now on an event whose work is not done answers
 * CUDA_ERROR_NOT_READY to its first @n queries after each record, and
 * runs its stream up to itself at the next (cuEventSynchronize and
 * cuStreamSynchronize at once, as ever). 0: events complete when
 * queried. FAKECUDA_EVENT_POLLS=N does the same from cuInit on.
 */
#define FAKECUDA_EVENT_POLLS_SYM "fakecuda_event_polls"
typedef void (*fakecuda_event_polls_fn)(uint32_t n);

/*
 * The fake GDRCopy (fakegdr.c, in the same library: point
 * OVRDMA_LIBGDRAPI at it). gdr_open succeeds only with FAKEGDR=1 in the
 * environment (the stand-in for a loaded gdrdrv module). Pinning needs
 * a 64 KiB aligned span inside one fake allocation's GPU pages, of an
 * allocation that may be pinned for GPUDirect RDMA (EINVAL otherwise);
 * gdr_map maps the allocation's memfd, so that what lands there is in
 * "device memory". Writes through the mapping are posted: held, in
 * order, until a read through a mapping of the same gdr_open (PCIe: a
 * read does not pass posted writes), a gdr_unmap or gdr_close performs
 * them - a caller that announces data it wrote without reading back
 * announces stale bytes.
 */
struct fakegdr_stats {
	uint64_t opens; /* gdr_open calls that succeeded */
	uint64_t pins; /* gdr_pin_buffer calls that succeeded */
	uint64_t pin_failures; /* ... that failed */
	uint64_t writes, write_bytes; /* gdr_copy_to_mapping */
	uint64_t reads, read_bytes; /* gdr_copy_from_mapping */
	uint64_t flushes; /* reads that performed posted writes first */
	uint64_t posted_bytes; /* written, not performed yet (now) */
	uint32_t pinned, mapped; /* now */
};

#define FAKEGDR_STATS_SYM "fakegdr_stats"
typedef void (*fakegdr_stats_fn)(struct fakegdr_stats *st);

/* The next @n gdr_pin_buffer calls fail (EINVAL), as for memory the GPU
 * driver will not pin. 0: none. */
#define FAKEGDR_PIN_FAIL_SYM "fakegdr_pin_fail"
typedef void (*fakegdr_pin_fail_fn)(uint32_t n);

#endif
