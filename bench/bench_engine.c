// SPDX-License-Identifier: MIT
/*
 * bench-engine: the transport engine (include/ovrdma/engine.h) end to end,
 * two engines driven by one thread in simulated time. Four tables:
 *
 *  1. Small-op rate. 8-byte RDMA_WRITEs (inline and from a registered
 *     buffer) and 8-byte SENDs into pre-posted receives, one QP of engine
 *     0 to one QP of engine 1 over a clean link (no loss, infinitely
 *     fast, 1 us one way), SMALL_DEPTH WRs in flight, every 16th
 *     signaled. The figure is operations completed per second of the
 *     thread's CPU time (CLOCK_THREAD_CPUTIME_ID). Both engines (sender
 *     and receiver), the posting, the completions and the link share that
 *     one core, so "per engine (x2)" doubles it, as if each engine had a
 *     core of its own; the untimed warm-up of the ring rig also clocks
 *     each engine's calls, which gives the sender's share of the time and
 *     the rate of the busier engine alone.
 *     Two rigs: "ring", a zero-copy loopback written here (ops->tx_alloc
 *     hands out space in a packet ring; the next round the peer's
 *     ovr_eng_rx parses the PDUs in place, RX_BURST at a time, each burst
 *     followed by an ovr_eng_poll, as a dataplane's receive loop would;
 *     a round is 1 us of simulated time): the engine alone, CRC and
 *     copies included. And "engpair" (tools/engpair over linkemu, rate 0,
 *     1 us delay), which adds linkemu's malloc, heap and copies.
 *  2. Large transfers: 64 KB RDMA_WRITEs (16 segments of 4 KB), the same
 *     rigs; Gbit/s of payload per core, CRC32C of every PDU included.
 *  3. Goodput under loss: engpair over 100 Gbit/s links with 15 us of
 *     propagation each way (30 us RTT), 4 KB MTU, a stream of 1 MB WRITEs
 *     kept STREAM_WRS deep, a fixed window of CWND_PKTS packets. The same
 *     loss process runs on both directions (data and ACKs). After a
 *     warm-up: payload delivered in order (the receiver's cumulative PSN,
 *     4096 B per packet) over simulated time, its ratio to the loss-free
 *     run of the same invocation (median over seeds), the goal, the
 *     go-back-N figure (1-p)/(1+(W-1)p) with W = 89, and the loss
 *     recovery counters over the measured interval. Once with the default
 *     window_pkts (1024) and once with 128, where the window, not the
 *     recovery, limits goodput.
 *  4. Memory: ovr_eng_mem() for a typical QP (128 send and receive WRs,
 *     4 SGEs, 64 B inline), and the heap growth (mallinfo2) of creating
 *     10 000 such QPs as a cross-check.
 *
 * Rates are medians of several repetitions, interleaved across the rows
 * of a table so that a burst of noise elsewhere on the machine hits one
 * repetition of each row rather than all of one. Prints markdown for
 * docs/PERFORMANCE.md.
 *
 * Usage: bench-engine [--quick] [small] [large] [loss] [mem]
 * (--quick: fewer, shorter repetitions; naming sections runs only those)
 */
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ovrdma/engine.h>
#include <ovrdma/linkemu.h>
#include <ovrdma/util.h>

#include "engpair.h"

#define RING_BYTES (4u << 20) /* per direction */
#define RING_HDR 64u /* length word, PDUs start cache-aligned */
#define RING_DELAY_NS 1000u /* one round */
#define RX_BURST 32u /* packets received between two polls */
#define SMALL_DEPTH 256u /* WRs in flight, small ops */
#define SIG_EVERY 16u
#define LARGE_LEN 65536u
#define LARGE_DEPTH 32u
#define STREAM_LEN (1u << 20)
#define STREAM_WRS 8u
#define CWND_PKTS 100u /* BDP: 100 Gbit/s x 31 us of RTT ~ 96 packets */
#define SEG 4096u
#define GBN_W 89

static int reps = 7;
static uint64_t small_ops = 1u << 20;
static uint64_t large_ops = 4096; /* 256 MB */
static int loss_seeds = 5;
static uint64_t warm_ns = 2000000;
static uint64_t meas_ns = 20000000;

/* ---- helpers ------------------------------------------------------------- */

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench-engine: %s failed (%d)\n", what, rc);
	exit(1);
}

/* ---- workload: keep a QP's send queue (and the peer's RQ) full ----------- */

