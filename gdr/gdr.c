// SPDX-License-Identifier: MIT
/*
 * gdr/: export, import and copies of CUDA device memory through a
 * dlopened libcuda (include/ovrdma/gdr.h, docs/GPU.md).
 *
 * Imports: an IPC handle can be opened once per process (the driver
 * refuses or aliases a second open), so IPC imports are shared: a list
 * of mappings, each with its handle and a reference count, searched
 * linearly at import (O(imports), on the control path only). FD imports
 * are one mapping each: reserve a device address range, map the
 * imported allocation handle into it, grant the device read/write.
 *
 * Copies (the copy engine, docs/GPU.md §1.1): per device two non-blocking
 * streams, one per direction (GPUs copy each way on its own engine), and
 * an event each. A copy whose host side lies in memory pinned through
 * ovr_gdr_host_register is queued on its direction's stream; anything
 * else is queued too and waited for at once (ordered after what is
 * queued), and without the driver's async calls it is a plain cuMemcpy.
 * Copies in one direction keep their order (one stream); a copy to or
 * from an allocation that has copies of the other direction queued since
 * the last fence waits for them first (event + cuStreamWaitEvent), so a
 * READ of bytes a WRITE just placed sees them. ovr_gdr_fence waits for
 * every stream with work and reports any failure since the last fence.
 *
 * Batches (the pipelined copy engine): ovr_gdr_batch_close records an
 * event per stream that got copies since the last close, in the slot's
 * own events (bev[dir][slot], created at the slot's first use), and
 * ovr_gdr_batch_poll queries them (cuEventQuery; cuEventSynchronize when
 * asked to wait). Copies are numbered by epoch: ep advances at every
 * close and fence; everything up to done is known to be finished, which
 * is what the cross-direction waits and ovr_gdr_release look at. A
 * failure that cannot be placed in a batch (a synchronous copy's or a
 * fence's stream synchronisation reporting it) fails every batch with
 * copies up to that epoch (fail_upto): conservative, never a success for
 * a failed copy.
 *
 * Channels (one per dataplane core, docs/GPU.md §1.1): ovr_gdr_chan_open
 * gives another struct ovr_gdr over the same driver, imports and pinned
 * host ranges, with copy state of its own - streams, events, batches,
 * epochs, statistics - so that several threads copy at once, each
 * through its channel, with nothing shared written on the way: an
 * import keeps its epochs per channel (qep, sep). Imports, pinned
 * ranges and the BAR's library belong to the first struct (the base);
 * channels open, close, import and release on one thread at a time
 * (the caller's: ovrdmad's control path with the dataplane stopped).
 * What two channels copy of one allocation is not ordered between
 * them; the copies of one channel are, as above.
 *
 * BAR copies (GDRCopy, docs/GPU.md §1.2): libgdrapi is dlopened by
 * ovr_gdr_bar_open. An allocation is pinned and mapped (gdr_pin_buffer
 * of the 64 KiB GPU pages that cover it, gdr_map) at its first BAR copy
 * and unmapped at its release; one that cannot be is streams-only for
 * good. A BAR copy is a CPU copy through the mapping, done when it
 * returns: a write is followed by a 4-byte read through the BAR, which
 * PCIe does not let pass the posted writes before it, so the bytes are
 * in GPU memory when the call returns. A BAR copy is refused (-EBUSY)
 * while stream copies of its allocation are not known to be done
 * (m->sep > done): it would overtake them. A stream copy queued after a
 * BAR copy needs nothing: the BAR copy is complete by then.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/gdr.h>

#include "cudadrv.h"
#include "gdrcopy.h"

struct gdr_fns {
#define GDR_FN_PTR(sym, name, args) gdr_CUresult(*name) args;
	GDR_CUDA_FUNCS(GDR_FN_PTR)
	GDR_CUDA_OPT_FUNCS(GDR_FN_PTR)
#undef GDR_FN_PTR
};

struct gdr_afns {
#define GDR_FN_PTR(sym, name, args) gdr_CUresult(*name) args;
	GDR_CUDA_ASYNC_FUNCS(GDR_FN_PTR)
#undef GDR_FN_PTR
};

enum { D_H2D = 0, D_D2H = 1 };

/* A device's copy streams: [D_H2D], [D_D2H]. */
struct gdr_dev_streams {
	gdr_CUstream st[2];
	gdr_CUevent ev[2];
	bool busy[2]; /* work queued since the last fence */
	bool open[2]; /* work queued since the last batch close */
	bool ready; /* created */
	bool broken; /* creation failed: synchronous copies only */
	/* the batches' events, per slot; NULL until first used */
	gdr_CUevent bev[2][OVR_GDR_MAX_BATCH];
};

/* A closed batch: the events still to be seen done, per direction a
 * bit per device; the epochs of its copies. */
struct gdr_batch {
	uint64_t devs[2];
	uint64_t first, last; /* epochs [first, last] */
	uint32_t ncopies; /* queued copies in it, not yet known done */
	int err;
};

struct gdr_hostreg {
	uint8_t *p;
	size_t len;
};

/* GDRCopy, once ovr_gdr_bar_open succeeded. */
struct gdr_bar {
	void *lib;
	gdrc_t h; /* gdr_open's */
	struct {
#define GDRC_FN_PTR(sym, name, ret, args) ret(*name) args;
		GDRC_FUNCS(GDRC_FN_PTR)
#undef GDRC_FN_PTR
	} f;
	gdrc_get_info_fn get_info;
	uint32_t max[2]; /* message bytes, [D_H2D], [D_D2H] */
	void (*note)(void *ctx, const char *msg);
	void *note_ctx;
};

struct ovr_gdr {
	struct ovr_gdr *base; /* itself, or the base of a channel */
	unsigned int chan; /* index in base->chans (the base: 0) */
	struct ovr_gdr *chans[OVR_GDR_MAX_CHAN]; /* base: open channels */
	pthread_mutex_t bar_mu; /* base: a first BAR mapping */
	void *lib;
	struct gdr_fns f;
	struct gdr_afns a;
	bool async; /* the driver has every GDR_CUDA_ASYNC_FUNCS call */
	int ndev;
	uint64_t ep; /* the epoch copies queued now get (from 1) */
	uint64_t done; /* every copy of an epoch up to this one is done */
	uint64_t open_first; /* epoch of the first copy queued since the
			      * last batch close; 0: none */
	uint64_t fail_upto; /* batches with copies up to it fail */
	int async_err; /* a queued copy failed since the last fence */
	uint32_t pending; /* queued copies not known to be done */
	uint32_t open_pending; /* ... of them since the last batch close */
	struct gdr_batch batch[OVR_GDR_MAX_BATCH];
	/* epochs of batches seen done before an older one: done advances
	 * over them when the gap closes (one caller polls in order; two
	 * sharing this struct need not) */
	struct {
		uint64_t first, last;
	} later[OVR_GDR_MAX_BATCH];
	uint32_t nlater;
	struct gdr_dev_streams *streams; /* [ndev], created on first use */
	struct gdr_hostreg *hr; /* pinned host ranges */
	struct gdr_bar *bar; /* GDRCopy; NULL: no BAR copies */
	uint32_t nhr, hr_cap, hr_last;
	struct ovr_gdr_stats st;
	uint32_t nimports, nrefs;
	struct ovr_gdr_mem *mems; /* every live import */
	/* primary contexts retained by imports, per device ordinal */
	gdr_CUcontext ctx[OVR_GDR_MAX_DEV];
	uint32_t ctx_users[OVR_GDR_MAX_DEV];
};

