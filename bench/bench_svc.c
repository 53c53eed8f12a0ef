// SPDX-License-Identifier: MIT
/*
 * bench-svc: the node service (ovrdmad) end to end, through the client
 * library (include/ovrdma/client.h), between two nodes. One process holds
 * a connection to each node's ovrdmad (A and B), one RC QP on each,
 * connected to each other. Modes:
 *
 *  lat  8-byte RDMA WRITE ping-pong, as perftest's ib_write_lat does: A
 *       writes a counter into B's buffer (inline, signaled), B's side
 *       polls that memory until the new value shows, then writes it back
 *       into A's buffer, and A polls for it. One thread plays both
 *       applications (the round trip is strictly serial, and a second
 *       spinning thread would take a core from the three DPDK processes
 *       of the testbed). After a warm-up, --iters round trips: p50, p99,
 *       p99.9 and max in microseconds, and the one-way estimate (half).
 *  bw   RDMA WRITEs of --size bytes (default 64 KB) from A to B, a window
 *       of W WRs kept outstanding (every one signaled) for --seconds
 *       after a 0.5 s warm-up; the time runs from the first post to the
 *       last completion. Gbit/s of payload and Mops, for each window of
 *       --windows (default 1,8,64).
 *  reg  registration cost on node A, per route (docs/SERVICE.md 4): for
 *       every call fresh memory (a new private anonymous mapping for the
 *       process route, a new memfd mapped MAP_SHARED for the object
 *       route), every page touched before the clock starts, so that page
 *       faults are not counted; then ovr_cl_reg_mr and ovr_cl_dereg_mr,
 *       each timed, 4 KB to --reg-max-mb (default 1024). Median per call,
 *       and per GB. Both routes unless --mem names one.
 *
 * Memory (--mem): where the data buffers of lat and bw come from.
 * "private": posix_memalign (the process route: the service reaches it
 * with process_vm_readv/writev); "shared": a memfd mapped MAP_SHARED (the
 * object route: the service maps the same pages). Without --mem, an
 * anonymous private mapping (the process route) and the output as before
 * (no route label on the rows).
 *
 * Dataplane CPU: with --cpu-pids PID_A,PID_B (the two ovrdmad processes)
 * each timed phase reads their utime + stime from /proc/PID/stat (every
 * thread of the process, clock ticks) before and after, and turns it into
 * cycles per operation at the TSC rate, which is measured here against
 * CLOCK_MONOTONIC (the nominal clock; /proc/cpuinfo's "cpu MHz" is printed
 * next to it). An ovrdmad busy-polls while it has work and spin_us after
 * it, so its CPU time is what the node spends on the traffic, polling
 * included. Phases last seconds: ticks of 10 ms make it a percent at most.
 * Busy cycles (bcyc_op, issue 26's measure on a machine whose scheduler
 * sets every absolute figure): the same CPU time, only the share of it
 * that went to loop rounds which did work - each ovrdmad's busy_ns and
 * poll_ns counters (read through `show counters` on the connections,
 * which needs root) split its CPU time in the ratio of the CPU time
 * those rounds took: their wall times, each weighed by the share of it
 * the thread ran in the rounds ovrdmad sampled on its CPU clock
 * (busy_smp_cpu_ns / busy_smp_ns, poll_smp_*), so time spent
 * descheduled in the middle of a round counts for neither (bcyc_op;
 * bcyc_wall: the plain wall-time ratio, as before 2026-11-27).
 *
 * Besides the tables every figure is printed as a line "result MODE key
 * value ...", for bench/svc-bench.sh.
 *
 * Usage: bench-svc SOCK_A SOCK_B [options] MODE...
 *   --dev NAME        device on both nodes (default ovrdma0)
 *   --iters N         lat: measured round trips (default 50000)
 *   --warmup N        lat: round trips before measuring (default 2000)
 *   --seconds T       bw: seconds per window (default 3)
 *   --windows LIST    bw: outstanding WRs, comma-separated (default 1,8,64)
 *   --size B          bw: bytes per WRITE (default 65536)
 *   --tag NAME        bw: label of the rows (default none)
 *   --reg-max-mb M    reg: largest region (default 1024)
 *   --cpu-pids A,B    ovrdmad pids, for CPU cycles per operation
 *   --mem private|shared  lat, bw: data buffers' memory (see above);
 *                     reg: that route only
 */
