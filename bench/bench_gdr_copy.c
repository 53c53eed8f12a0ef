// SPDX-License-Identifier: MIT
/*
 * bench-gdr-copy: the GPU copy engine's throughput (gdr/, docs/GPU.md)
 * host -> device and device -> host, for a few copy sizes, two ways:
 *   sync   one copy at a time, each waited for (phase 1's behaviour:
 *          ovr_gdr_write / ovr_gdr_read);
 *   async  copies queued on the device's streams from pinned "packet
 *          buffers", BATCH at a time, then one ovr_gdr_fence (what
 *          ovrdmad does per loop iteration).
 * The driver is $OVRDMA_LIBCUDA, else libcuda.so.1: the real one on a
 * GPU machine, the fake (tests/fakecuda) elsewhere - where the figures
 * only measure the harness and memcpy. Exits 77 without a driver.
 *
 * usage: bench-gdr-copy [--quick] [--batch N]
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ovrdma/gdr.h>

#include "cuapp.h"
#include "cudadrv.h"

#define MB (1ull << 20)
#define DEV_LEN (64 * MB)
#define HOST_LEN (64 * MB)

static struct cuapp cu;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A cuMem allocation on device 0, exported and imported through gdr/
 * as ovrdmad imports an application's. */
static int dev_alloc(struct ovr_gdr *g, struct ovr_gdr_mem **m)
{
	gdr_CUdeviceptr va;
	int rc = cuapp_load(&cu); /* gdr/ has initialised the driver */

	return rc ? rc : cuapp_import(&cu, g, DEV_LEN, &va, m);
}

/* GB/s of @n copies of @size each way: one at a time, or in batches. */
static double run(struct ovr_gdr *g, struct ovr_gdr_mem *m, uint8_t *host,
		  size_t size, bool to_dev, bool async, unsigned int batch,
		  double secs, double *per_fence)
{
	size_t slots = HOST_LEN / size, dslots = DEV_LEN / size;
	uint64_t bytes = 0, i = 0;
	double t0 = now_s(), t;
	struct ovr_gdr_stats st0, st1;

	ovr_gdr_get_stats(g, &st0);
	do {
		for (unsigned int b = 0; b < (async ? batch : 64); b++, i++) {
			uint8_t *h = host + (i % slots) * size;
			uint64_t off = (i % dslots) * size;
			int rc;

			if (async)
				rc = to_dev ? ovr_gdr_write_async(m, off, h,
								  size) :
					      ovr_gdr_read_async(m, off, h,
								 size);
			else
				rc = to_dev ? ovr_gdr_write(m, off, h, size) :
					      ovr_gdr_read(m, off, h, size);
			if (rc < 0) {
				fprintf(stderr, "bench-gdr-copy: copy: %s\n",
					ovr_gdr_last_error(g));
				exit(1);
			}
			bytes += size;
		}
		if (async && ovr_gdr_fence(g)) {
			fprintf(stderr, "bench-gdr-copy: fence: %s\n",
				ovr_gdr_last_error(g));
			exit(1);
		}
		t = now_s() - t0;
	} while (t < secs);
	ovr_gdr_get_stats(g, &st1);
	/* queued copies per fence (0: none were queued) */
	*per_fence = st1.fences == st0.fences ?
			     0 :
			     (double)(st1.async_copies - st0.async_copies) /
				     (double)(st1.fences - st0.fences);
	return (double)bytes / t / 1e9;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 4096, 65536, MB };
	struct ovr_gdr_stats st;
	struct ovr_gdr_mem *m = NULL;
	struct ovr_gdr *g;
	unsigned int batch = 32;
	double secs = 0.5;
	char why[256] = "";
	uint8_t *host;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			secs = 0.05;
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			batch = (unsigned int)atoi(argv[++i]);
		else {
			fprintf(stderr,
				"usage: bench-gdr-copy [--quick] [--batch N]\n");
			return 2;
		}
	}
	if (!batch)
		batch = 1;
	rc = ovr_gdr_open(0, &g, why, sizeof(why));
	if (rc) {
		printf("bench-gdr-copy: no CUDA driver (%s); skipped\n", why);
		return 77;
	}
	rc = dev_alloc(g, &m);
	if (rc) {
		printf("bench-gdr-copy: no device memory (%s: %s); skipped\n",
		       strerror(-rc), ovr_gdr_last_error(g));
		ovr_gdr_close(g);
		return 77;
	}
	host = aligned_alloc(4096, HOST_LEN);
	if (!host)
		return 1;
	memset(host, 0x3c, HOST_LEN);
	rc = ovr_gdr_host_register(g, host, HOST_LEN);
	ovr_gdr_get_stats(g, &st);
	printf("driver %s; async calls %s; %llu MB pinned%s; batch %u\n",
	       getenv(OVR_GDR_ENV) ? getenv(OVR_GDR_ENV) : OVR_GDR_LIBCUDA,
	       st.async ? "yes" : "no",
	       (unsigned long long)(st.pinned_bytes / MB),
	       rc ? " (registration refused: async = sync)" : "", batch);
	printf("%-8s %-8s %12s %12s %10s %14s\n", "size", "dir", "sync GB/s",
	       "async GB/s", "speedup", "copies/fence");
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		for (int d = 0; d < 2; d++) {
			double fs, fa;
			double s = run(g, m, host, sizes[k], d == 0, false,
				       batch, secs, &fs);
			double a = run(g, m, host, sizes[k], d == 0, true,
				       batch, secs, &fa);
			char sz[16];

			if (sizes[k] >= MB)
				snprintf(sz, sizeof(sz), "%zuM",
					 (size_t)(sizes[k] / MB));
			else
				snprintf(sz, sizeof(sz), "%zuK",
					 sizes[k] / 1024);
			printf("%-8s %-8s %12.2f %12.2f %9.2fx %14.1f\n", sz,
			       d == 0 ? "H2D" : "D2H", s, a, a / s, fa);
		}
	ovr_gdr_release(m);
	ovr_gdr_close(g);
	free(host);
	return 0;
}