struct ovr_gdr_mem {
	struct ovr_gdr *g;
	struct ovr_gdr_mem *next;
	gdr_CUdeviceptr dptr; /* the allocation, in this process */
	uint64_t size;
	gdr_CUmemGenericAllocationHandle h; /* KIND_FD */
	uint32_t kind;
	uint32_t refs;
	int device;
	uint8_t ipc[OVR_GDR_IPC_LEN]; /* KIND_IPC: what was opened */
	/* per channel: its g->ep when copies of each direction were last
	 * queued and not yet ordered before the other direction's stream
	 * (0: none) */
	uint64_t qep[OVR_GDR_MAX_CHAN][2];
	/* per channel: its g->ep of the newest stream copy of either
	 * direction that is not known to be done (0: none): BAR copies
	 * wait until its g->done reaches it */
	uint64_t sep[OVR_GDR_MAX_CHAN];
	/* the BAR mapping (GDRCopy), made at the first BAR copy */
	int bar_state; /* 0: not tried; 1: mapped; -1: cannot be */
	gdrc_mh_t mh;
	uint8_t *bar; /* gdr_map's pointer: [bar, bar + bar_len) */
	size_t bar_len;
	uint64_t bar_at; /* where dptr is in it */
};

/* Per thread: probe and export may run on several application threads. */
static _Thread_local char last_err[160];

static int cu_fail(struct ovr_gdr *g, const char *call, gdr_CUresult rc)
{
	const char *s = NULL;

	if (g->f.cuGetErrorString(rc, &s) != GDR_CUDA_SUCCESS || !s)
		s = "unknown error";
	snprintf(last_err, sizeof(last_err), "%s: %s (%d)", call, s, rc);
	switch (rc) {
	case GDR_CUDA_ERROR_INVALID_VALUE:
	case GDR_CUDA_ERROR_INVALID_HANDLE:
	case GDR_CUDA_ERROR_NOT_FOUND:
		return -EINVAL;
	case GDR_CUDA_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case GDR_CUDA_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case GDR_CUDA_ERROR_NO_DEVICE:
	case GDR_CUDA_ERROR_INVALID_DEVICE:
		return -ENODEV;
	default:
		return -EIO;
	}
}

static void say(char *why, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (!why || !n)
		return;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
}

int ovr_gdr_open(unsigned int flags, struct ovr_gdr **out, char *why,
		 size_t why_len)
{
	const char *path = getenv(OVR_GDR_ENV);
	struct ovr_gdr *g;
	const char *s = NULL;
	gdr_CUresult rc;
	int mode = RTLD_NOW | RTLD_LOCAL;

	if (!path || !*path)
		path = OVR_GDR_LIBCUDA;
	if (flags & OVR_GDR_NOLOAD)
		mode |= RTLD_NOLOAD;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->lib = dlopen(path, mode);
	if (!g->lib) {
		if (flags & OVR_GDR_NOLOAD)
			say(why, why_len, "%s is not loaded in this process",
			    path);
		else
			say(why, why_len, "no CUDA driver: %s", dlerror());
		free(g);
		return -EOPNOTSUPP;
	}
#define GDR_FN_SYM(sym, name, args)                                       \
	*(void **)&g->f.name = dlsym(g->lib, sym);                        \
	if (!g->f.name) {                                                 \
		say(why, why_len, "%s has no %s (driver too old?)", path, \
		    sym);                                                 \
		goto err_sym;                                             \
	}
	GDR_CUDA_FUNCS(GDR_FN_SYM)
#undef GDR_FN_SYM
#define GDR_FN_OPT(sym, name, args) *(void **)&g->f.name = dlsym(g->lib, sym);
	GDR_CUDA_OPT_FUNCS(GDR_FN_OPT)
#undef GDR_FN_OPT
	/* the copy engine's calls are optional: without one of them,
	 * copies stay synchronous */
	g->async = true;
#define GDR_AFN_SYM(sym, name, args)               \
	*(void **)&g->a.name = dlsym(g->lib, sym); \
	if (!g->a.name)                            \
		g->async = false;
	GDR_CUDA_ASYNC_FUNCS(GDR_AFN_SYM)
#undef GDR_AFN_SYM
	g->ep = 1;
	rc = g->f.cuInit(0);
	if (rc == GDR_CUDA_SUCCESS)
		rc = g->f.cuDeviceGetCount(&g->ndev);
	if (rc != GDR_CUDA_SUCCESS || g->ndev <= 0) {
		if (rc == GDR_CUDA_SUCCESS ||
		    g->f.cuGetErrorString(rc, &s) != GDR_CUDA_SUCCESS || !s)
			s = "no device";
		say(why, why_len, "%s: cuInit: %s", path, s);
		dlclose(g->lib);
		free(g);
		return -ENODEV;
	}
	g->streams = calloc((size_t)g->ndev, sizeof(*g->streams));
	if (!g->streams) {
		dlclose(g->lib);
		free(g);
		return -ENOMEM;
	}
	g->st.async = g->async;
	g->base = g;
	g->chans[0] = g;
	pthread_mutex_init(&g->bar_mu, NULL);
	*out = g;
	return 0;

err_sym:
	dlclose(g->lib);
	free(g);
	return -EOPNOTSUPP;
}

static int use_device(struct ovr_gdr *g, int dev);
static int fence(struct ovr_gdr *g, bool caller);
static void bar_unmap(struct ovr_gdr_mem *m);
static void bar_close(struct gdr_bar *b);

void ovr_gdr_close(struct ovr_gdr *g)
{
	bool chan;

	if (!g)
		return;
	chan = g->base != g;
	if (!chan)
		for (unsigned int i = 1; i < OVR_GDR_MAX_CHAN; i++)
			ovr_gdr_close(g->chans[i]);
	ovr_gdr_fence(g);
	while (!chan && g->nhr)
		ovr_gdr_host_unregister(g, g->hr[0].p);
	for (int i = 0; i < g->ndev; i++) {
		struct gdr_dev_streams *d = &g->streams[i];

		if (!d->ready || use_device(g, i))
			continue;
		for (int k = 0; k < 2; k++) {
			for (unsigned int b = 0; b < OVR_GDR_MAX_BATCH; b++)
				if (d->bev[k][b])
					g->a.cuEventDestroy(d->bev[k][b]);
			g->a.cuEventDestroy(d->ev[k]);
			g->a.cuStreamDestroy(d->st[k]);
		}
	}
	for (int i = 0; i < (int)OVR_GDR_MAX_DEV && i < g->ndev; i++)
		if (g->ctx[i])
			g->f.cuDevicePrimaryCtxRelease(i);
	free(g->streams);
	if (chan) {
		/* its epochs mean nothing to a later channel of its index */
		for (struct ovr_gdr_mem *m = g->base->mems; m; m = m->next) {
			m->qep[g->chan][0] = m->qep[g->chan][1] = 0;
			m->sep[g->chan] = 0;
		}
		g->base->chans[g->chan] = NULL;
		free(g);
		return;
	}
	bar_close(g->bar);
	pthread_mutex_destroy(&g->bar_mu);
	dlclose(g->lib);
	free(g->hr);
	free(g);
}

