/* SPDX-License-Identifier: MIT */
/*
 * gdr/: GPU memory for ovrdma (docs/GPU.md), phase 1.
 *
 * Two sides of one handover:
 *  - the exporter (the verbs provider, in the application) tells a CUDA
 *    device pointer from a host one (ovr_gdr_probe) and exports the
 *    allocation behind it (ovr_gdr_export): a cuMem (VMM) allocation as
 *    a POSIX file descriptor (cuMemRetainAllocationHandle +
 *    cuMemExportToShareableHandle), a cudaMalloc / cuMemAlloc one as a
 *    64-byte IPC handle (cuIpcGetMemHandle);
 *  - the importer (ovrdmad) maps that allocation into its own CUDA
 *    address space (ovr_gdr_import) and copies between it and host
 *    buffers: synchronously (ovr_gdr_write, ovr_gdr_read), or queued on
 *    the device's copy streams (ovr_gdr_write_async, ovr_gdr_read_async)
 *    when the host buffer is pinned (ovr_gdr_host_register), completed
 *    together by ovr_gdr_fence (phase 2, the copy engine); small copies
 *    through a BAR mapping of the allocation where GDRCopy is there
 *    (ovr_gdr_bar_open, ovr_gdr_copy_msg).
 *
 * libcuda is dlopened (path: $OVRDMA_LIBCUDA, else libcuda.so.1), with
 * gdr/'s own declarations of the few driver calls it makes: nothing
 * needs CUDA to build, and a machine without libcuda gets -EOPNOTSUPP
 * from ovr_gdr_open with a message saying why, and nothing else changes.
 *
 * Threading: an struct ovr_gdr may be used from several threads for
 * probe and export (the driver is thread-safe and gdr keeps no state for
 * them). Imports, copies and release belong to one thread (ovrdmad's
 * dataplane thread): they make the device's primary context current on
 * the calling thread.
 *
 * Returns: 0 or -errno unless said otherwise; the driver's own error of
 * the last failed call is in ovr_gdr_last_error().
 */
#ifndef OVRDMA_GDR_H
#define OVRDMA_GDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OVR_GDR_ENV "OVRDMA_LIBCUDA" /* libcuda to load instead */
#define OVR_GDR_LIBCUDA "libcuda.so.1"
#define OVR_GDR_IPC_LEN 64u /* CU_IPC_HANDLE_SIZE */
#define OVR_GDR_MAX_DEV 64u /* devices an importer keeps contexts for */
#define OVR_GDR_UUID_LEN 16u /* CUuuid */
#define OVR_GDR_MAX_BATCH 64u /* batch slots (ovr_gdr_batch_close) */
#define OVR_GDR_MAX_CHAN 16u /* copy channels, the base's included */

/* ovr_gdr_open flags */
enum {
	/*
	 * Use libcuda only if the process has already loaded it (the
	 * provider: an application with GPU pointers has; one without
	 * must not pay for loading and initialising the driver).
	 */
	OVR_GDR_NOLOAD = 1u,
};

enum ovr_gdr_kind {
	OVR_GDR_KIND_IPC = 1, /* cuIpcGetMemHandle: cudaMalloc, cuMemAlloc */
	OVR_GDR_KIND_FD = 2, /* cuMem allocation exported as a POSIX fd */
};

/* One exported allocation, as it travels to the importer. */
struct ovr_gdr_export {
	uint64_t base; /* allocation start in the exporter's address space */
	uint64_t size; /* allocation bytes */
	int32_t device; /* the exporter's CUDA device ordinal */
	/* the device's UUID (all zero: unknown; the importer then trusts
	 * @device, which assumes both sides number devices alike) */
	uint8_t uuid[OVR_GDR_UUID_LEN];
	uint32_t kind; /* enum ovr_gdr_kind */
	int fd; /* KIND_FD: the caller's to close; else -1 */
	uint8_t ipc[OVR_GDR_IPC_LEN]; /* KIND_IPC: the driver's handle */
};

struct ovr_gdr;
struct ovr_gdr_mem; /* one imported allocation */

/*
 * Load and initialise the driver. -EOPNOTSUPP: no libcuda (or, with
 * OVR_GDR_NOLOAD, not loaded in this process), or it lacks an entry
 * point; -ENODEV: cuInit failed or no device. @why (may be NULL) gets a
 * one-line reason on failure.
 */
