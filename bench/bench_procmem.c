// SPDX-License-Identifier: MIT
/*
 * bench-procmem: what the process route's kernel interfaces cost on this
 * machine (docs/PERFORMANCE.md, "Memory routes"; docs/SERVICE.md 4.2).
 * A child process stands for the application (its private memory, which
 * it never touches while measured); this process stands for ovrdmad.
 * Printed, as medians of --reps repetitions of --iters calls each:
 *
 *  1. reads of one range: pread of the child's /proc/PID/mem (the
 *     route ovrdmad takes) against process_vm_readv (what it would take
 *     with the application's credentials), 8 B to 256 KB;
 *  2. a run of adjoining pieces written into the child: one pwritev of
 *     /proc/PID/mem with an iovec per piece (the kernel's file has no
 *     vectored I/O: a write per iovec) against the pieces gathered into
 *     one buffer and one pwrite (what ovrdmad does, svc_dp.c pq_call);
 *  3. the round trip of handing a copy to a helper process (futex wake
 *     and wait on a shared word, the helper doing process_vm_readv of
 *     8 B): what a copier process per application user would add to
 *     each call.
 *
 * Usage: bench-procmem [--iters N] [--reps N] [--quick]
 * Needs nothing but Linux (the child is its own, so every check passes).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define APP_LEN (8u << 20)
#define MAX_PIECES 64u

static unsigned int iters = 20000, reps = 5;
static pid_t app_pid;
static uint8_t *app; /* the child's buffer, at the same address here */
static int memfd;

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "bench-procmem: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* median over reps of the mean time per call of @fn, in µs */
static double timed(void (*fn)(void *, unsigned int), void *arg)
{
	double r[64];

	for (unsigned int k = 0; k < reps; k++) {
		double t0 = now_ns();

		for (unsigned int i = 0; i < iters; i++)
			fn(arg, i);
		r[k] = (now_ns() - t0) / iters / 1e3;
	}
	qsort(r, reps, sizeof(r[0]), cmp_d);
	return r[reps / 2];
}

struct rd {
	uint8_t *dst;
	size_t len;
};

/* the child's range for call @i: a different one each time, in APP_LEN */
static uint64_t at(size_t len, unsigned int i)
{
	size_t slots = APP_LEN / (len < 4096 ? 4096 : len);

	return (uint64_t)(uintptr_t)app +
	       (uint64_t)(i % slots) * (len < 4096 ? 4096 : len);
}

static void rd_procmem(void *arg, unsigned int i)
{
	struct rd *r = arg;

	if (pread(memfd, r->dst, r->len, (off_t)at(r->len, i)) !=
	    (ssize_t)r->len)
		die("pread /proc/PID/mem");
}

static void rd_pvm(void *arg, unsigned int i)
{
	struct rd *r = arg;
	struct iovec l = { r->dst, r->len },
		     o = { (void *)(uintptr_t)at(r->len, i), r->len };

	if (process_vm_readv(app_pid, &l, 1, &o, 1, 0) != (ssize_t)r->len)
		die("process_vm_readv");
}

struct wr {
	struct iovec v[MAX_PIECES];
	unsigned int n;
	size_t piece;
	uint8_t *gather;
};

static void wr_vec(void *arg, unsigned int i)
{
	struct wr *w = arg;
	size_t len = w->piece * w->n;

	if (pwritev(memfd, w->v, (int)w->n, (off_t)at(len, i)) != (ssize_t)len)
		die("pwritev /proc/PID/mem");
}

static void wr_gather(void *arg, unsigned int i)
{
	struct wr *w = arg;
	size_t len = w->piece * w->n;

	for (unsigned int j = 0; j < w->n; j++)
		memcpy(w->gather + j * w->piece, w->v[j].iov_base, w->piece);
	if (pwrite(memfd, w->gather, len, (off_t)at(len, i)) != (ssize_t)len)
		die("pwrite /proc/PID/mem");
}

/* ---- the helper process's round trip ------------------------------------ */

struct hand {
	_Atomic uint32_t ask, done;
	uint64_t word;
};

static void fwait(_Atomic uint32_t *a, uint32_t v)
{
	while (atomic_load(a) == v)
		syscall(SYS_futex, a, FUTEX_WAIT, v, NULL, NULL, 0);
}

