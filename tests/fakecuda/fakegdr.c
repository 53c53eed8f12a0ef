// SPDX-License-Identifier: MIT
/*
 * A GDRCopy (libgdrapi) stand-in, in libfakecuda beside the fake driver
 * whose allocations it maps: gdr/ loads it through OVRDMA_LIBGDRAPI. It
 * implements the calls gdr/gdrcopy.h declares, with the rules a caller
 * could get wrong (fakecuda.h says which):
 *
 *  - gdr_open fails unless FAKEGDR=1 (no gdrdrv module otherwise);
 *  - gdr_pin_buffer wants a 64 KiB aligned address and a span inside
 *    one fake allocation's GPU pages, of memory that may be pinned for
 *    GPUDirect RDMA; fakegdr_pin_fail(N) makes the next N fail;
 *  - gdr_map maps the allocation's memfd for real (MAP_SHARED), so
 *    bytes written through it are the "device memory" cuMemcpyDtoH and
 *    queued copies see - once performed;
 *  - gdr_copy_to_mapping posts its writes: they are held, in order,
 *    and performed when a gdr_copy_from_mapping through any handle of
 *    the same gdr_open reads (a PCIe read does not pass posted writes),
 *    or at gdr_unmap / gdr_close. A caller that announces BAR-written
 *    data without a read-back announces stale bytes;
 *  - gdr_unpin_buffer of a handle still mapped fails (EBUSY): unmap
 *    first, as gdrapi.h asks.
 *
 * One mutex guards the handle table; a handle is an index + 1.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fakecuda.h"
#include "fakecuda_int.h"
#include "gdrcopy.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_MH 256

struct posted {
	uint8_t *dst;
	size_t len;
	uint8_t *data;
};

struct gdrc_st {
	struct posted *q; /* writes not performed yet, oldest first */
	size_t n, cap;
};

struct fmh {
	struct gdrc_st *g; /* NULL: free */
	uint64_t va, size; /* the pinned span */
	struct fake_span sp;
	uint8_t *map; /* gdr_map's, NULL: not mapped */
	size_t map_len;
};

static pthread_mutex_t gmu = PTHREAD_MUTEX_INITIALIZER;
static struct fmh mhs[MAX_MH];
static struct fakegdr_stats gst;
static uint32_t pin_fail;

/* Perform @g's posted writes (must hold gmu). */
static void drain(struct gdrc_st *g)
{
	for (size_t i = 0; i < g->n; i++) {
		memcpy(g->q[i].dst, g->q[i].data, g->q[i].len);
		gst.posted_bytes -= g->q[i].len;
		free(g->q[i].data);
	}
	g->n = 0;
}

/* The handle's entry, or NULL (must hold gmu). */
static struct fmh *mh_get(gdrc_mh_t h)
{
	if (!h.h || h.h > MAX_MH || !mhs[h.h - 1].g)
		return NULL;
	return &mhs[h.h - 1];
}

/* Is [p, p + len) inside @m's mapping? */
static bool in_map(const struct fmh *m, const void *p, size_t len)
{
	const uint8_t *b = p;

	return m->map && b >= m->map && (size_t)(b - m->map) <= m->map_len &&
	       len <= m->map_len - (size_t)(b - m->map);
}

#define FAKEGDR(ret, name, args) \
	EXPORT ret name args;    \
	EXPORT ret name args

FAKEGDR(gdrc_t, gdr_open, (void))
{
	const char *drv = getenv("FAKEGDR");
	struct gdrc_st *g;

	if (!drv || strcmp(drv, "1"))
		return NULL; /* no /dev/gdrdrv */
	g = calloc(1, sizeof(*g));
	if (g) {
		pthread_mutex_lock(&gmu);
		gst.opens++;
		pthread_mutex_unlock(&gmu);
	}
	return g;
}

FAKEGDR(int, gdr_pin_buffer,
	(gdrc_t g, unsigned long addr, size_t size, uint64_t p2p_token,
	 uint32_t va_space, gdrc_mh_t *handle))
{
	struct fake_span sp;
	int rc = 0;

	(void)p2p_token;
	(void)va_space;
	if (!g || !handle)
		return EINVAL;
	pthread_mutex_lock(&gmu);
	/* the real gdr_pin_buffer aligns for itself and gdr_map then
	 * fails on an unaligned span: the fake refuses at once */
	if (!size || addr & (FAKE_GPU_PAGE - 1) ||
	    fakecuda_span_get(addr, size, &sp)) {
		rc = EINVAL;
	} else if (!sp.rdma || pin_fail) {
		if (pin_fail)
			pin_fail--;
		fakecuda_span_put(sp.ref);
		rc = EINVAL;
	} else {
		rc = ENOMEM;
		for (unsigned int i = 0; i < MAX_MH; i++)
			if (!mhs[i].g) {
				mhs[i] = (struct fmh){ .g = g,
						       .va = addr,
						       .size = size,
						       .sp = sp };
				handle->h = i + 1;
				rc = 0;
				break;
			}
		if (rc)
			fakecuda_span_put(sp.ref);
	}
	if (rc) {
		gst.pin_failures++;
	} else {
		gst.pins++;
		gst.pinned++;
	}
	pthread_mutex_unlock(&gmu);
	return rc;
}

FAKEGDR(int, gdr_unpin_buffer, (gdrc_t g, gdrc_mh_t handle))
{
	struct fmh *m;
	int rc = EINVAL;

	pthread_mutex_lock(&gmu);
	m = mh_get(handle);
	if (m && m->g == g) {
		if (m->map) {
			rc = EBUSY; /* gdr_unmap first */
		} else {
			fakecuda_span_put(m->sp.ref);
			memset(m, 0, sizeof(*m));
			gst.pinned--;
			rc = 0;
		}
	}
	pthread_mutex_unlock(&gmu);
	return rc;
}