int ovr_gdr_open(unsigned int flags, struct ovr_gdr **out, char *why,
		 size_t why_len);

/* Unload. Every import must have been released. NULL is a no-op. */
void ovr_gdr_close(struct ovr_gdr *g);

/*
 * Is [addr, addr + len) CUDA device memory? 1: yes, and the allocation
 * that holds it is [*base, *base + *size) on device *device (any output
 * may be NULL); 0: not device memory (host memory, or unknown to the
 * driver); -EINVAL: device memory, but the range does not lie inside one
 * allocation (or len is 0 or wraps).
 */
int ovr_gdr_probe(struct ovr_gdr *g, uint64_t addr, uint64_t len,
		  uint64_t *base, uint64_t *size, int *device);

/*
 * Export the allocation holding [addr, addr + len) (ovr_gdr_probe must
 * say 1). KIND_FD when it is a cuMem allocation (which must have been
 * created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, else
 * -EOPNOTSUPP), else KIND_IPC. -EINVAL: not device memory or not one
 * allocation.
 */
int ovr_gdr_export(struct ovr_gdr *g, uint64_t addr, uint64_t len,
		   struct ovr_gdr_export *ex);

/*
 * Map an exported allocation into this process (@ex->fd is not taken:
 * close it afterwards), on the device whose UUID is @ex->uuid (or, where
 * UUIDs are unknown, the one numbered @ex->device). IPC imports of the
 * same handle share one mapping and count references. -EINVAL: malformed
 * @ex or a handle the driver refuses (unknown, stale, from a process
 * that exited); -ENODEV: no such device (not visible here); -ENOMEM.
 */
int ovr_gdr_import(struct ovr_gdr *g, const struct ovr_gdr_export *ex,
		   struct ovr_gdr_mem **out);

/* Drop one reference; the last one unmaps. NULL is a no-op. */
void ovr_gdr_release(struct ovr_gdr_mem *m);

/* Bytes of the imported allocation. */
uint64_t ovr_gdr_mem_size(const struct ovr_gdr_mem *m);

/*
 * Copy @len bytes host -> device at offset @off of @m (write) or device
 * -> host (read); synchronous: the bytes are in place when it returns.
 * -ERANGE: beyond the allocation; -EIO: the driver failed.
 */
int ovr_gdr_write(struct ovr_gdr_mem *m, uint64_t off, const void *src,
		  size_t len);
int ovr_gdr_read(struct ovr_gdr_mem *m, uint64_t off, void *dst, size_t len);

/* @uuid as nvidia-smi writes it: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
 * (@len ≥ 41 for all of it). */
void ovr_gdr_uuid_str(const uint8_t *uuid, char *buf, size_t len);

/*
 * Asynchronous copies (the copy engine, docs/GPU.md). The same as
 * ovr_gdr_write / ovr_gdr_read, except that when the host range lies in
 * memory pinned with ovr_gdr_host_register (and the driver has the
 * async calls) the copy is only queued: 1 is returned, and the bytes are
 * in place (at the device, or in @dst) after the next ovr_gdr_fence; the
 * host buffer must stay untouched until then. Otherwise the copy is done
 * when it returns (0). Copies are performed in the order they were
 * queued with respect to each other where they could conflict (same
 * direction; or the same allocation). -ERANGE, -EIO (a failure of the
 * driver, or of an earlier queued copy found while waiting).
 */
int ovr_gdr_write_async(struct ovr_gdr_mem *m, uint64_t off, const void *src,
			size_t len);
int ovr_gdr_read_async(struct ovr_gdr_mem *m, uint64_t off, void *dst,
		       size_t len);

/*
 * Wait until every copy queued so far is done. 0; -EIO: at least one of
 * them (or one waited for meanwhile, e.g. by a release) failed - which
 * is not known, so every user of the batch must treat its copies as
 * failed. Cheap when nothing is queued.
 */
int ovr_gdr_fence(struct ovr_gdr *g);

