// SPDX-License-Identifier: MIT
/*
 * gdr/ against the fake CUDA driver (tests/fakecuda, path in
 * $OVRDMA_LIBCUDA, set by meson): loading and its failures, telling
 * device pointers from host ones, export of cuMemAlloc memory (IPC
 * handle, to a forked child, since a process cannot open its own) and
 * of cuMem memory (POSIX fd), import, copies both ways byte-exact,
 * shared IPC imports, release, the errors of bad handles, devices named
 * by UUID; the copy
 * engine's asynchronous copies (queued until a fence, ordered, batched,
 * pinned memory, failures reported by the fence); BAR copies through the
 * fake GDRCopy ($OVRDMA_LIBGDRAPI: the same library): off without it,
 * small messages through the BAR and in GPU memory at return, ordered
 * against stream copies, fallback when pinning fails, release; copy
 * channels used by two threads at once.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <ovrdma/gdr.h>

#include "cuapp.h"
#include "cudadrv.h"
#include "fakecuda.h"

#define MB (1ull << 20)

/* What a CUDA program would call (the fake's own entry points). */
static struct cuapp cu;

static void load_app_side(void)
{
	assert_non_null(getenv(OVR_GDR_ENV));
	assert_int_equal(cuapp_load(&cu), 0);
	assert_non_null(cu.stats);
	assert_non_null(cu.fail_nth);
}

static void fill(uint8_t *b, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 131 + seed + (i >> 9));
}

static void test_open_failures(void **state)
{
	const char *real = getenv(OVR_GDR_ENV);
	char saved[512], why[256] = "";
	struct ovr_gdr *g = NULL;

	(void)state;
	snprintf(saved, sizeof(saved), "%s", real);
	setenv(OVR_GDR_ENV, "/nonexistent/libcuda.so.1", 1);
	assert_int_equal(ovr_gdr_open(0, &g, why, sizeof(why)), -EOPNOTSUPP);
	assert_non_null(strstr(why, "no CUDA driver"));
	/* NOLOAD: the fake is not loaded in this process yet */
	setenv(OVR_GDR_ENV, saved, 1);
	why[0] = 0;
	assert_int_equal(ovr_gdr_open(OVR_GDR_NOLOAD, &g, why, sizeof(why)),
			 -EOPNOTSUPP);
	assert_non_null(strstr(why, "not loaded"));
	/* a library without the driver's entry points */
	setenv(OVR_GDR_ENV, "libm.so.6", 1);
	assert_int_equal(ovr_gdr_open(0, &g, why, sizeof(why)), -EOPNOTSUPP);
	assert_non_null(strstr(why, "has no cuInit"));
	setenv(OVR_GDR_ENV, saved, 1);
	assert_null(g);
}

static void test_probe(void **state)
{
	struct ovr_gdr *g;
	gdr_CUdeviceptr d;
	uint64_t base, size;
	int dev = -1;
	static uint8_t host[64];

	(void)state;
	load_app_side();
	assert_int_equal(ovr_gdr_open(OVR_GDR_NOLOAD, &g, NULL, 0), 0);
	assert_int_equal(cu.alloc(&d, 3 * MB), 0);
	assert_int_equal(ovr_gdr_probe(g, (uintptr_t)host, sizeof(host), NULL,
				       NULL, NULL),
			 0);
	assert_int_equal(ovr_gdr_probe(g, d + 4096, MB, &base, &size, &dev), 1);
	assert_int_equal(base, d);
	assert_int_equal(size, 3 * MB);
	assert_int_equal(dev, 0);
	/* crosses the end of the allocation, empty, wrapping */
	assert_int_equal(ovr_gdr_probe(g, d + MB, 3 * MB, NULL, NULL, NULL),
			 -EINVAL);
	assert_int_equal(ovr_gdr_probe(g, d, 0, NULL, NULL, NULL), -EINVAL);
	assert_int_equal(ovr_gdr_probe(g, UINT64_MAX - 4, 16, NULL, NULL, NULL),
			 -EINVAL);
	assert_int_equal(cu.free(d), 0);
	assert_int_equal(ovr_gdr_probe(g, d, 1, NULL, NULL, NULL), 0);
	ovr_gdr_close(g);
}

