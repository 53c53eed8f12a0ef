/* SPDX-License-Identifier: MIT */
/*
 * The few CUDA driver API types, values and entry points gdr/ uses,
 * declared here so that nothing in ovrdma needs cuda.h to build (CI has
 * no CUDA; libcuda is dlopened at run time). Values and layouts are those
 * of the driver API (checked against CUDA 13's cuda.h); names carry a
 * gdr_ prefix so that they never clash with cuda.h where a program
 * includes both. Private to gdr/ and to the fake driver in
 * tests/fakecuda, which implements exactly these.
 *
 * Symbol names: cuda.h maps several functions to versioned symbols
 * (cuMemcpyHtoD is cuMemcpyHtoD_v2, cuIpcOpenMemHandle is
 * cuIpcOpenMemHandle_v2, ...); GDR_SYM_* are the names libcuda exports.
 */
#ifndef OVR_GDR_CUDADRV_H
#define OVR_GDR_CUDADRV_H

#include <stddef.h>

typedef int gdr_CUresult;
typedef unsigned long long gdr_CUdeviceptr;
typedef int gdr_CUdevice;
typedef struct gdr_CUctx_st *gdr_CUcontext;
typedef unsigned long long gdr_CUmemGenericAllocationHandle;
typedef struct gdr_CUstream_st *gdr_CUstream;
typedef struct gdr_CUevent_st *gdr_CUevent;

/* CUresult values used */
enum {
	GDR_CUDA_SUCCESS = 0,
	GDR_CUDA_ERROR_INVALID_VALUE = 1,
	GDR_CUDA_ERROR_OUT_OF_MEMORY = 2,
	GDR_CUDA_ERROR_NOT_INITIALIZED = 3,
	GDR_CUDA_ERROR_NO_DEVICE = 100,
	GDR_CUDA_ERROR_INVALID_DEVICE = 101,
	GDR_CUDA_ERROR_INVALID_CONTEXT = 201,
	GDR_CUDA_ERROR_INVALID_HANDLE = 400,
	GDR_CUDA_ERROR_NOT_FOUND = 500,
	GDR_CUDA_ERROR_NOT_READY = 600,
	GDR_CUDA_ERROR_ILLEGAL_ADDRESS = 700,
	GDR_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
	GDR_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
	GDR_CUDA_ERROR_NOT_SUPPORTED = 801,
};

/* CUstream_flags, CUevent_flags, cuMemHostRegister flags */
#define GDR_CU_STREAM_NON_BLOCKING 0x1u
#define GDR_CU_EVENT_DISABLE_TIMING 0x2u
#define GDR_CU_MEMHOSTREGISTER_PORTABLE 0x1u

/* CUpointer_attribute values used */
enum {
	GDR_CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
	GDR_CU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 6,
	GDR_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
	GDR_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
	GDR_CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
};

/* CUmemorytype */
enum {
	GDR_CU_MEMORYTYPE_HOST = 1,
	GDR_CU_MEMORYTYPE_DEVICE = 2,
};

/* CUipcMem_flags */
#define GDR_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1u

#define GDR_CU_IPC_HANDLE_SIZE 64
typedef struct {
	char reserved[GDR_CU_IPC_HANDLE_SIZE];
} gdr_CUipcMemHandle;

/* CUmemAllocationHandleType, CUmemLocationType, CUmemAccess_flags,
 * CUmemAllocationType */
enum {
	GDR_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
	GDR_CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
	GDR_CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
	GDR_CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
};

typedef struct {
	int type; /* CUmemLocationType */
	int id; /* device ordinal */
} gdr_CUmemLocation;

typedef struct {
	gdr_CUmemLocation location;
	int flags; /* CUmemAccess_flags */
} gdr_CUmemAccessDesc;

typedef struct {
	int type; /* CUmemAllocationType */
	int requestedHandleTypes; /* CUmemAllocationHandleType bits */
	gdr_CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} gdr_CUmemAllocationProp;

typedef struct {
	unsigned char bytes[16];
} gdr_CUuuid;

/* CUmemRangeHandleType */
#define GDR_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 0x1

_Static_assert(sizeof(gdr_CUipcMemHandle) == 64, "CUipcMemHandle");
_Static_assert(sizeof(gdr_CUmemAccessDesc) == 12, "CUmemAccessDesc");
_Static_assert(sizeof(gdr_CUmemAllocationProp) == 32, "CUmemAllocationProp");

/*
 * The entry points: X(symbol, name, return, parameters). gdr.c turns
 * this into its table of function pointers, the fake into definitions.
 */
