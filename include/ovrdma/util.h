/* SPDX-License-Identifier: MIT */
/* Small helpers every room uses, written once. */
#ifndef OVRDMA_UTIL_H
#define OVRDMA_UTIL_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds (vDSO: no syscall). */
static inline uint64_t ovr_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The smallest power of two >= @v (1 for 0); @v at most 2^63. */
static inline uint64_t ovr_pow2_at_least(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

#endif /* OVRDMA_UTIL_H */