int ovr_gdr_chan_open(struct ovr_gdr *base, struct ovr_gdr **out)
{
	struct ovr_gdr *g;
	unsigned int i;

	if (base->base != base)
		return -EINVAL;
	for (i = 1; i < OVR_GDR_MAX_CHAN && base->chans[i]; i++)
		;
	if (i == OVR_GDR_MAX_CHAN)
		return -ENOSPC;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->streams = calloc((size_t)base->ndev, sizeof(*g->streams));
	if (!g->streams) {
		free(g);
		return -ENOMEM;
	}
	g->base = base;
	g->chan = i;
	g->lib = base->lib;
	g->f = base->f;
	g->a = base->a;
	g->async = base->async;
	g->ndev = base->ndev;
	g->ep = 1;
	g->st.async = g->async;
	base->chans[i] = g;
	*out = g;
	return 0;
}

int ovr_gdr_probe(struct ovr_gdr *g, uint64_t addr, uint64_t len,
		  uint64_t *base, uint64_t *size, int *device)
{
	unsigned int mt = 0;
	gdr_CUdeviceptr b = 0;
	size_t sz = 0;
	int dev = -1;
	gdr_CUresult rc;

	if (!len || addr + len < addr)
		return -EINVAL;
	rc = g->f.cuPointerGetAttribute(
		&mt, GDR_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, addr);
	/* the driver answers INVALID_VALUE for memory it does not know */
	if (rc != GDR_CUDA_SUCCESS || mt != GDR_CU_MEMORYTYPE_DEVICE)
		return 0;
	rc = g->f.cuPointerGetAttribute(
		&b, GDR_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, addr);
	if (rc == GDR_CUDA_SUCCESS)
		rc = g->f.cuPointerGetAttribute(
			&sz, GDR_CU_POINTER_ATTRIBUTE_RANGE_SIZE, addr);
	if (rc == GDR_CUDA_SUCCESS)
		rc = g->f.cuPointerGetAttribute(
			&dev, GDR_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, addr);
	if (rc != GDR_CUDA_SUCCESS)
		return cu_fail(g, "cuPointerGetAttribute", rc);
	if (addr < b || addr - b > sz || len > sz - (addr - b)) {
		snprintf(last_err, sizeof(last_err),
			 "range crosses the end of its GPU allocation");
		return -EINVAL;
	}
	if (base)
		*base = b;
	if (size)
		*size = sz;
	if (device)
		*device = dev;
	return 1;
}

/* Device @dev's UUID into @uuid; all zero when the driver cannot say. */
static int device_uuid(struct ovr_gdr *g, int dev, uint8_t *uuid)
{
	gdr_CUdevice d;
	gdr_CUuuid u;
	gdr_CUresult rc;

	memset(uuid, 0, OVR_GDR_UUID_LEN);
	if (!g->f.cuDeviceGetUuid)
		return 0;
	rc = g->f.cuDeviceGet(&d, dev);
	if (rc == GDR_CUDA_SUCCESS)
		rc = g->f.cuDeviceGetUuid(&u, d);
	if (rc != GDR_CUDA_SUCCESS)
		return cu_fail(g, "cuDeviceGetUuid", rc);
	memcpy(uuid, u.bytes, OVR_GDR_UUID_LEN);
	return 0;
}

void ovr_gdr_uuid_str(const uint8_t *uuid, char *buf, size_t len)
{
	static const int dash[] = { 4, 6, 8, 10 };
	size_t at = 0;

	at += (size_t)snprintf(buf, len, "GPU-");
	for (int i = 0, k = 0; i < (int)OVR_GDR_UUID_LEN && at < len; i++) {
		if (k < 4 && i == dash[k]) {
			at += (size_t)snprintf(buf + at, len - at, "-");
			k++;
		}
		if (at < len)
			at += (size_t)snprintf(buf + at, len - at, "%02x",
					       uuid[i]);
	}
}

int ovr_gdr_export(struct ovr_gdr *g, uint64_t addr, uint64_t len,
		   struct ovr_gdr_export *ex)
{
	gdr_CUmemGenericAllocationHandle h;
	gdr_CUipcMemHandle ipc;
	gdr_CUresult rc;
	int fd = -1;
	int err;

	memset(ex, 0, sizeof(*ex));
	ex->fd = -1;
	err = ovr_gdr_probe(g, addr, len, &ex->base, &ex->size, &ex->device);
	if (err <= 0)
		return err ? err : -EINVAL;
	err = device_uuid(g, ex->device, ex->uuid);
	if (err)
		return err;
	/* a cuMem allocation has an allocation handle; cudaMalloc's has not */
	rc = g->f.cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)addr);
	if (rc == GDR_CUDA_SUCCESS) {
		rc = g->f.cuMemExportToShareableHandle(
			&fd, h, GDR_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
			0);
		/* the retained reference only served the export */
		g->f.cuMemRelease(h);
		if (rc != GDR_CUDA_SUCCESS) {
			cu_fail(g, "cuMemExportToShareableHandle", rc);
			/* created without POSIX_FD among its handle types */
			return -EOPNOTSUPP;
		}
		ex->kind = OVR_GDR_KIND_FD;
		ex->fd = fd;
		return 0;
	}
	rc = g->f.cuIpcGetMemHandle(&ipc, ex->base);
	if (rc != GDR_CUDA_SUCCESS)
		return cu_fail(g, "cuIpcGetMemHandle", rc);
	ex->kind = OVR_GDR_KIND_IPC;
	memcpy(ex->ipc, ipc.reserved, sizeof(ex->ipc));
	return 0;
}

/* Make device @dev's primary context current, retaining it on first use. */
static int use_device(struct ovr_gdr *g, int dev)
{
	gdr_CUdevice d;
	gdr_CUresult rc;

	if (dev < 0 || dev >= g->ndev || dev >= (int)OVR_GDR_MAX_DEV) {
		snprintf(last_err, sizeof(last_err), "no CUDA device %d", dev);
		return -ENODEV;
	}
	if (!g->ctx[dev]) {
		rc = g->f.cuDeviceGet(&d, dev);
		if (rc == GDR_CUDA_SUCCESS)
			rc = g->f.cuDevicePrimaryCtxRetain(&g->ctx[dev], d);
		if (rc != GDR_CUDA_SUCCESS) {
			g->ctx[dev] = NULL;
			return cu_fail(g, "cuDevicePrimaryCtxRetain", rc);
		}
	}
	rc = g->f.cuCtxSetCurrent(g->ctx[dev]);
	return rc == GDR_CUDA_SUCCESS ? 0 : cu_fail(g, "cuCtxSetCurrent", rc);
}

