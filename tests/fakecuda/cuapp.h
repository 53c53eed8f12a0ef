/* SPDX-License-Identifier: MIT */
/*
 * The CUDA program's side of the gdr/ tests and of the copy-engine
 * benchmark: the driver calls that own "GPU" memory, looked up by dlsym
 * in the driver $OVRDMA_LIBCUDA names (libcuda.so.1 without it), the
 * fake (tests/fakecuda) or a real one, and the cuMem allocation that
 * ovrdmad imports as it imports an application's; the fake GDRCopy's
 * own calls (NULL elsewhere). Header-only.
 */
#ifndef OVR_CUAPP_H
#define OVR_CUAPP_H

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include <ovrdma/gdr.h>

#include "cudadrv.h"
#include "fakecuda.h"

struct cuapp {
	gdr_CUresult (*init)(unsigned int);
	gdr_CUresult (*retain)(gdr_CUcontext *, gdr_CUdevice);
	gdr_CUresult (*set)(gdr_CUcontext);
	gdr_CUresult (*alloc)(gdr_CUdeviceptr *, size_t);
	gdr_CUresult (*free)(gdr_CUdeviceptr);
	gdr_CUresult (*htod)(gdr_CUdeviceptr, const void *, size_t);
	gdr_CUresult (*dtoh)(void *, gdr_CUdeviceptr, size_t);
	gdr_CUresult (*create)(gdr_CUmemGenericAllocationHandle *, size_t,
			       const gdr_CUmemAllocationProp *,
			       unsigned long long);
	gdr_CUresult (*reserve)(gdr_CUdeviceptr *, size_t, size_t,
				gdr_CUdeviceptr, unsigned long long);
	gdr_CUresult (*map)(gdr_CUdeviceptr, size_t, size_t,
			    gdr_CUmemGenericAllocationHandle,
			    unsigned long long);
	gdr_CUresult (*access)(gdr_CUdeviceptr, size_t,
			       const gdr_CUmemAccessDesc *, size_t);
	gdr_CUresult (*release)(gdr_CUmemGenericAllocationHandle);
	/* the fake's own (NULL on a real driver) */
	fakecuda_stats_fn stats;
	fakecuda_fail_fn fail_nth;
	fakecuda_event_polls_fn event_polls;
	fakegdr_stats_fn gdr_stats;
	fakegdr_pin_fail_fn gdr_pin_fail;
};

/*
 * Look the calls up and make device 0's primary context current on this
 * thread. 0; -EOPNOTSUPP: no driver, or a driver call missing; -EIO: the
 * driver refused.
 */
static inline int cuapp_load(struct cuapp *cu)
{
	const char *path = getenv(OVR_GDR_ENV);
	gdr_CUcontext ctx;
	void *lib = dlopen(path && *path ? path : OVR_GDR_LIBCUDA, RTLD_NOW);

	if (!lib)
		return -EOPNOTSUPP;
	*(void **)&cu->init = dlsym(lib, "cuInit");
	*(void **)&cu->retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
	*(void **)&cu->set = dlsym(lib, "cuCtxSetCurrent");
	*(void **)&cu->alloc = dlsym(lib, "cuMemAlloc_v2");
	*(void **)&cu->free = dlsym(lib, "cuMemFree_v2");
	*(void **)&cu->htod = dlsym(lib, "cuMemcpyHtoD_v2");
	*(void **)&cu->dtoh = dlsym(lib, "cuMemcpyDtoH_v2");
	*(void **)&cu->create = dlsym(lib, "cuMemCreate");
	*(void **)&cu->reserve = dlsym(lib, "cuMemAddressReserve");
	*(void **)&cu->map = dlsym(lib, "cuMemMap");
	*(void **)&cu->access = dlsym(lib, "cuMemSetAccess");
	*(void **)&cu->release = dlsym(lib, "cuMemRelease");
	*(void **)&cu->stats = dlsym(lib, FAKECUDA_STATS_SYM);
	*(void **)&cu->fail_nth = dlsym(lib, FAKECUDA_FAIL_SYM);
	*(void **)&cu->event_polls = dlsym(lib, FAKECUDA_EVENT_POLLS_SYM);
	*(void **)&cu->gdr_stats = dlsym(lib, FAKEGDR_STATS_SYM);
	*(void **)&cu->gdr_pin_fail = dlsym(lib, FAKEGDR_PIN_FAIL_SYM);
	if (!cu->init || !cu->retain || !cu->set || !cu->alloc || !cu->free ||
	    !cu->htod || !cu->dtoh || !cu->create || !cu->reserve || !cu->map ||
	    !cu->access || !cu->release)
		return -EOPNOTSUPP;
	if (cu->init(0) || cu->retain(&ctx, 0) || cu->set(ctx))
		return -EIO;
	return 0;
}

/*
 * A cuMem allocation of @len bytes on device 0 (@fd: exportable as a
 * POSIX fd; @rdma: gpuDirectRDMACapable, pinnable for GPUDirect RDMA and
 * GDRCopy - NCCL creates them both ways), mapped read-write at *@va.
 * With @fd its handle is released (the mapping keeps the memory), as
 * NCCL does. 0, or -EIO.
 */
static inline int cuapp_vmm_rdma(const struct cuapp *cu, size_t len, bool fd,
				 bool rdma, gdr_CUdeviceptr *va)
{
	gdr_CUmemAllocationProp prop = {
		.type = GDR_CU_MEM_ALLOCATION_TYPE_PINNED,
		.requestedHandleTypes =
			fd ? GDR_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : 0,
		.location = { .type = GDR_CU_MEM_LOCATION_TYPE_DEVICE,
			      .id = 0 },
		.allocFlags = { .gpuDirectRDMACapable = rdma },
	};
	gdr_CUmemAccessDesc acc = {
		.location = { .type = GDR_CU_MEM_LOCATION_TYPE_DEVICE,
			      .id = 0 },
		.flags = GDR_CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	};
	gdr_CUmemGenericAllocationHandle h;

	if (cu->create(&h, len, &prop, 0) || cu->reserve(va, len, 0, 0, 0) ||
	    cu->map(*va, len, 0, h, 0) || cu->access(*va, len, &acc, 1) ||
	    (fd && cu->release(h)))
		return -EIO;
	return 0;
}

/* cuapp_vmm_rdma, GPUDirect RDMA capable (as NCCL makes its buffers where
 * the GPU supports it). */
static inline int cuapp_vmm(const struct cuapp *cu, size_t len, bool fd,
			    gdr_CUdeviceptr *va)
{
	return cuapp_vmm_rdma(cu, len, fd, true, va);
}

/* cuapp_vmm_rdma, then exported and imported through @g as ovrdmad
 * imports an application's allocation. 0, or -errno. */
static inline int cuapp_import_rdma(const struct cuapp *cu, struct ovr_gdr *g,
				    size_t len, bool rdma, gdr_CUdeviceptr *va,
				    struct ovr_gdr_mem **m)
{
	struct ovr_gdr_export ex;
	int rc = cuapp_vmm_rdma(cu, len, true, rdma, va);

	if (!rc)
		rc = ovr_gdr_export(g, *va, len, &ex);
	if (!rc) {
		rc = ovr_gdr_import(g, &ex, m);
		close(ex.fd);
	}
	return rc;
}

static inline int cuapp_import(const struct cuapp *cu, struct ovr_gdr *g,
			       size_t len, gdr_CUdeviceptr *va,
			       struct ovr_gdr_mem **m)
{
	return cuapp_import_rdma(cu, g, len, true, va, m);
}

#endif /* OVR_CUAPP_H */