/*
 * Batches (the pipelined copy engine, docs/GPU.md §1.1): the copies
 * queued since the last ovr_gdr_batch_close form batch @slot (below
 * OVR_GDR_MAX_BATCH; the caller's, free again once polled done): an
 * event is recorded on each stream that got one of them. 0, or -EIO
 * when recording failed (the batch is then waited for here, and its
 * poll reports the failure). An empty batch is done at once.
 *
 * ovr_gdr_batch_poll: is batch @slot done? 0: yes, every copy in it
 * succeeded and the slot is free; -EAGAIN: not yet (only without
 * @wait: with it, it waits - cuEventSynchronize); -EIO: done, but a copy
 * in it failed (or one whose batch is unknown, found by a synchronous
 * copy or a fence meanwhile: every batch open then fails). Batches
 * must be polled in the order they were closed. ovr_gdr_fence waits for
 * every batch's copies too (their polls then answer at once).
 */
int ovr_gdr_batch_close(struct ovr_gdr *g, unsigned int slot);
int ovr_gdr_batch_poll(struct ovr_gdr *g, unsigned int slot, bool wait);

/*
 * Channels (one per thread that copies: ovrdmad's dataplane cores).
 * ovr_gdr_chan_open gives *@chan, a struct ovr_gdr over @base's driver,
 * imports and pinned host ranges with copy state of its own: its
 * streams, events, batch slots, fences and statistics. Copies through
 * different channels may run on different threads at once; what two
 * channels copy of one allocation is not ordered between them. Open,
 * close, import, release, host_register and bar_open (all on the base)
 * must not run beside a copy on any channel. ovr_gdr_close of a channel
 * fences it; of the base, closes its channels first. The base's
 * ovr_gdr_get_stats adds its channels' figures. -EINVAL (@base is a
 * channel), -ENOSPC (OVR_GDR_MAX_CHAN open), -ENOMEM.
 *
 * ovr_gdr_chan_copy_msg: ovr_gdr_copy_msg through channel @g (for the
 * base, the same call); ovr_gdr_fence and the batch calls take the
 * channel as @g.
 */
int ovr_gdr_chan_open(struct ovr_gdr *base, struct ovr_gdr **chan);
int ovr_gdr_chan_copy_msg(struct ovr_gdr *g, struct ovr_gdr_mem *m,
			  uint64_t off, void *host, size_t len, bool to_dev,
			  uint64_t msg_len);

/*
 * Pin host memory (cuMemHostRegister, portable to every device's
 * context) so that copies to and from it may be queued: the packet
 * buffers. -EOPNOTSUPP: the driver has no asynchronous copies; -EEXIST:
 * overlaps a registered range; -EINVAL, -ENOMEM, -EIO.
 * ovr_gdr_host_unregister takes the start of a registered range (fences
 * first); -ENOENT if none starts there. ovr_gdr_close unregisters all.
 */
int ovr_gdr_host_register(struct ovr_gdr *g, void *addr, size_t len);
int ovr_gdr_host_unregister(struct ovr_gdr *g, void *addr);

/*
 * BAR copies through GDRCopy (docs/GPU.md §1.2): the CPU writes and
 * reads GPU memory through a mapping of the GPU's BAR (gdr_pin_buffer +
 * gdr_map), synchronously, without a stream, an event or a batch - the
 * latency of a small copy is then the CPU's few hundred nanoseconds
 * instead of a stream copy's microseconds.
 *
 * ovr_gdr_bar_open: load libgdrapi ($OVRDMA_LIBGDRAPI, else
 * libgdrapi.so.2) and open it (gdr_open: the gdrdrv kernel module).
 * 0: on; -EOPNOTSUPP: no library, or one without a call gdr/ needs;
 * -ENODEV: gdr_open failed (gdrdrv not loaded); @why says which;
 * -EALREADY: on already; -ENOMEM. BAR
 * copies are off until it succeeds, and then only for messages of at
 * most @cfg's limits (NULL: the defaults). Importer only.
 */
#define OVR_GDR_BAR_ENV "OVRDMA_LIBGDRAPI" /* libgdrapi to load instead */
#define OVR_GDR_LIBGDRAPI "libgdrapi.so.2"
/* Defaults (docs/GPU.md §1.2: GDRCopy's copylat figures, UCX's
 * gdr_copy / cuda_copy cost estimates). */
#define OVR_GDR_BAR_H2D_MAX 16384u /* write-combined BAR writes: fast */
#define OVR_GDR_BAR_D2H_MAX 2048u /* uncached BAR reads: slow */
#define OVR_GDR_BAR_MAX (1u << 20) /* largest limit accepted */