struct wl {
	uint32_t opcode; /* OVR_WR_RDMA_WRITE or OVR_WR_SEND */
	uint32_t len;
	uint32_t flags; /* OVR_SEND_INLINE or 0 */
	uint32_t sig_every;
	uint32_t depth; /* send WRs in flight */
	uint32_t rq_depth; /* receives kept posted (SEND) */
	uint32_t nslot; /* buffers cycled over, len bytes each */
	uint64_t target; /* 0: unbounded */
	uint64_t posted, done; /* send WRs */
	uint64_t rposted, rdone; /* receives */
};

static void wl_wc(struct wl *w, int node, uint32_t cq,
		  const struct ovr_eng_wc *wc)
{
	if (wc->status != OVR_WC_SUCCESS) {
		fprintf(stderr,
			"bench-engine: node %d cq %u wr %llu status %u "
			"vendor_err 0x%x\n",
			node, cq, (unsigned long long)wc->wr_id, wc->status,
			wc->vendor_err);
		exit(1);
	}
	if (node == 0 && cq == 0)
		w->done = wc->wr_id + 1; /* every WR before it is done too */
	else if (node == 1 && cq == 1)
		w->rdone++;
}

/* ---- rigs: a zero-copy packet ring, or engpair over linkemu -------------- */

enum rig_kind { RIG_RING, RIG_PAIR };

struct rig;

struct rnode {
	struct rig *rig;
	int id;
	uint8_t *out; /* packets to the other node: [len, pad, PDU]... */
	size_t tail;
};

struct rig {
	enum rig_kind kind;
	struct ovr_pair *pair;
	struct rnode rn[2];
	struct ovr_eng *eng[2];
	uint8_t *mem[2];
	uint32_t key[2];
	uint32_t qpn[2];
	uint64_t now; /* RIG_RING */
	struct wl *wl;
	bool split; /* RIG_RING: time each engine's calls (wall clock) */
	uint64_t busy_ns[2];
};

static void *ring_tx_alloc(void *ctx, uint32_t cap, void **token)
{
	struct rnode *n = ctx;

	if (n->tail + RING_HDR + cap > RING_BYTES)
		return NULL;
	*token = n->out + n->tail;
	return n->out + n->tail + RING_HDR;
}

static void ring_tx(void *ctx, void *token, uint32_t len, uint64_t peer,
		    uint64_t qp_user)
{
	struct rnode *n = ctx;

	(void)peer;
	(void)qp_user;
	if (!len)
		return;
	memcpy(token, &len, sizeof(len));
	n->tail += RING_HDR + ((len + 63u) & ~63u);
}

static void ring_cqe(void *ctx, uint32_t cq, const struct ovr_eng_wc *wc)
{
	struct rnode *n = ctx;

	wl_wc(n->rig->wl, n->id, cq, wc);
}

static void ring_event(void *ctx, uint64_t qp_user, uint32_t qpn,
		       enum ovr_event ev)
{
	(void)ctx;
	(void)qp_user;
	(void)qpn;
	(void)ev;
}

static const struct ovr_eng_ops ring_ops = {
	.tx_alloc = ring_tx_alloc,
	.tx = ring_tx,
	.cqe = ring_cqe,
	.event = ring_event,
};

/* INIT, RTR, RTS on both sides, as ovr_pair_connect does. */
static int ring_connect(struct rig *r, const struct ovr_pair_qp_params *qp)
{
	static const uint32_t pd[2] = { 1, 1 };

	return ovr_eng_connect_two(r->eng, pd, qp, 0, r->now, r->qpn);
}

static struct rig *rig_create(enum rig_kind kind, const struct ovr_pair_cfg *pc,
			      const struct ovr_pair_qp_params *qp)
{
	struct rig *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		die("calloc", -ENOMEM);
	r->kind = kind;
	if (kind == RIG_PAIR) {
		r->pair = ovr_pair_create(pc);
		if (!r->pair)
			die("ovr_pair_create", -errno);
		for (int i = 0; i < 2; i++) {
			r->eng[i] = r->pair->n[i].eng;
			r->mem[i] = r->pair->n[i].mem;
			r->key[i] = r->pair->n[i].key;
		}
		rc = ovr_pair_connect(r->pair, qp, 0, r->qpn);
		if (rc)
			die("ovr_pair_connect", rc);
		return r;
	}
	for (int i = 0; i < 2; i++) {
		struct rnode *n = &r->rn[i];

		n->rig = r;
		n->id = i;
		n->out = aligned_alloc(4096, RING_BYTES);
		r->mem[i] = aligned_alloc(4096, pc->mem_bytes);
		if (!n->out || !r->mem[i])
			die("aligned_alloc", -ENOMEM);
		memset(r->mem[i], 0, pc->mem_bytes);
		r->eng[i] = ovr_eng_create(&pc->eng, &ring_ops, n);
		if (!r->eng[i])
			die("ovr_eng_create", -errno);
		rc = ovr_eng_reg_mr(
			r->eng[i], 1, (uint64_t)(uintptr_t)r->mem[i],
			pc->mem_bytes,
			OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE |
				OVR_ACCESS_REMOTE_READ,
			r->mem[i], &r->key[i]);
		if (rc)
			die("ovr_eng_reg_mr", rc);
	}
	rc = ring_connect(r, qp);
	if (rc)
		die("ring_connect", rc);
	return r;
}

