// SPDX-License-Identifier: MIT
/*
 * libfakecuda: a CUDA driver stand-in for machines without a GPU, loaded
 * through OVRDMA_LIBCUDA by gdr/ (tests and docs/GPU.md). It implements
 * the calls gdr/cudadrv.h declares plus what a test program needs to
 * own "GPU" memory (cuMemAlloc_v2, cuMemFree_v2, cuMemCreate), with the
 * driver's rules where tests could trip over them:
 *
 *  - "device memory" is shared memory: each physical allocation is a
 *    memfd named fakecuda-<nonce>, mapped (MAP_SHARED) at a private host
 *    address that only the fake's cuMemcpy* use;
 *  - device pointers lie in a range the fake reserves PROT_NONE: a
 *    program that touches one directly faults, as it would on a GPU;
 *  - IPC handles name the exporter's pid, the memfd's descriptor number,
 *    its size and its nonce; cuIpcOpenMemHandle opens it through
 *    /proc/PID/fd/N and checks name and size, so a made-up, stale or
 *    foreign handle is CUDA_ERROR_INVALID_VALUE;
 *  - POSIX_FD export hands a dup of the memfd, only for allocations
 *    created with that handle type; import accepts only fakecuda memfds;
 *  - cuMemGetHandleForAddressRange makes an empty memfd of the range's
 *    size as its "dma-buf"; cuDeviceGetUuid_v2 answers $FAKECUDA_UUID;
 *  - one device (ordinal 0); everything but cuInit, cuGetErrorString
 *    and cuDeviceGetCount needs cuInit first (NOT_INITIALIZED); copies
 *    need a current context (cuCtxSetCurrent of the primary context,
 *    per thread: INVALID_CONTEXT) and, on cuMem mappings, cuMemSetAccess.
 *
 * The copy engine's calls (phase 2) keep the driver's asynchrony where a
 * missing synchronisation would hide on a real GPU only by luck:
 *
 *  - cuMemcpyHtoDAsync / cuMemcpyDtoHAsync on pinned host memory
 *    (cuMemHostRegister) are queued on their stream and performed only
 *    when a cuStreamSynchronize reaches them: until then the destination
 *    keeps its old bytes. On pageable memory they run at once, after the
 *    stream's earlier work (the driver stages pageable copies);
 *  - cuEventRecord marks a stream's position; cuStreamWaitEvent makes
 *    another stream run the first up to that mark before going on;
 *    cuEventQuery / cuEventSynchronize run the stream up to the mark.
 *    Events can be made lazy (FAKECUDA_EVENT_POLLS=N or
 *    fakecuda_event_polls(N)): an event whose work is not done yet
 *    answers CUDA_ERROR_NOT_READY to its first N queries and performs
 *    its copies at the next one, so that several batches of copies are
 *    in flight at once; cuEventSynchronize and cuStreamSynchronize
 *    complete at once, as ever;
 *  - the Nth async copy can be made to fail (fakecuda.h): it is never
 *    performed, and the first synchronisation (stream or event) whose
 *    range covers it returns an error - once: a failure belongs to the
 *    batch around it, not to every later one (a real GPU's error would
 *    be sticky, ending the context; tests need to see one batch fail);
 *  - fakecuda_stats() counts synchronisations, queued copies and pinned
 *    bytes for tests that check batching and pinning.
 *
 * Pinned host memory (cuMemHostAlloc) is reached by the fake GPU as a
 * real GPU reaches it: through its own mapping of the pages, fixed when
 * they were allocated, never through the application's addresses. Each
 * allocation is a memfd (fakecuda-hostalloc) mapped twice, MAP_SHARED:
 * the application gets one mapping, the fake's copies (cuMemcpy* and
 * their async forms, whose host side lies in it) use the other. Had
 * anything moved the application's addresses onto other pages after
 * the allocation (a registration that swaps pages, as ovrdma's client
 * once did), the GPU would go on reading and writing the old pages, as
 * a real GPU's DMA would, and a test comparing the two views sees it.
 * cuPointerGetAttribute says MEMORYTYPE_HOST for it, as the driver
 * does. cuMemHostRegister (existing memory) only records the range:
 * the fake's copies reach it through the application's addresses, which
 * is all a process can do with private pages.
 *
 * Allocation granularity is 2 MiB for cuMemCreate / cuMemMap, as on real
 * GPUs, and device addresses are 2 MiB aligned (GDRCopy pins 64 KiB GPU
 * pages). Device addresses are never reused. One mutex guards the
 * tables. An allocation records whether it may be pinned for GPUDirect
 * RDMA (cuMemAlloc's always, cuMemCreate's with gpuDirectRDMACapable;
 * the memfd's name carries it to other processes): the fake GDRCopy
 * (fakegdr.c, same library) refuses to pin the others.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cudadrv.h"
#include "fakecuda.h"
#include "fakecuda_int.h"

#define EXPORT __attribute__((visibility("default")))
#define GRAN (2ull << 20) /* cuMem granularity */
#define VA_SPAN (64ull << 30) /* reserved device address space */
#define IPC_MAGIC "FAKECUDA"
#define MAX_OBJ 4096

struct phys {
	int fd;
	uint64_t size;
	uint8_t *host; /* the fake's own view */
	uint64_t nonce;
	int handle_types;
	bool rdma; /* may be pinned for GPUDirect RDMA (fakegdr.c) */
	uint32_t refs; /* handle references + mappings (+ fakegdr pins) */
	uint32_t hrefs; /* references to its generic allocation handle */
};

enum { MAP_ALLOC = 1, MAP_IPC, MAP_VMM };

struct map {
	gdr_CUdeviceptr va;
	uint64_t size;
	struct phys *p;
	int kind;
	bool access;
};

struct resv {
	gdr_CUdeviceptr va;
	uint64_t size;
};

struct ipc_wire {
	char magic[8];
	int32_t pid;
	int32_t fd;
	uint64_t size;
	uint64_t nonce;
	uint8_t pad[GDR_CU_IPC_HANDLE_SIZE - 32];
};
_Static_assert(sizeof(struct ipc_wire) == GDR_CU_IPC_HANDLE_SIZE, "ipc");

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static bool inited;
static uint8_t *va_base;
static uint64_t va_next;
static struct phys *handles[MAX_OBJ]; /* generic allocation handles */
static struct map maps[MAX_OBJ];
static struct resv resvs[MAX_OBJ];
static struct gdr_CUctx_st {
	int dev;
} primary = { 0 };
static uint32_t primary_refs;
static _Thread_local gdr_CUcontext current;