#define GDR_CUDA_FUNCS(X)                                                      \
	X("cuInit", cuInit, (unsigned int flags))                              \
	X("cuGetErrorString", cuGetErrorString,                                \
	  (gdr_CUresult err, const char **str))                                \
	X("cuDeviceGetCount", cuDeviceGetCount, (int *count))                  \
	X("cuDeviceGet", cuDeviceGet, (gdr_CUdevice * dev, int ordinal))       \
	X("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain,                \
	  (gdr_CUcontext * ctx, gdr_CUdevice dev))                             \
	X("cuDevicePrimaryCtxRelease_v2", cuDevicePrimaryCtxRelease,           \
	  (gdr_CUdevice dev))                                                  \
	X("cuCtxSetCurrent", cuCtxSetCurrent, (gdr_CUcontext ctx))             \
	X("cuPointerGetAttribute", cuPointerGetAttribute,                      \
	  (void *data, int attribute, gdr_CUdeviceptr ptr))                    \
	X("cuIpcGetMemHandle", cuIpcGetMemHandle,                              \
	  (gdr_CUipcMemHandle * handle, gdr_CUdeviceptr dptr))                 \
	X("cuIpcOpenMemHandle_v2", cuIpcOpenMemHandle,                         \
	  (gdr_CUdeviceptr * dptr, gdr_CUipcMemHandle handle,                  \
	   unsigned int flags))                                                \
	X("cuIpcCloseMemHandle", cuIpcCloseMemHandle, (gdr_CUdeviceptr dptr))  \
	X("cuMemRetainAllocationHandle", cuMemRetainAllocationHandle,          \
	  (gdr_CUmemGenericAllocationHandle * handle, void *addr))             \
	X("cuMemExportToShareableHandle", cuMemExportToShareableHandle,        \
	  (void *shareable, gdr_CUmemGenericAllocationHandle handle, int type, \
	   unsigned long long flags))                                          \
	X("cuMemImportFromShareableHandle", cuMemImportFromShareableHandle,    \
	  (gdr_CUmemGenericAllocationHandle * handle, void *os_handle,         \
	   int type))                                                          \
	X("cuMemAddressReserve", cuMemAddressReserve,                          \
	  (gdr_CUdeviceptr * ptr, size_t size, size_t align,                   \
	   gdr_CUdeviceptr addr, unsigned long long flags))                    \
	X("cuMemAddressFree", cuMemAddressFree,                                \
	  (gdr_CUdeviceptr ptr, size_t size))                                  \
	X("cuMemMap", cuMemMap,                                                \
	  (gdr_CUdeviceptr ptr, size_t size, size_t offset,                    \
	   gdr_CUmemGenericAllocationHandle handle, unsigned long long flags)) \
	X("cuMemSetAccess", cuMemSetAccess,                                    \
	  (gdr_CUdeviceptr ptr, size_t size, const gdr_CUmemAccessDesc *desc,  \
	   size_t count))                                                      \
	X("cuMemUnmap", cuMemUnmap, (gdr_CUdeviceptr ptr, size_t size))        \
	X("cuMemRelease", cuMemRelease,                                        \
	  (gdr_CUmemGenericAllocationHandle handle))                           \
	X("cuMemcpyHtoD_v2", cuMemcpyHtoD,                                     \
	  (gdr_CUdeviceptr dst, const void *src, size_t len))                  \
	X("cuMemcpyDtoH_v2", cuMemcpyDtoH,                                     \
	  (void *dst, gdr_CUdeviceptr src, size_t len))

/*
 * Entry points gdr/ uses when the driver has them and does without
 * otherwise (same form): cuDeviceGetUuid_v2 (CUDA 11.4) names devices
 * across processes whose device numbering differs; cuPointerSetAttribute
 * (SYNC_MEMOPS) makes the driver's synchronous copies of an allocation
 * complete before they return, as a BAR mapping sees them (the
 * GPUDirect RDMA guide's "Synchronization and Memory Ordering").
 */
#define GDR_CUDA_OPT_FUNCS(X)                             \
	X("cuDeviceGetUuid_v2", cuDeviceGetUuid,          \
	  (gdr_CUuuid * uuid, gdr_CUdevice dev))          \
	X("cuPointerSetAttribute", cuPointerSetAttribute, \
	  (const void *value, int attribute, gdr_CUdeviceptr ptr))

/*
 * The copy engine's entry points (phase 2): pinned host memory, streams,
 * asynchronous copies, events (recorded at the end of each batch and
 * polled with cuEventQuery: the pipelined copy engine). Optional: a
 * driver that lacks one of them gets synchronous copies, as in phase 1.
 */
#define GDR_CUDA_ASYNC_FUNCS(X)                                              \
	X("cuMemHostRegister_v2", cuMemHostRegister,                         \
	  (void *p, size_t len, unsigned int flags))                         \
	X("cuMemHostUnregister", cuMemHostUnregister, (void *p))             \
	X("cuStreamCreate", cuStreamCreate,                                  \
	  (gdr_CUstream * stream, unsigned int flags))                       \
	X("cuStreamDestroy_v2", cuStreamDestroy, (gdr_CUstream stream))      \
	X("cuStreamSynchronize", cuStreamSynchronize, (gdr_CUstream stream)) \
	X("cuStreamWaitEvent", cuStreamWaitEvent,                            \
	  (gdr_CUstream stream, gdr_CUevent ev, unsigned int flags))         \
	X("cuEventCreate", cuEventCreate,                                    \
	  (gdr_CUevent * ev, unsigned int flags))                            \
	X("cuEventDestroy_v2", cuEventDestroy, (gdr_CUevent ev))             \
	X("cuEventRecord", cuEventRecord,                                    \
	  (gdr_CUevent ev, gdr_CUstream stream))                             \
	X("cuEventQuery", cuEventQuery, (gdr_CUevent ev))                    \
	X("cuEventSynchronize", cuEventSynchronize, (gdr_CUevent ev))        \
	X("cuMemcpyHtoDAsync_v2", cuMemcpyHtoDAsync,                         \
	  (gdr_CUdeviceptr dst, const void *src, size_t len,                 \
	   gdr_CUstream stream))                                             \
	X("cuMemcpyDtoHAsync_v2", cuMemcpyDtoHAsync,                         \
	  (void *dst, gdr_CUdeviceptr src, size_t len, gdr_CUstream stream))

#endif /* OVR_GDR_CUDADRV_H */