static int import_fd(struct ovr_gdr *g, const struct ovr_gdr_export *ex,
		     struct ovr_gdr_mem *m)
{
	gdr_CUmemAccessDesc acc = {
		.location = { .type = GDR_CU_MEM_LOCATION_TYPE_DEVICE,
			      .id = ex->device },
		.flags = GDR_CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	};
	gdr_CUresult rc;
	const char *call;

	call = "cuMemImportFromShareableHandle";
	rc = g->f.cuMemImportFromShareableHandle(
		&m->h, (void *)(uintptr_t)ex->fd,
		GDR_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
	if (rc != GDR_CUDA_SUCCESS)
		goto err_import;
	call = "cuMemAddressReserve";
	rc = g->f.cuMemAddressReserve(&m->dptr, ex->size, 0, 0, 0);
	if (rc != GDR_CUDA_SUCCESS)
		goto err_reserve;
	call = "cuMemMap";
	rc = g->f.cuMemMap(m->dptr, ex->size, 0, m->h, 0);
	if (rc != GDR_CUDA_SUCCESS)
		goto err_map;
	call = "cuMemSetAccess";
	rc = g->f.cuMemSetAccess(m->dptr, ex->size, &acc, 1);
	if (rc != GDR_CUDA_SUCCESS)
		goto err_access;
	return 0;

err_access:
	g->f.cuMemUnmap(m->dptr, ex->size);
err_map:
	g->f.cuMemAddressFree(m->dptr, ex->size);
err_reserve:
	g->f.cuMemRelease(m->h);
err_import:
	return cu_fail(g, call, rc);
}

/*
 * This process's ordinal of the exporter's device: the one with the same
 * UUID (the two may see different numberings, CUDA_VISIBLE_DEVICES), or
 * the exporter's ordinal where either side cannot tell UUIDs.
 */
static int find_device(struct ovr_gdr *g, const struct ovr_gdr_export *ex)
{
	static const uint8_t unknown[OVR_GDR_UUID_LEN];
	uint8_t u[OVR_GDR_UUID_LEN];
	char name[48];

	if (!memcmp(ex->uuid, unknown, sizeof(unknown)) ||
	    !g->f.cuDeviceGetUuid)
		return ex->device;
	for (int i = 0; i < g->ndev; i++)
		if (!device_uuid(g, i, u) && !memcmp(u, ex->uuid, sizeof(u)))
			return i;
	ovr_gdr_uuid_str(ex->uuid, name, sizeof(name));
	snprintf(last_err, sizeof(last_err),
		 "%s is not visible to this process (CUDA_VISIBLE_DEVICES?)",
		 name);
	return -ENODEV;
}

int ovr_gdr_import(struct ovr_gdr *g, const struct ovr_gdr_export *ex0,
		   struct ovr_gdr_mem **out)
{
	struct ovr_gdr_export x = *ex0;
	const struct ovr_gdr_export *ex = &x;
	struct ovr_gdr_mem *m;
	gdr_CUipcMemHandle ipc;
	gdr_CUresult rc;
	int err;

