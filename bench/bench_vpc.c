// SPDX-License-Identifier: MIT
/*
 * VPC overlay benchmark: cost per packet of encapsulation, of transmit
 * (route lookup + encapsulation) and of receive (parse, two table lookups,
 * anti-spoofing, security group) with 1, 10 000 and 1 000 000 vIP
 * bindings; and lookup throughput of one reader core while a control-plane
 * thread moves vIPs at 10 000 updates per second. Every figure is the
 * median of several runs. Prints a markdown table (docs/PERFORMANCE.md).
 *
 * Usage: bench-vpc [-q]   (-q: fewer iterations, a smoke run)
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ovrdma/vpc.h>
#include <ovrdma/util.h>

#define LOCAL 0xc0a80001u /* this host */
#define TEN 1000u
#define NLOCAL_MAX 64u /* vIPs served here: VMs on one host */
#define NFRAMES 4096u /* distinct frames/flows, cycled */
#define PDU 1024u
#define RUNS 7
#define TPUT_RUNS 5
#define UPDATES_PER_S 10000u

static unsigned long iters = 2000000;
static uint64_t tput_ns = 500000000ull; /* one throughput run */

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static uint32_t vip_of(uint32_t i)
{
	return 0x0a000001u + i; /* 10.0.0.1 ... */
}

static uint32_t nlocal_of(uint32_t n)
{
	return n < NLOCAL_MAX ? n : NLOCAL_MAX;
}

static uint32_t host_of(uint32_t i, uint32_t n, uint32_t gen)
{
	if (i < nlocal_of(n))
		return LOCAL;
	return 0xc6120000u | ((i + gen) & 0xffu); /* 198.18.0.x */
}

static struct ovr_vpc_binding binding_of(uint32_t i, uint32_t n, uint32_t gen)
{
	struct ovr_vpc_binding b;

	memset(&b, 0, sizeof(b));
	b.host = host_of(i, n, gen);
	b.dev = b.host == LOCAL ? (int32_t)i : OVR_VPC_DEV_NONE;
	b.mac[0] = 0x02;
	b.mac[5] = (uint8_t)b.host;
	return b;
}

/* A context with @n bindings in one tenant; the caller is its reader. */
static struct ovr_vpc *build(uint32_t n, struct ovr_vpc_thread **t)
{
	static const struct ovr_vpc_sg_rule net = { 0x0a000000u, 8 };
	struct ovr_vpc_config cfg;
	struct ovr_vpc_binding b;
	struct ovr_vpc *vpc;
	uint32_t i;

	memset(&cfg, 0, sizeof(cfg));
	cfg.local_host = LOCAL;
	cfg.local_mac[0] = 0x02;
	cfg.size_hint = n; /* sized up front: no resize during the runs */
	vpc = ovr_vpc_create(&cfg);
	if (!vpc || ovr_vpc_tenant_add(vpc, TEN) ||
	    ovr_vpc_sg_set(vpc, TEN, &net, 1)) {
		perror("bench-vpc: setup");
		exit(1);
	}
	*t = ovr_vpc_thread_register(vpc);
	if (!*t) {
		perror("bench-vpc: register");
		exit(1);
	}
	for (i = 0; i < n; i++) {
		b = binding_of(i, n, 0);
		if (ovr_vpc_vip_add(vpc, TEN, vip_of(i), &b)) {
			fprintf(stderr, "bench-vpc: vip_add failed\n");
			exit(1);
		}
		if ((i & 1023) == 1023)
			ovr_vpc_quiescent();
	}
	ovr_vpc_quiescent();
	return vpc;
}

struct frames {
	uint8_t *buf; /* NFRAMES frames of OVR_WIRE_ENCAP_LEN + PDU */
	struct ovr_vpc_flow flow[NFRAMES];
	size_t len;
};

/* Frames from random vIPs to random local vIPs, as their hosts send them. */
static void make_frames(struct frames *fr, uint32_t n)
{
	struct ovr_vpc_hdr h;
	uint32_t s = 42, k, src, dst;

	fr->len = OVR_WIRE_ENCAP_LEN + PDU;
	fr->buf = aligned_alloc(64, NFRAMES * 1152);
	if (!fr->buf)
		exit(1);
	memset(fr->buf, 0, NFRAMES * 1152);
	for (k = 0; k < NFRAMES; k++) {
		src = rnd(&s) % n;
		dst = rnd(&s) % nlocal_of(n);
		memset(&h, 0, sizeof(h));
		h.src_host = host_of(src, n, 0);
		h.dst_host = LOCAL;
		h.vni = TEN;
		h.src_vip = vip_of(src);
		h.dst_vip = vip_of(dst);
		h.sport = (uint16_t)(OVR_VPC_SPORT_MIN + k);
		h.dport = OVR_WIRE_UDP_PORT;
		h.ecn = OVR_VPC_ECN_ECT0;
		if (ovr_vpc_encap(fr->buf + k * 1152 + OVR_WIRE_ENCAP_LEN,
				  OVR_WIRE_ENCAP_LEN, PDU, &h))
			exit(1);
		/* transmit flows: a local vIP to any vIP */
		ovr_vpc_flow_init(&fr->flow[k], TEN, vip_of(dst), vip_of(src),
				  k, k + 1, 0);
	}
}