static void rig_destroy(struct rig *r)
{
	if (r->kind == RIG_PAIR) {
		ovr_pair_destroy(r->pair);
	} else {
		for (int i = 0; i < 2; i++) {
			ovr_eng_destroy(r->eng[i]);
			free(r->rn[i].out);
			free(r->mem[i]);
		}
	}
	free(r);
}

static uint64_t rig_now(const struct rig *r)
{
	return r->kind == RIG_PAIR ? r->pair->now : r->now;
}

/* Hand node @to everything the other node sent last round, RX_BURST
 * packets at a time, each burst followed by a poll of @to (a dataplane's
 * receive-burst loop). */
static void ring_deliver(struct rig *r, int to)
{
	struct rnode *n = &r->rn[1 - to];
	uint64_t t0 = r->split ? ovr_mono_ns() : 0;
	size_t off = 0;
	uint32_t len, k = 0;

	while (off < n->tail) {
		memcpy(&len, n->out + off, sizeof(len));
		ovr_eng_rx(r->eng[to], r->now, n->out + off + RING_HDR, len,
			   false);
		off += RING_HDR + ((len + 63u) & ~63u);
		if (++k % RX_BURST == 0)
			(void)ovr_eng_poll(r->eng[to], r->now, 0);
	}
	n->tail = 0;
	if (k % RX_BURST || !k)
		(void)ovr_eng_poll(r->eng[to], r->now, 0);
	if (r->split)
		r->busy_ns[to] += ovr_mono_ns() - t0;
}

/* One round: deliver, transmit, advance time; completions reach r->wl.
 * Returns false when nothing at all remains to happen (engpair). */
static bool rig_step(struct rig *r)
{
	struct ovr_eng_wc wc;
	bool more;

	if (r->kind == RIG_RING) {
		ring_deliver(r, 1);
		ring_deliver(r, 0);
		r->now += RING_DELAY_NS;
		return true;
	}
	more = ovr_pair_step(r->pair);
	for (int i = 0; i < 2; i++)
		for (uint32_t cq = 0; cq < 2; cq++)
			while (ovr_pair_poll(r->pair, i, cq, &wc))
				wl_wc(r->wl, i, cq, &wc);
	return more;
}

static void wl_feed(struct rig *r, struct wl *w)
{
	struct ovr_eng_sge sge = { .lkey = r->key[1] };
	struct ovr_eng_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 };
	struct ovr_eng_send_wr wr = {
		.opcode = w->opcode,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = r->key[1],
	};
	uint64_t now = rig_now(r), t0 = r->split ? ovr_mono_ns() : 0, t1;
	int rc;

	while (w->rposted - w->rdone < w->rq_depth) {
		sge.addr =
			(uint64_t)(uintptr_t)(r->mem[1] +
					      (w->rposted % w->nslot) * w->len);
		sge.length = w->len;
		rwr.wr_id = w->rposted;
		rc = ovr_eng_post_recv(r->eng[1], r->qpn[1], &rwr, now);
		if (rc)
			die("ovr_eng_post_recv", rc);
		w->rposted++;
	}
	if (r->split) {
		t1 = ovr_mono_ns();
		r->busy_ns[1] += t1 - t0;
		t0 = t1;
	}
	sge.lkey = r->key[0];
	sge.length = w->len;
	while ((!w->target || w->posted < w->target) &&
	       w->posted - w->done < w->depth) {
		size_t off = (w->posted % w->nslot) * w->len;

		sge.addr = (uint64_t)(uintptr_t)(r->mem[0] + off);
		wr.remote_addr = (uint64_t)(uintptr_t)(r->mem[1] + off);
		wr.wr_id = w->posted;
		wr.send_flags = w->flags;
		if ((w->posted + 1) % w->sig_every == 0)
			wr.send_flags |= OVR_SEND_SIGNALED;
		rc = ovr_eng_post_send(r->eng[0], r->qpn[0], &wr, now);
		if (rc)
			die("ovr_eng_post_send", rc);
		w->posted++;
	}
	if (r->split)
		r->busy_ns[0] += ovr_mono_ns() - t0;
}