/* ---- the copy engine's state (phase 2) ---- */
enum { OP_COPY = 1, OP_WAIT };

struct op {
	int kind;
	bool to_dev, fail;
	gdr_CUdeviceptr d;
	uint8_t *h;
	size_t len;
	struct gdr_CUstream_st *ws; /* OP_WAIT: run ws up to wpos */
	uint64_t wpos;
};

struct gdr_CUstream_st {
	struct op *q;
	size_t n, cap, done; /* q[done, n) pending */
	uint64_t base; /* operations retired before q[0] */
	/* positions of operations that failed, not yet reported */
	uint64_t *fails;
	size_t nfails, fcap;
};

struct gdr_CUevent_st {
	struct gdr_CUstream_st *s; /* NULL: never recorded */
	uint64_t pos;
	uint32_t queries; /* NOT_READY answers since the record */
};

struct hostreg {
	uint8_t *p;
	size_t len;
};

static struct hostreg hostregs[MAX_OBJ];

/* cuMemHostAlloc: the application's mapping and the GPU's own */
struct hostalloc {
	uint8_t *app, *gpu;
	size_t len;
};

static struct hostalloc hostallocs[MAX_OBJ];
static struct fakecuda_stats fst;
static uint64_t fail_at; /* async copy number that fails; 0: none */
static uint32_t event_polls; /* NOT_READY answers per event (lazy) */
static uint64_t async_no; /* async copies queued so far */

#define HANDLE_TAG 0xfa4e000000000000ull

/* a prototype first (-Wmissing-prototypes), then the definition */
#define FAKE(name, args)               \
	EXPORT gdr_CUresult name args; \
	EXPORT gdr_CUresult name args

static gdr_CUresult need_init(void)
{
	return inited ? GDR_CUDA_SUCCESS : GDR_CUDA_ERROR_NOT_INITIALIZED;
}

FAKE(cuInit, (unsigned int flags))
{
	if (flags)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (!va_base) {
		void *p = mmap(NULL, VA_SPAN + GRAN, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			       0);

		if (p == MAP_FAILED) {
			pthread_mutex_unlock(&mu);
			return GDR_CUDA_ERROR_OUT_OF_MEMORY;
		}
		/* device pointers 2 MiB aligned, as the driver's */
		va_base = (uint8_t *)(((uintptr_t)p + GRAN - 1) & ~(GRAN - 1));
	}
	if (!inited && getenv("FAKECUDA_FAIL_ASYNC"))
		fail_at = strtoull(getenv("FAKECUDA_FAIL_ASYNC"), NULL, 10);
	if (!inited && getenv("FAKECUDA_EVENT_POLLS"))
		event_polls = (uint32_t)strtoul(getenv("FAKECUDA_EVENT_POLLS"),
						NULL, 10);
	inited = true;
	pthread_mutex_unlock(&mu);
	return GDR_CUDA_SUCCESS;
}

FAKE(cuGetErrorString, (gdr_CUresult err, const char **str))
{
	static const struct {
		int rc;
		const char *s;
	} tab[] = {
		{ GDR_CUDA_SUCCESS, "no error" },
		{ GDR_CUDA_ERROR_INVALID_VALUE, "invalid argument" },
		{ GDR_CUDA_ERROR_OUT_OF_MEMORY, "out of memory" },
		{ GDR_CUDA_ERROR_NOT_INITIALIZED, "initialization error" },
		{ GDR_CUDA_ERROR_NO_DEVICE, "no CUDA-capable device" },
		{ GDR_CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal" },
		{ GDR_CUDA_ERROR_INVALID_CONTEXT, "invalid device context" },
		{ GDR_CUDA_ERROR_INVALID_HANDLE, "invalid resource handle" },
		{ GDR_CUDA_ERROR_NOT_FOUND, "named symbol not found" },
		{ GDR_CUDA_ERROR_NOT_READY, "device not ready" },
		{ GDR_CUDA_ERROR_NOT_SUPPORTED, "operation not supported" },
		{ GDR_CUDA_ERROR_ILLEGAL_ADDRESS,
		  "an illegal memory access was encountered" },
		{ GDR_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
		  "part or all of the requested memory range is already mapped" },
		{ GDR_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
		  "pointer does not correspond to a registered memory region" },
	};

	if (!str)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (tab[i].rc == err) {
			*str = tab[i].s;
			return GDR_CUDA_SUCCESS;
		}
	*str = NULL;
	return GDR_CUDA_ERROR_INVALID_VALUE;
}

FAKE(cuDeviceGetCount, (int *count))
{
	if (!count)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	if (!inited)
		return GDR_CUDA_ERROR_NOT_INITIALIZED;
	*count = 1;
	return GDR_CUDA_SUCCESS;
}

FAKE(cuDeviceGet, (gdr_CUdevice * dev, int ordinal))
{
	if (need_init())
		return need_init();
	if (!dev)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	if (ordinal != 0)
		return GDR_CUDA_ERROR_INVALID_DEVICE;
	*dev = 0;
	return GDR_CUDA_SUCCESS;
}

/* The device's UUID: $FAKECUDA_UUID (32 hex digits) where set, so that a
 * test can make two processes disagree about which GPU they see. */
FAKE(cuDeviceGetUuid_v2, (gdr_CUuuid * uuid, gdr_CUdevice dev))
{
	static const unsigned char fixed[16] = "fakecuda-gpu-0\0";
	const char *env = getenv("FAKECUDA_UUID");

	if (need_init())
		return need_init();
	if (!uuid)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return GDR_CUDA_ERROR_INVALID_DEVICE;
	memcpy(uuid->bytes, fixed, sizeof(uuid->bytes));
	for (int i = 0; env && strlen(env) == 32 && i < 16; i++) {
		unsigned int b;

		if (sscanf(env + 2 * i, "%2x", &b) != 1)
			return GDR_CUDA_ERROR_INVALID_VALUE;
		uuid->bytes[i] = (unsigned char)b;
	}
	return GDR_CUDA_SUCCESS;
}

FAKE(cuDevicePrimaryCtxRetain, (gdr_CUcontext * ctx, gdr_CUdevice dev))
{
	if (need_init())
		return need_init();
	if (!ctx)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return GDR_CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	primary_refs++;
	pthread_mutex_unlock(&mu);
	*ctx = &primary;
	return GDR_CUDA_SUCCESS;
}

FAKE(cuDevicePrimaryCtxRelease_v2, (gdr_CUdevice dev))
{
	gdr_CUresult rc = GDR_CUDA_SUCCESS;

	if (need_init())
		return need_init();
	if (dev != 0)
		return GDR_CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	if (primary_refs)
		primary_refs--;
	else
		rc = GDR_CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuCtxSetCurrent, (gdr_CUcontext ctx))
{
	if (need_init())
		return need_init();
	if (ctx && ctx != &primary)
		return GDR_CUDA_ERROR_INVALID_CONTEXT;
	current = ctx;
	return GDR_CUDA_SUCCESS;
}

/* The current context's device (the interposer asks it, to place an
 * ovrdma device next to the GPU a process uses: docs/GPU.md). */
FAKE(cuCtxGetDevice, (gdr_CUdevice * dev))
{
	if (need_init())
		return need_init();
	if (!dev)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	if (!current)
		return GDR_CUDA_ERROR_INVALID_CONTEXT;
	*dev = current->dev;
	return GDR_CUDA_SUCCESS;
}

/* ---- tables (must hold mu) ---------------------------------------------- */

static struct map *map_find(gdr_CUdeviceptr a, uint64_t len)
{
	for (int i = 0; i < MAX_OBJ; i++) {
		struct map *m = &maps[i];

		if (m->p && a >= m->va && a - m->va < m->size &&
		    len <= m->size - (a - m->va))
			return m;
	}
	return NULL;
}

static struct map *map_new(void)
{
	for (int i = 0; i < MAX_OBJ; i++)
		if (!maps[i].p)
			return &maps[i];
	return NULL;
}

static bool va_take(uint64_t size, gdr_CUdeviceptr *va)
{
	size = (size + GRAN - 1) & ~(GRAN - 1);
	if (!va_base || size > VA_SPAN - va_next)
		return false;
	*va = (gdr_CUdeviceptr)(uintptr_t)(va_base + va_next);
	va_next += size;
	return true;
}

static struct phys *phys_new(int fd, uint64_t size, uint64_t nonce, bool rdma)
{
	struct phys *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->host = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p->host == MAP_FAILED) {
		free(p);
		return NULL;
	}
	p->fd = fd;
	p->size = size;
	p->nonce = nonce;
	p->rdma = rdma;
	return p;
}