static double bench_encap(void)
{
	uint8_t *bufs = aligned_alloc(64, 64 * 1152);
	struct ovr_vpc_hdr h;
	unsigned long i;
	uint64_t t0;
	int rc = 0;

	if (!bufs)
		exit(1);
	memset(bufs, 0, 64 * 1152);
	memset(&h, 0, sizeof(h));
	h.src_host = LOCAL;
	h.dst_host = 0xc6120001u;
	h.vni = TEN;
	h.src_vip = vip_of(0);
	h.dst_vip = vip_of(1);
	h.dport = OVR_WIRE_UDP_PORT;
	h.ecn = OVR_VPC_ECN_ECT0;
	t0 = ovr_mono_ns();
	for (i = 0; i < iters; i++) {
		h.sport = (uint16_t)(OVR_VPC_SPORT_MIN | (i & 0x3fff));
		rc |= ovr_vpc_encap(bufs + (i & 63) * 1152 + OVR_WIRE_ENCAP_LEN,
				    OVR_WIRE_ENCAP_LEN, PDU, &h);
	}
	t0 = ovr_mono_ns() - t0;
	free(bufs);
	if (rc)
		exit(1);
	return (double)t0 / (double)iters;
}

static double bench_tx(struct ovr_vpc_thread *t, struct frames *fr)
{
	uint8_t *bufs = aligned_alloc(64, 64 * 1152);
	unsigned long i;
	uint64_t t0;
	int rc = 0;

	if (!bufs)
		exit(1);
	memset(bufs, 0, 64 * 1152);
	t0 = ovr_mono_ns();
	for (i = 0; i < iters; i++) {
		rc |= ovr_vpc_tx(t, &fr->flow[i & (NFRAMES - 1)],
				 (uint8_t)(i & 3),
				 bufs + (i & 63) * 1152 + OVR_WIRE_ENCAP_LEN,
				 OVR_WIRE_ENCAP_LEN, PDU);
		if ((i & 31) == 31) /* a poll loop of 32 packets */
			ovr_vpc_quiescent();
	}
	t0 = ovr_mono_ns() - t0;
	free(bufs);
	if (rc)
		exit(1);
	return (double)t0 / (double)iters;
}

static double bench_decap(struct ovr_vpc_thread *t, struct frames *fr)
{
	struct ovr_vpc_rx rx;
	unsigned long i, bad = 0;
	uint64_t t0;

	t0 = ovr_mono_ns();
	for (i = 0; i < iters; i++) {
		if (ovr_vpc_decap(t, fr->buf + (i & (NFRAMES - 1)) * 1152,
				  fr->len, &rx))
			bad++;
		if ((i & 31) == 31)
			ovr_vpc_quiescent();
	}
	t0 = ovr_mono_ns() - t0;
	if (bad) {
		fprintf(stderr, "bench-vpc: %lu frames dropped\n", bad);
		exit(1);
	}
	return (double)t0 / (double)iters;
}

/* ---- lookups under updates ------------------------------------------------ */

struct writer {
	struct ovr_vpc *vpc;
	uint32_t n;
	int stop;
	uint64_t done;
	uint64_t ns;
};

/* Moves random remote vIPs to another host, paced to UPDATES_PER_S. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t period = 1000000000ull / UPDATES_PER_S, next, t0;
	uint32_t s = 7, i, nloc = nlocal_of(w->n);
	struct ovr_vpc_binding b;
	struct timespec ts;

	t0 = next = ovr_mono_ns();
	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		i = nloc + rnd(&s) % (w->n - nloc);
		b = binding_of(i, w->n, (uint32_t)w->done + 1);
		if (ovr_vpc_vip_move(w->vpc, TEN, vip_of(i), &b))
			exit(1);
		w->done++;
		next += period;
		ts.tv_sec = (time_t)(next / 1000000000ull);
		ts.tv_nsec = (long)(next % 1000000000ull);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	w->ns = ovr_mono_ns() - t0;
	return NULL;
}

/* Lookups per second of the calling (registered) thread for tput_ns. */
static double lookup_rate(struct ovr_vpc_thread *t, uint32_t n)
{
	const struct ovr_vpc_vip *e;
	uint64_t t0, t1, done = 0, hit = 0;
	uint32_t s = 99, i;

	t0 = ovr_mono_ns();
	do {
		for (i = 0; i < 4096; i++) {
			e = ovr_vpc_lookup(t, TEN, vip_of(rnd(&s) % n));
			hit += e != NULL;
			if ((i & 63) == 63)
				ovr_vpc_quiescent();
		}
		done += 4096;
		t1 = ovr_mono_ns();
	} while (t1 - t0 < tput_ns);
	if (hit != done) {
		fprintf(stderr, "bench-vpc: lookups missed\n");
		exit(1);
	}
	return (double)done * 1e9 / (double)(t1 - t0);
}