/* Run @w to completion on @r; CPU seconds. */
static double wl_run(struct rig *r, struct wl *w)
{
	double t0 = cpu_s();
	uint64_t before;
	int idle = 0;

	r->wl = w;
	while (w->done < w->target) {
		wl_feed(r, w);
		before = w->done;
		if (!rig_step(r) && w->done == before && ++idle > 2)
			die("wl_run (stalled)", 0);
		if (rig_now(r) > 1000000000000ull)
			die("wl_run (no progress in 1000 s simulated)", 0);
	}
	return cpu_s() - t0;
}

static void base_cfg(struct ovr_pair_cfg *pc, struct ovr_pair_qp_params *qp)
{
	ovr_pair_cfg_default(pc);
	for (int i = 0; i < 2; i++) {
		pc->link[i].rate_bps = 0;
		pc->link[i].delay_ns = RING_DELAY_NS;
	}
	pc->mem_bytes = 16u << 20;
	ovr_pair_qp_params_default(qp);
	qp->cap.max_send_wr = 1024;
	qp->cap.max_recv_wr = 1024;
}

/* One row of a rate table: a workload on a rig, measured reps times. */
struct rate_row {
	const char *name;
	enum rig_kind kind;
	struct wl w; /* template: target = ops per timed run */
	double v[16]; /* ops per CPU second, per repetition */
	double share[16]; /* sender's share of the engines' time (ring) */
	double pkts_per_op; /* both directions */
	double ops_per_s, sender_share; /* medians */
};

static void rate_once(struct rate_row *row, int k)
{
	struct ovr_pair_cfg pc;
	struct ovr_pair_qp_params qp;
	struct rig *r;
	struct ovr_eng_stats s0, s1, e0, e1;
	struct wl w = row->w;
	double t;

	base_cfg(&pc, &qp);
	r = rig_create(row->kind, &pc, &qp);
	/* warm up caches and branch predictors, then go on from where the
	 * warm-up left the queues; the untimed warm-up also measures how
	 * the time splits between the two engines */
	w.target = row->w.target / 8;
	r->split = row->kind == RIG_RING;
	(void)wl_run(r, &w);
	row->share[k] =
		r->split ? (double)r->busy_ns[0] /
				   (double)(r->busy_ns[0] + r->busy_ns[1]) :
			   0;
	r->split = false;
	w.target += row->w.target;
	ovr_eng_get_stats(r->eng[0], &s0);
	ovr_eng_get_stats(r->eng[1], &s1);
	t = wl_run(r, &w);
	row->v[k] = (double)row->w.target / t;
	ovr_eng_get_stats(r->eng[0], &e0);
	ovr_eng_get_stats(r->eng[1], &e1);
	row->pkts_per_op =
		(double)(e0.tx_pkts - s0.tx_pkts + e1.tx_pkts - s1.tx_pkts) /
		(double)row->w.target;
	rig_destroy(r);
}

/* Repetitions interleaved across the rows, so that a burst of noise from
 * elsewhere on the machine hits one repetition of each row rather than
 * every repetition of one. */
static void rate_rows(struct rate_row *rows, int n)
{
	for (int k = 0; k < reps; k++)
		for (int i = 0; i < n; i++)
			rate_once(&rows[i], k);
	for (int i = 0; i < n; i++) {
		rows[i].ops_per_s = median(rows[i].v, reps);
		rows[i].sender_share = median(rows[i].share, reps);
	}
}

static void share_str(const struct rate_row *row, char *buf, size_t len)
{
	if (row->sender_share > 0)
		snprintf(buf, len, "%.0f %%", 100 * row->sender_share);
	else
		snprintf(buf, len, "-");
}

static const char *rig_name(enum rig_kind k)
{
	return k == RIG_RING ? "ring (engine alone)" : "engpair (linkemu)";
}

