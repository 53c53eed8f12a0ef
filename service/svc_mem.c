// SPDX-License-Identifier: MIT
/*
 * Object-backed memory regions against truncation (docs/SERVICE.md
 * section 4). The service maps an application's shared object (a memfd,
 * a shm or hugetlbfs file, a regular file) that nothing keeps from
 * shrinking: anyone holding it may truncate it while it is registered,
 * and a copy into or out of a page past the new end of file then raises
 * SIGBUS on the service's thread. The handler here puts an anonymous
 * page over the faulting page of a tracked mapping and lets the copy
 * complete into it - a WRITE is lost to the file, as a pinning NIC's DMA
 * into a page the file no longer holds is; a READ reads zeros. A fault
 * anywhere else is a bug: the previous disposition comes back and the
 * fault repeats under it (a core, by default).
 *
 * The table is changed on the loop thread only, which is also the
 * thread that copies; the handler runs on the faulting thread and reads
 * plain arrays, so it never sees the table half changed.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "svc.h"

struct mem_range {
	uintptr_t start, end;
	size_t pg; /* the object's page size: a huge page on hugetlbfs */
	uint64_t *truncated; /* the region's count */
};

static struct mem_range *ranges; /* sorted by start, disjoint */
static size_t nranges, cap;
static _Atomic uint64_t truncated_pages;
static struct sigaction old_bus;
static bool installed;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	size_t lo = 0, hi = nranges;

	(void)sig;
	(void)uc;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ranges[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < nranges && ranges[lo].start <= a) {
		const struct mem_range *r = &ranges[lo];
		uintptr_t pg = a & ~(uintptr_t)(r->pg - 1);

		if (mmap((void *)pg, r->pg, PROT_READ | PROT_WRITE,
			 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1,
			 0) != MAP_FAILED) {
			atomic_fetch_add(&truncated_pages, 1);
			(*r->truncated)++;
			return;
		}
	}
	/* not ours (or no stand-in): the fault repeats under what was
	 * there before (ours again at the next registration, if the
	 * process survives it) */
	installed = false;
	sigaction(SIGBUS, &old_bus, NULL);
}

static int install(void)
{
	struct sigaction sa;

	if (installed)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &old_bus))
		return -errno;
	installed = true;
	return 0;
}

int svc_mem_track(void *start, size_t len, size_t pg, uint64_t *truncated)
{
	uintptr_t s = (uintptr_t)start;
	size_t i = 0;
	int rc = install();

	if (rc)
		return rc;
	if (nranges == cap) {
		size_t ncap = cap ? cap * 2 : 16;
		struct mem_range *t = malloc(ncap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		/* filled before it is published, the old one freed after */
		struct mem_range *old = ranges;

		if (nranges)
			memcpy(t, old, nranges * sizeof(*t));
		ranges = t;
		free(old);
		cap = ncap;
	}
	while (i < nranges && ranges[i].start < s)
		i++;
	memmove(&ranges[i + 1], &ranges[i], (nranges - i) * sizeof(*ranges));
	ranges[i] = (struct mem_range){ s, s + len, pg, truncated };
	nranges++;
	return 0;
}

void svc_mem_untrack(void *start)
{
	for (size_t i = 0; i < nranges; i++)
		if (ranges[i].start == (uintptr_t)start) {
			memmove(&ranges[i], &ranges[i + 1],
				(nranges - i - 1) * sizeof(*ranges));
			nranges--;
			return;
		}
}

uint64_t svc_mem_truncated_pages(void)
{
	return atomic_load(&truncated_pages);
}