#include <errno.h>
#include <getopt.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include <ovrdma/client.h>
#include <ovrdma/util.h>

#define QP_DEPTH 256u /* send WRs a QP holds */
#define BW_BUF (64u << 20) /* per node: the WRITEs cycle over it */
#define SPIN_LIMIT_NS 5000000000ull /* a round trip this long: failure */

struct node {
	struct ovr_cl *cl;
	struct ovr_ctl_dev dev;
	uint32_t pd;
	struct ovr_cl_cq *cq;
	struct ovr_cl_qp *qp;
	uint8_t *buf;
	size_t buf_len;
	int buf_fd; /* the memfd of --mem shared, else -1 */
	struct ovr_cl_mr *mr;
	uint32_t outstanding; /* signaled send WRs not yet completed */
};

static const char *dev_name = "ovrdma0";
static unsigned int iters = 50000, warmup = 2000;
static double seconds = 3;
static unsigned int windows[16] = { 1, 8, 64 }, nwindows = 3;
static uint32_t wr_size = 65536;
static const char *tag = "";
static unsigned int reg_max_mb = 1024;
static int cpu_pid[2];

enum mem {
	MEM_DEFAULT, /* anonymous private mapping, no route label */
	MEM_PRIVATE, /* posix_memalign: the process route */
	MEM_SHARED, /* memfd, MAP_SHARED: the object route */
};
static enum mem mem = MEM_DEFAULT;
static const char *const mem_name[] = { "-", "private", "shared" };
static const char *const mem_route[] = { "-", "process", "object" };
static double tsc_hz; /* 0: unknown */