/* A new allocation's memory; @rdma: pinnable for GPUDirect RDMA, said
 * in the memfd's name (fakecuda-NONCE, or fakecuda-NONCE-nordma). */
static struct phys *phys_create(uint64_t size, bool rdma)
{
	uint64_t nonce = 0;
	char name[40];
	struct phys *p;
	int fd;

	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
		return NULL;
	snprintf(name, sizeof(name), "fakecuda-%016" PRIx64 "%s", nonce,
		 rdma ? "" : "-nordma");
	fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)size) ||
	    !(p = phys_new(fd, size, nonce, rdma))) {
		close(fd);
		return NULL;
	}
	return p;
}

static void phys_put(struct phys *p)
{
	if (--p->refs)
		return;
	munmap(p->host, p->size);
	close(p->fd);
	free(p);
}

/* The nonce of a fakecuda memfd @fd as seen through @path, and whether
 * it may be pinned for GPUDirect RDMA; or false. */
static bool fake_memfd(const char *path, uint64_t *nonce, bool *rdma)
{
	char link[128];
	ssize_t n = readlink(path, link, sizeof(link) - 1);

	if (n <= 0)
		return false;
	link[n] = 0;
	*rdma = !strstr(link, "-nordma");
	return sscanf(link, "/memfd:fakecuda-%16" SCNx64, nonce) == 1;
}

/* The cuMemHostAlloc allocation holding [p, p + len), or NULL (must hold
 * mu). */
static struct hostalloc *hostalloc_find(const uint8_t *p, size_t len)
{
	for (int i = 0; i < MAX_OBJ; i++) {
		struct hostalloc *a = &hostallocs[i];

		if (a->len && p >= a->app && (size_t)(p - a->app) < a->len &&
		    len <= a->len - (size_t)(p - a->app))
			return a;
	}
	return NULL;
}

/*
 * Where the fake GPU's DMA reaches host bytes [h, h + len) (must hold
 * mu): pinned host memory through the GPU's own mapping of its pages;
 * anything else at the application's address.
 */
static uint8_t *dma_at(uint8_t *h, size_t len)
{
	struct hostalloc *a = hostalloc_find(h, len);

	return a ? a->gpu + (h - a->app) : h;
}

/* ---- pointers, cuMemAlloc ------------------------------------------------ */