static void bench_small(void)
{
	static const struct {
		const char *name;
		uint32_t opcode, flags;
	} ops[] = {
		{ "RDMA_WRITE 8 B, inline", OVR_WR_RDMA_WRITE,
		  OVR_SEND_INLINE },
		{ "RDMA_WRITE 8 B, SGE", OVR_WR_RDMA_WRITE, 0 },
		{ "SEND 8 B, inline, pre-posted RECV", OVR_WR_SEND,
		  OVR_SEND_INLINE },
	};
	enum { NOPS = sizeof(ops) / sizeof(ops[0]) };
	struct rate_row rows[2 * NOPS];
	int n = 0;

	for (int o = 0; o < NOPS; o++) {
		for (int k = RIG_RING; k <= RIG_PAIR; k++, n++) {
			memset(&rows[n], 0, sizeof(rows[n]));
			rows[n].name = ops[o].name;
			rows[n].kind = (enum rig_kind)k;
			rows[n].w = (struct wl){
				.opcode = ops[o].opcode,
				.len = 8,
				.flags = ops[o].flags,
				.sig_every = SIG_EVERY,
				.depth = SMALL_DEPTH,
				.rq_depth = ops[o].opcode == OVR_WR_SEND ?
						    2 * SMALL_DEPTH :
						    0,
				.nslot = 4096,
				.target = small_ops,
			};
		}
	}
	rate_rows(rows, n);

	printf("\n### Small-op rate (8 B, %u WRs in flight, every %uth "
	       "signaled; median of %d x %llu ops)\n\n",
	       SMALL_DEPTH, SIG_EVERY, reps, (unsigned long long)small_ops);
	printf("| operation | rig | Mops/s per core (both engines) | "
	       "Mops/s per engine (x2) | busier engine alone | ns per op | "
	       "packets per op | sender's share | goal >= 10 M/s |\n"
	       "|---|---|---:|---:|---:|---:|---:|---:|---|\n");
	for (int i = 0; i < n; i++) {
		double mops = rows[i].ops_per_s / 1e6;
		double sh = rows[i].sender_share;
		char share[16], busy[16] = "-";

		share_str(&rows[i], share, sizeof(share));
		if (sh > 0)
			snprintf(busy, sizeof(busy), "%.1f",
				 mops / (sh > 0.5 ? sh : 1 - sh));
		printf("| %s | %s | %.2f | %.2f | %s | %.0f | %.2f | %s | "
		       "per engine: %s; both on one core: %s |\n",
		       rows[i].name, rig_name(rows[i].kind), mops, 2 * mops,
		       busy, 1e9 / rows[i].ops_per_s, rows[i].pkts_per_op,
		       share, 2 * mops >= 10 ? "met" : "MISSED",
		       mops >= 10 ? "met" : "missed");
	}
	fflush(stdout);
}

static void bench_large(void)
{
	struct rate_row rows[2];

	for (int k = RIG_RING; k <= RIG_PAIR; k++) {
		memset(&rows[k], 0, sizeof(rows[k]));
		rows[k].name = "RDMA_WRITE 64 KB";
		rows[k].kind = (enum rig_kind)k;
		rows[k].w = (struct wl){
			.opcode = OVR_WR_RDMA_WRITE,
			.len = LARGE_LEN,
			.sig_every = 1,
			.depth = LARGE_DEPTH,
			.nslot = 2 * LARGE_DEPTH,
			.target = large_ops,
		};
	}
	rate_rows(rows, 2);

	printf("\n### Large transfers (RDMA_WRITE 64 KB, 4 KB MTU, %u WRs in "
	       "flight, every one signaled; median of %d x %llu MB)\n\n",
	       LARGE_DEPTH, reps,
	       (unsigned long long)(large_ops * LARGE_LEN >> 20));
	printf("| operation | rig | Gbit/s of payload per core (both "
	       "engines) | per engine (x2) | ns per 4 KB packet | packets "
	       "per op | sender's share |\n|---|---|---:|---:|---:|---:|---:|"
	       "\n");
	for (int i = 0; i < 2; i++) {
		double gbps = rows[i].ops_per_s * LARGE_LEN * 8 / 1e9;
		char share[16];

		share_str(&rows[i], share, sizeof(share));
		printf("| %s | %s | %.1f | %.1f | %.0f | %.2f | %s |\n",
		       rows[i].name, rig_name(rows[i].kind), gbps, 2 * gbps,
		       1e9 / (rows[i].ops_per_s * (LARGE_LEN / SEG)),
		       rows[i].pkts_per_op, share);
	}
	fflush(stdout);
}

/* ---- goodput under loss -------------------------------------------------- */

struct loss_case {
	const char *name;
	double p; /* Bernoulli, or the Gilbert-Elliott average */
	double goal; /* 0: none */
	bool ge;
};