/* ---- helpers ------------------------------------------------------------- */

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench-svc: %s: %s\n", what,
		strerror(rc < 0 ? -rc : rc));
	exit(1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* @v sorted; the value below which a fraction @q of the samples lie */
static uint64_t pct(const uint64_t *v, size_t n, double q)
{
	size_t i = (size_t)(q * (double)n);

	return v[i < n ? i : n - 1];
}

static uint64_t median_u64(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* utime + stime of every thread of @pid, in seconds; -1 when unreadable */
static double proc_cpu_s(int pid)
{
	char path[64], line[1024], *p;
	unsigned long long ut, st;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	p = fgets(line, sizeof(line), f);
	fclose(f);
	/* the command may hold spaces and parentheses: fields after the
	 * last ')' are 3 (state) onwards; utime and stime are 14 and 15 */
	if (!p || !(p = strrchr(line, ')')) ||
	    sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
		   &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* the two ovrdmads' control connections (A's and B's), for busy_ns */
static struct ovr_cl *busy_cl[2];

/* One counter of `show counters` text @text, in seconds (ns counters);
 * -1 when absent. */
static double counter_s(const char *text, const char *name)
{
	unsigned long long v;
	char key[40];
	const char *p;

	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(text, key);
	if (!p || sscanf(p + strlen(key), "%llu", &v) != 1)
		return -1;
	return (double)v * 1e-9;
}

/*
 * ovrdmad's busy and polling time so far (its counters busy_ns and
 * poll_ns: loop rounds that did work, and rounds that found none and
 * did not sleep; docs/OPERATIONS.md), in seconds, through `show
 * counters` on @cl (an administrative request: root); -1 when they
 * cannot be read.
 */
static void svc_busy_s(struct ovr_cl *cl, double *busy, double *poll,
		       double smp[4])
{
	static char text[OVR_CTL_MSG_MAX];
	struct ovr_ctl_adm_show_req q = { 0 };
	int n;

	*busy = *poll = -1;
	smp[0] = smp[1] = smp[2] = smp[3] = -1;
	if (!cl)
		return;
	snprintf(q.what, sizeof(q.what), "counters");
	n = ovr_cl_request(cl, OVR_CTL_ADM_SHOW, &q, sizeof(q), text,
			   sizeof(text) - 1);
	if (n < 0)
		return;
	text[n] = 0;
	*busy = counter_s(text, "busy_ns");
	*poll = counter_s(text, "poll_ns");
	smp[0] = counter_s(text, "busy_smp_ns");
	smp[1] = counter_s(text, "busy_smp_cpu_ns");
	smp[2] = counter_s(text, "poll_smp_ns");
	smp[3] = counter_s(text, "poll_smp_cpu_ns");
}

struct cpu_mark {
	double svc[2]; /* the two ovrdmads */
	double busy[2], poll[2]; /* ...their busy_ns and poll_ns */
	double smp[2][4]; /* ...and the sampled rounds' (busy_smp_ns ...) */
	double app; /* this process */
};

static void cpu_mark(struct cpu_mark *m)
{
	struct timespec ts;

	for (int i = 0; i < 2; i++) {
		m->svc[i] = cpu_pid[i] ? proc_cpu_s(cpu_pid[i]) : -1;
		svc_busy_s(cpu_pid[i] ? busy_cl[i] : NULL, &m->busy[i],
			   &m->poll[i], m->smp[i]);
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	m->app = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Prints the CPU part of a result line: CPU seconds of each ovrdmad and of
 * the application per second of the phase, and the ovrdmads' cycles per
 * operation (each, and both together).
 */
static void cpu_report(const struct cpu_mark *a, const struct cpu_mark *b,
		       double wall_s, double ops, double *cyc_total)
{
	double s[2], tot = 0;

	*cyc_total = -1;
	printf(" app_cpu %.3f", (b->app - a->app) / wall_s);
	if (!cpu_pid[0] || a->svc[0] < 0 || b->svc[0] < 0 || a->svc[1] < 0 ||
	    b->svc[1] < 0 || !tsc_hz)
		return;
	for (int i = 0; i < 2; i++) {
		s[i] = b->svc[i] - a->svc[i];
		tot += s[i];
	}
	*cyc_total = tot * tsc_hz / ops;
	printf(" cpu_a %.3f cpu_b %.3f cyc_a %.0f cyc_b %.0f cyc_op %.0f",
	       s[0] / wall_s, s[1] / wall_s, s[0] * tsc_hz / ops,
	       s[1] * tsc_hz / ops, *cyc_total);
	/*
	 * Busy: the rounds that did work. Their wall time (busy_a, busy_b
	 * per second) counts a round the thread spent descheduled whole;
	 * so the cycles per operation are the CPU time split between busy
	 * and polling rounds in the ratio of their wall times (bcyc_op),
	 * the CPU of naps' system calls going with them.
	 */
	double busy[2], run[2][2], cyc = 0, cyc_wall = 0;

	for (int i = 0; i < 2; i++) {
		double bz = b->busy[i] - a->busy[i];
		double pl = b->poll[i] - a->poll[i];

		if (a->busy[i] < 0 || b->busy[i] < 0 || a->poll[i] < 0 ||
		    b->poll[i] < 0 || bz + pl <= 0)
			return;
		busy[i] = bz;
		cyc_wall += s[i] * bz / (bz + pl) * tsc_hz / ops;
		/* the share of each kind's wall time the thread ran, from
		 * the sampled rounds (1 where none were sampled) */
		for (int k = 0; k < 2; k++) {
			double w = b->smp[i][2 * k] - a->smp[i][2 * k];
			double c = b->smp[i][2 * k + 1] - a->smp[i][2 * k + 1];

			run[i][k] = a->smp[i][2 * k] >= 0 && w > 0 ? c / w : 1;
			if (run[i][k] > 1)
				run[i][k] = 1;
		}
		bz *= run[i][0];
		pl *= run[i][1];
		if (bz + pl <= 0)
			return;
		cyc += s[i] * bz / (bz + pl) * tsc_hz / ops;
	}
	printf(" busy_a %.3f busy_b %.3f run_busy_a %.3f run_busy_b %.3f"
	       " run_poll_a %.3f run_poll_b %.3f bcyc_wall %.0f bcyc_op %.0f",
	       busy[0] / wall_s, busy[1] / wall_s, run[0][0], run[1][0],
	       run[0][1], run[1][1], cyc_wall, cyc);
}

/* The TSC rate against CLOCK_MONOTONIC over 200 ms (x86 only). */
static void measure_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint64_t t0 = ovr_mono_ns(), c0 = __rdtsc(), t1, c1;

	while (ovr_mono_ns() - t0 < 200000000ull)
		;
	t1 = ovr_mono_ns();
	c1 = __rdtsc();
	tsc_hz = (double)(c1 - c0) * 1e9 / (double)(t1 - t0);
#endif
}

static double cpuinfo_mhz(void)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[256];
	double mhz = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "cpu MHz : %lf", &mhz) == 1)
			break;
	fclose(f);
	return mhz;
}

/* ---- memory ----------------------------------------------------------------- */

/*
 * @len bytes of memory of kind @m, every page touched (zeros, or @fill):
 * *@fd is the memfd of MEM_SHARED (the caller closes it), else -1.
 */
static uint8_t *mem_alloc(enum mem m, size_t len, int fill, int *fd)
{
	void *p = MAP_FAILED;

	*fd = -1;
	switch (m) {
	case MEM_DEFAULT:
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			die("mmap", errno);
		break;
	case MEM_PRIVATE: {
		int rc = posix_memalign(&p, 4096, len);

		if (rc)
			die("posix_memalign", rc);
		break;
	}
	case MEM_SHARED:
		*fd = memfd_create("bench-svc", MFD_CLOEXEC);
		if (*fd < 0)
			die("memfd_create", errno);
		if (ftruncate(*fd, (off_t)len))
			die("ftruncate", errno);
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
		if (p == MAP_FAILED)
			die("mmap memfd", errno);
		break;
	}
	memset(p, fill, len); /* every page present */
	return p;
}

static void mem_free(enum mem m, uint8_t *p, size_t len, int fd)
{
	if (m == MEM_PRIVATE)
		free(p);
	else
		munmap(p, len);
	if (fd >= 0)
		close(fd);
}

/* ", private memory (process route)" after a row's label; "" by default */
static const char *mem_label(void)
{
	static char s[64];

	if (mem == MEM_DEFAULT)
		return "";
	snprintf(s, sizeof(s), ", %s memory (%s route)", mem_name[mem],
		 mem_route[mem]);
	return s;
}

/* the result lines' "mem NAME " pair; "" by default */
static const char *mem_key(void)
{
	return mem == MEM_DEFAULT ? "" :
	       mem == MEM_PRIVATE ? "mem private " :
				    "mem shared ";
}

/* ---- setup (as tests/integration/svc_xfer.c) ------------------------------ */

static void setup(struct node *n, const char *sock, size_t buf_len)
{
	struct ovr_ctl_qp_cap cap = { .max_send_wr = QP_DEPTH,
				      .max_recv_wr = 16,
				      .max_send_sge = 1,
				      .max_recv_sge = 1,
				      .max_inline_data = 64 };
	int rc;

	n->cl = ovr_cl_connect(sock, "bench-svc");
	if (!n->cl)
		die(sock, errno);
	rc = ovr_cl_open(n->cl, dev_name, &n->dev);
	if (rc)
		die("open", rc);
	rc = ovr_cl_alloc_pd(n->cl, &n->pd);
	if (rc)
		die("alloc_pd", rc);
	n->cq = ovr_cl_create_cq(n->cl, 2 * QP_DEPTH, OVR_CTL_NO_CHANNEL, 0);
	if (!n->cq)
		die("create_cq", errno);
	n->qp = ovr_cl_create_qp(n->cl, n->pd, n->cq, n->cq, &cap, false, 0);
	if (!n->qp)
		die("create_qp", errno);
	n->buf = mem_alloc(mem, buf_len, 0, &n->buf_fd);
	n->buf_len = buf_len;
	n->mr = ovr_cl_reg_mr(n->cl, n->pd, n->buf, buf_len,
			      OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE |
				      OVR_ACCESS_REMOTE_READ);
	if (!n->mr)
		die("reg_mr", errno);
}

static void connect_qp(struct node *n, const struct node *peer)
{
	const char *what = NULL;
	int rc = ovr_cl_connect_rc(
		n->cl, n->qp, &n->dev, ovr_cl_qp_num(peer->qp), peer->dev.vip,
		OVR_ACCESS_REMOTE_WRITE | OVR_ACCESS_REMOTE_READ, &what);

	if (rc)
		die(what, rc);
}

/* Takes what completed on @n's CQ, without waiting; all must succeed. */
static unsigned int reap(struct node *n)
{
	struct ovr_cl_wc wc[32];
	int k = ovr_cl_poll_cq(n->cq, 32, wc);

	if (k < 0)
		die("poll_cq", k);
	for (int i = 0; i < k; i++)
		if (wc[i].status != OVR_WC_SUCCESS) {
			fprintf(stderr,
				"bench-svc: completion status %u vendor_err "
				"0x%x\n",
				wc[i].status, wc[i].vendor_err);
			exit(1);
		}
	n->outstanding -= (unsigned int)k;
	return (unsigned int)k;
}

/* ---- lat ------------------------------------------------------------------- */

/* @s writes @v inline into the first 8 bytes of @d's buffer. */
static void write8(struct node *s, const struct node *d, uint64_t v)
{
	struct ovr_cl_sge sg = { (uint64_t)(uintptr_t)&v, 8, s->mr->lkey };
	struct ovr_cl_send_wr wr = {
		.opcode = OVR_WR_RDMA_WRITE,
		.send_flags = OVR_SEND_SIGNALED | OVR_SEND_INLINE,
		.sg_list = &sg,
		.num_sge = 1,
		.rkey = d->mr->rkey,
		.remote_addr = (uint64_t)(uintptr_t)d->buf,
	};
	int rc;

	/* completions come with the peer's ACKs; keep room in the queue */
	while (s->outstanding >= QP_DEPTH / 2)
		reap(s);
	rc = ovr_cl_post_send(s->qp, &wr);
	if (rc)
		die("post_send", rc);
	s->outstanding++;
}

/* Spins until @n's buffer holds @v (the service writes it there). */
static void wait_value(const struct node *n, uint64_t v)
{
	const _Atomic uint64_t *p = (const _Atomic uint64_t *)(void *)n->buf;
	uint64_t t0 = 0;

	for (unsigned int i = 1;
	     atomic_load_explicit(p, memory_order_acquire) != v; i++) {
		if (i % 65536)
			continue;
		if (!t0)
			t0 = ovr_mono_ns();
		else if (ovr_mono_ns() - t0 > SPIN_LIMIT_NS) {
			fprintf(stderr,
				"bench-svc: lat: value %llu never arrived\n",
				(unsigned long long)v);
			exit(1);
		}
	}
}

static void run_lat(struct node *a, struct node *b)
{
	uint64_t *rtt = malloc(iters * sizeof(*rtt)), v = 0, t0, t_start = 0;
	struct cpu_mark m0 = { 0 }, m1;
	double wall, cyc;

	if (!rtt)
		die("malloc", ENOMEM);
	for (unsigned int i = 0; i < warmup + iters; i++) {
		if (i == warmup) {
			cpu_mark(&m0);
			t_start = ovr_mono_ns();
		}
		v++;
		t0 = ovr_mono_ns();
		write8(a, b, v);
		wait_value(b, v);
		write8(b, a, v);
		wait_value(a, v);
		if (i >= warmup)
			rtt[i - warmup] = ovr_mono_ns() - t0;
		reap(a);
		reap(b);
	}
	wall = (double)(ovr_mono_ns() - t_start) * 1e-9;
	cpu_mark(&m1);
	qsort(rtt, iters, sizeof(*rtt), cmp_u64);
	printf("\n| 8 B RDMA WRITE ping-pong | round trips | p50 µs | p99 µs | "
	       "p99.9 µs | max µs | one-way p50 µs |\n"
	       "|---|---:|---:|---:|---:|---:|---:|\n"
	       "| A -> B -> A, inline, polling memory%s | %u | %.1f | %.1f | "
	       "%.1f | %.1f | %.1f |\n",
	       mem_label(), iters, pct(rtt, iters, 0.5) / 1e3,
	       pct(rtt, iters, 0.99) / 1e3, pct(rtt, iters, 0.999) / 1e3,
	       rtt[iters - 1] / 1e3, pct(rtt, iters, 0.5) / 2e3);
	printf("result lat %siters %u p50_us %.2f p99_us %.2f p999_us %.2f "
	       "max_us %.2f oneway_us %.2f seconds %.3f",
	       mem_key(), iters, pct(rtt, iters, 0.5) / 1e3,
	       pct(rtt, iters, 0.99) / 1e3, pct(rtt, iters, 0.999) / 1e3,
	       rtt[iters - 1] / 1e3, pct(rtt, iters, 0.5) / 2e3, wall);
	/* an operation is one WRITE: two per round trip */
	cpu_report(&m0, &m1, wall, 2.0 * iters, &cyc);
	printf("\n");
	free(rtt);
}

/* ---- bw -------------------------------------------------------------------- */

/* WRITEs from @a to @b, @window outstanding, for @secs; returns ops done,
 * *@wall the time from the first post to the last completion. */
static uint64_t stream(struct node *a, const struct node *b,
		       unsigned int window, double secs, double *wall)
{
	uint64_t t0 = ovr_mono_ns(), stop = t0 + (uint64_t)(secs * 1e9),
		 idle = 0;
	uint64_t posted = 0, done = 0, nslot = BW_BUF / wr_size;

	for (;;) {
		uint64_t now;
		unsigned int k;

		while (a->outstanding < window) {
			uint64_t off = (posted % nslot) * wr_size;
			struct ovr_cl_sge sg = { (uint64_t)(uintptr_t)a->buf +
							 off,
						 wr_size, a->mr->lkey };
			struct ovr_cl_send_wr wr = {
				.wr_id = posted,
				.opcode = OVR_WR_RDMA_WRITE,
				.send_flags = OVR_SEND_SIGNALED,
				.sg_list = &sg,
				.num_sge = 1,
				.rkey = b->mr->rkey,
				.remote_addr =
					(uint64_t)(uintptr_t)b->buf + off,
			};
			int rc;

			if (ovr_mono_ns() >= stop)
				break;
			rc = ovr_cl_post_send(a->qp, &wr);
			if (rc)
				die("post_send", rc);
			a->outstanding++;
			posted++;
		}
		k = reap(a);
		done += k;
		now = ovr_mono_ns();
		if (!a->outstanding && now >= stop)
			break;
		if (k)
			idle = now;
		else if (!idle)
			idle = now;
		else if (now - idle > SPIN_LIMIT_NS) {
			fprintf(stderr,
				"bench-svc: bw: no completion in 5 s\n");
			exit(1);
		}
	}
	*wall = (double)(ovr_mono_ns() - t0) * 1e-9;
	return done;
}

static void run_bw(struct node *a, struct node *b)
{
	printf("\n| RDMA WRITE %u B, A -> B%s%s%s | window | seconds | Gbit/s "
	       "of payload | Mops | ovrdmad cycles/op (A + B) |\n"
	       "|---|---:|---:|---:|---:|---:|\n",
	       wr_size, *tag ? ", " : "", tag, mem_label());
	for (unsigned int w = 0; w < nwindows; w++) {
		struct cpu_mark m0, m1;
		double wall, cyc, gbps, mops;
		uint64_t ops;

		stream(a, b, windows[w], 0.5, &wall); /* warm-up */
		cpu_mark(&m0);
		ops = stream(a, b, windows[w], seconds, &wall);
		cpu_mark(&m1);
		gbps = (double)ops * wr_size * 8 / wall / 1e9;
		mops = (double)ops / wall / 1e6;
		printf("result bw %stag %s size %u window %u ops %llu seconds "
		       "%.3f gbps %.3f mops %.4f",
		       mem_key(), *tag ? tag : "-", wr_size, windows[w],
		       (unsigned long long)ops, wall, gbps, mops);
		cpu_report(&m0, &m1, wall, (double)ops, &cyc);
		printf("\n| | %u | %.2f | %.2f | %.4f | ", windows[w], wall,
		       gbps, mops);
		if (cyc >= 0)
			printf("%.0f |\n", cyc);
		else
			printf("- |\n");
		fflush(stdout);
	}
}

/* ---- reg ------------------------------------------------------------------- */

static const char *size_name(size_t kb, char *s, size_t n)
{
	if (kb >= 1048576)
		snprintf(s, n, "%zu GB", kb >> 20);
	else if (kb >= 1024)
		snprintf(s, n, "%zu MB", kb >> 10);
	else
		snprintf(s, n, "%zu KB", kb);
	return s;
}

/*
 * One registration of @len fresh bytes of kind @m: the memory is mapped
 * anew and every page touched before the clock starts. Adds the times of
 * ovr_cl_reg_mr and ovr_cl_dereg_mr to @t_reg and @t_dereg.
 */
static void reg_once(struct node *a, enum mem m, size_t len, unsigned int r,
		     uint64_t *t_reg, uint64_t *t_dereg)
{
	unsigned int access = OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE |
			      OVR_ACCESS_REMOTE_READ;
	/* private: a fresh mapping, not what the heap held already */
	enum mem k = m == MEM_PRIVATE ? MEM_DEFAULT : m;
	int fd, rc;
	uint8_t *p = mem_alloc(k, len, (int)(r % 255) + 1, &fd);
	struct ovr_cl_mr *mr;
	uint64_t t;

	t = ovr_mono_ns();
	mr = ovr_cl_reg_mr(a->cl, a->pd, p, len, access);
	*t_reg = ovr_mono_ns() - t;
	if (!mr)
		die("reg_mr", errno);
	if (p[0] != (uint8_t)(r % 255 + 1) || p[len - 1] != p[0])
		die("reg_mr changed the contents", EIO);
	t = ovr_mono_ns();
	rc = ovr_cl_dereg_mr(a->cl, mr);
	*t_dereg = ovr_mono_ns() - t;
	if (rc)
		die("dereg_mr", rc);
	mem_free(k, p, len, fd);
}

static void run_reg(struct node *a)
{
	static const size_t kb[] = { 4, 64, 1024, 16384, 262144, 1048576 };
	/* the process route first: the table's columns in that order */
	enum mem routes[2] = { MEM_PRIVATE, MEM_SHARED };
	unsigned int nroutes = 2;

	if (mem == MEM_SHARED)
		routes[0] = MEM_SHARED;
	if (mem != MEM_DEFAULT)
		nroutes = 1;
	printf("\n| region | calls |");
	for (unsigned int i = 0; i < nroutes; i++)
		printf(" %s route (%s): reg_mr µs | per GB ms | dereg_mr µs |",
		       mem_route[routes[i]], mem_name[routes[i]]);
	if (nroutes == 2)
		printf(" reg process / object |");
	printf("\n|---:|---:|");
	for (unsigned int i = 0; i < 3 * nroutes + (nroutes == 2); i++)
		printf("---:|");
	printf("\n");
	for (size_t s = 0; s < sizeof(kb) / sizeof(kb[0]); s++) {
		size_t len = kb[s] << 10;
		unsigned int reps = len <= (1u << 20)  ? 100 :
				    len <= (16u << 20) ? 10 :
							 3;
		uint64_t t_reg[2][100], t_dereg[2][100], reg[2], dereg[2];
		char name[32];

		if (kb[s] > (size_t)reg_max_mb << 10)
			break;
		/* the routes alternate, so that both see the same machine */
		for (unsigned int r = 0; r < reps; r++)
			for (unsigned int i = 0; i < nroutes; i++)
				reg_once(a, routes[i], len, r, &t_reg[i][r],
					 &t_dereg[i][r]);
		printf("| %s | %u |", size_name(kb[s], name, sizeof(name)),
		       reps);
		for (unsigned int i = 0; i < nroutes; i++) {
			reg[i] = median_u64(t_reg[i], reps);
			dereg[i] = median_u64(t_dereg[i], reps);
			printf(" %.1f | %.2f | %.1f |", reg[i] / 1e3,
			       (double)reg[i] / 1e6 * (double)(1ull << 30) /
				       (double)len,
			       dereg[i] / 1e3);
		}
		if (nroutes == 2)
			printf(" %.2f |", (double)reg[0] / (double)reg[1]);
		printf("\n");
		for (unsigned int i = 0; i < nroutes; i++)
			printf("result reg mem %s route %s kb %zu reps %u "
			       "reg_us %.1f ms_per_gb %.3f dereg_us %.1f\n",
			       mem_name[routes[i]], mem_route[routes[i]], kb[s],
			       reps, reg[i] / 1e3,
			       (double)reg[i] / 1e6 * (double)(1ull << 30) /
				       (double)len,
			       dereg[i] / 1e3);
		fflush(stdout);
	}
}

/* ---- main ------------------------------------------------------------------ */

static void parse_windows(const char *s)
{
	char *end;

	nwindows = 0;
	while (*s && nwindows < 16) {
		unsigned long w = strtoul(s, &end, 0);

		if (end == s || !w || w > QP_DEPTH) {
			fprintf(stderr, "bench-svc: --windows 1..%u,...\n",
				QP_DEPTH);
			exit(2);
		}
		windows[nwindows++] = (unsigned int)w;
		s = *end == ',' ? end + 1 : end;
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dev", required_argument, NULL, 'd' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "seconds", required_argument, NULL, 't' },
		{ "windows", required_argument, NULL, 'W' },
		{ "size", required_argument, NULL, 's' },
		{ "tag", required_argument, NULL, 'T' },
		{ "reg-max-mb", required_argument, NULL, 'r' },
		{ "cpu-pids", required_argument, NULL, 'p' },
		{ "mem", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	struct node a = { 0 }, b = { 0 };
	bool lat = false, bw = false, reg = false;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			dev_name = optarg;
			break;
		case 'n':
			iters = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'w':
			warmup = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 't':
			seconds = strtod(optarg, NULL);
			break;
		case 'W':
			parse_windows(optarg);
			break;
		case 's':
			wr_size = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'T':
			tag = optarg;
			break;
		case 'r':
			reg_max_mb = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			if (sscanf(optarg, "%d,%d", &cpu_pid[0], &cpu_pid[1]) !=
			    2) {
				fprintf(stderr, "bench-svc: --cpu-pids A,B\n");
				return 2;
			}
			break;
		case 'm':
			if (!strcmp(optarg, "private"))
				mem = MEM_PRIVATE;
			else if (!strcmp(optarg, "shared"))
				mem = MEM_SHARED;
			else {
				fprintf(stderr,
					"bench-svc: --mem private|shared\n");
				return 2;
			}
			break;
		default:
			return 2;
		}
	}
	for (int i = optind + 2; i < argc; i++) {
		lat |= !strcmp(argv[i], "lat");
		bw |= !strcmp(argv[i], "bw");
		reg |= !strcmp(argv[i], "reg");
	}
	if (argc - optind < 3 || !(lat || bw || reg) || !iters ||
	    !(seconds > 0) || !wr_size || wr_size > BW_BUF) {
		fprintf(stderr, "usage: bench-svc SOCK_A SOCK_B [--dev D] "
				"[--iters N] [--warmup N] [--seconds T] "
				"[--windows 1,8,64] [--size B] [--tag T] "
				"[--reg-max-mb M] [--cpu-pids A,B] "
				"[--mem private|shared] lat|bw|reg...\n");
		return 2;
	}
	if (cpu_pid[0]) {
		measure_tsc();
		printf("clock: TSC %.1f MHz measured against CLOCK_MONOTONIC, "
		       "/proc/cpuinfo says %.1f MHz\n",
		       tsc_hz / 1e6, cpuinfo_mhz());
		printf("result clock tsc_mhz %.1f cpuinfo_mhz %.1f\n",
		       tsc_hz / 1e6, cpuinfo_mhz());
	}
	setup(&a, argv[optind], BW_BUF);
	if (lat || bw) {
		setup(&b, argv[optind + 1], BW_BUF);
		connect_qp(&a, &b);
		connect_qp(&b, &a);
	}
	busy_cl[0] = a.cl;
	busy_cl[1] = b.cl;
	if (lat)
		run_lat(&a, &b);
	if (bw)
		run_bw(&a, &b);
	if (reg)
		run_reg(&a);
	ovr_cl_close(a.cl);
	if (b.cl)
		ovr_cl_close(b.cl);
	return 0;
}
