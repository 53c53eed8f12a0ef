/* SPDX-License-Identifier: MIT */
/*
 * The few GDRCopy (libgdrapi, github.com/NVIDIA/gdrcopy) types and entry
 * points gdr/ uses for BAR copies, declared here so that nothing in
 * ovrdma needs gdrapi.h to build: libgdrapi is dlopened at run time
 * ($OVRDMA_LIBGDRAPI, else libgdrapi.so.2). Layouts and calling
 * conventions are those of gdrapi.h 2.x (checked against 2.5 and 2.6);
 * names carry a gdrc_ prefix so that they never clash with gdrapi.h.
 * Private to gdr/ and to the fake in tests/fakecuda, which implements
 * exactly these.
 *
 * Conventions of the real library: gdr_open answers NULL when neither
 * the gdrdrv kernel module (/dev/gdrdrv) nor, from 2.6 on, a CUDA
 * driver that mmaps dma-bufs is there; every other call returns 0 or a
 * positive errno. gdr_pin_buffer needs a GPU-page (64 KiB) aligned
 * address for gdr_map to work; gdr_get_info says where the pinned span
 * starts (info.va) and how long it is. gdr_copy_to_mapping ends with a
 * store fence (sfence on x86) after its write-combined stores.
 */
#ifndef OVR_GDR_GDRCOPY_H
#define OVR_GDR_GDRCOPY_H

#include <stddef.h>
#include <stdint.h>

#define GDRC_GPU_PAGE (1ull << 16) /* GPU_PAGE_SIZE: what gdrdrv pins */

typedef struct gdrc_st *gdrc_t; /* gdr_t */

/* gdr_mh_t: a struct holding an unsigned long, passed by value */
typedef struct {
	unsigned long h;
} gdrc_mh_t;

/*
 * gdr_info_v2_t. gdr_get_info (the 1.x/2.0-2.2 symbol) fills the same
 * fields up to wc_mapping; gdr_get_info_v2 (2.3 on) adds mapping_type.
 * gdr/ reads only va and mapped_size, which both lay out alike.
 */
typedef struct {
	uint64_t va; /* the pinned span's first byte (GPU address) */
	uint64_t mapped_size; /* its bytes */
	uint32_t page_size;
	uint64_t tm_cycles; /* deprecated */
	uint32_t cycles_per_ms; /* deprecated */
	unsigned mapped : 1;
	unsigned wc_mapping : 1;
	int mapping_type; /* gdr_mapping_type_t: 1 WC, 2 caching, 3 device */
} gdrc_info_t;

/*
 * X(symbol, name, return type, parameters): the calls gdr/ needs.
 * gdr_get_info is looked up apart (gdr_get_info_v2, else gdr_get_info).
 */
#define GDRC_FUNCS(X)                                                          \
	X("gdr_open", open, gdrc_t, (void))                                    \
	X("gdr_close", close, int, (gdrc_t g))                                 \
	X("gdr_pin_buffer", pin_buffer, int,                                   \
	  (gdrc_t g, unsigned long addr, size_t size, uint64_t p2p_token,      \
	   uint32_t va_space, gdrc_mh_t *handle))                              \
	X("gdr_unpin_buffer", unpin_buffer, int, (gdrc_t g, gdrc_mh_t handle)) \
	X("gdr_map", map, int,                                                 \
	  (gdrc_t g, gdrc_mh_t handle, void **va, size_t size))                \
	X("gdr_unmap", unmap, int,                                             \
	  (gdrc_t g, gdrc_mh_t handle, void *va, size_t size))                 \
	X("gdr_copy_to_mapping", copy_to_mapping, int,                         \
	  (gdrc_mh_t handle, void *map_d_ptr, const void *h_ptr, size_t size)) \
	X("gdr_copy_from_mapping", copy_from_mapping, int,                     \
	  (gdrc_mh_t handle, void *h_ptr, const void *map_d_ptr, size_t size))

typedef int (*gdrc_get_info_fn)(gdrc_t g, gdrc_mh_t handle, gdrc_info_t *info);

#endif /* OVR_GDR_GDRCOPY_H */