	g = g->base; /* imports are the base's, shared by its channels */
	if (!ex->size || (ex->kind == OVR_GDR_KIND_FD && ex->fd < 0) ||
	    (ex->kind != OVR_GDR_KIND_FD && ex->kind != OVR_GDR_KIND_IPC)) {
		snprintf(last_err, sizeof(last_err), "malformed export");
		return -EINVAL;
	}
	x.device = find_device(g, ex0);
	if (x.device < 0)
		return x.device;
	if (ex->kind == OVR_GDR_KIND_IPC)
		for (m = g->mems; m; m = m->next)
			if (m->kind == OVR_GDR_KIND_IPC &&
			    m->device == ex->device &&
			    !memcmp(m->ipc, ex->ipc, sizeof(m->ipc))) {
				if (m->size != ex->size) {
					snprintf(last_err, sizeof(last_err),
						 "IPC handle size mismatch");
					return -EINVAL;
				}
				m->refs++;
				g->nrefs++;
				*out = m;
				return 0;
			}
	err = use_device(g, ex->device);
	if (err)
		return err;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->g = g;
	m->kind = ex->kind;
	m->size = ex->size;
	m->device = ex->device;
	m->refs = 1;
	if (ex->kind == OVR_GDR_KIND_FD) {
		err = import_fd(g, ex, m);
	} else {
		memcpy(ipc.reserved, ex->ipc, sizeof(ipc.reserved));
		memcpy(m->ipc, ex->ipc, sizeof(m->ipc));
		rc = g->f.cuIpcOpenMemHandle(
			&m->dptr, ipc, GDR_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
		err = rc == GDR_CUDA_SUCCESS ?
			      0 :
			      cu_fail(g, "cuIpcOpenMemHandle", rc);
	}
	if (err) {
		free(m);
		return err;
	}
	m->next = g->mems;
	g->mems = m;
	g->ctx_users[ex->device]++;
	g->nimports++;
	g->nrefs++;
	*out = m;
	return 0;
}

void ovr_gdr_release(struct ovr_gdr_mem *m)
{
	struct ovr_gdr_mem **pp;
	struct ovr_gdr *g;
	bool ctx_ok;

	if (!m)
		return;
	g = m->g;
	g->nrefs--;
	if (--m->refs)
		return;
	for (pp = &g->mems; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	/* nothing may still copy to or from it, on any channel; a
	 * failure stays for that channel's next fence to report */
	for (unsigned int i = 0; i < OVR_GDR_MAX_CHAN; i++) {
		struct ovr_gdr *c = g->chans[i];

		if (c && c->pending &&
		    (m->qep[i][D_H2D] > c->done ||
		     m->qep[i][D_D2H] > c->done)) {
			int err = fence(c, false);

			if (err)
				c->async_err = err;
		}
	}
	ctx_ok = use_device(g, m->device) == 0;
	/* the BAR mapping goes before the memory it maps */
	bar_unmap(m);
	if (ctx_ok) {
		if (m->kind == OVR_GDR_KIND_FD) {
			g->f.cuMemUnmap(m->dptr, m->size);
			g->f.cuMemAddressFree(m->dptr, m->size);
			g->f.cuMemRelease(m->h);
		} else {
			g->f.cuIpcCloseMemHandle(m->dptr);
		}
	}
	g->ctx_users[m->device]--;
	g->nimports--;
	free(m);
}

uint64_t ovr_gdr_mem_size(const struct ovr_gdr_mem *m)
{
	return m->size;
}

/* Is [p, p + len) pinned (inside one registered range)? */
static bool host_pinned(struct ovr_gdr *g, const uint8_t *p, size_t len)
{
	const struct ovr_gdr *b = g->base; /* the ranges; g: where it looked */

	if (!b->nhr)
		return false;
	for (uint32_t k = 0; k < b->nhr; k++) {
		uint32_t i = (g->hr_last + k) % b->nhr;
		const struct gdr_hostreg *r = &b->hr[i];

		if (p >= r->p && (size_t)(p - r->p) < r->len &&
		    len <= r->len - (size_t)(p - r->p)) {
			g->hr_last = i;
			return true;
		}
	}
	return false;
}

/* The device's streams, created on first use; NULL: none (broken). The
 * device's context must be current. */
static struct gdr_dev_streams *dev_streams(struct ovr_gdr *g, int dev)
{
	struct gdr_dev_streams *d = &g->streams[dev];
	gdr_CUresult rc = GDR_CUDA_SUCCESS;
	int k;

	if (d->ready)
		return d;
	if (d->broken || !g->async)
		return NULL;
	for (k = 0; k < 2 && rc == GDR_CUDA_SUCCESS; k++) {
		rc = g->a.cuStreamCreate(&d->st[k], GDR_CU_STREAM_NON_BLOCKING);
		if (rc != GDR_CUDA_SUCCESS)
			break;
		rc = g->a.cuEventCreate(&d->ev[k], GDR_CU_EVENT_DISABLE_TIMING);
		if (rc != GDR_CUDA_SUCCESS)
			g->a.cuStreamDestroy(d->st[k]);
	}
	if (rc != GDR_CUDA_SUCCESS) {
		cu_fail(g, "cuStreamCreate", rc);
		while (k-- > 0) {
			g->a.cuEventDestroy(d->ev[k]);
			g->a.cuStreamDestroy(d->st[k]);
		}
		d->broken = true;
		return NULL;
	}
	d->ready = true;
	g->st.streams += 2;
	return d;
}

/*
 * The driver failed a call while copies are queued: the error may be one
 * of theirs (a real GPU's errors are sticky; the fake reports a queued
 * copy's failure to whichever call runs it), so the next fence and every
 * batch with copies up to now report a failure. -EIO.
 */
static int queued_may_fail(struct ovr_gdr *g)
{
	if (g->pending) {
		g->async_err = -EIO;
		g->fail_upto = g->ep;
	}
	return -EIO;
}

/*
 * Copy between @host and offset @off of @m; queued when @may_queue and
 * the host side is pinned (1), else done when it returns (0). -ERANGE,
 * -EIO. Must run on the importing thread (it sets the current context).
 */
static int copy(struct ovr_gdr *g, struct ovr_gdr_mem *m, uint64_t off,
		void *host, size_t len, bool to_dev, bool may_queue)
{
	uint64_t *qep = m->qep[g->chan], *sep = &m->sep[g->chan];
	struct gdr_dev_streams *d;
	int dir = to_dev ? D_H2D : D_D2H, o = !dir;
	gdr_CUresult rc;
	const char *call;
	int err;

	if (off > m->size || len > m->size - off)
		return -ERANGE;
	if (!len)
		return 0;
	err = use_device(g, m->device);
	if (err)
		return -EIO;
	d = dev_streams(g, m->device);
	if (!d) {
		/* phase 1: the driver's synchronous copies */
		if (to_dev)
			rc = g->f.cuMemcpyHtoD(m->dptr + off, host, len);
		else
			rc = g->f.cuMemcpyDtoH(host, m->dptr + off, len);
		if (rc != GDR_CUDA_SUCCESS) {
			cu_fail(g, to_dev ? "cuMemcpyHtoD" : "cuMemcpyDtoH",
				rc);
			return -EIO;
		}
		g->st.sync_copies++;
		return 0;
	}
	/* after the other direction's copies of this allocation, unless
	 * they are known to be done */
	if (qep[o] > g->done) {
		call = "cuEventRecord";
		rc = g->a.cuEventRecord(d->ev[o], d->st[o]);
		if (rc == GDR_CUDA_SUCCESS) {
			call = "cuStreamWaitEvent";
			rc = g->a.cuStreamWaitEvent(d->st[dir], d->ev[o], 0);
		}
		if (rc != GDR_CUDA_SUCCESS) {
			cu_fail(g, call, rc);
			return queued_may_fail(g);
		}
		qep[o] = 0;
		g->st.waits++;
	}
	if (to_dev) {
		call = "cuMemcpyHtoDAsync";
		rc = g->a.cuMemcpyHtoDAsync(m->dptr + off, host, len,
					    d->st[dir]);
	} else {
		call = "cuMemcpyDtoHAsync";
		rc = g->a.cuMemcpyDtoHAsync(host, m->dptr + off, len,
					    d->st[dir]);
	}
	if (rc != GDR_CUDA_SUCCESS) {
		cu_fail(g, call, rc);
		return queued_may_fail(g);
	}
	d->busy[dir] = true;
	d->open[dir] = true;
	qep[dir] = g->ep;
	*sep = g->ep;
	if (may_queue && host_pinned(g, host, len)) {
		if (!g->open_first)
			g->open_first = g->ep;
		g->pending++;
		g->open_pending++;
		g->st.async_copies++;
		g->st.async_bytes += len;
		return 1;
	}
	/* pageable, or asked to be synchronous: wait for it (and for what
	 * went before it on its stream: a failure of theirs is reported
	 * here and again by the next fence) */
	rc = g->a.cuStreamSynchronize(d->st[dir]);
	g->st.sync_copies++;
	if (rc != GDR_CUDA_SUCCESS) {
		cu_fail(g, "cuStreamSynchronize", rc);
		return queued_may_fail(g);
	}
	/* this stream waited for the other direction's copies of the
	 * allocation (above, or at an earlier copy) and is now idle:
	 * every stream copy of the allocation is done */
	*sep = 0;
	return 0;
}

int ovr_gdr_write(struct ovr_gdr_mem *m, uint64_t off, const void *src,
		  size_t len)
{
	return copy(m->g, m, off, (void *)(uintptr_t)src, len, true, false);
}

int ovr_gdr_read(struct ovr_gdr_mem *m, uint64_t off, void *dst, size_t len)
{
	return copy(m->g, m, off, dst, len, false, false);
}

int ovr_gdr_write_async(struct ovr_gdr_mem *m, uint64_t off, const void *src,
			size_t len)
{
	return copy(m->g, m, off, (void *)(uintptr_t)src, len, true, true);
}

int ovr_gdr_read_async(struct ovr_gdr_mem *m, uint64_t off, void *dst,
		       size_t len)
{
	return copy(m->g, m, off, dst, len, false, true);
}

/* ---- BAR copies (GDRCopy) ------------------------------------------------ */

static void bar_close(struct gdr_bar *b)
{
	if (!b)
		return;
	if (b->h)
		b->f.close(b->h);
	dlclose(b->lib);
	free(b);
}

int ovr_gdr_bar_open(struct ovr_gdr *g, const struct ovr_gdr_bar_cfg *cfg,
		     char *why, size_t why_len)
{
	const char *path = getenv(OVR_GDR_BAR_ENV);
	struct gdr_bar *b;

	if (g->base != g)
		return -EINVAL;
	if (g->bar)
		return -EALREADY;
	if (!path || !*path)
		path = OVR_GDR_LIBGDRAPI;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!b->lib) {
		say(why, why_len, "no GDRCopy library: %s", dlerror());
		free(b);
		return -EOPNOTSUPP;
	}
#define GDRC_FN_SYM(sym, name, ret, args)                                  \
	*(void **)&b->f.name = dlsym(b->lib, sym);                         \
	if (!b->f.name) {                                                  \
		say(why, why_len, "%s has no %s (GDRCopy too old?)", path, \
		    sym);                                                  \
		goto err_sym;                                              \
	}
	GDRC_FUNCS(GDRC_FN_SYM)
#undef GDRC_FN_SYM
	/* 2.3 renamed it, keeping the old symbol for old callers */
	*(void **)&b->get_info = dlsym(b->lib, "gdr_get_info_v2");
	if (!b->get_info)
		*(void **)&b->get_info = dlsym(b->lib, "gdr_get_info");
	if (!b->get_info) {
		say(why, why_len, "%s has no gdr_get_info", path);
		goto err_sym;
	}
	b->h = b->f.open();
	if (!b->h) {
		say(why, why_len,
		    "gdr_open failed: the gdrdrv kernel module is not loaded "
		    "(no /dev/gdrdrv)");
		dlclose(b->lib);
		free(b);
		return -ENODEV;
	}
	b->max[D_H2D] = cfg ? cfg->h2d_max : OVR_GDR_BAR_H2D_MAX;
	b->max[D_D2H] = cfg ? cfg->d2h_max : OVR_GDR_BAR_D2H_MAX;
	for (int k = 0; k < 2; k++)
		if (b->max[k] > OVR_GDR_BAR_MAX)
			b->max[k] = OVR_GDR_BAR_MAX;
	if (cfg) {
		b->note = cfg->note;
		b->note_ctx = cfg->note_ctx;
	}
	g->bar = b;
	g->st.bar = true;
	g->st.bar_h2d_max = b->max[D_H2D];
	g->st.bar_d2h_max = b->max[D_D2H];
	return 0;

err_sym:
	dlclose(b->lib);
	free(b);
	return -EOPNOTSUPP;
}

/* GDRCopy's own errors are positive errnos. */
static int bar_fail(const char *call, int rc)
{
	snprintf(last_err, sizeof(last_err), "%s: %s (%d)", call,
		 strerror(rc > 0 ? rc : EIO), rc);
	return rc > 0 ? -rc : -EIO;
}

/*
 * Pin and map the 64 KiB GPU pages that cover @m's allocation (what
 * gdr_map needs: a GPU-page aligned span). Done at the first BAR copy,
 * not at import: BAR1 space is scarce (256 MiB on many GPUs) and only
 * allocations that see small messages need it. The context is current.
 * A failure (an allocation too large for BAR1, a cuMem allocation made
 * without gpuDirectRDMACapable, gdrdrv out of room) is for good: the
 * allocation's copies take the streams, and the caller's note hook
 * hears it once.
 */
static int bar_map(struct ovr_gdr *g, struct ovr_gdr_mem *m)
{
	struct gdr_bar *b = g->base->bar;
	uint64_t lo = m->dptr & ~(GDRC_GPU_PAGE - 1);
	uint64_t hi = (m->dptr + m->size + GDRC_GPU_PAGE - 1) &
		      ~(GDRC_GPU_PAGE - 1);
	gdrc_info_t info;
	const unsigned int one = 1;
	const char *call;
	void *va = NULL;
	char msg[320];
	int rc;

	/* the driver's own synchronous copies of this memory complete
	 * before they return, as seen through the BAR (best effort: some
	 * kinds of allocation have no such attribute) */
	if (g->f.cuPointerSetAttribute)
		g->f.cuPointerSetAttribute(
			&one, GDR_CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, m->dptr);
	call = "gdr_pin_buffer";
	rc = b->f.pin_buffer(b->h, (unsigned long)lo, hi - lo, 0, 0, &m->mh);
	if (rc)
		goto err_pin;
	memset(&info, 0, sizeof(info));
	call = "gdr_get_info";
	rc = b->get_info(b->h, m->mh, &info);
	if (!rc && (info.va > m->dptr || info.va < lo ||
		    m->dptr - info.va + m->size > hi - lo)) {
		call = "gdr_get_info (span does not cover the allocation)";
		rc = EINVAL;
	}
	if (rc)
		goto err_map;
	call = "gdr_map";
	rc = b->f.map(b->h, m->mh, &va, hi - lo);
	if (rc)
		goto err_map;
	m->bar = va;
	m->bar_len = hi - lo;
	m->bar_at = m->dptr - info.va;
	__atomic_store_n(&m->bar_state, 1, __ATOMIC_RELEASE);
	g->st.bar_pins++;
	g->st.bar_mapped++;
	return 0;

err_map:
	b->f.unpin_buffer(b->h, m->mh);
err_pin:
	bar_fail(call, rc);
	__atomic_store_n(&m->bar_state, -1, __ATOMIC_RELEASE);
	g->st.bar_pin_failures++;
	if (b->note) {
		snprintf(msg, sizeof(msg),
			 "GDRCopy: no BAR mapping of a GPU allocation of %llu "
			 "bytes on device %d (%s); its copies take the copy "
			 "streams",
			 (unsigned long long)m->size, m->device, last_err);
		b->note(b->note_ctx, msg);
	}
	return -EOPNOTSUPP;
}

/* Unmap and unpin (release, before the memory itself goes). */
static void bar_unmap(struct ovr_gdr_mem *m)
{
	struct gdr_bar *b = m->g->bar;

	if (m->bar_state != 1)
		return;
	b->f.unmap(b->h, m->mh, m->bar, m->bar_len);
	b->f.unpin_buffer(b->h, m->mh);
	m->bar = NULL;
	m->bar_state = 0;
	m->g->st.bar_mapped--; /* (the channels' counts add up) */
}

static int bar_copy(struct ovr_gdr *g, struct ovr_gdr_mem *m, uint64_t off,
		    void *host, size_t len, bool to_dev)
{
	struct gdr_bar *b = g->base->bar;
	uint8_t *p;
	uint32_t word;
	int rc, state;

	if (off > m->size || len > m->size - off)
		return -ERANGE;
	state = __atomic_load_n(&m->bar_state, __ATOMIC_ACQUIRE);
	if (!b || state < 0)
		return -EOPNOTSUPP;
	/* after this channel's stream copies of this allocation that may
	 * still run: the streams keep the order, a CPU copy now would
	 * overtake them */
	if (m->sep[g->chan] > g->done) {
		g->st.bar_busy++;
		return -EBUSY;
	}
	if (!len)
		return 0;
	if (!state) {
		/* an import shared by contexts of two cores: one maps it */
		if (use_device(g, m->device))
			return -EIO;
		pthread_mutex_lock(&g->base->bar_mu);
		state = m->bar_state;
		if (!state)
			state = bar_map(g, m) ? -1 : 1;
		pthread_mutex_unlock(&g->base->bar_mu);
		if (state < 0)
			return -EOPNOTSUPP;
	}
	p = m->bar + m->bar_at + off;
	if (to_dev) {
		rc = b->f.copy_to_mapping(m->mh, p, host, len);
		/*
		 * Write-combined stores, fenced (gdr_copy_to_mapping ends
		 * with sfence), are posted PCIe writes: on their way, not
		 * yet in GPU memory. A read through the BAR may not pass
		 * them (PCIe ordering: no read passes a posted write), so
		 * when it returns they are there - before any completion or
		 * stream copy that depends on them. NCCL flushes GDRCopy
		 * writes the same way (NCCL_GDRCOPY_FLUSH_ENABLE).
		 */
		if (!rc)
			rc = b->f.copy_from_mapping(
				m->mh, &word,
				(void *)((uintptr_t)(p + len - 1) &
					 ~(uintptr_t)3),
				sizeof(word));
	} else {
		rc = b->f.copy_from_mapping(m->mh, host, p, len);
	}
	if (rc) {
		bar_fail(to_dev ? "gdr_copy_to_mapping" :
				  "gdr_copy_from_mapping",
			 rc);
		return -EIO;
	}
	if (!to_dev)
		g->st.bar_reads++;
	g->st.bar_copies++;
	g->st.bar_bytes += len;
	return 0;
}

int ovr_gdr_bar_write(struct ovr_gdr_mem *m, uint64_t off, const void *src,
		      size_t len)
{
	return bar_copy(m->g, m, off, (void *)(uintptr_t)src, len, true);
}

int ovr_gdr_bar_read(struct ovr_gdr_mem *m, uint64_t off, void *dst, size_t len)
{
	return bar_copy(m->g, m, off, dst, len, false);
}

int ovr_gdr_chan_copy_msg(struct ovr_gdr *g, struct ovr_gdr_mem *m,
			  uint64_t off, void *host, size_t len, bool to_dev,
			  uint64_t msg_len)
{
	struct gdr_bar *b = g->base->bar;
	int rc;

	if (msg_len < len)
		msg_len = len;
	if (b && msg_len <= b->max[to_dev ? D_H2D : D_D2H]) {
		rc = bar_copy(g, m, off, host, len, to_dev);
		if (rc != -EBUSY && rc != -EOPNOTSUPP)
			return rc;
	}
	return copy(g, m, off, host, len, to_dev, true);
}

int ovr_gdr_copy_msg(struct ovr_gdr_mem *m, uint64_t off, void *host,
		     size_t len, bool to_dev, uint64_t msg_len)
{
	return ovr_gdr_chan_copy_msg(m->g, m, off, host, len, to_dev, msg_len);
}

/*
 * Wait for every stream with work. @caller: the caller learns the
 * result (ovr_gdr_fence), so the copies queued since the last batch
 * close are accounted for; an internal fence (release, unregister)
 * leaves them to the batch that will close over them.
 */
static int fence(struct ovr_gdr *g, bool caller)
{
	int err = g->async_err;

	if (!g->pending && !err)
		return 0;
	for (int i = 0; i < g->ndev; i++) {
		struct gdr_dev_streams *d = &g->streams[i];

		if (!d->busy[0] && !d->busy[1])
			continue;
		if (use_device(g, i)) {
			err = -EIO;
			continue;
		}
		for (int k = 0; k < 2; k++) {
			gdr_CUresult rc;

			if (!d->busy[k])
				continue;
			rc = g->a.cuStreamSynchronize(d->st[k]);
			d->busy[k] = false;
			if (rc != GDR_CUDA_SUCCESS) {
				cu_fail(g, "cuStreamSynchronize", rc);
				err = -EIO;
			}
		}
	}
	g->st.fences++;
	if (err) {
		g->st.fence_errors++;
		/* the batches with copies up to now learn it at their poll */
		g->fail_upto = g->ep;
	}
	for (int i = 0; i < g->ndev; i++)
		g->streams[i].open[0] = g->streams[i].open[1] = false;
	/* the closed batches' copies are done too (their polls will
	 * still look at their events, which are) */
	for (unsigned int b = 0; b < OVR_GDR_MAX_BATCH; b++)
		g->batch[b].ncopies = 0;
	g->pending = 0;
	g->open_pending = 0;
	g->async_err = 0;
	g->nlater = 0;
	g->done = g->ep++;
	if (caller)
		g->open_first = 0;
	return err;
}

int ovr_gdr_fence(struct ovr_gdr *g)
{
	return fence(g, true);
}

/* The copies of epochs [first, last] are done: advance g->done over
 * them and over any later range that then joins. */
static void epochs_done(struct ovr_gdr *g, uint64_t first, uint64_t last)
{
	bool moved = true;

	if (first > g->done + 1) {
		/* an older batch is still out; a full list only delays */
		if (g->nlater < OVR_GDR_MAX_BATCH) {
			g->later[g->nlater].first = first;
			g->later[g->nlater++].last = last;
		}
		return;
	}
	if (last > g->done)
		g->done = last;
	while (moved) {
		moved = false;
		for (uint32_t i = 0; i < g->nlater; i++) {
			if (g->later[i].first > g->done + 1)
				continue;
			if (g->later[i].last > g->done)
				g->done = g->later[i].last;
			g->later[i] = g->later[--g->nlater];
			moved = true;
			break;
		}
	}
}

/* Batch @b's event for direction @k on device @dev's streams: created
 * on first use (the device's context is current). */
static gdr_CUevent batch_event(struct ovr_gdr *g, struct gdr_dev_streams *d,
			       int k, unsigned int b)
{
	gdr_CUresult rc;

	if (d->bev[k][b])
		return d->bev[k][b];
	rc = g->a.cuEventCreate(&d->bev[k][b], GDR_CU_EVENT_DISABLE_TIMING);
	if (rc != GDR_CUDA_SUCCESS) {
		cu_fail(g, "cuEventCreate", rc);
		d->bev[k][b] = NULL;
	}
	return d->bev[k][b];
}

int ovr_gdr_batch_close(struct ovr_gdr *g, unsigned int slot)
{
	struct gdr_batch *b;

	if (slot >= OVR_GDR_MAX_BATCH)
		return -EINVAL;
	b = &g->batch[slot];
	memset(b, 0, sizeof(*b));
	if (!g->open_first) {
		/* nothing queued since the last close: nothing to wait for
		 * (streams "open" only through synchronous copies) */
		for (int i = 0; i < g->ndev; i++)
			g->streams[i].open[0] = g->streams[i].open[1] = false;
		return 0;
	}
	b->first = g->open_first;
	b->last = g->ep;
	b->ncopies = g->open_pending;
	g->open_pending = 0;
	for (int i = 0; i < g->ndev; i++) {
		struct gdr_dev_streams *d = &g->streams[i];

		if (!d->open[0] && !d->open[1])
			continue;
		if (use_device(g, i)) {
			b->err = -EIO;
			continue;
		}
		for (int k = 0; k < 2; k++) {
			gdr_CUevent ev;
			gdr_CUresult rc;

			if (!d->open[k])
				continue;
			d->open[k] = false;
			ev = batch_event(g, d, k, slot);
			rc = ev ? g->a.cuEventRecord(ev, d->st[k]) :
				  GDR_CUDA_ERROR_OUT_OF_MEMORY;
			if (rc != GDR_CUDA_SUCCESS) {
				if (ev)
					cu_fail(g, "cuEventRecord", rc);
				b->err = -EIO;
				continue;
			}
			b->devs[k] |= 1ull << i;
			g->st.batch_events++;
		}
	}
	g->ep++;
	g->open_first = 0;
	g->st.batches++;
	if (b->err) {
		/* what cannot be polled is waited for now */
		b->devs[0] = b->devs[1] = 0;
		fence(g, false);
	}
	return b->err;
}

int ovr_gdr_batch_poll(struct ovr_gdr *g, unsigned int slot, bool wait)
{
	struct gdr_batch *b;
	int err;

	if (slot >= OVR_GDR_MAX_BATCH)
		return -EINVAL;
	b = &g->batch[slot];
	if (wait && (b->devs[0] | b->devs[1]))
		g->st.batch_waits++;
	for (int k = 0; k < 2; k++)
		while (b->devs[k]) {
			int i = __builtin_ctzll(b->devs[k]);
			struct gdr_dev_streams *d = &g->streams[i];
			gdr_CUresult rc;

			if (use_device(g, i)) {
				b->err = -EIO;
				b->devs[k] &= ~(1ull << i);
				continue;
			}
			rc = wait ? g->a.cuEventSynchronize(d->bev[k][slot]) :
				    g->a.cuEventQuery(d->bev[k][slot]);
			if (rc == GDR_CUDA_ERROR_NOT_READY && !wait) {
				g->st.batch_not_ready++;
				return -EAGAIN;
			}
			b->devs[k] &= ~(1ull << i);
			if (rc != GDR_CUDA_SUCCESS) {
				cu_fail(g,
					wait ? "cuEventSynchronize" :
					       "cuEventQuery",
					rc);
				b->err = -EIO;
			}
		}
	err = b->err;
	if (b->first && b->first <= g->fail_upto)
		err = -EIO;
	if (b->first)
		epochs_done(g, b->first, b->last);
	g->pending -= b->ncopies;
	if (err)
		g->st.batch_errors++;
	memset(b, 0, sizeof(*b));
	return err;
}

int ovr_gdr_host_register(struct ovr_gdr *g, void *addr, size_t len)
{
	uint8_t *p = addr;
	gdr_CUresult rc;
	int err;

	g = g->base; /* the ranges serve every channel */
	if (!g->async)
		return -EOPNOTSUPP;
	if (!addr || !len)
		return -EINVAL;
	for (uint32_t i = 0; i < g->nhr; i++)
		if (p < g->hr[i].p + g->hr[i].len && g->hr[i].p < p + len)
			return -EEXIST;
	if (g->nhr == g->hr_cap) {
		uint32_t nc = g->hr_cap ? g->hr_cap * 2 : 8;
		struct gdr_hostreg *t = realloc(g->hr, nc * sizeof(*t));

		if (!t)
			return -ENOMEM;
		g->hr = t;
		g->hr_cap = nc;
	}
	/* any context will do: portable registrations serve them all */
	err = use_device(g, 0);
	if (err)
		return err;
	rc = g->a.cuMemHostRegister(addr, len, GDR_CU_MEMHOSTREGISTER_PORTABLE);
	if (rc != GDR_CUDA_SUCCESS)
		return cu_fail(g, "cuMemHostRegister", rc);
	g->hr[g->nhr].p = p;
	g->hr[g->nhr].len = len;
	g->nhr++;
	g->st.pinned_bytes += len;
	g->st.pinned_ranges++;
	return 0;
}

int ovr_gdr_host_unregister(struct ovr_gdr *g, void *addr)
{
	gdr_CUresult rc;
	int err;

	g = g->base;
	for (uint32_t i = 0; i < g->nhr; i++) {
		if (g->hr[i].p != addr)
			continue;
		/* no queued copy of any channel may still use it */
		for (unsigned int c = 0; c < OVR_GDR_MAX_CHAN; c++) {
			if (!g->chans[c])
				continue;
			err = fence(g->chans[c], false);
			if (err)
				g->chans[c]->async_err = err;
			g->chans[c]->hr_last = 0;
		}
		g->st.pinned_bytes -= g->hr[i].len;
		g->st.pinned_ranges--;
		g->hr[i] = g->hr[--g->nhr];
		g->hr_last = 0;
		if (use_device(g, 0))
			return -EIO;
		rc = g->a.cuMemHostUnregister(addr);
		return rc == GDR_CUDA_SUCCESS ?
			       0 :
			       cu_fail(g, "cuMemHostUnregister", rc);
	}
	return -ENOENT;
}

/* The base's figures add its channels' (a channel's are its own). */
void ovr_gdr_get_stats(const struct ovr_gdr *g, struct ovr_gdr_stats *st)
{
	*st = g->st;
	st->pending = g->pending;
	if (g->base != g)
		return;
	for (unsigned int i = 1; i < OVR_GDR_MAX_CHAN; i++) {
		const struct ovr_gdr *c = g->chans[i];

		if (!c)
			continue;
		st->async_copies += c->st.async_copies;
		st->async_bytes += c->st.async_bytes;
		st->sync_copies += c->st.sync_copies;
		st->fences += c->st.fences;
		st->fence_errors += c->st.fence_errors;
		st->waits += c->st.waits;
		st->batches += c->st.batches;
		st->batch_events += c->st.batch_events;
		st->batch_not_ready += c->st.batch_not_ready;
		st->batch_waits += c->st.batch_waits;
		st->batch_errors += c->st.batch_errors;
		st->streams += c->st.streams;
		st->pending += c->pending;
		st->bar_mapped += c->st.bar_mapped;
		st->bar_copies += c->st.bar_copies;
		st->bar_bytes += c->st.bar_bytes;
		st->bar_reads += c->st.bar_reads;
		st->bar_busy += c->st.bar_busy;
		st->bar_pins += c->st.bar_pins;
		st->bar_pin_failures += c->st.bar_pin_failures;
	}
}

uint32_t ovr_gdr_nimports(const struct ovr_gdr *g)
{
	return g->base->nimports;
}

uint32_t ovr_gdr_nrefs(const struct ovr_gdr *g)
{
	return g->base->nrefs;
}

const char *ovr_gdr_last_error(const struct ovr_gdr *g)
{
	(void)g;
	return last_err;
}