struct ovr_gdr_bar_cfg {
	/* messages of at most this many bytes are copied through the BAR,
	 * host -> GPU and GPU -> host; 0: never in that direction */
	uint32_t h2d_max, d2h_max;
	/* (optional) told once per allocation that cannot be mapped (a
	 * one-line message): its copies take the streams */
	void (*note)(void *ctx, const char *msg);
	void *note_ctx;
};
int ovr_gdr_bar_open(struct ovr_gdr *g, const struct ovr_gdr_bar_cfg *cfg,
		     char *why, size_t why_len);

/*
 * One BAR copy of @len bytes at offset @off of @m, done when it returns
 * (a write is read back through the BAR first, so that it is in GPU
 * memory: docs/GPU.md §1.2). The allocation is pinned and mapped at its
 * first BAR copy and unmapped at its release. 0: done; -EOPNOTSUPP: no
 * BAR copies (off, or this allocation cannot be mapped: never retried);
 * -EBUSY: stream copies of this allocation are not known to be done, a
 * BAR copy could overtake them (take the streams: they keep the order);
 * -ERANGE; -EIO.
 */
int ovr_gdr_bar_write(struct ovr_gdr_mem *m, uint64_t off, const void *src,
		      size_t len);
int ovr_gdr_bar_read(struct ovr_gdr_mem *m, uint64_t off, void *dst,
		     size_t len);

/*
 * The copy engine's copy (ops.dev_copy): @len bytes of a message of
 * @msg_len bytes (0: @len). Through the BAR when BAR copies are on,
 * @msg_len is within the direction's limit and ovr_gdr_bar_* can (0:
 * done); otherwise as ovr_gdr_write_async / ovr_gdr_read_async (0 done,
 * 1 queued). -ERANGE, -EIO.
 */
int ovr_gdr_copy_msg(struct ovr_gdr_mem *m, uint64_t off, void *host,
		     size_t len, bool to_dev, uint64_t msg_len);

struct ovr_gdr_stats {
	uint64_t async_copies; /* queued (pinned host memory) */
	uint64_t async_bytes;
	uint64_t sync_copies; /* waited for at once (pageable, or sync API) */
	uint64_t fences; /* ovr_gdr_fence calls that had work to wait for */
	uint64_t fence_errors; /* ... that reported a failed copy */
	uint64_t waits; /* cross-direction orderings (stream waits) */
	uint64_t batches; /* ovr_gdr_batch_close calls with copies */
	uint64_t batch_events; /* events recorded for them */
	uint64_t batch_not_ready; /* polls that found a batch running */
	uint64_t batch_waits; /* polls that waited (cuEventSynchronize) */
	uint64_t batch_errors; /* batches that reported a failed copy */
	uint64_t pinned_bytes; /* registered now */
	uint32_t pinned_ranges;
	uint32_t streams; /* copy streams created */
	uint32_t pending; /* copies queued since the last fence */
	bool async; /* the driver has the asynchronous calls */
	/* BAR copies (GDRCopy) */
	bool bar; /* on: ovr_gdr_bar_open succeeded */
	uint32_t bar_h2d_max, bar_d2h_max; /* its limits */
	uint32_t bar_mapped; /* allocations mapped now */
	uint64_t bar_copies; /* BAR copies done, both ways */
	uint64_t bar_bytes;
	uint64_t bar_reads; /* ... of them GPU -> host */
	uint64_t bar_busy; /* small copies that took the streams because
			    * stream copies of their allocation were not
			    * known to be done */
	uint64_t bar_pins; /* allocations pinned and mapped */
	uint64_t bar_pin_failures; /* ... that could not be: streams only */
};
void ovr_gdr_get_stats(const struct ovr_gdr *g, struct ovr_gdr_stats *st);

/* Imported allocations (distinct mappings) and references held now. */
uint32_t ovr_gdr_nimports(const struct ovr_gdr *g);
uint32_t ovr_gdr_nrefs(const struct ovr_gdr *g);

/* The driver's name for the last error of a call on @g ("" if none). */
const char *ovr_gdr_last_error(const struct ovr_gdr *g);

#ifdef __cplusplus
}
#endif

#endif /* OVRDMA_GDR_H */