static void bench_lookups(uint32_t n, struct ovr_vpc *vpc,
			  struct ovr_vpc_thread *t)
{
	double quiet[TPUT_RUNS], busy[TPUT_RUNS], rate[TPUT_RUNS];
	struct ovr_vpc_info i0, i1;
	struct writer w;
	pthread_t th;
	int r;

	for (r = 0; r < TPUT_RUNS; r++)
		quiet[r] = lookup_rate(t, n);
	ovr_vpc_info(vpc, &i0);
	for (r = 0; r < TPUT_RUNS; r++) {
		memset(&w, 0, sizeof(w));
		w.vpc = vpc;
		w.n = n;
		if (pthread_create(&th, NULL, writer_main, &w))
			exit(1);
		busy[r] = lookup_rate(t, n);
		__atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
		/* offline while joining: the writer's frees need us quiet */
		ovr_vpc_thread_offline();
		pthread_join(th, NULL);
		ovr_vpc_thread_online();
		rate[r] = (double)w.done * 1e9 / (double)w.ns;
	}
	ovr_vpc_thread_offline();
	ovr_vpc_barrier(vpc);
	ovr_vpc_thread_online();
	ovr_vpc_info(vpc, &i1);
	printf("| lookups/s, 1 core, no writer | %u | | %.1f M |\n", n,
	       median(quiet, TPUT_RUNS) / 1e6);
	printf("| lookups/s, 1 core, writer moving %.0f vIPs/s | %u | | "
	       "%.1f M |\n",
	       median(rate, TPUT_RUNS), n, median(busy, TPUT_RUNS) / 1e6);
	printf("| (moves retired %llu, freed %llu after their grace "
	       "period) | | | |\n",
	       (unsigned long long)(i1.retired - i0.retired),
	       (unsigned long long)(i1.freed - i0.freed));
}

int main(int argc, char **argv)
{
	static const uint32_t sizes[] = { 1, 10000, 1000000 };
	double v[RUNS], tx[RUNS];
	struct ovr_vpc_thread *t;
	struct ovr_vpc *vpc;
	struct frames fr;
	unsigned int s;
	int r;

	if (argc > 1 && strcmp(argv[1], "-q") == 0) {
		iters = 100000;
		tput_ns = 50000000ull;
	}
	printf("| operation | vIPs | ns/packet | rate |\n|---|---:|---:|---:|\n");
	for (r = 0; r < RUNS; r++)
		v[r] = bench_encap();
	printf("| encap (78 B of headers, 2 IPv4 checksums) | - | %.1f | "
	       "%.1f Mpps |\n",
	       median(v, RUNS), 1e3 / median(v, RUNS));
	fflush(stdout);

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint64_t t0 = ovr_mono_ns();

		vpc = build(sizes[s], &t);
		t0 = ovr_mono_ns() - t0;
		make_frames(&fr, sizes[s]);
		for (r = 0; r < RUNS; r++) {
			v[r] = bench_decap(t, &fr);
			tx[r] = bench_tx(t, &fr);
		}
		printf("| decap + lookups (parse, dst and src bindings, "
		       "anti-spoof, SG) | %u | %.1f | %.1f Mpps |\n",
		       sizes[s], median(v, RUNS), 1e3 / median(v, RUNS));
		printf("| tx (route lookup + encap) | %u | %.1f | %.1f Mpps "
		       "|\n",
		       sizes[s], median(tx, RUNS), 1e3 / median(tx, RUNS));
		if (sizes[s] >= 10000)
			bench_lookups(sizes[s], vpc, t);
		printf("| (table of %u built in %.0f ms) | | | |\n", sizes[s],
		       (double)t0 / 1e6);
		fflush(stdout);
		free(fr.buf);
		ovr_vpc_thread_unregister(t);
		ovr_vpc_destroy(vpc);
	}
	return 0;
}