/* A child allocates and exports; the parent imports, reads, writes. */
static void test_ipc_cross_process(void **state)
{
	int to_parent[2], to_child[2];
	struct ovr_gdr_export ex, bad;
	struct ovr_gdr_mem *m, *m2;
	const size_t len = 5 * MB + 123;
	uint8_t *want = malloc(len), *got = malloc(len);
	struct ovr_gdr *g;
	int status;
	pid_t pid;
	char c;

	(void)state;
	assert_non_null(want);
	assert_non_null(got);
	load_app_side();
	assert_int_equal(pipe(to_parent), 0);
	assert_int_equal(pipe(to_child), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ovr_gdr *cg;
		gdr_CUdeviceptr d;
		int bad_bytes = 0;

		if (ovr_gdr_open(OVR_GDR_NOLOAD, &cg, NULL, 0) ||
		    cu.alloc(&d, len))
			_exit(2);
		fill(want, len, 7);
		if (cu.htod(d, want, len) ||
		    ovr_gdr_export(cg, d + 100, 4096, &ex) ||
		    ex.kind != OVR_GDR_KIND_IPC || ex.base != d ||
		    ex.size != len || ex.fd != -1)
			_exit(3);
		if (write(to_parent[1], &ex, sizeof(ex)) != sizeof(ex) ||
		    read(to_child[0], &c, 1) != 1)
			_exit(4);
		/* the parent wrote seed 9 over [1 MB, 2 MB) */
		if (cu.dtoh(got, d, len))
			_exit(5);
		fill(want + MB, MB, 9);
		for (size_t i = 0; i < len; i++)
			bad_bytes += got[i] != want[i];
		_exit(bad_bytes ? 6 : 0);
	}
	assert_int_equal(read(to_parent[0], &ex, sizeof(ex)), sizeof(ex));
	assert_int_equal(ovr_gdr_open(OVR_GDR_NOLOAD, &g, NULL, 0), 0);

	/* a made-up handle and one with a wrong nonce are refused */
	bad = ex;
	memset(bad.ipc, 0x5a, sizeof(bad.ipc));
	assert_int_equal(ovr_gdr_import(g, &bad, &m), -EINVAL);
	assert_non_null(strstr(ovr_gdr_last_error(g), "cuIpcOpenMemHandle"));
	bad = ex;
	bad.ipc[24] ^= 1;
	assert_int_equal(ovr_gdr_import(g, &bad, &m), -EINVAL);
	bad = ex;
	bad.kind = 7;
	assert_int_equal(ovr_gdr_import(g, &bad, &m), -EINVAL);
	bad = ex;
	memset(bad.uuid, 0, sizeof(bad.uuid)); /* no UUID: the ordinal */
	bad.device = 3;
	assert_int_equal(ovr_gdr_import(g, &bad, &m), -ENODEV);
	assert_int_equal(ovr_gdr_nimports(g), 0);
	/* the UUID names the device, whatever the exporter numbered it */
	bad = ex;
	bad.device = 3;
	assert_int_equal(ovr_gdr_import(g, &bad, &m), 0);
	ovr_gdr_release(m);
	assert_int_equal(ovr_gdr_nimports(g), 0);

	assert_int_equal(ovr_gdr_import(g, &ex, &m), 0);
	assert_int_equal(ovr_gdr_mem_size(m), len);
	/* the same handle again shares the mapping */
	assert_int_equal(ovr_gdr_import(g, &ex, &m2), 0);
	assert_ptr_equal(m, m2);
	assert_int_equal(ovr_gdr_nimports(g), 1);
	assert_int_equal(ovr_gdr_nrefs(g), 2);
	ovr_gdr_release(m2);
	assert_int_equal(ovr_gdr_nrefs(g), 1);

	fill(want, len, 7);
	assert_int_equal(ovr_gdr_read(m, 0, got, len), 0);
	assert_memory_equal(got, want, len);
	assert_int_equal(ovr_gdr_read(m, len - 10, got, 11), -ERANGE);
	assert_int_equal(ovr_gdr_read(m, len + 1, got, 0), -ERANGE);
	fill(want, MB, 9);
	assert_int_equal(ovr_gdr_write(m, MB, want, MB), 0);
	assert_int_equal(write(to_child[1], "x", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* the exporter is gone: the mapping stays valid until released... */
	assert_int_equal(ovr_gdr_read(m, MB, got, MB), 0);
	assert_memory_equal(got, want, MB);
	ovr_gdr_release(m);
	assert_int_equal(ovr_gdr_nimports(g), 0);
	assert_int_equal(ovr_gdr_nrefs(g), 0);
	/* ...and its handle no longer opens */
	assert_int_equal(ovr_gdr_import(g, &ex, &m), -EINVAL);
	ovr_gdr_close(g);
	free(want);
	free(got);
}

/* cuMem memory: exported as a file descriptor (only if created so). */
static void test_fd_export(void **state)
{
	gdr_CUdeviceptr va1, va2;
	struct ovr_gdr_export ex, bad;
	struct ovr_gdr_mem *m;
	uint8_t *want = malloc(4 * MB), *got = malloc(4 * MB);
	struct ovr_gdr *g;

	(void)state;
	load_app_side();
	assert_int_equal(ovr_gdr_open(OVR_GDR_NOLOAD, &g, NULL, 0), 0);
	/* without POSIX_FD among its handle types: not exportable */
	assert_int_equal(cuapp_vmm(&cu, 2 * MB, false, &va1), 0);
	assert_int_equal(ovr_gdr_probe(g, va1, 64, NULL, NULL, NULL), 1);
	assert_int_equal(ovr_gdr_export(g, va1, 64, &ex), -EOPNOTSUPP);
	assert_int_equal(ex.fd, -1);

	/* with it (and its handle released once mapped, as NCCL does) */
	assert_int_equal(cuapp_vmm(&cu, 4 * MB, true, &va2), 0);
	fill(want, 4 * MB, 3);
	assert_int_equal(cu.htod(va2, want, 4 * MB), 0);
	assert_int_equal(ovr_gdr_export(g, va2 + MB, MB, &ex), 0);
	assert_int_equal(ex.kind, OVR_GDR_KIND_FD);
	assert_true(ex.fd >= 0);
	assert_int_equal(ex.base, va2);
	assert_int_equal(ex.size, 4 * MB);

	/* an fd that is not exported device memory is refused */
	bad = ex;
	bad.fd = 0;
	assert_int_equal(ovr_gdr_import(g, &bad, &m), -EINVAL);
	bad.fd = -1;
	assert_int_equal(ovr_gdr_import(g, &bad, &m), -EINVAL);
	/* the device travels as its UUID: one this process does not see is
	 * -ENODEV, said by name, whatever the ordinal */
	assert_memory_equal(ex.uuid, "fakecuda-gpu-0\0", OVR_GDR_UUID_LEN);
	bad = ex;
	bad.uuid[15] ^= 1;
	assert_int_equal(ovr_gdr_import(g, &bad, &m), -ENODEV);
	assert_non_null(strstr(ovr_gdr_last_error(g),
			       "GPU-66616b65-6375-6461-2d67-7075"));
	/* unknown UUID (an exporter whose driver cannot tell): ordinal */
	memset(bad.uuid, 0, sizeof(bad.uuid));
	bad.device = 5;
	assert_int_equal(ovr_gdr_import(g, &bad, &m), -ENODEV);

	assert_int_equal(ovr_gdr_import(g, &ex, &m), 0);
	close(ex.fd);
	assert_int_equal(ovr_gdr_read(m, 0, got, 4 * MB), 0);
	assert_memory_equal(got, want, 4 * MB);
	fill(want, 100, 11);
	assert_int_equal(ovr_gdr_write(m, 4 * MB - 100, want, 100), 0);
	assert_int_equal(cu.dtoh(got, va2 + 4 * MB - 100, 100), 0);
	assert_memory_equal(got, want, 100);
	assert_int_equal(ovr_gdr_nimports(g), 1);
	ovr_gdr_release(m);
	assert_int_equal(ovr_gdr_nimports(g), 0);
	ovr_gdr_close(g);
	free(want);
	free(got);
}

/* A cuMem allocation of @size, exported and imported into @g. */
static struct ovr_gdr_mem *import_cumem(struct ovr_gdr *g, size_t size,
					gdr_CUdeviceptr *va)
{
	struct ovr_gdr_mem *m;

	assert_int_equal(cuapp_import(&cu, g, size, va, &m), 0);
	return m;
}

/*
 * The copy engine: copies from and to pinned memory are queued and land
 * at the fence (the fake performs them only then), in an order that
 * keeps conflicting copies right; one fence waits for a whole batch;
 * pageable memory is copied at once; a failed queued copy is reported
 * by the fence and leaves the old bytes.
 */
static void test_async_copies(void **state)
{
	const size_t pin_len = 2 * MB, K4 = 4096;
	uint8_t *pin = aligned_alloc(4096, pin_len);
	uint8_t *want = malloc(MB), *got = malloc(MB), *pageable = malloc(MB);
	struct fakecuda_stats f0, f1;
	struct ovr_gdr_stats st;
	struct ovr_gdr_mem *m;
	gdr_CUdeviceptr va;
	struct ovr_gdr *g;

	(void)state;
	assert_non_null(pin);
	assert_non_null(want);
	assert_non_null(got);
	assert_non_null(pageable);
	load_app_side();
	assert_int_equal(ovr_gdr_open(OVR_GDR_NOLOAD, &g, NULL, 0), 0);
	ovr_gdr_get_stats(g, &st);
	assert_true(st.async);
	m = import_cumem(g, 4 * MB, &va);
	memset(want, 0, MB);
	assert_int_equal(cu.htod(va, want, MB), 0);

	/* not pinned yet: even the async call copies at once */
	fill(pageable, MB, 1);
	assert_int_equal(ovr_gdr_write_async(m, 0, pageable, K4), 0);
	assert_int_equal(cu.dtoh(got, va, K4), 0);
	assert_memory_equal(got, pageable, K4);

	cu.stats(&f0);
	assert_int_equal(ovr_gdr_host_register(g, pin, pin_len), 0);
	assert_int_equal(ovr_gdr_host_register(g, pin + 4096, 4096), -EEXIST);
	cu.stats(&f1);
	assert_int_equal(f1.host_registered - f0.host_registered, pin_len);
	ovr_gdr_get_stats(g, &st);
	assert_int_equal(st.pinned_bytes, pin_len);
	assert_int_equal(st.pinned_ranges, 1);

	/* queued: the device keeps its old bytes until the fence */
	fill(pin, 64 * K4, 2);
	assert_int_equal(ovr_gdr_write_async(m, 0, pin, K4), 1);
	assert_int_equal(cu.dtoh(got, va, K4), 0);
	assert_memory_equal(got, pageable, K4);
	assert_int_equal(ovr_gdr_fence(g), 0);
	assert_int_equal(cu.dtoh(got, va, K4), 0);
	assert_memory_equal(got, pin, K4);

	/* a message's worth of packets: one fence, one sync per stream */
	cu.stats(&f0);
	for (size_t i = 0; i < 64; i++)
		assert_int_equal(ovr_gdr_write_async(m, MB + i * K4,
						     pin + i * K4, K4),
				 1);
	for (size_t i = 0; i < 64; i++)
		assert_int_equal(ovr_gdr_read_async(m, i * 1024,
						    pin + MB + i * 1024, 1024),
				 1);
	ovr_gdr_get_stats(g, &st);
	assert_int_equal(st.pending, 128);
	assert_int_equal(ovr_gdr_fence(g), 0);
	cu.stats(&f1);
	assert_int_equal(f1.async_queued - f0.async_queued, 128);
	assert_int_equal(f1.async_done - f0.async_done, 128);
	assert_int_equal(f1.syncs - f0.syncs, 2);
	assert_int_equal(f1.pending, 0);
	assert_int_equal(cu.dtoh(got, va + MB, 64 * K4), 0);
	assert_memory_equal(got, pin, 64 * K4);
	/* the device's [0, 64 KB): the first write, then zeros */
	memcpy(want, pin, K4);
	memset(want + K4, 0, 60 * 1024);
	assert_memory_equal(pin + MB, want, 64 * 1024);
	/* nothing queued: a fence is free */
	assert_int_equal(ovr_gdr_fence(g), 0);
	cu.stats(&f0);
	assert_int_equal(f0.syncs, f1.syncs);

	/* a read queued before a write of the same bytes sees the old
	 * ones, a read queued after it the new ones, whatever order the
	 * fence takes the streams in */
	assert_int_equal(cu.dtoh(want, va + 2 * MB, K4), 0);
	fill(pin, K4, 5);
	assert_int_equal(ovr_gdr_read_async(m, 2 * MB, pin + MB, K4), 1);
	assert_int_equal(ovr_gdr_write_async(m, 2 * MB, pin, K4), 1);
	assert_int_equal(ovr_gdr_read_async(m, 2 * MB, pin + MB + K4, K4), 1);
	assert_int_equal(ovr_gdr_fence(g), 0);
	assert_memory_equal(pin + MB, want, K4);
	assert_memory_equal(pin + MB + K4, pin, K4);
	ovr_gdr_get_stats(g, &st);
	assert_true(st.waits >= 2);

	/* a pageable copy after queued ones to the same bytes lands last;
	 * the synchronous calls see what was queued before them */
	fill(pin, K4, 6);
	fill(pageable, K4, 7);
	assert_int_equal(ovr_gdr_write_async(m, 3 * MB, pin, K4), 1);
	assert_int_equal(ovr_gdr_write_async(m, 3 * MB, pageable, K4), 0);
	assert_int_equal(cu.dtoh(got, va + 3 * MB, K4), 0);
	assert_memory_equal(got, pageable, K4);
	assert_int_equal(ovr_gdr_write_async(m, 3 * MB, pin, K4), 1);
	assert_int_equal(ovr_gdr_read(m, 3 * MB, got, K4), 0);
	assert_memory_equal(got, pin, K4);
	assert_int_equal(ovr_gdr_fence(g), 0);

	/* a queued copy that fails: the fence says so, the bytes are old */
	assert_int_equal(cu.dtoh(want, va + 3 * MB, K4), 0);
	fill(pin, K4, 8);
	cu.fail_nth(2);
	assert_int_equal(ovr_gdr_write_async(m, 3 * MB + K4, pin, K4), 1);
	assert_int_equal(ovr_gdr_write_async(m, 3 * MB, pin, K4), 1);
	assert_int_equal(ovr_gdr_fence(g), -EIO);
	assert_non_null(strstr(ovr_gdr_last_error(g), "illegal memory"));
	assert_int_equal(cu.dtoh(got, va + 3 * MB, K4), 0);
	assert_memory_equal(got, want, K4);
	ovr_gdr_get_stats(g, &st);
	assert_int_equal(st.fence_errors, 1);
	/* the next batch is unaffected */
	assert_int_equal(ovr_gdr_write_async(m, 3 * MB, pin, K4), 1);
	assert_int_equal(ovr_gdr_fence(g), 0);
	assert_int_equal(cu.dtoh(got, va + 3 * MB, K4), 0);
	assert_memory_equal(got, pin, K4);

	/* released with copies queued: they land first */
	fill(pin, K4, 9);
	assert_int_equal(ovr_gdr_write_async(m, 0, pin, K4), 1);
	ovr_gdr_release(m);
	assert_int_equal(cu.dtoh(got, va, K4), 0);
	assert_memory_equal(got, pin, K4);

	assert_int_equal(ovr_gdr_host_unregister(g, pin + 1), -ENOENT);
	assert_int_equal(ovr_gdr_host_unregister(g, pin), 0);
	cu.stats(&f1);
	assert_int_equal(f1.host_registered, 0);
	ovr_gdr_close(g);
	cu.stats(&f1);
	assert_int_equal(f1.streams, 0);
	assert_int_equal(f1.events, 0);
	free(pin);
	free(want);
	free(got);
	free(pageable);
}

/*
 * Batches (the pipelined copy engine): each closed batch's copies land
 * when its events say done, not before; lazy events (fakecuda's
 * event_polls) answer NOT_READY first; a read queued in a later batch
 * still sees a write of an earlier one still in flight; a failed copy
 * fails its own batch only; an empty batch is done at once; waiting
 * polls block.
 */
static void test_batches(void **state)
{
	const size_t pin_len = 2 * MB, K4 = 4096;
	uint8_t *pin = aligned_alloc(4096, pin_len);
	uint8_t *old = calloc(1, K4), *got = malloc(K4);
	struct ovr_gdr_stats st;
	struct ovr_gdr_mem *m;
	gdr_CUdeviceptr va;
	struct ovr_gdr *g;

	(void)state;
	assert_non_null(pin);
	assert_non_null(old);
	assert_non_null(got);
	load_app_side();
	assert_non_null(cu.event_polls);
	assert_int_equal(ovr_gdr_open(OVR_GDR_NOLOAD, &g, NULL, 0), 0);
	m = import_cumem(g, 4 * MB, &va);
	memset(pin, 0, pin_len);
	assert_int_equal(cu.htod(va, pin, MB), 0);
	assert_int_equal(ovr_gdr_host_register(g, pin, pin_len), 0);
	cu.event_polls(1);

	/* batch 0: a write; batch 1: another write, and a read of the
	 * first one's bytes */
	fill(pin, 2 * K4, 11);
	assert_int_equal(ovr_gdr_write_async(m, 0, pin, K4), 1);
	assert_int_equal(ovr_gdr_batch_close(g, 0), 0);
	assert_int_equal(ovr_gdr_write_async(m, K4, pin + K4, K4), 1);
	assert_int_equal(ovr_gdr_read_async(m, 0, pin + MB, K4), 1);
	assert_int_equal(ovr_gdr_batch_close(g, 1), 0);
	assert_int_equal(ovr_gdr_batch_poll(g, 0, false), -EAGAIN);
	assert_int_equal(cu.dtoh(got, va, K4), 0);
	assert_memory_equal(got, old, K4);
	assert_int_equal(ovr_gdr_batch_poll(g, 0, false), 0);
	assert_int_equal(cu.dtoh(got, va, K4), 0);
	assert_memory_equal(got, pin, K4);
	assert_memory_equal(pin + MB, old, K4); /* batch 1 still out */
	assert_int_equal(ovr_gdr_batch_poll(g, 1, true), 0);
	assert_memory_equal(pin + MB, pin, K4);
	assert_int_equal(cu.dtoh(got, va + K4, K4), 0);
	assert_memory_equal(got, pin + K4, K4);

	/* three batches, the middle one's copy fails */
	fill(pin, 3 * K4, 12);
	assert_int_equal(ovr_gdr_write_async(m, MB, pin, K4), 1);
	assert_int_equal(ovr_gdr_batch_close(g, 2), 0);
	cu.fail_nth(1);
	assert_int_equal(ovr_gdr_write_async(m, MB + K4, pin + K4, K4), 1);
	cu.fail_nth(0);
	assert_int_equal(ovr_gdr_batch_close(g, 3), 0);
	assert_int_equal(ovr_gdr_write_async(m, MB + 2 * K4, pin + 2 * K4, K4),
			 1);
	assert_int_equal(ovr_gdr_batch_close(g, 4), 0);
	while (ovr_gdr_batch_poll(g, 2, false) == -EAGAIN)
		;
	while (ovr_gdr_batch_poll(g, 3, false) == -EAGAIN)
		;
	assert_int_equal(ovr_gdr_batch_poll(g, 4, true), 0);
	assert_int_equal(cu.dtoh(got, va + MB, K4), 0);
	assert_memory_equal(got, pin, K4);
	assert_int_equal(cu.dtoh(got, va + MB + K4, K4), 0);
	assert_memory_equal(got, old, K4);
	assert_int_equal(cu.dtoh(got, va + MB + 2 * K4, K4), 0);
	assert_memory_equal(got, pin + 2 * K4, K4);

	/* nothing queued: done at once */
	assert_int_equal(ovr_gdr_batch_close(g, 5), 0);
	assert_int_equal(ovr_gdr_batch_poll(g, 5, false), 0);
	assert_int_equal(ovr_gdr_batch_close(g, OVR_GDR_MAX_BATCH), -EINVAL);

	ovr_gdr_get_stats(g, &st);
	assert_int_equal(st.batches, 5);
	assert_true(st.batch_not_ready >= 2);
	assert_true(st.batch_waits >= 1);
	assert_int_equal(st.batch_errors, 1);
	assert_int_equal(st.pending, 0);
	cu.event_polls(0);
	ovr_gdr_release(m);
	assert_int_equal(ovr_gdr_host_unregister(g, pin), 0);
	ovr_gdr_close(g);
	free(pin);
	free(old);
	free(got);
}

/*
 * Channels (ovrdmad's dataplane cores): two threads copy at once, each
 * through its own channel, into and out of one shared import, with
 * batches of their own (a lazy event in one does not hold the other);
 * byte-exact both ways. A release waits for a channel's queued copies;
 * the base's statistics add the channels'; channels close with the base
 * and their index is taken again.
 */
#define CH_ROUNDS 16
#define CH_COPIES 4
#define CH_K4 4096u
#define CH_SPAN ((size_t)CH_ROUNDS * CH_COPIES * CH_K4) /* 256 KiB */

struct ch_arg {
	struct ovr_gdr *g; /* the channel */
	struct ovr_gdr_mem *m;
	uint64_t dev_off; /* its region of the allocation */
	uint8_t *src, *back; /* pinned: CH_SPAN each */
	int err;
};

static void *ch_thread(void *p)
{
	struct ch_arg *a = p;
	unsigned int r, k;
	int rc;

	for (r = 0; r < CH_ROUNDS && !a->err; r++) {
		for (k = 0; k < CH_COPIES; k++) {
			size_t o = ((size_t)r * CH_COPIES + k) * CH_K4;

			rc = ovr_gdr_chan_copy_msg(a->g, a->m, a->dev_off + o,
						   a->src + o, CH_K4, true,
						   CH_K4);
			if (rc != 1)
				a->err = rc ? rc : -EPROTO;
		}
		if (ovr_gdr_batch_close(a->g, r % 8))
			a->err = -EIO;
		/* two batches in flight: poll the one before the last */
		if (r >= 1 && ovr_gdr_batch_poll(a->g, (r - 1) % 8, true))
			a->err = -EIO;
	}
	if (!a->err && ovr_gdr_batch_poll(a->g, (r - 1) % 8, true))
		a->err = -EIO;
	/* read it all back through the same channel */
	if (!a->err) {
		rc = ovr_gdr_chan_copy_msg(a->g, a->m, a->dev_off, a->back,
					   CH_SPAN, false, CH_SPAN);
		if (rc != 1 || ovr_gdr_batch_close(a->g, 0) ||
		    ovr_gdr_batch_poll(a->g, 0, true))
			a->err = -EIO;
	}
	return NULL;
}

static void test_channels(void **state)
{
	const size_t pin_len = 4 * CH_SPAN;
	uint8_t *pin = aligned_alloc(4096, pin_len), *got = malloc(CH_SPAN);
	struct ovr_gdr *g, *c1, *c2, *c3;
	struct ovr_gdr_stats st, st1;
	struct ch_arg a[2];
	pthread_t t[2];
	struct ovr_gdr_mem *m;
	gdr_CUdeviceptr va;

	(void)state;
	assert_non_null(pin);
	assert_non_null(got);
	load_app_side();
	assert_int_equal(ovr_gdr_open(OVR_GDR_NOLOAD, &g, NULL, 0), 0);
	m = import_cumem(g, 4 * MB, &va);
	memset(pin, 0, pin_len); /* (1 MiB) */
	for (int i = 0; i < 4; i++)
		assert_int_equal(cu.htod(va + i * MB, pin, MB), 0);
	assert_int_equal(ovr_gdr_host_register(g, pin, pin_len), 0);
	assert_int_equal(ovr_gdr_chan_open(g, &c1), 0);
	assert_int_equal(ovr_gdr_chan_open(c1, &c2), -EINVAL);
	cu.event_polls(2);

	for (int i = 0; i < 2; i++) {
		a[i] = (struct ch_arg){ .g = i ? c1 : g,
					.m = m,
					.dev_off = i * MB,
					.src = pin + 2 * i * CH_SPAN,
					.back = pin + (2 * i + 1) * CH_SPAN };
		fill(a[i].src, CH_SPAN, 21 + i);
		memset(a[i].back, 0xee, CH_SPAN);
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, ch_thread, &a[i]),
				 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(a[i].err, 0);
		assert_int_equal(cu.dtoh(got, va + i * MB, CH_SPAN), 0);
		assert_memory_equal(got, a[i].src, CH_SPAN);
		assert_memory_equal(a[i].back, a[i].src, CH_SPAN);
	}
	/* the base adds its channel's figures; the channel has its own */
	ovr_gdr_get_stats(g, &st);
	ovr_gdr_get_stats(c1, &st1);
	assert_int_equal(st.async_copies, 2 * (CH_ROUNDS * CH_COPIES + 1));
	assert_int_equal(st1.async_copies, CH_ROUNDS * CH_COPIES + 1);
	assert_int_equal(st.batches, 2 * (CH_ROUNDS + 1));
	assert_int_equal(st.pending, 0);

	/* batches are the channel's: one still out on c1 does not hold
	 * the base's slot of the same number */
	fill(pin, CH_K4, 31);
	assert_int_equal(ovr_gdr_chan_copy_msg(c1, m, 3 * MB, pin, CH_K4, true,
					       CH_K4),
			 1);
	assert_int_equal(ovr_gdr_batch_close(c1, 5), 0);
	assert_int_equal(ovr_gdr_batch_close(g, 5), 0);
	assert_int_equal(ovr_gdr_batch_poll(g, 5, false), 0);
	assert_int_equal(ovr_gdr_batch_poll(c1, 5, false), -EAGAIN);
	/* ... and a copy queued on c1, never polled: the release of the
	 * import waits for it */
	fill(pin + CH_K4, CH_K4, 32);
	assert_int_equal(ovr_gdr_chan_copy_msg(c1, m, 3 * MB + CH_K4,
					       pin + CH_K4, CH_K4, true, CH_K4),
			 1);
	ovr_gdr_release(m);
	assert_int_equal(cu.dtoh(got, va + 3 * MB, 2 * CH_K4), 0);
	assert_memory_equal(got, pin, 2 * CH_K4);
	assert_int_equal(ovr_gdr_nimports(c1), 0);

	/* a closed channel's index is taken again; the base closes the
	 * rest (the sanitizers see nothing left) */
	ovr_gdr_close(c1);
	assert_int_equal(ovr_gdr_chan_open(g, &c2), 0);
	assert_int_equal(ovr_gdr_chan_open(g, &c3), 0);
	cu.event_polls(0);
	assert_int_equal(ovr_gdr_host_unregister(g, pin), 0);
	ovr_gdr_close(g);
	free(pin);
	free(got);
}

/* ---- BAR copies (GDRCopy: the fake in the same library) ------------------ */

static void load_gdr_side(void)
{
	load_app_side();
	assert_non_null(getenv(OVR_GDR_BAR_ENV));
	assert_non_null(cu.gdr_stats);
	assert_non_null(cu.gdr_pin_fail);
}

/*
 * GDRCopy missing: no library, a library without its calls, or no
 * gdrdrv (the fake's gdr_open without FAKEGDR=1): BAR copies are off,
 * said why, and small copies are still right, through the streams.
 */
static void test_bar_off(void **state)
{
	const size_t len = 1000;
	char saved[512], why[256] = "";
	uint8_t *src = malloc(len), *got = malloc(len);
	struct fakegdr_stats f0, f1;
	struct ovr_gdr_stats st;
	struct ovr_gdr_mem *m;
	gdr_CUdeviceptr va;
	struct ovr_gdr *g;

	(void)state;
	assert_non_null(src);
	assert_non_null(got);
	load_gdr_side();
	snprintf(saved, sizeof(saved), "%s", getenv(OVR_GDR_BAR_ENV));
	unsetenv("FAKEGDR");
	assert_int_equal(ovr_gdr_open(OVR_GDR_NOLOAD, &g, NULL, 0), 0);
	setenv(OVR_GDR_BAR_ENV, "/nonexistent/libgdrapi.so.2", 1);
	assert_int_equal(ovr_gdr_bar_open(g, NULL, why, sizeof(why)),
			 -EOPNOTSUPP);
	assert_non_null(strstr(why, "no GDRCopy library"));
	setenv(OVR_GDR_BAR_ENV, "libm.so.6", 1);
	assert_int_equal(ovr_gdr_bar_open(g, NULL, why, sizeof(why)),
			 -EOPNOTSUPP);
	assert_non_null(strstr(why, "has no gdr_open"));
	setenv(OVR_GDR_BAR_ENV, saved, 1);
	assert_int_equal(ovr_gdr_bar_open(g, NULL, why, sizeof(why)), -ENODEV);
	assert_non_null(strstr(why, "gdrdrv"));
	ovr_gdr_get_stats(g, &st);
	assert_false(st.bar);

	cu.gdr_stats(&f0);
	m = import_cumem(g, 2 * MB, &va);
	fill(src, len, 21);
	assert_int_equal(ovr_gdr_copy_msg(m, 4097, src, len, true, len), 0);
	assert_int_equal(cu.dtoh(got, va + 4097, len), 0);
	assert_memory_equal(got, src, len);
	memset(got, 0, len);
	assert_int_equal(ovr_gdr_copy_msg(m, 4097, got, len, false, len), 0);
	assert_memory_equal(got, src, len);
	assert_int_equal(ovr_gdr_bar_write(m, 0, src, 8), -EOPNOTSUPP);
	assert_int_equal(ovr_gdr_bar_read(m, 0, got, 8), -EOPNOTSUPP);
	ovr_gdr_get_stats(g, &st);
	assert_int_equal(st.bar_copies, 0);
	assert_int_equal(st.bar_pins + st.bar_pin_failures, 0);
	assert_int_equal(st.sync_copies, 2);
	cu.gdr_stats(&f1);
	assert_int_equal(f1.pins + f1.pin_failures, f0.pins + f0.pin_failures);
	ovr_gdr_release(m);
	ovr_gdr_close(g);
	free(src);
	free(got);
}

/* Device bytes [va, va + len) equal @want? */
static void dev_is(gdr_CUdeviceptr va, const uint8_t *want, size_t len)
{
	uint8_t *got = malloc(len);

	assert_non_null(got);
	assert_int_equal(cu.dtoh(got, va, len), 0);
	assert_memory_equal(got, want, len);
	free(got);
}

/*
 * BAR copies on: small messages go through the BAR, byte-exact and in
 * GPU memory when the call returns (the fake holds BAR writes as posted
 * until a read through the BAR), large ones take the streams; a small
 * copy never overtakes stream copies of its allocation that are not
 * known to be done, and a stream copy after a BAR copy sees it; release
 * unmaps and unpins.
 */
static void test_bar_copies(void **state)
{
	const size_t pin_len = 2 * MB, K4 = 4096;
	uint8_t *pin = aligned_alloc(4096, pin_len);
	uint8_t *old = malloc(K4), *want = malloc(K4);
	struct fakecuda_stats c0, c1;
	struct fakegdr_stats f0, f1;
	struct ovr_gdr_stats st;
	struct ovr_gdr_mem *m, *m2;
	gdr_CUdeviceptr va, va2;
	struct ovr_gdr *g;
	int rc;

	(void)state;
	assert_non_null(pin);
	assert_non_null(old);
	assert_non_null(want);
	load_gdr_side();
	setenv("FAKEGDR", "1", 1);
	assert_int_equal(ovr_gdr_open(OVR_GDR_NOLOAD, &g, NULL, 0), 0);
	assert_int_equal(ovr_gdr_host_register(g, pin, pin_len), 0);
	m = import_cumem(g, 4 * MB, &va);
	memset(pin, 0, pin_len);
	assert_int_equal(cu.htod(va, pin, MB), 0);
	assert_int_equal(ovr_gdr_bar_open(g, NULL, NULL, 0), 0);
	assert_int_equal(ovr_gdr_bar_open(g, NULL, NULL, 0), -EALREADY);
	ovr_gdr_get_stats(g, &st);
	assert_true(st.bar);
	assert_int_equal(st.bar_h2d_max, OVR_GDR_BAR_H2D_MAX);
	assert_int_equal(st.bar_d2h_max, OVR_GDR_BAR_D2H_MAX);
	assert_int_equal(st.bar_mapped, 0); /* mapped at the first copy */
	cu.gdr_stats(&f0);
	cu.stats(&c0);

	/* a small message's write: through the BAR, in GPU memory (read
	 * back: the fake's posted writes performed) when it returns */
	fill(pin, 3000, 31);
	assert_int_equal(ovr_gdr_copy_msg(m, 12345, pin, 3000, true, 3000), 0);
	cu.gdr_stats(&f1);
	assert_int_equal(f1.pins - f0.pins, 1);
	assert_int_equal(f1.writes - f0.writes, 1);
	assert_int_equal(f1.flushes - f0.flushes, 1);
	assert_int_equal(f1.posted_bytes, 0);
	dev_is(va + 12345, pin, 3000);
	/* and a small read */
	memset(pin + MB, 0, 3000);
	assert_int_equal(
		ovr_gdr_copy_msg(m, 12345, pin + MB, 2000, false, 2000), 0);
	assert_memory_equal(pin + MB, pin, 2000);
	cu.stats(&c1);
	assert_int_equal(c1.async_queued, c0.async_queued);
	assert_int_equal(c1.async_pageable, c0.async_pageable);
	assert_int_equal(c1.sync_memops - c0.sync_memops, 1);
	ovr_gdr_get_stats(g, &st);
	assert_int_equal(st.sync_copies + st.async_copies, 0);

	/* a packet of a large message, a read over the D2H limit: the
	 * streams (queued: the device keeps its bytes until the fence) */
	fill(pin, K4, 32);
	assert_int_equal(ovr_gdr_copy_msg(m, MB, pin, K4, true, MB), 1);
	dev_is(va + MB, pin + MB + K4, K4); /* still zero */
	assert_int_equal(ovr_gdr_copy_msg(m, 0, pin + MB, 100, false, 3000), 1);
	assert_int_equal(ovr_gdr_fence(g), 0);
	dev_is(va + MB, pin, K4);
	ovr_gdr_get_stats(g, &st);
	assert_int_equal(st.bar_copies, 2);
	assert_int_equal(st.bar_reads, 1);
	assert_int_equal(st.bar_bytes, 5000);
	assert_int_equal(st.bar_pins, 1);
	assert_int_equal(st.bar_mapped, 1);
	assert_int_equal(st.async_copies, 2);

	/* the allocation's last byte; past it */
	pin[0] = 0xa5;
	assert_int_equal(ovr_gdr_copy_msg(m, 4 * MB - 1, pin, 1, true, 1), 0);
	dev_is(va + 4 * MB - 1, pin, 1);
	assert_int_equal(ovr_gdr_copy_msg(m, 4 * MB - 1, pin, 2, true, 2),
			 -ERANGE);
	assert_int_equal(ovr_gdr_bar_write(m, 4 * MB, pin, 1), -ERANGE);

	/* a stream write queued (not performed yet), then a small write of
	 * the same bytes: it must not overtake the first, which would then
	 * land over it - it takes the streams behind it */
	fill(pin, K4, 40);
	fill(pin + K4, K4, 41);
	assert_int_equal(ovr_gdr_copy_msg(m, 2 * MB, pin, K4, true, MB), 1);
	assert_int_equal(
		ovr_gdr_copy_msg(m, 2 * MB, pin + K4, 1000, true, 1000), 1);
	assert_int_equal(ovr_gdr_bar_write(m, 2 * MB, pin, 8), -EBUSY);
	assert_int_equal(ovr_gdr_fence(g), 0);
	memcpy(want, pin + K4, 1000);
	memcpy(want + 1000, pin + 1000, K4 - 1000);
	dev_is(va + 2 * MB, want, K4);
	ovr_gdr_get_stats(g, &st);
	assert_int_equal(st.bar_busy, 2);
	/* known done now: the BAR again */
	assert_int_equal(
		ovr_gdr_copy_msg(m, 2 * MB, pin + 2 * K4, 500, true, 500), 0);
	dev_is(va + 2 * MB, pin + 2 * K4, 500);

	/* a BAR write, then a queued read of the same bytes: the new ones */
	fill(pin, 700, 42);
	assert_int_equal(ovr_gdr_copy_msg(m, 3 * MB, pin, 700, true, 700), 0);
	assert_int_equal(ovr_gdr_read_async(m, 3 * MB, pin + MB, 700), 1);
	assert_int_equal(ovr_gdr_fence(g), 0);
	assert_memory_equal(pin + MB, pin, 700);
	/* a queued read, then a small write of the bytes it reads: the
	 * read sees the old ones */
	memcpy(old, pin, 700);
	assert_int_equal(ovr_gdr_read_async(m, 3 * MB, pin + MB, 700), 1);
	fill(pin, 700, 43);
	assert_int_equal(ovr_gdr_copy_msg(m, 3 * MB, pin, 700, true, 700), 1);
	assert_int_equal(ovr_gdr_fence(g), 0);
	assert_memory_equal(pin + MB, old, 700);
	dev_is(va + 3 * MB, pin, 700);

	/* a batch still in flight holds small copies of its allocation on
	 * the streams until it is polled done */
	cu.event_polls(2);
	fill(pin, 2 * K4, 44);
	assert_int_equal(ovr_gdr_write_async(m, 0, pin, K4), 1);
	assert_int_equal(ovr_gdr_batch_close(g, 0), 0);
	assert_int_equal(ovr_gdr_copy_msg(m, 0, pin + K4, 100, true, 100), 1);
	assert_int_equal(ovr_gdr_batch_close(g, 1), 0);
	while ((rc = ovr_gdr_batch_poll(g, 0, false)) == -EAGAIN)
		assert_int_equal(ovr_gdr_bar_write(m, 0, pin, 1), -EBUSY);
	assert_int_equal(rc, 0);
	/* batch 1 (the small copy) still out */
	assert_int_equal(ovr_gdr_bar_write(m, 0, pin, 1), -EBUSY);
	while ((rc = ovr_gdr_batch_poll(g, 1, false)) == -EAGAIN)
		;
	assert_int_equal(rc, 0);
	fill(pin + 2 * K4, 100, 45);
	assert_int_equal(ovr_gdr_copy_msg(m, 0, pin + 2 * K4, 100, true, 100),
			 0);
	memcpy(want, pin + 2 * K4, 100);
	memcpy(want + 100, pin + 100, K4 - 100);
	dev_is(va, want, K4);
	cu.event_polls(0);

	/* another allocation's small copies do not wait for these */
	m2 = import_cumem(g, 2 * MB, &va2);
	assert_int_equal(ovr_gdr_write_async(m, 0, pin, K4), 1);
	assert_int_equal(ovr_gdr_copy_msg(m2, 64, pin + K4, 100, true, 100), 0);
	dev_is(va2 + 64, pin + K4, 100);
	assert_int_equal(ovr_gdr_fence(g), 0);

	/* release unmaps and unpins, the other mapping stays */
	cu.gdr_stats(&f0);
	ovr_gdr_release(m);
	cu.gdr_stats(&f1);
	assert_int_equal(f0.mapped - f1.mapped, 1);
	assert_int_equal(f0.pinned - f1.pinned, 1);
	ovr_gdr_get_stats(g, &st);
	assert_int_equal(st.bar_mapped, 1);
	assert_int_equal(st.bar_pins, 2);
	ovr_gdr_release(m2);
	ovr_gdr_get_stats(g, &st);
	assert_int_equal(st.bar_mapped, 0);
	assert_int_equal(ovr_gdr_host_unregister(g, pin), 0);
	ovr_gdr_close(g);
	cu.gdr_stats(&f1);
	assert_int_equal(f1.pinned, 0);
	assert_int_equal(f1.mapped, 0);
	free(pin);
	free(old);
	free(want);
}

static unsigned int nnotes;
static char last_note[320];

static void note(void *ctx, const char *msg)
{
	(void)ctx;
	nnotes++;
	snprintf(last_note, sizeof(last_note), "%s", msg);
}

/*
 * An allocation that cannot be pinned (the fake's injected failure; a
 * cuMem allocation made without gpuDirectRDMACapable): its small copies
 * take the streams, byte-exact, said once, never retried; another
 * allocation still gets BAR copies. The limits are the caller's.
 */
static void test_bar_fallback(void **state)
{
	const size_t len = 1000;
	struct ovr_gdr_bar_cfg cfg = { .h2d_max = 4096,
				       .d2h_max = 512,
				       .note = note };
	uint8_t *src = malloc(5000), *got = malloc(5000);
	struct fakegdr_stats f0, f1;
	struct ovr_gdr_stats st;
	struct ovr_gdr_mem *m, *m2, *m3;
	gdr_CUdeviceptr va, va2, va3;
	struct ovr_gdr *g;

	(void)state;
	assert_non_null(src);
	assert_non_null(got);
	load_gdr_side();
	setenv("FAKEGDR", "1", 1);
	assert_int_equal(ovr_gdr_open(OVR_GDR_NOLOAD, &g, NULL, 0), 0);
	assert_int_equal(ovr_gdr_bar_open(g, &cfg, NULL, 0), 0);
	ovr_gdr_get_stats(g, &st);
	assert_int_equal(st.bar_h2d_max, 4096);
	assert_int_equal(st.bar_d2h_max, 512);
	nnotes = 0;
	m = import_cumem(g, 2 * MB, &va);
	cu.gdr_stats(&f0);
	cu.gdr_pin_fail(1);
	fill(src, len, 51);
	assert_int_equal(ovr_gdr_copy_msg(m, 8, src, len, true, len), 0);
	dev_is(va + 8, src, len);
	cu.gdr_stats(&f1);
	assert_int_equal(f1.pin_failures - f0.pin_failures, 1);
	assert_int_equal(f1.writes, f0.writes);
	assert_int_equal(nnotes, 1);
	assert_non_null(strstr(last_note, "no BAR mapping"));
	assert_non_null(strstr(last_note, "gdr_pin_buffer"));
	/* not tried again */
	fill(src, len, 52);
	assert_int_equal(ovr_gdr_copy_msg(m, 8, src, len, true, len), 0);
	dev_is(va + 8, src, len);
	assert_int_equal(ovr_gdr_copy_msg(m, 8, got, 100, false, 100), 0);
	assert_memory_equal(got, src, 100);
	assert_int_equal(ovr_gdr_bar_write(m, 0, src, 8), -EOPNOTSUPP);
	cu.gdr_stats(&f0);
	assert_int_equal(f0.pins + f0.pin_failures, f1.pins + f1.pin_failures);
	assert_int_equal(nnotes, 1);

	/* cuMem memory the GPU will not pin for GPUDirect RDMA */
	assert_int_equal(cuapp_import_rdma(&cu, g, 2 * MB, false, &va2, &m2),
			 0);
	fill(src, len, 53);
	assert_int_equal(ovr_gdr_copy_msg(m2, 0, src, len, true, len), 0);
	dev_is(va2, src, len);
	assert_int_equal(nnotes, 2);

	/* memory that can be pinned: BAR copies, within the limits */
	m3 = import_cumem(g, 2 * MB, &va3);
	assert_int_equal(ovr_gdr_copy_msg(m3, 0, src, len, true, len), 0);
	fill(src, 5000, 54);
	assert_int_equal(ovr_gdr_copy_msg(m3, 0, src, 5000, true, 5000), 0);
	dev_is(va3, src, 5000);
	assert_int_equal(ovr_gdr_copy_msg(m3, 0, got, 512, false, 512), 0);
	assert_int_equal(ovr_gdr_copy_msg(m3, 0, got, 100, false, 600), 0);
	assert_memory_equal(got, src, 512);
	ovr_gdr_get_stats(g, &st);
	assert_int_equal(st.bar_pin_failures, 2);
	assert_int_equal(st.bar_pins, 1);
	/* 1000 and 512 bytes; 5000 > 4096 and 600 > 512 took the streams */
	assert_int_equal(st.bar_copies, 2);
	assert_int_equal(st.bar_bytes, 1512);
	assert_int_equal(nnotes, 2);
	ovr_gdr_release(m);
	ovr_gdr_release(m2);
	ovr_gdr_release(m3);
	ovr_gdr_close(g);
	free(src);
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_failures),
		cmocka_unit_test(test_probe),
		cmocka_unit_test(test_ipc_cross_process),
		cmocka_unit_test(test_fd_export),
		cmocka_unit_test(test_async_copies),
		cmocka_unit_test(test_batches),
		cmocka_unit_test(test_channels),
		cmocka_unit_test(test_bar_off),
		cmocka_unit_test(test_bar_copies),
		cmocka_unit_test(test_bar_fallback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