static void fwake(_Atomic uint32_t *a)
{
	syscall(SYS_futex, a, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void helper_loop(struct hand *h)
{
	uint32_t seen = 0;

	for (;;) {
		struct iovec l = { &h->word, 8 }, o = { app, 8 };

		fwait(&h->ask, seen);
		seen = atomic_load(&h->ask);
		if (seen == UINT32_MAX)
			_exit(0);
		if (process_vm_readv(app_pid, &l, 1, &o, 1, 0) != 8)
			_exit(1);
		atomic_store(&h->done, seen);
		fwake(&h->done);
	}
}

static void hand_call(void *arg, unsigned int i)
{
	struct hand *h = arg;
	uint32_t k = atomic_load(&h->ask) + 1;

	(void)i;
	atomic_store(&h->ask, k);
	fwake(&h->ask);
	fwait(&h->done, k - 1);
}

int main(int argc, char **argv)
{
	static const size_t rsz[] = { 8, 4096, 65536, 262144 };
	static const struct {
		unsigned int n;
		size_t piece;
	} runs[] = { { 29, 8 }, { 16, 1024 }, { 16, 4096 }, { 64, 4096 } };
	char path[64];
	uint8_t *src, *dst, *gather;
	struct hand *h;
	pid_t helper;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = (unsigned int)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--quick"))
			iters = 500, reps = 3;
		else {
			fprintf(stderr,
				"usage: bench-procmem [--iters N] [--reps N] [--quick]\n");
			return 2;
		}
	}
	if (!iters || !reps || reps > 64) {
		fprintf(stderr, "bench-procmem: --reps 1..64, --iters > 0\n");
		return 2;
	}
	app = mmap(NULL, APP_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	src = malloc(MAX_PIECES * 8192);
	dst = malloc(262144);
	gather = malloc(MAX_PIECES * 4096);
	h = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (app == MAP_FAILED || h == MAP_FAILED || !src || !dst || !gather)
		die("memory");
	memset(app, 1, APP_LEN); /* every page there, in the child too */
	memset(src, 2, MAX_PIECES * 8192);
	app_pid = fork();
	if (app_pid < 0)
		die("fork");
	if (!app_pid) {
		for (;;)
			pause();
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)app_pid);
	memfd = open(path, O_RDWR | O_CLOEXEC);
	if (memfd < 0)
		die(path);

	printf("bench-procmem: %u calls x %u repetitions, medians (µs per call)\n\n",
	       iters, reps);
	printf("| read of one range | /proc/PID/mem pread | process_vm_readv | pread / process_vm |\n");
	printf("|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < sizeof(rsz) / sizeof(rsz[0]); i++) {
		struct rd r = { dst, rsz[i] };
		double a = timed(rd_procmem, &r), b = timed(rd_pvm, &r);

		printf("| %zu B | %.2f | %.2f | %.2f |\n", rsz[i], a, b, a / b);
	}
	printf("\n| adjoining pieces written | pwritev, an iovec each | gathered, one pwrite | pwritev / gathered |\n");
	printf("|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		struct wr w = { .n = runs[i].n,
				.piece = runs[i].piece,
				.gather = gather };
		double a, b;

		for (unsigned int j = 0; j < w.n; j++)
			w.v[j] = (struct iovec){ src + j * 8192, w.piece };
		a = timed(wr_vec, &w);
		b = timed(wr_gather, &w);
		printf("| %u x %zu B | %.2f | %.2f | %.2f |\n", w.n, w.piece, a,
		       b, a / b);
	}
	helper = fork();
	if (helper < 0)
		die("fork");
	if (!helper)
		helper_loop(h);
	printf("\n| a copy handed to a helper process (futex round trip + process_vm_readv of 8 B) | µs |\n");
	printf("|---|---:|\n");
	printf("| round trip | %.2f |\n", timed(hand_call, h));
	atomic_store(&h->ask, UINT32_MAX);
	fwake(&h->ask);
	waitpid(helper, NULL, 0);
	kill(app_pid, SIGKILL);
	waitpid(app_pid, NULL, 0);
	return 0;
}