struct loss_res {
	double gbps;
	uint64_t lost_fwd, lost_rev;
	uint64_t retx, rto, tlp, rack, dup, ooo;
	uint64_t data_pkts;
	uint64_t sent; /* packets, both engines */
	double cpu_s; /* rig and both engines, measured interval */
};

static void loss_cfg(struct ovr_pair_cfg *pc, const struct loss_case *c,
		     uint32_t window, uint64_t seed)
{
	ovr_pair_cfg_default(pc);
	pc->eng.window_pkts = window;
	/* loss recovery alone: a fixed window that never backs off (the
	 * controllers are compared in ovrdma-ccsim, docs/CONGESTION.md) */
	pc->eng.cc = &ovr_cc_fixed;
	pc->eng.cc_init_cwnd = CWND_PKTS * (SEG + 64); /* window cost */
	pc->eng.line_rate_bps = 100000000000ull;
	pc->mem_bytes = 2 * STREAM_WRS * (size_t)STREAM_LEN;
	for (int i = 0; i < 2; i++) {
		struct ovr_link_cfg *l = &pc->link[i];

		l->rate_bps = 100000000000ull;
		l->delay_ns = 15000;
		l->seed = seed * 2 + (uint64_t)i + 1;
		if (c->ge) {
			/* mean burst 1 / ge_r = 4; average p/(p+r) = c->p */
			l->ge_r = 0.25;
			l->ge_p = c->p * l->ge_r / (1 - c->p);
			l->ge_loss_bad = 1.0;
		} else {
			l->loss = c->p;
		}
	}
}

static void loss_run(const struct loss_case *c, uint32_t window, uint64_t seed,
		     struct loss_res *res)
{
	struct ovr_pair_cfg pc;
	struct ovr_pair_qp_params qp;
	struct ovr_eng_qp_stats a0, a1, b0, b1;
	struct ovr_link_stats lf0, lr0, lf1, lr1;
	struct rig *r;
	struct wl w = {
		.opcode = OVR_WR_RDMA_WRITE,
		.len = STREAM_LEN,
		.sig_every = 1,
		.depth = STREAM_WRS,
		.nslot = 2 * STREAM_WRS,
		.target = 0,
	};
	uint64_t t0, t1;
	double c0;

	loss_cfg(&pc, c, window, seed);
	ovr_pair_qp_params_default(&qp);
	r = rig_create(RIG_PAIR, &pc, &qp);
	r->wl = &w;
	while (r->pair->now < warm_ns) {
		wl_feed(r, &w);
		(void)rig_step(r);
	}
	t0 = r->pair->now;
	ovr_eng_qp_stats(r->eng[0], r->qpn[0], &a0);
	ovr_eng_qp_stats(r->eng[1], r->qpn[1], &a1);
	ovr_link_get_stats(r->pair->n[0].out, &lf0);
	ovr_link_get_stats(r->pair->n[1].out, &lr0);
	c0 = cpu_s();
	while (r->pair->now < warm_ns + meas_ns) {
		wl_feed(r, &w);
		(void)rig_step(r);
	}
	t1 = r->pair->now;
	res->cpu_s = cpu_s() - c0;
	ovr_eng_qp_stats(r->eng[0], r->qpn[0], &b0);
	ovr_eng_qp_stats(r->eng[1], r->qpn[1], &b1);
	ovr_link_get_stats(r->pair->n[0].out, &lf1);
	ovr_link_get_stats(r->pair->n[1].out, &lr1);

