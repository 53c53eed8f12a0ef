// SPDX-License-Identifier: MIT
/*
 * bench-gdr-copy: the GPU copy engine's throughput (gdr/, docs/GPU.md)
 * host -> device and device -> host, for a few copy sizes, three ways:
 *   sync   one copy at a time, each waited for (phase 1's behaviour:
 *          ovr_gdr_write / ovr_gdr_read): GB/s and microseconds a copy;
 *   async  copies queued on the device's streams from pinned "packet
 *          buffers", BATCH at a time, then one ovr_gdr_fence (what
 *          ovrdmad does per loop iteration);
 *   BAR    one copy at a time through GDRCopy's mapping of the GPU's BAR
 *          (ovr_gdr_bar_write / ovr_gdr_bar_read: a write includes its
 *          read-back), whatever the size: GB/s and microseconds a copy.
 *          Skipped, with the reason, where GDRCopy cannot be opened.
 * The driver is $OVRDMA_LIBCUDA, else libcuda.so.1: the real one on a
 * GPU machine, the fake (tests/fakecuda) elsewhere - where the figures
 * only measure the harness and memcpy; GDRCopy is $OVRDMA_LIBGDRAPI,
 * else libgdrapi.so.2 (the fake: the same library as the fake driver,
 * with FAKEGDR=1). Exits 77 without a driver.
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
#include <ovrdma/util.h>

#include "cuapp.h"
#include "cudadrv.h"

#define MB (1ull << 20)
#define DEV_LEN (64 * MB)
#define HOST_LEN (64 * MB)

static struct cuapp cu;

static double now_s(void)
{
	return (double)ovr_mono_ns() * 1e-9;
}

/* A cuMem allocation on device 0, exported and imported through gdr/
 * as ovrdmad imports an application's. */
static int dev_alloc(struct ovr_gdr *g, struct ovr_gdr_mem **m)
{
	gdr_CUdeviceptr va;
	int rc = cuapp_load(&cu); /* gdr/ has initialised the driver */

	return rc ? rc : cuapp_import(&cu, g, DEV_LEN, &va, m);
}

/* GB/s of copies of @size one way through the BAR, one at a time;
 * *@us: microseconds a copy. */
static double run_bar(struct ovr_gdr_mem *m, uint8_t *host, size_t size,
		      bool to_dev, double secs, double *us)
{
	size_t slots = HOST_LEN / size, dslots = DEV_LEN / size;
	uint64_t bytes = 0, i = 0;
	double t0 = now_s(), t;

	do {
		for (unsigned int b = 0; b < 64; b++, i++) {
			uint8_t *h = host + (i % slots) * size;
			uint64_t off = (i % dslots) * size;
			int rc = to_dev ? ovr_gdr_bar_write(m, off, h, size) :
					  ovr_gdr_bar_read(m, off, h, size);

			if (rc < 0) {
				fprintf(stderr,
					"bench-gdr-copy: BAR copy: %s (%s)\n",
					strerror(-rc),
					ovr_gdr_last_error(NULL));
				exit(1);
			}
			bytes += size;
		}
		t = now_s() - t0;
	} while (t < secs);
	*us = t * 1e6 / (double)i;
	return (double)bytes / t / 1e9;
}

/* GB/s of @n copies of @size each way: one at a time, or in batches;
 * *@us: microseconds a copy. */
static double run(struct ovr_gdr *g, struct ovr_gdr_mem *m, uint8_t *host,
		  size_t size, bool to_dev, bool async, unsigned int batch,
		  double secs, double *per_fence, double *us)
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
	*us = t * 1e6 / (double)i;
	/* queued copies per fence (0: none were queued) */
	*per_fence = st1.fences == st0.fences ?
			     0 :
			     (double)(st1.async_copies - st0.async_copies) /
				     (double)(st1.fences - st0.fences);
	return (double)bytes / t / 1e9;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 1024, 4096, 65536, MB };
	struct ovr_gdr_stats st;
	struct ovr_gdr_mem *m = NULL;
	struct ovr_gdr *g;
	unsigned int batch = 32;
	double secs = 0.5;
	char why[256] = "", barwhy[256] = "";
	uint8_t *host;
	bool bar;
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
	bar = ovr_gdr_bar_open(g, NULL, barwhy, sizeof(barwhy)) == 0;
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
	if (bar)
		printf("GDRCopy %s: BAR copies one at a time (writes read "
		       "back)\n",
		       getenv(OVR_GDR_BAR_ENV) ? getenv(OVR_GDR_BAR_ENV) :
						 OVR_GDR_LIBGDRAPI);
	else
		printf("GDRCopy unavailable (%s): BAR columns skipped\n",
		       barwhy);
	printf("%-6s %-4s %10s %9s %11s %8s %8s %10s %9s\n", "size", "dir",
	       "sync GB/s", "sync us", "async GB/s", "speedup", "/fence",
	       "BAR GB/s", "BAR us");
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		for (int d = 0; d < 2; d++) {
			double fs, fa, us_s, us_a, us_b = 0, b = 0;
			double s = run(g, m, host, sizes[k], d == 0, false,
				       batch, secs, &fs, &us_s);
			double a = run(g, m, host, sizes[k], d == 0, true,
				       batch, secs, &fa, &us_a);
			char sz[16], bs[16] = "-", bu[16] = "-";

			if (bar) {
				b = run_bar(m, host, sizes[k], d == 0, secs,
					    &us_b);
				snprintf(bs, sizeof(bs), "%.2f", b);
				snprintf(bu, sizeof(bu), "%.2f", us_b);
			}
			if (sizes[k] >= MB)
				snprintf(sz, sizeof(sz), "%zuM",
					 (size_t)(sizes[k] / MB));
			else if (sizes[k] >= 1024)
				snprintf(sz, sizeof(sz), "%zuK",
					 sizes[k] / 1024);
			else
				snprintf(sz, sizeof(sz), "%zu", sizes[k]);
			printf("%-6s %-4s %10.2f %9.2f %11.2f %7.2fx %8.1f "
			       "%10s %9s\n",
			       sz, d == 0 ? "H2D" : "D2H", s, us_s, a, a / s,
			       fa, bs, bu);
		}
	ovr_gdr_release(m);
	ovr_gdr_close(g);
	free(host);
	return 0;
}