static int get_info(gdrc_t g, gdrc_mh_t handle, gdrc_info_t *info)
{
	struct fmh *m;
	int rc = EINVAL;

	pthread_mutex_lock(&gmu);
	m = mh_get(handle);
	if (m && m->g == g && info) {
		memset(info, 0, sizeof(*info));
		info->va = m->va;
		info->mapped_size = m->size;
		info->page_size = (uint32_t)FAKE_GPU_PAGE;
		info->mapped = m->map != NULL;
		info->wc_mapping = 1;
		info->mapping_type = m->map ? 1 : 0; /* WC */
		rc = 0;
	}
	pthread_mutex_unlock(&gmu);
	return rc;
}

FAKEGDR(int, gdr_get_info_v2, (gdrc_t g, gdrc_mh_t handle, gdrc_info_t *info))
{
	return get_info(g, handle, info);
}

/* the 2.0-2.2 name (gdr/ takes it where _v2 is missing) */
FAKEGDR(int, gdr_get_info, (gdrc_t g, gdrc_mh_t handle, gdrc_info_t *info))
{
	return get_info(g, handle, info);
}

FAKEGDR(int, gdr_map, (gdrc_t g, gdrc_mh_t handle, void **va, size_t size))
{
	struct fmh *m;
	void *p;
	int rc = EINVAL;

	pthread_mutex_lock(&gmu);
	m = mh_get(handle);
	if (m && m->g == g && va && size && size <= m->size) {
		if (m->map) {
			rc = EAGAIN; /* mapped already */
		} else {
			p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
				 m->sp.fd, (off_t)m->sp.fd_off);
			if (p == MAP_FAILED) {
				rc = errno;
			} else {
				m->map = p;
				m->map_len = size;
				*va = p;
				gst.mapped++;
				rc = 0;
			}
		}
	}
	pthread_mutex_unlock(&gmu);
	return rc;
}

FAKEGDR(int, gdr_unmap, (gdrc_t g, gdrc_mh_t handle, void *va, size_t size))
{
	struct fmh *m;
	int rc = EINVAL;

	pthread_mutex_lock(&gmu);
	m = mh_get(handle);
	if (m && m->g == g && m->map && va == m->map && size == m->map_len) {
		drain(g); /* on the wire: they land */
		munmap(m->map, m->map_len);
		m->map = NULL;
		gst.mapped--;
		rc = 0;
	}
	pthread_mutex_unlock(&gmu);
	return rc;
}

/* Queue a posted write of @size bytes of @src to @dst (gmu held): it
 * lands at the next read through the mapping, unmap or close. */
static int post(struct gdrc_st *g, void *dst, const void *src, size_t size)
{
	struct posted *q;

	if (g->n == g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 16;

		q = realloc(g->q, nc * sizeof(*q));
		if (!q)
			return ENOMEM;
		g->q = q;
		g->cap = nc;
	}
	q = &g->q[g->n];
	q->data = malloc(size);
	if (!q->data)
		return ENOMEM;
	memcpy(q->data, src, size);
	q->dst = dst;
	q->len = size;
	g->n++;
	gst.writes++;
	gst.write_bytes += size;
	gst.posted_bytes += size;
	return 0;
}

FAKEGDR(int, gdr_copy_to_mapping,
	(gdrc_mh_t handle, void *map_d_ptr, const void *h_ptr, size_t size))
{
	struct fmh *m;
	int rc = EINVAL;

	if (!size)
		return 0;
	pthread_mutex_lock(&gmu);
	m = mh_get(handle);
	if (m && in_map(m, map_d_ptr, size) && h_ptr)
		rc = post(m->g, map_d_ptr, h_ptr, size);
	pthread_mutex_unlock(&gmu);
	return rc;
}

FAKEGDR(int, gdr_copy_from_mapping,
	(gdrc_mh_t handle, void *h_ptr, const void *map_d_ptr, size_t size))
{
	struct fmh *m;
	int rc = EINVAL;

	if (!size)
		return 0;
	pthread_mutex_lock(&gmu);
	m = mh_get(handle);
	if (m && in_map(m, map_d_ptr, size) && h_ptr) {
		if (m->g->n) {
			drain(m->g);
			gst.flushes++;
		}
		memcpy(h_ptr, map_d_ptr, size);
		gst.reads++;
		gst.read_bytes += size;
		rc = 0;
	}
	pthread_mutex_unlock(&gmu);
	return rc;
}

/* Unpins what is left, as the real one does. */
FAKEGDR(int, gdr_close, (gdrc_t g))
{
	if (!g)
		return EINVAL;
	pthread_mutex_lock(&gmu);
	drain(g);
	for (unsigned int i = 0; i < MAX_MH; i++) {
		struct fmh *m = &mhs[i];

		if (m->g != g)
			continue;
		if (m->map) {
			munmap(m->map, m->map_len);
			gst.mapped--;
		}
		fakecuda_span_put(m->sp.ref);
		memset(m, 0, sizeof(*m));
		gst.pinned--;
	}
	pthread_mutex_unlock(&gmu);
	free(g->q);
	free(g);
	return 0;
}

/* ---- the fake's own (fakecuda.h) ----------------------------------------- */

EXPORT void fakegdr_stats(struct fakegdr_stats *st);
EXPORT void fakegdr_stats(struct fakegdr_stats *st)
{
	pthread_mutex_lock(&gmu);
	*st = gst;
	pthread_mutex_unlock(&gmu);
}

EXPORT void fakegdr_pin_fail(uint32_t n);
EXPORT void fakegdr_pin_fail(uint32_t n)
{
	pthread_mutex_lock(&gmu);
	pin_fail = n;
	pthread_mutex_unlock(&gmu);
}