	/* every packet of a 1 MB WRITE carries 4096 B; PSNs are 24-bit */
	res->data_pkts = (b1.rcv_nxt - a1.rcv_nxt) & 0xffffffu;
	res->gbps = (double)res->data_pkts * SEG * 8 / (double)(t1 - t0);
	res->lost_fwd = lf1.lost - lf0.lost;
	res->lost_rev = lr1.lost - lr0.lost;
	res->retx = b0.retx_pkts - a0.retx_pkts;
	res->rto = b0.rto_count - a0.rto_count;
	res->tlp = b0.tlp_count - a0.tlp_count;
	res->rack = b0.rack_lost - a0.rack_lost;
	res->dup = b1.rx_dup - a1.rx_dup;
	res->ooo = b1.rx_ooo - a1.rx_ooo;
	res->sent = b0.tx_pkts - a0.tx_pkts + b1.tx_pkts - a1.tx_pkts;
	rig_destroy(r);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median_u64(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

static void loss_table(uint32_t window, const char *why)
{
	static const struct loss_case cases[] = {
		{ "0", 0, 0, false },
		{ "0.1 %", 0.001, 0.99, false },
		{ "1 %", 0.01, 0.95, false },
		{ "5 %", 0.05, 0.85, false },
		{ "1 % Gilbert-Elliott, mean burst 4", 0.01, 0, true },
	};
	enum { NC = sizeof(cases) / sizeof(cases[0]) };
	static struct loss_res res[NC][8];
	struct ovr_pair_cfg pc;

	loss_cfg(&pc, &cases[0], window, 1);
	printf("\n### Goodput under loss, window_pkts %u (%s)\n\n"
	       "100 Gbit/s, 30 us RTT, 4 KB MTU, 1 MB WRITEs %u deep; fixed "
	       "cwnd %u B = %u packets (ovr_cc_fixed: no back-off on loss); "
	       "the same loss on both directions; %.0f ms measured after "
	       "%.0f ms warm-up; median of %d seeds.\n\n",
	       pc.eng.window_pkts, why, STREAM_WRS, pc.eng.cc_init_cwnd,
	       pc.eng.cc_init_cwnd / (SEG + 64), (double)meas_ns / 1e6,
	       (double)warm_ns / 1e6, loss_seeds);
	for (int s = 0; s < loss_seeds; s++)
		for (int c = 0; c < NC; c++)
			loss_run(&cases[c], window, (uint64_t)s + 1,
				 &res[c][s]);

	printf("| loss | goodput Gbit/s | ratio to loss-free | goal | "
	       "go-back-N, W = %d | lost data pkts | retx per lost pkt | "
	       "dup arrivals per lost pkt | RTOs | TLPs | RACK-lost | ACKs "
	       "lost | CPU ns per packet sent (rig included) |\n"
	       "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	       "---:|\n",
	       GBN_W);
	for (int c = 0; c < NC; c++) {
		double g[8], ratio[8], rpl[8], dpl[8], cpp[8];
		uint64_t lost[8], rto[8], tlp[8], rack[8], lrev[8];
		double p = cases[c].p, med_ratio;
		char goal[32] = "-", gbn[16] = "-";

		for (int s = 0; s < loss_seeds; s++) {
			const struct loss_res *x = &res[c][s];
			double lf = x->lost_fwd ? (double)x->lost_fwd : 1;

			g[s] = x->gbps;
			ratio[s] = x->gbps / res[0][s].gbps;
			rpl[s] = (double)x->retx / lf;
			dpl[s] = (double)x->dup / lf;
			lost[s] = x->lost_fwd;
			rto[s] = x->rto;
			tlp[s] = x->tlp;
			rack[s] = x->rack;
			lrev[s] = x->lost_rev;
			cpp[s] = x->cpu_s * 1e9 / (double)x->sent;
		}
		med_ratio = median(ratio, loss_seeds);
		if (cases[c].goal > 0)
			snprintf(goal, sizeof(goal), ">= %.2f: %s",
				 cases[c].goal,
				 med_ratio >= cases[c].goal ? "met" : "MISSED");
		if (p > 0 && !cases[c].ge)
			snprintf(gbn, sizeof(gbn), "%.2f",
				 (1 - p) / (1 + (GBN_W - 1) * p));
		printf("| %s | %.2f | %.3f | %s | %s | %llu | %.2f | %.2f | "
		       "%llu | %llu | %llu | %llu | %.0f |\n",
		       cases[c].name, median(g, loss_seeds), med_ratio, goal,
		       gbn, (unsigned long long)median_u64(lost, loss_seeds),
		       p > 0 ? median(rpl, loss_seeds) : 0,
		       p > 0 ? median(dpl, loss_seeds) : 0,
		       (unsigned long long)median_u64(rto, loss_seeds),
		       (unsigned long long)median_u64(tlp, loss_seeds),
		       (unsigned long long)median_u64(rack, loss_seeds),
		       (unsigned long long)median_u64(lrev, loss_seeds),
		       median(cpp, loss_seeds));
		fflush(stdout);
	}
}

static void bench_loss(void)
{
	{
		struct ovr_eng_cfg dflt;

		ovr_eng_cfg_default(&dflt);
		loss_table(dflt.window_pkts, "the default");
	}
	loss_table(128, "1.4 BDP: recovery stalls on the window");
}

/* ---- memory -------------------------------------------------------------- */

static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static void bench_mem(void)
{
	enum { NQP = 10000 };
	struct ovr_eng_qp_cap cap = { .max_send_wr = 128,
				      .max_recv_wr = 128,
				      .max_send_sge = 4,
				      .max_recv_sge = 4,
				      .max_inline_data = 64 };
	struct ovr_eng_qp_init init = { .pd = 1, .cap = cap };
	struct ovr_pair_cfg pc;
	struct ovr_eng_mem m;
	struct ovr_eng *e;
	size_t h0, h1, h2, per_qp;
	uint32_t qpn;
	int rc;

	ovr_pair_cfg_default(&pc);
	pc.eng.max_qp = 16384;
	h0 = heap_bytes();
	e = ovr_eng_create(&pc.eng, &ring_ops, NULL);
	if (!e)
		die("ovr_eng_create", -errno);
	h1 = heap_bytes();
	for (int i = 0; i < NQP; i++) {
		rc = ovr_eng_qp_create(e, &init, &qpn);
		if (rc)
			die("ovr_eng_qp_create", rc);
	}
	h2 = heap_bytes();
	ovr_eng_mem(e, &cap, &m);
	per_qp = m.qp_ctx + cap.max_send_wr * m.per_send_wqe +
		 cap.max_recv_wr * m.per_recv_wqe;

	printf("\n### Memory (ovr_eng_mem; window_pkts %u, sb_pool %u; QP "
	       "cap %u/%u WRs, %u/%u SGEs, %u B inline)\n\n",
	       pc.eng.window_pkts, pc.eng.sb_pool, cap.max_send_wr,
	       cap.max_recv_wr, cap.max_send_sge, cap.max_recv_sge,
	       cap.max_inline_data);
	printf("| item | bytes |\n|---|---:|\n");
	printf("| QP context, idle (receive window bitmap included) | %zu "
	       "|\n",
	       m.qp_ctx);
	printf("| per send WQE slot (4 SGEs, 64 B inline) | %zu |\n",
	       m.per_send_wqe);
	printf("| per receive WQE slot (4 SGEs) | %zu |\n", m.per_recv_wqe);
	printf("| per in-flight packet (scoreboard entry) | %zu |\n",
	       m.per_inflight_pkt);
	printf("| per scoreboard (%u packets; pooled, only QPs with packets "
	       "in flight hold one) | %zu |\n",
	       pc.eng.window_pkts, m.scoreboard);
	printf("| idle QP with its queues (ctx + 128 x send + 128 x recv) | "
	       "%zu |\n",
	       per_qp);
	printf("| %d idle QPs (ovr_eng_mem) | %zu (%.1f MiB) |\n", NQP,
	       per_qp * NQP, (double)(per_qp * NQP) / 1048576);
	if (h2 == h0) { /* an allocator that mallinfo2 does not see */
		printf("| heap growth (mallinfo2) | not available |\n");
	} else {
		printf("| %d idle QPs, heap growth measured (mallinfo2; "
		       "queues only, contexts are preallocated) | %zu (%.1f "
		       "MiB) |\n",
		       NQP, h2 - h1, (double)(h2 - h1) / 1048576);
		printf("| engine with max_qp %u and no QP (QP contexts, "
		       "bitmaps, %u scoreboards, MR table), measured | %zu "
		       "(%.1f MiB) |\n",
		       pc.eng.max_qp, pc.eng.sb_pool, h1 - h0,
		       (double)(h1 - h0) / 1048576);
	}
	ovr_eng_destroy(e);
}

static void usage(void)
{
	fprintf(stderr, "usage: bench-engine [--quick] [small] [large] [loss] "
			"[mem]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "small", "large", "loss", "mem" };
	static void (*const fns[])(void) = { bench_small, bench_large,
					     bench_loss, bench_mem };
	bool quick = false, want[4] = { false }, any = false;

	for (int i = 1; i < argc; i++) {
		bool ok = false;

		if (!strcmp(argv[i], "--quick") || !strcmp(argv[i], "-q")) {
			quick = ok = true;
			continue;
		}
		for (int k = 0; k < 4; k++)
			if (!strcmp(argv[i], names[k]))
				want[k] = any = ok = true;
		if (!ok)
			usage();
	}
	if (quick) {
		reps = 3;
		small_ops = 1u << 17;
		large_ops = 512;
		loss_seeds = 1;
		meas_ns = 5000000;
	}
	printf("## bench-engine (compiler %s)\n\n```\n", __VERSION__);
	for (int i = 0; i < argc; i++)
		printf("%s%s", argv[i], i + 1 < argc ? " " : "\n```\n\n");
	printf("Two engines in one thread; rates per second of that "
	       "thread's CPU time (CLOCK_THREAD_CPUTIME_ID).\n");
	for (int k = 0; k < 4; k++)
		if (want[k] || !any)
			fns[k]();
	return 0;
}