FAKE(cuPointerGetAttribute, (void *data, int attribute, gdr_CUdeviceptr ptr))
{
	struct map *m;
	gdr_CUresult rc = GDR_CUDA_SUCCESS;

	if (need_init())
		return need_init();
	if (!data)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	m = map_find(ptr, 1);
	if (!m && hostalloc_find((uint8_t *)(uintptr_t)ptr, 1)) {
		/* pinned host memory: the driver knows it as host memory */
		if (attribute == GDR_CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
			*(unsigned int *)data = GDR_CU_MEMORYTYPE_HOST;
		else
			rc = GDR_CUDA_ERROR_INVALID_VALUE;
	} else if (!m) {
		rc = GDR_CUDA_ERROR_INVALID_VALUE; /* memory CUDA does not know */
	} else {
		switch (attribute) {
		case GDR_CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
			*(unsigned int *)data = GDR_CU_MEMORYTYPE_DEVICE;
			break;
		case GDR_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
			*(int *)data = 0;
			break;
		case GDR_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
			*(gdr_CUdeviceptr *)data = m->va;
			break;
		case GDR_CU_POINTER_ATTRIBUTE_RANGE_SIZE:
			*(size_t *)data = m->size;
			break;
		default:
			rc = GDR_CUDA_ERROR_INVALID_VALUE;
		}
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

/* Only SYNC_MEMOPS, on device memory: the fake's synchronous copies are
 * synchronous anyway; counted (fakecuda_stats) for the tests. */
FAKE(cuPointerSetAttribute,
     (const void *value, int attribute, gdr_CUdeviceptr ptr))
{
	gdr_CUresult rc = GDR_CUDA_ERROR_INVALID_VALUE;

	if (need_init())
		return need_init();
	if (!value || attribute != GDR_CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (map_find(ptr, 1)) {
		if (*(const unsigned int *)value)
			fst.sync_memops++;
		rc = GDR_CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

/* ---- what the fake GDRCopy pins (fakecuda_int.h) ------------------------- */

int fakecuda_span_get(uint64_t addr, uint64_t len, struct fake_span *sp)
{
	struct map *m;
	uint64_t end;
	int rc = -EINVAL;

	pthread_mutex_lock(&mu);
	m = inited && len ? map_find(addr, 1) : NULL;
	if (m && m->access) {
		/* the allocation's last GPU page is all its own */
		end = (m->va + m->size + FAKE_GPU_PAGE - 1) &
		      ~(FAKE_GPU_PAGE - 1);
		if (len <= end - addr) {
			sp->fd = m->p->fd;
			sp->fd_off = addr - m->va;
			sp->rdma = m->p->rdma;
			sp->ref = m->p;
			m->p->refs++;
			rc = 0;
		}
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

void fakecuda_span_put(void *ref)
{
	pthread_mutex_lock(&mu);
	phys_put(ref);
	pthread_mutex_unlock(&mu);
}

FAKE(cuMemAlloc_v2, (gdr_CUdeviceptr * dptr, size_t size))
{
	struct phys *p;
	struct map *m;

	if (need_init())
		return need_init();
	if (!dptr || !size)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	if (!current)
		return GDR_CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&mu);
	m = map_new();
	p = m ? phys_create(size, true) : NULL;
	if (!p || !va_take(size, &m->va)) {
		if (p) {
			p->refs = 1;
			phys_put(p);
		}
		pthread_mutex_unlock(&mu);
		return GDR_CUDA_ERROR_OUT_OF_MEMORY;
	}
	p->refs = 1;
	m->p = p;
	m->size = size;
	m->kind = MAP_ALLOC;
	m->access = true;
	*dptr = m->va;
	pthread_mutex_unlock(&mu);
	return GDR_CUDA_SUCCESS;
}

/* cuMemFree and cuIpcCloseMemHandle: the mapping of @kind at @dptr. */
static gdr_CUresult map_drop(gdr_CUdeviceptr dptr, int kind)
{
	struct map *m;
	gdr_CUresult rc = GDR_CUDA_ERROR_INVALID_VALUE;

	if (need_init())
		return need_init();
	pthread_mutex_lock(&mu);
	m = map_find(dptr, 1);
	if (m && m->va == dptr && m->kind == kind) {
		phys_put(m->p);
		memset(m, 0, sizeof(*m));
		rc = GDR_CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuMemFree_v2, (gdr_CUdeviceptr dptr))
{
	return map_drop(dptr, MAP_ALLOC);
}

/* ---- IPC ------------------------------------------------------------------ */

FAKE(cuIpcGetMemHandle, (gdr_CUipcMemHandle * handle, gdr_CUdeviceptr dptr))
{
	struct ipc_wire w;
	struct map *m;
	gdr_CUresult rc = GDR_CUDA_ERROR_INVALID_VALUE;

	if (need_init())
		return need_init();
	if (!handle)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	m = map_find(dptr, 1);
	/* only cuMemAlloc memory has IPC handles, named by its start */
	if (m && m->kind == MAP_ALLOC && m->va == dptr) {
		memset(&w, 0, sizeof(w));
		memcpy(w.magic, IPC_MAGIC, sizeof(w.magic));
		w.pid = getpid();
		w.fd = m->p->fd;
		w.size = m->size;
		w.nonce = m->p->nonce;
		memcpy(handle->reserved, &w, sizeof(w));
		rc = GDR_CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuIpcOpenMemHandle_v2,
     (gdr_CUdeviceptr * dptr, gdr_CUipcMemHandle handle, unsigned int flags))
{
	struct ipc_wire w;
	char path[64];
	uint64_t nonce;
	struct stat st;
	struct phys *p;
	struct map *m;
	bool rdma;
	int fd;

	if (need_init())
		return need_init();
	if (!dptr || (flags & ~GDR_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
		return GDR_CUDA_ERROR_INVALID_VALUE;
	if (!current)
		return GDR_CUDA_ERROR_INVALID_CONTEXT;
	memcpy(&w, handle.reserved, sizeof(w));
	if (memcmp(w.magic, IPC_MAGIC, sizeof(w.magic)) || w.pid <= 0 ||
	    w.fd < 0 || !w.size)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	if (w.pid == getpid())
		return GDR_CUDA_ERROR_INVALID_CONTEXT; /* as the driver */
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)w.pid, (int)w.fd);
	if (!fake_memfd(path, &nonce, &rdma) || nonce != w.nonce)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	if (fstat(fd, &st) || (uint64_t)st.st_size != w.size) {
		close(fd);
		return GDR_CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_lock(&mu);
	m = map_new();
	p = m ? phys_new(fd, w.size, w.nonce, rdma) : NULL;
	if (!p || !va_take(w.size, &m->va)) {
		if (p) {
			p->refs = 1;
			phys_put(p);
		} else {
			close(fd);
		}
		pthread_mutex_unlock(&mu);
		return GDR_CUDA_ERROR_OUT_OF_MEMORY;
	}
	p->refs = 1;
	m->p = p;
	m->size = w.size;
	m->kind = MAP_IPC;
	m->access = true;
	*dptr = m->va;
	pthread_mutex_unlock(&mu);
	return GDR_CUDA_SUCCESS;
}

FAKE(cuIpcCloseMemHandle, (gdr_CUdeviceptr dptr))
{
	return map_drop(dptr, MAP_IPC);
}

/* ---- cuMem (virtual memory management) ----------------------------------- */

static gdr_CUmemGenericAllocationHandle handle_new(struct phys *p)
{
	for (int i = 0; i < MAX_OBJ; i++)
		if (!handles[i]) {
			handles[i] = p;
			p->hrefs = 1;
			p->refs++;
			return HANDLE_TAG | (uint64_t)i;
		}
	return 0;
}

static struct phys *handle_get(gdr_CUmemGenericAllocationHandle h)
{
	uint64_t i = h & ~HANDLE_TAG;

	if ((h & HANDLE_TAG) != HANDLE_TAG || i >= MAX_OBJ)
		return NULL;
	return handles[i];
}

FAKE(cuMemCreate,
     (gdr_CUmemGenericAllocationHandle * handle, size_t size,
      const gdr_CUmemAllocationProp *prop, unsigned long long flags))
{
	struct phys *p;

	if (need_init())
		return need_init();
	if (!handle || !prop || flags || !size || size % GRAN ||
	    prop->type != GDR_CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != GDR_CU_MEM_LOCATION_TYPE_DEVICE)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	if (prop->location.id != 0)
		return GDR_CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	p = phys_create(size, prop->allocFlags.gpuDirectRDMACapable);
	if (p) {
		p->handle_types = prop->requestedHandleTypes;
		*handle = handle_new(p);
		if (!*handle) {
			p->refs = 1;
			phys_put(p);
			p = NULL;
		}
	}
	pthread_mutex_unlock(&mu);
	return p ? GDR_CUDA_SUCCESS : GDR_CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE(cuMemRelease, (gdr_CUmemGenericAllocationHandle handle))
{
	struct phys *p;
	gdr_CUresult rc = GDR_CUDA_ERROR_INVALID_VALUE;

	if (need_init())
		return need_init();
	pthread_mutex_lock(&mu);
	p = handle_get(handle);
	if (p) {
		/* the last handle reference retires the handle; mappings
		 * keep the memory */
		if (!--p->hrefs)
			handles[handle & ~HANDLE_TAG] = NULL;
		phys_put(p);
		rc = GDR_CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuMemRetainAllocationHandle,
     (gdr_CUmemGenericAllocationHandle * handle, void *addr))
{
	struct map *m;
	gdr_CUresult rc = GDR_CUDA_ERROR_INVALID_VALUE;

	if (need_init())
		return need_init();
	if (!handle)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	m = map_find((gdr_CUdeviceptr)(uintptr_t)addr, 1);
	if (m && m->kind == MAP_VMM) {
		for (int i = 0; i < MAX_OBJ; i++)
			if (handles[i] == m->p) {
				*handle = HANDLE_TAG | (uint64_t)i;
				m->p->refs++;
				m->p->hrefs++;
				rc = GDR_CUDA_SUCCESS;
				break;
			}
		/* the handle was released while mapped: a new one */
		if (rc != GDR_CUDA_SUCCESS) {
			*handle = handle_new(m->p);
			rc = *handle ? GDR_CUDA_SUCCESS :
				       GDR_CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuMemExportToShareableHandle,
     (void *shareable, gdr_CUmemGenericAllocationHandle handle, int type,
      unsigned long long flags))
{
	struct phys *p;
	gdr_CUresult rc = GDR_CUDA_ERROR_INVALID_VALUE;

	if (need_init())
		return need_init();
	if (!shareable || flags ||
	    type != GDR_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	p = handle_get(handle);
	if (p &&
	    (p->handle_types & GDR_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
		int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);

		if (fd >= 0) {
			*(int *)shareable = fd;
			rc = GDR_CUDA_SUCCESS;
		} else {
			rc = GDR_CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuMemImportFromShareableHandle,
     (gdr_CUmemGenericAllocationHandle * handle, void *os_handle, int type))
{
	int fd = (int)(intptr_t)os_handle, dupfd;
	char path[64];
	uint64_t nonce;
	struct stat st;
	struct phys *p = NULL;
	bool rdma;

	if (need_init())
		return need_init();
	if (!handle || type != GDR_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
	    fd < 0)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!fake_memfd(path, &nonce, &rdma) || fstat(fd, &st) || !st.st_size ||
	    st.st_size % GRAN)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dupfd < 0)
		return GDR_CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&mu);
	p = phys_new(dupfd, (uint64_t)st.st_size, nonce, rdma);
	if (p) {
		p->handle_types = GDR_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
		*handle = handle_new(p);
		if (!*handle) {
			p->refs = 1;
			phys_put(p);
			p = NULL;
		}
	} else {
		close(dupfd);
	}
	pthread_mutex_unlock(&mu);
	return p ? GDR_CUDA_SUCCESS : GDR_CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE(cuMemAddressReserve, (gdr_CUdeviceptr * ptr, size_t size, size_t align,
			   gdr_CUdeviceptr addr, unsigned long long flags))
{
	gdr_CUresult rc = GDR_CUDA_ERROR_OUT_OF_MEMORY;

	(void)addr; /* a hint */
	if (need_init())
		return need_init();
	if (!ptr || !size || size % GRAN || flags || (align && align > GRAN))
		return GDR_CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX_OBJ; i++)
		if (!resvs[i].size) {
			if (va_take(size, &resvs[i].va)) {
				resvs[i].size = size;
				*ptr = resvs[i].va;
				rc = GDR_CUDA_SUCCESS;
			}
			break;
		}
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuMemAddressFree, (gdr_CUdeviceptr ptr, size_t size))
{
	gdr_CUresult rc = GDR_CUDA_ERROR_INVALID_VALUE;

	if (need_init())
		return need_init();
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX_OBJ; i++)
		if (resvs[i].size && resvs[i].va == ptr &&
		    resvs[i].size == size) {
			/* still mapped inside: refused */
			if (!map_find(ptr, 1) ||
			    map_find(ptr, 1)->kind != MAP_VMM) {
				resvs[i].size = 0;
				rc = GDR_CUDA_SUCCESS;
			}
			break;
		}
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuMemMap,
     (gdr_CUdeviceptr ptr, size_t size, size_t offset,
      gdr_CUmemGenericAllocationHandle handle, unsigned long long flags))
{
	struct phys *p;
	struct map *m;
	bool inside = false;
	gdr_CUresult rc = GDR_CUDA_ERROR_INVALID_VALUE;

	if (need_init())
		return need_init();
	if (flags || offset || !size || size % GRAN)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	p = handle_get(handle);
	for (int i = 0; i < MAX_OBJ; i++)
		if (resvs[i].size && ptr >= resvs[i].va &&
		    ptr - resvs[i].va < resvs[i].size &&
		    size <= resvs[i].size - (ptr - resvs[i].va))
			inside = true;
	if (p && inside && size == p->size && !map_find(ptr, 1) &&
	    !map_find(ptr + size - 1, 1) && (m = map_new())) {
		m->va = ptr;
		m->size = size;
		m->p = p;
		m->kind = MAP_VMM;
		m->access = false;
		p->refs++;
		rc = GDR_CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuMemSetAccess, (gdr_CUdeviceptr ptr, size_t size,
		      const gdr_CUmemAccessDesc *desc, size_t count))
{
	struct map *m;
	gdr_CUresult rc = GDR_CUDA_ERROR_INVALID_VALUE;

	if (need_init())
		return need_init();
	if (!desc || count != 1 ||
	    desc->location.type != GDR_CU_MEM_LOCATION_TYPE_DEVICE ||
	    desc->location.id != 0 ||
	    desc->flags != GDR_CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	m = map_find(ptr, size);
	if (m && m->kind == MAP_VMM && m->va == ptr && m->size == size) {
		m->access = true;
		rc = GDR_CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuMemUnmap, (gdr_CUdeviceptr ptr, size_t size))
{
	struct map *m;
	gdr_CUresult rc = GDR_CUDA_ERROR_INVALID_VALUE;

	if (need_init())
		return need_init();
	pthread_mutex_lock(&mu);
	m = map_find(ptr, 1);
	if (m && m->kind == MAP_VMM && m->va == ptr && m->size == size) {
		phys_put(m->p);
		memset(m, 0, sizeof(*m));
		rc = GDR_CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

/*
 * A dma-buf of [dptr, dptr + size) (page-aligned, inside one mapping),
 * as the driver makes one for an RDMA driver to import. The fake's is an
 * empty memfd of that size: nothing in ovrdma may read the bytes through
 * it (a GPU's dma-buf cannot be mmapped either), only its size.
 */
FAKE(cuMemGetHandleForAddressRange,
     (void *handle, gdr_CUdeviceptr dptr, size_t size, int type,
      unsigned long long flags))
{
	gdr_CUresult rc = GDR_CUDA_ERROR_INVALID_VALUE;
	int fd;

	if (need_init())
		return need_init();
	if (!handle || type != GDR_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD ||
	    flags || !size || (dptr | size) & 4095)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (map_find(dptr, size)) {
		fd = memfd_create("fakecuda-dmabuf", MFD_CLOEXEC);
		if (fd >= 0 && ftruncate(fd, (off_t)size) == 0) {
			*(int *)handle = fd;
			rc = GDR_CUDA_SUCCESS;
		} else {
			if (fd >= 0)
				close(fd);
			rc = GDR_CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

/* ---- copies ---------------------------------------------------------------- */

static gdr_CUresult copy(gdr_CUdeviceptr d, void *h, size_t len, bool to_dev)
{
	struct map *m;
	gdr_CUresult rc = GDR_CUDA_ERROR_INVALID_VALUE;

	if (need_init())
		return need_init();
	if (!current)
		return GDR_CUDA_ERROR_INVALID_CONTEXT;
	if (!len)
		return GDR_CUDA_SUCCESS;
	if (!h)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	m = map_find(d, len);
	if (m && m->access) {
		uint8_t *at = m->p->host + (d - m->va);

		if (to_dev)
			memcpy(at, dma_at(h, len), len);
		else
			memcpy(dma_at(h, len), at, len);
		rc = GDR_CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuMemcpyHtoD_v2, (gdr_CUdeviceptr dst, const void *src, size_t len))
{
	__atomic_add_fetch(&fst.sync_copies, 1, __ATOMIC_RELAXED);
	return copy(dst, (void *)(uintptr_t)src, len, true);
}

FAKE(cuMemcpyDtoH_v2, (void *dst, gdr_CUdeviceptr src, size_t len))
{
	__atomic_add_fetch(&fst.sync_copies, 1, __ATOMIC_RELAXED);
	return copy(src, dst, len, false);
}

/* ---- pinned host memory ------------------------------------------------- */

/* Is [p, p + len) inside one registration? (must hold mu) */
static bool host_pinned(const uint8_t *p, size_t len)
{
	for (int i = 0; i < MAX_OBJ; i++) {
		const struct hostreg *r = &hostregs[i];

		if (r->len && p >= r->p && (size_t)(p - r->p) < r->len &&
		    len <= r->len - (size_t)(p - r->p))
			return true;
	}
	return hostalloc_find(p, len) != NULL;
}

/* CU_MEMHOSTALLOC_PORTABLE, DEVICEMAP, WRITECOMBINED: all one here */
#define HOSTALLOC_FLAGS 0x7u

FAKE(cuMemHostAlloc, (void **pp, size_t len, unsigned int flags))
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = (len + pg - 1) & ~(pg - 1);
	struct hostalloc *slot = NULL;
	void *app = MAP_FAILED, *gpu = MAP_FAILED;
	int fd;

	if (need_init())
		return need_init();
	if (!pp || !len || (flags & ~HOSTALLOC_FLAGS))
		return GDR_CUDA_ERROR_INVALID_VALUE;
	if (!current)
		return GDR_CUDA_ERROR_INVALID_CONTEXT;
	/* the GPU's mapping first: the pages are its from the start */
	fd = memfd_create("fakecuda-hostalloc", MFD_CLOEXEC);
	if (fd >= 0 && !ftruncate(fd, (off_t)n)) {
		gpu = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		app = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	}
	if (fd >= 0)
		close(fd); /* the mappings keep the pages */
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX_OBJ && !slot; i++)
		if (!hostallocs[i].len)
			slot = &hostallocs[i];
	if (slot && gpu != MAP_FAILED && app != MAP_FAILED)
		*slot = (struct hostalloc){ .app = app, .gpu = gpu, .len = n };
	pthread_mutex_unlock(&mu);
	if (!slot || gpu == MAP_FAILED || app == MAP_FAILED) {
		if (gpu != MAP_FAILED)
			munmap(gpu, n);
		if (app != MAP_FAILED)
			munmap(app, n);
		return GDR_CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pp = app;
	return GDR_CUDA_SUCCESS;
}

FAKE(cuMemFreeHost, (void *p))
{
	struct hostalloc a = { 0 };

	if (need_init())
		return need_init();
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX_OBJ; i++)
		if (hostallocs[i].len && hostallocs[i].app == p) {
			a = hostallocs[i];
			hostallocs[i] = (struct hostalloc){ 0 };
			break;
		}
	pthread_mutex_unlock(&mu);
	if (!a.len)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	munmap(a.app, a.len);
	munmap(a.gpu, a.len);
	return GDR_CUDA_SUCCESS;
}

FAKE(cuMemHostRegister_v2, (void *p, size_t len, unsigned int flags))
{
	uint8_t *b = p;
	struct hostreg *slot = NULL;
	gdr_CUresult rc = GDR_CUDA_SUCCESS;

	if (need_init())
		return need_init();
	if (!p || !len || (flags & ~GDR_CU_MEMHOSTREGISTER_PORTABLE))
		return GDR_CUDA_ERROR_INVALID_VALUE;
	if (!current)
		return GDR_CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX_OBJ; i++) {
		struct hostreg *r = &hostregs[i];

		if (!r->len) {
			if (!slot)
				slot = r;
		} else if (b < r->p + r->len && r->p < b + len) {
			rc = GDR_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
		}
	}
	if (rc == GDR_CUDA_SUCCESS && !slot)
		rc = GDR_CUDA_ERROR_OUT_OF_MEMORY;
	if (rc == GDR_CUDA_SUCCESS) {
		slot->p = b;
		slot->len = len;
		fst.host_registered += len;
		fst.host_register_calls++;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuMemHostUnregister, (void *p))
{
	gdr_CUresult rc = GDR_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;

	if (need_init())
		return need_init();
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX_OBJ; i++)
		if (hostregs[i].len && hostregs[i].p == p) {
			fst.host_registered -= hostregs[i].len;
			hostregs[i].len = 0;
			hostregs[i].p = NULL;
			rc = GDR_CUDA_SUCCESS;
			break;
		}
	pthread_mutex_unlock(&mu);
	return rc;
}

/* ---- streams, events, asynchronous copies -------------------------------- */

/* Perform one queued copy (must hold mu). */
static gdr_CUresult op_copy(const struct op *o)
{
	struct map *m;

	if (o->fail) {
		fst.async_failed++;
		return GDR_CUDA_ERROR_ILLEGAL_ADDRESS;
	}
	m = map_find(o->d, o->len);
	if (!m || !m->access)
		return GDR_CUDA_ERROR_ILLEGAL_ADDRESS; /* unmapped meanwhile */
	if (o->to_dev)
		memcpy(m->p->host + (o->d - m->va), dma_at(o->h, o->len),
		       o->len);
	else
		memcpy(dma_at(o->h, o->len), m->p->host + (o->d - m->va),
		       o->len);
	return GDR_CUDA_SUCCESS;
}

/* Remember that the operation at absolute position @pos of @s failed
 * (must hold mu). */
static void fail_note(struct gdr_CUstream_st *s, uint64_t pos)
{
	if (s->nfails == s->fcap) {
		size_t nc = s->fcap ? s->fcap * 2 : 8;
		uint64_t *f = realloc(s->fails, nc * sizeof(*f));

		if (!f) {
			/* keep the newest: a failure must not vanish */
			if (s->nfails)
				s->fails[s->nfails - 1] = pos;
			return;
		}
		s->fails = f;
		s->fcap = nc;
	}
	s->fails[s->nfails++] = pos;
}

/* The error of the failed operations of @s before @upto that nobody
 * reported yet, reporting them (must hold mu). */
static gdr_CUresult fail_take(struct gdr_CUstream_st *s, uint64_t upto)
{
	gdr_CUresult rc = GDR_CUDA_SUCCESS;
	size_t k = 0;

	for (size_t i = 0; i < s->nfails; i++) {
		if (s->fails[i] < upto)
			rc = GDR_CUDA_ERROR_ILLEGAL_ADDRESS;
		else
			s->fails[k++] = s->fails[i];
	}
	s->nfails = k;
	return rc;
}

/* Run @s's queued work up to absolute position @upto (must hold mu);
 * a failed operation is noted (fail_note) for the synchronisation that
 * covers it to report. */
static void run_stream(struct gdr_CUstream_st *s, uint64_t upto)
{
	while (s->done < s->n && s->base + s->done < upto) {
		uint64_t pos = s->base + s->done;
		struct op o = s->q[s->done++];

		if (o.kind == OP_COPY) {
			fst.pending--;
			if (op_copy(&o) == GDR_CUDA_SUCCESS)
				fst.async_done++;
			else
				fail_note(s, pos);
		} else {
			run_stream(o.ws, o.wpos);
		}
	}
	if (s->done == s->n) {
		s->base += s->n;
		s->n = s->done = 0;
	}
}

static gdr_CUresult enqueue(struct gdr_CUstream_st *s, const struct op *o)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 64;
		struct op *q = realloc(s->q, nc * sizeof(*q));

		if (!q)
			return GDR_CUDA_ERROR_OUT_OF_MEMORY;
		s->q = q;
		s->cap = nc;
	}
	s->q[s->n++] = *o;
	return GDR_CUDA_SUCCESS;
}

FAKE(cuStreamCreate, (gdr_CUstream * stream, unsigned int flags))
{
	struct gdr_CUstream_st *s;

	if (need_init())
		return need_init();
	if (!stream || (flags & ~GDR_CU_STREAM_NON_BLOCKING))
		return GDR_CUDA_ERROR_INVALID_VALUE;
	if (!current)
		return GDR_CUDA_ERROR_INVALID_CONTEXT;
	s = calloc(1, sizeof(*s));
	if (!s)
		return GDR_CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&mu);
	fst.streams++;
	pthread_mutex_unlock(&mu);
	*stream = s;
	return GDR_CUDA_SUCCESS;
}

/* The driver lets a destroyed stream's work finish; so does the fake. */
FAKE(cuStreamDestroy_v2, (gdr_CUstream s))
{
	if (need_init())
		return need_init();
	if (!s)
		return GDR_CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&mu);
	run_stream(s, UINT64_MAX);
	fst.streams--;
	pthread_mutex_unlock(&mu);
	free(s->fails);
	free(s->q);
	free(s);
	return GDR_CUDA_SUCCESS;
}

FAKE(cuStreamSynchronize, (gdr_CUstream s))
{
	gdr_CUresult rc;

	if (need_init())
		return need_init();
	if (!s)
		return GDR_CUDA_ERROR_INVALID_HANDLE; /* gdr/ never syncs NULL */
	pthread_mutex_lock(&mu);
	fst.syncs++;
	run_stream(s, UINT64_MAX);
	rc = fail_take(s, UINT64_MAX);
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuEventCreate, (gdr_CUevent * ev, unsigned int flags))
{
	if (need_init())
		return need_init();
	if (!ev || (flags & ~GDR_CU_EVENT_DISABLE_TIMING))
		return GDR_CUDA_ERROR_INVALID_VALUE;
	*ev = calloc(1, sizeof(**ev));
	if (!*ev)
		return GDR_CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&mu);
	fst.events++;
	pthread_mutex_unlock(&mu);
	return GDR_CUDA_SUCCESS;
}

FAKE(cuEventDestroy_v2, (gdr_CUevent ev))
{
	if (need_init())
		return need_init();
	if (!ev)
		return GDR_CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&mu);
	fst.events--;
	pthread_mutex_unlock(&mu);
	free(ev);
	return GDR_CUDA_SUCCESS;
}

FAKE(cuEventRecord, (gdr_CUevent ev, gdr_CUstream s))
{
	if (need_init())
		return need_init();
	if (!ev || !s)
		return GDR_CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&mu);
	ev->s = s;
	ev->pos = s->base + s->n;
	ev->queries = 0;
	fst.event_records++;
	pthread_mutex_unlock(&mu);
	return GDR_CUDA_SUCCESS;
}

/* Work before the event done? With event_polls, not before its
 * (event_polls + 1)th query unless something else ran it meanwhile. */
FAKE(cuEventQuery, (gdr_CUevent ev))
{
	gdr_CUresult rc = GDR_CUDA_SUCCESS;

	if (need_init())
		return need_init();
	if (!ev)
		return GDR_CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&mu);
	fst.event_queries++;
	if (ev->s) {
		if (ev->s->base + ev->s->done < ev->pos &&
		    ev->queries < event_polls) {
			ev->queries++;
			fst.event_not_ready++;
			pthread_mutex_unlock(&mu);
			return GDR_CUDA_ERROR_NOT_READY;
		}
		run_stream(ev->s, ev->pos);
		rc = fail_take(ev->s, ev->pos);
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuEventSynchronize, (gdr_CUevent ev))
{
	gdr_CUresult rc = GDR_CUDA_SUCCESS;

	if (need_init())
		return need_init();
	if (!ev)
		return GDR_CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&mu);
	fst.event_syncs++;
	if (ev->s) {
		run_stream(ev->s, ev->pos);
		rc = fail_take(ev->s, ev->pos);
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

/* Waits on the event's most recent record, as the driver does. */
FAKE(cuStreamWaitEvent, (gdr_CUstream s, gdr_CUevent ev, unsigned int flags))
{
	struct op o = { .kind = OP_WAIT };
	gdr_CUresult rc = GDR_CUDA_SUCCESS;

	if (need_init())
		return need_init();
	if (!s || !ev)
		return GDR_CUDA_ERROR_INVALID_HANDLE;
	if (flags)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	fst.waits++;
	if (ev->s && ev->s != s) {
		o.ws = ev->s;
		o.wpos = ev->pos;
		rc = enqueue(s, &o);
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

static gdr_CUresult copy_async(gdr_CUdeviceptr d, void *h, size_t len,
			       bool to_dev, struct gdr_CUstream_st *s)
{
	struct op o = {
		.kind = OP_COPY, .to_dev = to_dev, .d = d, .h = h, .len = len
	};
	struct map *m;
	gdr_CUresult rc;

	if (need_init())
		return need_init();
	if (!current)
		return GDR_CUDA_ERROR_INVALID_CONTEXT;
	if (!s)
		return GDR_CUDA_ERROR_INVALID_HANDLE; /* gdr/ never uses NULL */
	if (!len)
		return GDR_CUDA_SUCCESS;
	if (!h)
		return GDR_CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	m = map_find(d, len);
	if (!m || !m->access) {
		pthread_mutex_unlock(&mu);
		return GDR_CUDA_ERROR_INVALID_VALUE;
	}
	if (!host_pinned(h, len)) {
		/* pageable: after the stream's earlier work, at once */
		run_stream(s, UINT64_MAX);
		rc = fail_take(s, UINT64_MAX);
		if (rc == GDR_CUDA_SUCCESS)
			rc = op_copy(&o);
		fst.async_pageable++;
		pthread_mutex_unlock(&mu);
		return rc;
	}
	o.fail = fail_at && ++async_no == fail_at;
	rc = enqueue(s, &o);
	if (rc == GDR_CUDA_SUCCESS) {
		fst.async_queued++;
		fst.pending++;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

FAKE(cuMemcpyHtoDAsync_v2,
     (gdr_CUdeviceptr dst, const void *src, size_t len, gdr_CUstream s))
{
	return copy_async(dst, (void *)(uintptr_t)src, len, true, s);
}

FAKE(cuMemcpyDtoHAsync_v2,
     (void *dst, gdr_CUdeviceptr src, size_t len, gdr_CUstream s))
{
	return copy_async(src, dst, len, false, s);
}

/* ---- the fake's own (fakecuda.h) ----------------------------------------- */

EXPORT void fakecuda_stats(struct fakecuda_stats *st);
EXPORT void fakecuda_stats(struct fakecuda_stats *st)
{
	pthread_mutex_lock(&mu);
	*st = fst;
	st->sync_copies = __atomic_load_n(&fst.sync_copies, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&mu);
}

EXPORT void fakecuda_fail_async(uint64_t nth);
EXPORT void fakecuda_fail_async(uint64_t nth)
{
	pthread_mutex_lock(&mu);
	fail_at = nth ? async_no + nth : 0;
	pthread_mutex_unlock(&mu);
}

EXPORT void fakecuda_event_polls(uint32_t n);
EXPORT void fakecuda_event_polls(uint32_t n)
{
	pthread_mutex_lock(&mu);
	event_polls = n;
	pthread_mutex_unlock(&mu);
}
