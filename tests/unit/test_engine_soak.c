// SPDX-License-Identifier: MIT
/*
 * Transport engine soak: seeded, reproducible random runs of two engines
 * over impaired links (tools/engpair, simulated time).
 *
 * Each run draws its own links (10-100 Gbps, 1-50 us, jitter, 0-20 % loss,
 * Bernoulli or Gilbert-Elliott bursts, reordering, duplication, bit
 * corruption, at times a bounded queue), engine settings (window, ACK
 * policy, scoreboard pool, congestion window) and 1-4 connected QP pairs
 * with random parameters (MTU, rd/atomic depths, queue sizes, SGE and
 * inline limits), then drives traffic both ways on every QP: every
 * operation (SEND, SEND_WITH_IMM, SEND_WITH_INV, WRITE, WRITE_WITH_IMM
 * with and without data, READ, both atomics), a READ followed by a FENCEd
 * WRITE over the bytes it reads, a WRITE followed by a READ of what it
 * wrote, scatter/gather lists, inline data, signaled and unsignaled WRs,
 * receives posted ahead, just in time and late (credit waits, RNR), sizes
 * from 0 B to 16 MB. Everything is checked against a model:
 *  - memory: a shadow copy of both arenas, updated when a WR is posted;
 *    every buffer an operation touches (targets, receive buffers, READ
 *    destinations and sources, send sources, 32 guard bytes each side) is
 *    compared when the operation is known complete, a WRITE_WITH_IMM's
 *    target and every earlier WRITE of the QP again when a message's
 *    receive completes, and both whole arenas at the end of the run;
 *  - atomics: one counter per QP and direction, so every original value
 *    returned is predictable and the final value proves exactly-once;
 *  - completion queues: every expected completion exactly once, in
 *    posting order, SUCCESS, with its opcode, length, immediate, flags and
 *    QP numbers, and nothing else (unsignaled WRs stay silent);
 *  - liveness: each run finishes in bounded simulated time (and a bounded
 *    number of events) and then goes quiet;
 *  - counters: the engines' agree with the links' (every corrupted packet
 *    refused, losses resent, no RNR unless a receive came late, no error
 *    events), and SEND_WITH_INV really revoked the remote rights.
 *
 * Reproduce a run: OVR_SOAK_SEED=<base seed> OVR_SOAK_ONLY=<run index>
 * (each run prints both); OVR_SOAK_RUNS=<n> changes the number of runs.
 * Runs may use an engine max_pdu below the path MTU plus headers (1500,
 * 2200 bytes); OVR_SOAK_SMALL_PDU=0 turns that off.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "eng_util.h"

#define DEFAULT_SEED 0x50a4c0de2024ull
#define DEFAULT_RUNS 60

#define MAX_QP 4
#define MAX_SGE 16
#define GUARD 32u /* bytes checked on each side of every buffer */
#define BIG_ALLOC (256u << 10) /* allocated from the top of the arena */
#define MAX_AHEAD 8 /* receives posted ahead of their message */
#define STALL_NS 30000000000ull /* simulated: no completion for 30 s */
#define RUN_NS 600000000000ull /* simulated: a run may take 10 min */
/* events (engpair steps) without a completion: a livelock that creeps
 * through simulated time must not spin for ever in real time */
#define STALL_STEPS 10000000ull
#define MB (1u << 20)

/* ---- PRNG (splitmix64): one stream per run -------------------------- */

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd_below(struct rng *r, uint64_t n)
{
	return n ? rnd(r) % n : 0;
}

/* uniform in [lo, hi] */
static uint64_t rnd_range(struct rng *r, uint64_t lo, uint64_t hi)
{
	return lo + rnd_below(r, hi - lo + 1);
}

static double rnd01(struct rng *r)
{
	return (double)(rnd(r) >> 11) * (1.0 / 9007199254740992.0);
}

static bool chance(struct rng *r, double p)
{
	return rnd01(r) < p;
}

/* ---- arena allocator: sorted free extents, first fit ----------------- */

struct ext {
	size_t off, len;
};

struct heap {
	struct ext *v;
	size_t n, cap;
};

static void heap_del(struct heap *h, size_t i)
{
	memmove(&h->v[i], &h->v[i + 1], (h->n - i - 1) * sizeof(*h->v));
	h->n--;
}

/* @high: take from the top of the highest extent that fits (large
 * buffers), so that small, short-lived ones do not fragment their room */
static size_t heap_alloc(struct heap *h, size_t len, bool high)
{
	size_t off;

	if (!high) {
		for (size_t i = 0; i < h->n; i++) {
			if (h->v[i].len < len)
				continue;
			off = h->v[i].off;
			h->v[i].off += len;
			h->v[i].len -= len;
			if (!h->v[i].len)
				heap_del(h, i);
			return off;
		}
		return SIZE_MAX;
	}
	for (size_t i = h->n; i-- > 0;) {
		if (h->v[i].len < len)
			continue;
		h->v[i].len -= len;
		off = h->v[i].off + h->v[i].len;
		if (!h->v[i].len)
			heap_del(h, i);
		return off;
	}
	return SIZE_MAX;
}

static void heap_free(struct heap *h, size_t off, size_t len)
{
	size_t lo = 0, hi = h->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (h->v[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: first extent above @off; a double free is a bug of this test */
	if ((lo < h->n && off + len > h->v[lo].off) ||
	    (lo && h->v[lo - 1].off + h->v[lo - 1].len > off))
		abort();
	if (lo && h->v[lo - 1].off + h->v[lo - 1].len == off) {
		h->v[lo - 1].len += len;
		if (lo < h->n && off + len == h->v[lo].off) {
			h->v[lo - 1].len += h->v[lo].len;
			heap_del(h, lo);
		}
		return;
	}
	if (lo < h->n && off + len == h->v[lo].off) {
		h->v[lo].off = off;
		h->v[lo].len += len;
		return;
	}
	if (h->n == h->cap) {
		size_t nc = h->cap ? 2 * h->cap : 256;
		struct ext *v = realloc(h->v, nc * sizeof(*v));

		if (!v)
			abort();
		h->v = v;
		h->cap = nc;
	}
	memmove(&h->v[lo + 1], &h->v[lo], (h->n - lo) * sizeof(*h->v));
	h->v[lo].off = off;
	h->v[lo].len = len;
	h->n++;
}

/* ---- the model ------------------------------------------------------- */

enum kind {
	K_SEND,
	K_SEND_IMM,
	K_SEND_INV,
	K_WRITE,
	K_WRITE_IMM,
	K_READ,
	K_CAS,
	K_FAA,
	K_RDFW, /* READ, then a FENCEd WRITE over part of what it read */
	K_WRRD, /* WRITE, then a READ of part of it: sees the new bytes */
	NKIND,
	K_FLUSH = NKIND, /* signaled empty WRITE: ends a run of unsignaled */
	K_FENCED, /* the WRITE half of K_RDFW */
	K_READBACK, /* the READ half of K_WRRD */
	NKIND_ALL,
};

static const char *const kind_name[NKIND_ALL] = {
	"SEND",	 "SEND_IMM",  "SEND_INV", "WRITE",	  "WRITE_IMM",
	"READ",	 "CAS",	      "FAA",	  "RD+FENCED_WR", "WR+RD",
	"FLUSH", "FENCED_WR", "RD_BACK",
};

/* default mix; each run scales every weight by 1/4..2 */
static const uint32_t kind_weight[NKIND] = { 16, 10, 5, 18, 10, 14, 7, 7, 3, 3 };

/* A buffer in a node's arena: [base, base + rsv) is reserved, guards
 * included; the operation uses [off, off + len). */
struct buf {
	size_t base, rsv;
	size_t off;
	uint32_t len;
	uint8_t node;
};

/* A send WR posted and not yet known complete. */
struct sop {
	uint64_t wr_id;
	uint32_t len;
	uint32_t wc_opcode;
	uint8_t kind;
	bool signaled;
	bool landed; /* remote buffers checked at a later message already */
	uint8_t nbuf;
	struct buf buf[MAX_SGE + 1]; /* owned: checked and freed at the end */
};

/* A receive posted and not yet completed. */
struct rop {
	uint64_t wr_id;
	uint64_t post_at; /* posted late: not before this time */
	uint32_t cap;
	bool matched; /* a message has been posted for it */
	uint32_t opcode, byte_len, imm, flags;
	uint8_t nbuf;
	struct buf buf[MAX_SGE];
	/* WRITE_WITH_IMM: the target, checked again when the receive
	 * completes while the sender's WR (tgt_sq_idx) still owns it */
	bool has_tgt;
	uint32_t tgt_sq_idx;
	struct buf tgt;
	uint32_t msg_sq_idx; /* the message's WR in the sender's queue */
};

/* One QP of one node, as a sender (sq) and as a receiver (rq). */
struct side {
	int node, k;
	uint32_t qpn, peer_qpn;
	uint32_t scq, rcq;
	uint32_t sq_depth, rq_depth, max_sge, max_rsge, max_inline;
	uint32_t limit; /* WRs in flight at most */
	uint32_t sig_every; /* at most sig_every - 1 unsignaled in a row */
	double p_sig, p_inl, p_ahead, p_late;

	struct sop *sq;
	uint32_t sq_head, sq_tail; /* [head, tail): posted, not known done */
	uint32_t nsig; /* signaled WRs in [head, tail) */
	uint32_t unsig_run;
	struct rop *rq;
	/* [head, match): matched to a message, [match, tail): posted ahead
	 * of any message; [posted, tail): matched but not yet posted (late:
	 * the message goes first, RNR and credit waits follow) */
	uint32_t rq_head, rq_match, rq_tail, rq_posted;

	struct buf counter; /* in the peer's arena: this side's atomics */
	uint64_t cval;

	uint64_t seq;
	uint32_t ops_left, ops_done;
	uint32_t big_at, big_len; /* op number big_at is big_len bytes */
	bool have_next, nx_inl, nx_big;
	uint8_t nx_kind;
	uint32_t nx_len;
	uint32_t n_inv;
	uint64_t nposted[NKIND_ALL];
};

enum run_kind { RUN_SMALL, RUN_BIG, RUN_HUGE };

struct soak {
	uint64_t seed;
	unsigned int idx;
	enum run_kind kind;
	struct rng r;
	struct ovr_pair *p;
	uint8_t *sh[2]; /* shadow arenas */
	size_t mem;
	struct heap heap[2];
	uint32_t inv_key[2]; /* a small region per node, for SEND_WITH_INV */
	size_t inv_off;
	int nqp;
	struct side side[2][MAX_QP];
	uint32_t w[NKIND];
	uint32_t max_small_log; /* small sizes: up to 2^(this + 1) */
	uint64_t bytes;
	uint32_t max_len;
	uint64_t fences, inlines, multi_sge, zero_len, ahead, late;
	uint64_t next_late; /* late_due() */
	uint64_t step_limit; /* any_cqe() gives up at this p->steps */
	bool small_pdu; /* runs with max_pdu < MTU + headers */
	char err[1024];
};

static void soak_fail(struct soak *s, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void soak_fail(struct soak *s, int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (s->err[0])
		return;
	n = snprintf(s->err, sizeof(s->err),
		     "run %u seed %#" PRIx64 " t=%" PRIu64 " ns (line %d): ",
		     s->idx, s->seed, s->p ? s->p->now : 0, line);
	if (n < 0 || (size_t)n >= sizeof(s->err))
		return;
	va_start(ap, fmt);
	vsnprintf(s->err + n, sizeof(s->err) - (size_t)n, fmt, ap);
	va_end(ap);
}

#define CHECK(s, cond, ...)                                    \
	do {                                                   \
		if (!(cond)) {                                 \
			soak_fail((s), __LINE__, __VA_ARGS__); \
			return false;                          \
		}                                              \
	} while (0)

static inline struct side *peer_of(struct soak *s, const struct side *sd)
{
	return &s->side[1 - sd->node][sd->k];
}

static inline uint8_t *arena(struct soak *s, int node)
{
	return s->p->n[node].mem;
}

static bool is_q0(unsigned int k)
{
	return k == K_SEND || k == K_SEND_IMM || k == K_SEND_INV ||
	       k == K_WRITE_IMM;
}

static bool is_send(unsigned int k)
{
	return k == K_SEND || k == K_SEND_IMM || k == K_SEND_INV;
}

static bool carries_data(unsigned int k)
{
	return is_send(k) || k == K_WRITE || k == K_WRITE_IMM;
}

/* ---- buffers ----------------------------------------------------------- */

static bool buf_get(struct soak *s, int node, uint32_t len, bool align8,
		    struct buf *b)
{
	size_t rsv = ((size_t)len + 2 * GUARD + 64 + 63) & ~(size_t)63;
	size_t base = heap_alloc(&s->heap[node], rsv, rsv >= BIG_ALLOC);

	if (base == SIZE_MAX)
		return false;
	b->base = base;
	b->rsv = rsv;
	b->off = base + GUARD +
		 (align8 ? 8 * rnd_below(&s->r, 8) : rnd_below(&s->r, 64));
	b->len = len;
	b->node = (uint8_t)node;
	return true;
}

static void buf_put(struct soak *s, const struct buf *b)
{
	heap_free(&s->heap[b->node], b->base, b->rsv);
}

/* Fresh random bytes in the buffer, in the arena and in its shadow. */
static void buf_fill(struct soak *s, const struct buf *b)
{
	uint8_t *a = arena(s, b->node) + b->off;
	uint32_t i;

	for (i = 0; i + 8 <= b->len; i += 8) {
		uint64_t v = rnd(&s->r);

		memcpy(a + i, &v, 8);
	}
	if (i < b->len) {
		uint64_t v = rnd(&s->r);

		memcpy(a + i, &v, b->len - i);
	}
	memcpy(s->sh[b->node] + b->off, a, b->len);
}

/* The whole reservation (guards included) equals the model. */
static bool buf_check(struct soak *s, const struct buf *b, const char *what,
		      uint64_t wr_id)
{
	const uint8_t *a = arena(s, b->node) + b->base;
	const uint8_t *m = s->sh[b->node] + b->base;
	size_t i;

	if (!memcmp(a, m, b->rsv))
		return true;
	for (i = 0; i < b->rsv && a[i] == m[i]; i++)
		;
	CHECK(s, false,
	      "%s (wr_id %#" PRIx64 "): node %u arena offset %#zx, byte %td "
	      "of a %u-byte buffer at %#zx%s: %#04x, expected %#04x",
	      what, wr_id, b->node, b->base + i,
	      (ptrdiff_t)(b->base + i) - (ptrdiff_t)b->off, b->len, b->off,
	      b->base + i < b->off || b->base + i >= b->off + b->len ?
		      " (guard)" :
		      "",
	      a[i], m[i]);
	return false;
}

/* Copy @len bytes in the shadow from the scatter list @src to @dst. */
static void sh_copy(struct soak *s, const struct buf *dst, unsigned int nd,
		    const struct buf *src, unsigned int ns, uint32_t len)
{
	unsigned int di = 0, si = 0;
	uint32_t doff = 0, soff = 0;

	while (len) {
		uint32_t c;

		while (di < nd && doff == dst[di].len) {
			di++;
			doff = 0;
		}
		while (si < ns && soff == src[si].len) {
			si++;
			soff = 0;
		}
		if (di == nd || si == ns)
			abort(); /* a bug of this test */
		c = dst[di].len - doff;
		if (c > src[si].len - soff)
			c = src[si].len - soff;
		if (c > len)
			c = len;
		memcpy(s->sh[dst[di].node] + dst[di].off + doff,
		       s->sh[src[si].node] + src[si].off + soff, c);
		doff += c;
		soff += c;
		len -= c;
	}
}

/* Split @len into 1..@maxn pieces (some possibly empty); 0 pieces, at
 * times, when @len is 0. */
static uint32_t split(struct soak *s, uint32_t len, uint32_t maxn,
		      uint32_t *out)
{
	uint32_t cut[MAX_SGE], n;

	if (!len && chance(&s->r, 0.7))
		return 0;
	n = chance(&s->r, 0.6) ? 1 : (uint32_t)rnd_range(&s->r, 1, maxn);
	cut[0] = 0;
	for (uint32_t i = 1; i < n; i++) {
		uint32_t c = (uint32_t)rnd_below(&s->r, (uint64_t)len + 1), j;

		for (j = i; j > 1 && cut[j - 1] > c; j--)
			cut[j] = cut[j - 1];
		cut[j] = c;
	}
	for (uint32_t i = 0; i < n; i++)
		out[i] = (i + 1 < n ? cut[i + 1] : len) - cut[i];
	if (n > 1)
		s->multi_sge++;
	return n;
}

/* ---- drawing operations ------------------------------------------------- */

static uint32_t draw_small_len(struct soak *s, uint32_t mtu)
{
	uint32_t e;

	if (chance(&s->r, 0.06))
		return 0;
	if (chance(&s->r, 0.08)) /* segment boundaries */
		return mtu * (uint32_t)rnd_range(&s->r, 1, 4) - 1 +
		       (uint32_t)rnd_below(&s->r, 3);
	e = (uint32_t)rnd_below(&s->r, s->max_small_log + 1);
	return (1u << e) + (uint32_t)rnd_below(&s->r, 1u << e);
}

static void draw_next(struct soak *s, struct side *sd, uint32_t mtu)
{
	uint32_t x, sum = 0;
	unsigned int k = 0;

	for (int i = 0; i < NKIND; i++)
		sum += s->w[i];
	x = (uint32_t)rnd_below(&s->r, sum);

	sd->nx_big = sd->ops_done == sd->big_at;
	sd->nx_inl = false;
	if (sd->nx_big) {
		static const uint8_t bk[] = { K_SEND,  K_SEND_IMM,  K_WRITE,
					      K_WRITE, K_WRITE_IMM, K_READ };

		sd->nx_kind = bk[rnd_below(&s->r, sizeof(bk))];
		sd->nx_len = sd->big_len;
		sd->have_next = true;
		return;
	}
	while (x >= s->w[k])
		x -= s->w[k++];
	if ((k == K_RDFW || k == K_WRRD) && sd->limit < 2)
		k = K_READ;
	sd->nx_kind = (uint8_t)k;
	if (k == K_CAS || k == K_FAA) {
		sd->nx_len = 8;
	} else if (carries_data(k) && sd->max_inline &&
		   chance(&s->r, sd->p_inl)) {
		sd->nx_inl = true;
		sd->nx_len = (uint32_t)rnd_below(&s->r, sd->max_inline + 1);
	} else {
		sd->nx_len = draw_small_len(s, mtu);
	}
	sd->have_next = true;
}

/* ---- posting -------------------------------------------------------------- */

static uint64_t next_wr_id(struct side *sd, bool recv)
{
	return (uint64_t)sd->node << 60 | (uint64_t)sd->k << 56 |
	       (uint64_t)recv << 55 | sd->seq++;
}

static void sges_of(struct soak *s, const struct buf *b, unsigned int n,
		    struct ovr_eng_sge *sg, bool inl)
{
	for (unsigned int i = 0; i < n; i++) {
		sg[i].addr = ovr_pair_va(s->p, b[i].node, b[i].off);
		sg[i].length = b[i].len;
		/* inline data involves no key: say so at times */
		sg[i].lkey = inl && (i & 1) ? 0 : s->p->n[b[i].node].key;
	}
}

static bool recv_post(struct soak *s, struct side *rs, struct rop *rv)
{
	struct ovr_eng_sge sg[MAX_SGE];
	struct ovr_eng_recv_wr wr = {
		.wr_id = rv->wr_id,
		.sg_list = sg,
		.num_sge = rv->nbuf,
	};
	int rc;

	sges_of(s, rv->buf, rv->nbuf, sg, false);
	rc = ovr_eng_post_recv(s->p->n[rs->node].eng, rs->qpn, &wr, s->p->now);
	CHECK(s, rc == 0, "post_recv on node %d qp %d: %d", rs->node, rs->k,
	      rc);
	return true;
}

static bool decide_signaled(struct soak *s, struct side *sd)
{
	bool sig = sd->unsig_run + 1 >= sd->sig_every ||
		   chance(&s->r, sd->p_sig);

	sd->unsig_run = sig ? 0 : sd->unsig_run + 1;
	return sig;
}

static bool send_post(struct soak *s, struct side *sd, struct sop *o,
		      const struct ovr_eng_send_wr *wr)
{
	int rc = ovr_eng_post_send(s->p->n[sd->node].eng, sd->qpn, wr,
				   s->p->now);

	CHECK(s, rc == 0,
	      "post_send %s of %u B on node %d qp %d (%u in flight of %u): %d",
	      kind_name[o->kind], o->len, sd->node, sd->k,
	      sd->sq_tail - sd->sq_head, sd->sq_depth, rc);
	if (wr->send_flags & OVR_SEND_FENCE)
		s->fences++;
	o->wr_id = wr->wr_id;
	o->signaled = wr->send_flags & OVR_SEND_SIGNALED;
	sd->nsig += o->signaled;
	sd->sq_tail++;
	sd->nposted[o->kind]++;
	s->bytes += o->len;
	if (o->len > s->max_len)
		s->max_len = o->len;
	return true;
}

static void bufs_put(struct soak *s, const struct buf *b, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		buf_put(s, &b[i]);
}

/* Post the side's next operation: 1 posted, 0 no room now, -1 failure. */
static int post_op(struct soak *s, struct side *sd, uint32_t mtu)
{
	struct side *pr = peer_of(s, sd);
	const int me = sd->node, them = 1 - sd->node;
	uint32_t inflight = sd->sq_tail - sd->sq_head;
	uint32_t piece[MAX_SGE], rpiece[MAX_SGE], wpiece[MAX_SGE];
	uint32_t len, nl, nrl, nwl = 0, wlen = 0, woff = 0, i;
	struct ovr_eng_sge sg[MAX_SGE];
	struct ovr_eng_send_wr wr;
	struct sop *o, *o2 = NULL;
	struct rop *rv = NULL;
	struct buf rb = { 0 };
	bool inl, fresh = false, have_rb = false, atomic;
	unsigned int kind;

	if (inflight >= sd->limit)
		return 0;
	if (!sd->have_next)
		draw_next(s, sd, mtu);
	kind = sd->nx_kind;
	len = sd->nx_len;
	inl = sd->nx_inl;
	atomic = kind == K_CAS || kind == K_FAA;
	if ((kind == K_RDFW || kind == K_WRRD) && inflight + 2 > sd->limit)
		return 0;
	if (is_q0(kind)) {
		if (pr->rq_match != pr->rq_tail) {
			/* the oldest receive posted ahead takes it */
			rv = &pr->rq[pr->rq_match & (pr->rq_depth - 1)];
			if (is_send(kind) && len > rv->cap) {
				if (sd->nx_big)
					kind = K_WRITE_IMM;
				else
					len = rv->cap;
			}
		} else if (pr->rq_tail - pr->rq_head >= pr->rq_depth) {
			return 0;
		}
	}

	/* resources first; nothing is posted unless all are there */
	o = &sd->sq[sd->sq_tail & (sd->sq_depth - 1)];
	memset(o, 0, sizeof(*o));
	o->kind = (uint8_t)(kind == K_RDFW ? K_READ :
			    kind == K_WRRD ? K_WRITE :
					     kind);
	o->len = len;
	if (atomic) {
		nl = 1;
		piece[0] = 8;
	} else {
		nl = split(s, len, sd->max_sge, piece);
	}
	for (i = 0; i < nl; i++) {
		if (!buf_get(s, me, piece[i], atomic, &o->buf[i]))
			goto undo;
		o->nbuf++;
	}
	if (kind == K_WRITE || kind == K_WRITE_IMM || kind == K_READ ||
	    kind == K_RDFW || kind == K_WRRD) {
		if (!buf_get(s, them, len, false, &rb))
			goto undo;
		have_rb = true;
	}
	if (kind == K_RDFW || kind == K_WRRD) {
		/* the second WR: its own local buffers, part of rb */
		o2 = &sd->sq[(sd->sq_tail + 1) & (sd->sq_depth - 1)];
		memset(o2, 0, sizeof(*o2));
		o2->kind = kind == K_RDFW ? K_FENCED : K_READBACK;
		wlen = len ? (uint32_t)rnd_range(&s->r, 1, len) : 0;
		woff = (uint32_t)rnd_below(&s->r, (uint64_t)len - wlen + 1);
		o2->len = wlen;
		nwl = split(s, wlen, sd->max_sge, wpiece);
		for (i = 0; i < nwl; i++) {
			if (!buf_get(s, me, wpiece[i], false, &o2->buf[i]))
				goto undo;
			o2->nbuf++;
		}
	}
	if (is_q0(kind) && !rv) {
		uint32_t cap;

		rv = &pr->rq[pr->rq_tail & (pr->rq_depth - 1)];
		memset(rv, 0, sizeof(*rv));
		if (kind == K_WRITE_IMM)
			cap = chance(&s->r, 0.5) ?
				      0 :
				      (uint32_t)rnd_below(&s->r, 65);
		else
			cap = len + (chance(&s->r, 0.5) ?
					     0 :
					     (uint32_t)rnd_below(&s->r, 257));
		rv->cap = cap;
		fresh = true;
		nrl = split(s, cap, pr->max_rsge, rpiece);
		for (i = 0; i < nrl; i++) {
			if (!buf_get(s, them, rpiece[i], false, &rv->buf[i]))
				goto undo;
			rv->nbuf++;
		}
	}

	/* data */
	if (carries_data(kind) || kind == K_WRRD)
		for (i = 0; i < o->nbuf; i++)
			buf_fill(s, &o->buf[i]);
	if (kind == K_READ || kind == K_RDFW)
		buf_fill(s, &rb);
	for (i = 0; i < nwl; i++)
		buf_fill(s, &o2->buf[i]);
	if (fresh) {
		rv->wr_id = next_wr_id(pr, true);
		if (pr->rq_posted != pr->rq_tail || chance(&s->r, pr->p_late)) {
			/* posted after its message (in order, so after every
			 * receive still waiting too) */
			rv->post_at = s->p->now + rnd_below(&s->r, 200000);
			if (pr->rq_posted != pr->rq_tail) {
				const struct rop *prev =
					&pr->rq[(pr->rq_tail - 1) &
						(pr->rq_depth - 1)];

				if (rv->post_at < prev->post_at)
					rv->post_at = prev->post_at;
			}
			s->late++;
		} else {
			if (!recv_post(s, pr, rv))
				return -1;
			pr->rq_posted++;
		}
		pr->rq_tail++;
	}

	/* the work request */
	memset(&wr, 0, sizeof(wr));
	sges_of(s, o->buf, o->nbuf, sg, inl);
	wr.wr_id = next_wr_id(sd, false);
	wr.sg_list = sg;
	wr.num_sge = o->nbuf;
	wr.rkey = s->p->n[them].key;
	if (decide_signaled(s, sd))
		wr.send_flags |= OVR_SEND_SIGNALED;
	if (chance(&s->r, 0.04))
		wr.send_flags |= OVR_SEND_FENCE;
	if (is_q0(kind) && chance(&s->r, 0.1))
		wr.send_flags |= OVR_SEND_SOLICITED;
	if (inl) {
		wr.send_flags |= OVR_SEND_INLINE;
		s->inlines++;
	}
	if (!len)
		s->zero_len++;
	switch (kind) {
	case K_SEND:
		wr.opcode = OVR_WR_SEND;
		o->wc_opcode = OVR_WC_SEND;
		break;
	case K_SEND_IMM:
		wr.opcode = OVR_WR_SEND_WITH_IMM;
		wr.imm_data = (uint32_t)rnd(&s->r);
		o->wc_opcode = OVR_WC_SEND;
		break;
	case K_SEND_INV:
		wr.opcode = OVR_WR_SEND_WITH_INV;
		wr.invalidate_rkey = s->inv_key[them];
		o->wc_opcode = OVR_WC_SEND;
		sd->n_inv++;
		break;
	case K_WRITE:
	case K_WRITE_IMM:
	case K_WRRD:
		wr.opcode = kind == K_WRITE_IMM ? OVR_WR_RDMA_WRITE_WITH_IMM :
						  OVR_WR_RDMA_WRITE;
		wr.imm_data = (uint32_t)rnd(&s->r);
		wr.remote_addr = ovr_pair_va(s->p, them, rb.off);
		o->wc_opcode = OVR_WC_RDMA_WRITE;
		break;
	case K_READ:
	case K_RDFW:
		wr.opcode = OVR_WR_RDMA_READ;
		wr.remote_addr = ovr_pair_va(s->p, them, rb.off);
		o->wc_opcode = OVR_WC_RDMA_READ;
		break;
	case K_CAS:
		wr.opcode = OVR_WR_ATOMIC_CMP_AND_SWP;
		wr.remote_addr = ovr_pair_va(s->p, them, sd->counter.off);
		wr.compare_add = chance(&s->r, 0.5) ? sd->cval : rnd(&s->r);
		wr.swap = rnd(&s->r);
		o->wc_opcode = OVR_WC_COMP_SWAP;
		break;
	default: /* K_FAA */
		wr.opcode = OVR_WR_ATOMIC_FETCH_AND_ADD;
		wr.remote_addr = ovr_pair_va(s->p, them, sd->counter.off);
		wr.compare_add = chance(&s->r, 0.3) ? rnd(&s->r) :
						      rnd_below(&s->r, 1000);
		o->wc_opcode = OVR_WC_FETCH_ADD;
		break;
	}
	if (!send_post(s, sd, o, &wr))
		return -1;

	/* the model: what the memory and the receive will hold */
	switch (kind) {
	case K_SEND:
	case K_SEND_IMM:
	case K_SEND_INV:
		sh_copy(s, rv->buf, rv->nbuf, o->buf, o->nbuf, len);
		rv->opcode = OVR_WC_RECV;
		rv->byte_len = len;
		if (kind == K_SEND_IMM) {
			rv->flags = OVR_WC_WITH_IMM;
			rv->imm = wr.imm_data;
		} else if (kind == K_SEND_INV) {
			rv->flags = OVR_WC_WITH_INV;
			rv->imm = wr.invalidate_rkey;
		}
		/* the receive says the sender asked for a solicited event */
		if (wr.send_flags & OVR_SEND_SOLICITED)
			rv->flags |= OVR_WC_SOLICITED;
		break;
	case K_WRITE:
	case K_WRITE_IMM:
		sh_copy(s, &rb, 1, o->buf, o->nbuf, len);
		o->buf[o->nbuf++] = rb;
		if (kind == K_WRITE_IMM) {
			rv->opcode = OVR_WC_RECV_RDMA_WITH_IMM;
			rv->byte_len = len;
			rv->flags = OVR_WC_WITH_IMM;
			if (wr.send_flags & OVR_SEND_SOLICITED)
				rv->flags |= OVR_WC_SOLICITED;
			rv->imm = wr.imm_data;
			rv->has_tgt = true;
			rv->tgt = rb;
			rv->tgt_sq_idx = sd->sq_tail - 1;
		}
		break;
	case K_READ:
		sh_copy(s, o->buf, o->nbuf, &rb, 1, len);
		o->buf[o->nbuf++] = rb;
		break;
	case K_RDFW:
		sh_copy(s, o->buf, o->nbuf, &rb, 1, len);
		break;
	case K_WRRD:
		sh_copy(s, &rb, 1, o->buf, o->nbuf, len);
		break;
	default: {
		uint64_t orig = sd->cval;

		if (kind == K_FAA)
			sd->cval += wr.compare_add;
		else if (sd->cval == wr.compare_add)
			sd->cval = wr.swap;
		memcpy(s->sh[me] + o->buf[0].off, &orig, 8);
		memcpy(s->sh[them] + sd->counter.off, &sd->cval, 8);
		break;
	}
	}
	if (rv) {
		rv->matched = true;
		rv->msg_sq_idx = sd->sq_tail - 1;
		pr->rq_match++;
	}
	if (inl) {
		/* the data was taken at posting: the buffers are free again */
		for (i = 0; i < o->nbuf; i++)
			if (o->buf[i].node == me)
				buf_fill(s, &o->buf[i]);
	}

	if (o2) {
		/* RDFW: overwrite part of what the READ reads, FENCEd: it may
		 * start only once the READ has completed, so the READ returns
		 * the old bytes. WRRD: read back part of what the WRITE
		 * wrote: requests execute in order, so the READ sees it. */
		struct buf sub = rb;

		sub.off += woff;
		sub.len = wlen;
		memset(&wr, 0, sizeof(wr));
		sges_of(s, o2->buf, o2->nbuf, sg, false);
		wr.wr_id = next_wr_id(sd, false);
		wr.sg_list = sg;
		wr.num_sge = o2->nbuf;
		wr.rkey = s->p->n[them].key;
		wr.remote_addr = ovr_pair_va(s->p, them, sub.off);
		if (kind == K_RDFW) {
			wr.opcode = OVR_WR_RDMA_WRITE;
			wr.send_flags = OVR_SEND_FENCE;
			o2->wc_opcode = OVR_WC_RDMA_WRITE;
		} else {
			wr.opcode = OVR_WR_RDMA_READ;
			if (chance(&s->r, 0.04))
				wr.send_flags = OVR_SEND_FENCE;
			o2->wc_opcode = OVR_WC_RDMA_READ;
		}
		if (decide_signaled(s, sd))
			wr.send_flags |= OVR_SEND_SIGNALED;
		if (!send_post(s, sd, o2, &wr))
			return -1;
		if (kind == K_RDFW)
			sh_copy(s, &sub, 1, o2->buf, o2->nbuf, wlen);
		else
			sh_copy(s, o2->buf, o2->nbuf, &sub, 1, wlen);
		o2->buf[o2->nbuf++] = rb;
		sd->nposted[kind]++;
	}
	sd->have_next = false;
	sd->ops_left--;
	sd->ops_done++;
	return 1;

undo:
	bufs_put(s, o->buf, o->nbuf);
	if (o2)
		bufs_put(s, o2->buf, o2->nbuf);
	if (have_rb)
		buf_put(s, &rb);
	if (fresh)
		bufs_put(s, rv->buf, rv->nbuf);
	return 0;
}

/* A signaled empty WRITE, so that unsignaled WRs before it complete. */
static bool post_flush(struct soak *s, struct side *sd)
{
	struct sop *o = &sd->sq[sd->sq_tail & (sd->sq_depth - 1)];
	struct ovr_eng_send_wr wr = {
		.wr_id = next_wr_id(sd, false),
		.opcode = OVR_WR_RDMA_WRITE,
		.send_flags = OVR_SEND_SIGNALED,
		.rkey = s->p->n[1 - sd->node].key,
		.remote_addr = ovr_pair_va(s->p, 1 - sd->node, sd->counter.off),
	};

	memset(o, 0, sizeof(*o));
	o->kind = K_FLUSH;
	o->wc_opcode = OVR_WC_RDMA_WRITE;
	sd->unsig_run = 0;
	return send_post(s, sd, o, &wr);
}

/* A few receives ahead of any message, of random capacity. */
static int post_ahead(struct soak *s, struct side *rs)
{
	uint32_t piece[MAX_SGE], cap, n;
	struct rop *rv;

	if (rs->rq_tail - rs->rq_head >= rs->rq_depth ||
	    rs->rq_tail - rs->rq_match >= MAX_AHEAD ||
	    rs->rq_posted != rs->rq_tail)
		return 0;
	rv = &rs->rq[rs->rq_tail & (rs->rq_depth - 1)];
	memset(rv, 0, sizeof(*rv));
	cap = chance(&s->r, 0.1) ? 0 :
				   1u << rnd_below(&s->r, s->max_small_log + 2);
	rv->cap = cap;
	n = split(s, cap, rs->max_rsge, piece);
	for (uint32_t i = 0; i < n; i++) {
		if (!buf_get(s, rs->node, piece[i], false, &rv->buf[i])) {
			bufs_put(s, rv->buf, rv->nbuf);
			return 0;
		}
		rv->nbuf++;
	}
	rv->wr_id = next_wr_id(rs, true);
	if (!recv_post(s, rs, rv))
		return -1;
	rs->rq_tail++;
	rs->rq_posted++;
	s->ahead++;
	return 1;
}

/* ---- completions ------------------------------------------------------ */

/* A send WR is known complete: its buffers must hold what the model says. */
static bool sop_finish(struct soak *s, struct side *sd, struct sop *o)
{
	for (unsigned int i = 0; i < o->nbuf; i++) {
		char what[96];

		snprintf(what, sizeof(what),
			 "%s of %u B from node %d qp %d, %s buffer %u",
			 kind_name[o->kind], o->len, sd->node, sd->k,
			 o->buf[i].node == sd->node ? "local" : "remote", i);
		if (!buf_check(s, &o->buf[i], what, o->wr_id))
			return false;
		buf_put(s, &o->buf[i]);
	}
	o->nbuf = 0;
	return true;
}

static bool on_send_wc(struct soak *s, struct side *sd,
		       const struct ovr_eng_wc *wc)
{
	while (sd->sq_head != sd->sq_tail) {
		struct sop *o = &sd->sq[sd->sq_head & (sd->sq_depth - 1)];

		if (!o->signaled) {
			CHECK(s, wc->wr_id != o->wr_id,
			      "completion of unsignaled %s wr_id %#" PRIx64
			      " on node %d qp %d, status %u",
			      kind_name[o->kind], wc->wr_id, sd->node, sd->k,
			      wc->status);
			if (!sop_finish(s, sd, o))
				return false;
			sd->sq_head++;
			continue;
		}
		CHECK(s, wc->wr_id == o->wr_id && wc->status == OVR_WC_SUCCESS,
		      "node %d qp %d send cq: expected %s wr_id %#" PRIx64
		      " SUCCESS, got wr_id %#" PRIx64 " status %u vendor_err "
		      "%#x",
		      sd->node, sd->k, kind_name[o->kind], o->wr_id, wc->wr_id,
		      wc->status, wc->vendor_err);
		CHECK(s,
		      wc->opcode == o->wc_opcode && wc->byte_len == o->len &&
			      wc->wc_flags == 0 && wc->qp_num == sd->qpn,
		      "node %d qp %d %s wr_id %#" PRIx64
		      ": opcode %u len %u flags %#x qp %#x, expected %u %u 0 %#x",
		      sd->node, sd->k, kind_name[o->kind], o->wr_id, wc->opcode,
		      wc->byte_len, wc->wc_flags, wc->qp_num, o->wc_opcode,
		      o->len, sd->qpn);
		if (!sop_finish(s, sd, o))
			return false;
		sd->sq_head++;
		sd->nsig--;
		return true;
	}
	CHECK(s, false,
	      "node %d qp %d: unexpected send completion wr_id %#" PRIx64
	      " status %u",
	      sd->node, sd->k, wc->wr_id, wc->status);
	return false;
}

static bool on_recv_wc(struct soak *s, struct side *rs,
		       const struct ovr_eng_wc *wc)
{
	struct side *tx = peer_of(s, rs);
	struct rop *rv = &rs->rq[rs->rq_head & (rs->rq_depth - 1)];

	CHECK(s, rs->rq_head != rs->rq_match,
	      "node %d qp %d: unexpected receive completion wr_id %#" PRIx64
	      " status %u len %u (%u receives ahead, none matched)",
	      rs->node, rs->k, wc->wr_id, wc->status, wc->byte_len,
	      rs->rq_tail - rs->rq_match);
	CHECK(s, wc->wr_id == rv->wr_id && wc->status == OVR_WC_SUCCESS,
	      "node %d qp %d recv cq: expected wr_id %#" PRIx64
	      " SUCCESS, got wr_id %#" PRIx64 " status %u vendor_err %#x",
	      rs->node, rs->k, rv->wr_id, wc->wr_id, wc->status,
	      wc->vendor_err);
	CHECK(s,
	      wc->opcode == rv->opcode && wc->byte_len == rv->byte_len &&
		      wc->wc_flags == rv->flags &&
		      (!(rv->flags & (OVR_WC_WITH_IMM | OVR_WC_WITH_INV)) ||
		       wc->imm_data == rv->imm) &&
		      wc->qp_num == rs->qpn && wc->src_qp == rs->peer_qpn,
	      "node %d qp %d recv wr_id %#" PRIx64
	      ": opcode %u len %u flags %#x imm %#x qp %#x src %#x, expected "
	      "%u %u %#x %#x %#x %#x",
	      rs->node, rs->k, rv->wr_id, wc->opcode, wc->byte_len,
	      wc->wc_flags, wc->imm_data, wc->qp_num, wc->src_qp, rv->opcode,
	      rv->byte_len, rv->flags, rv->imm, rs->qpn, rs->peer_qpn);
	for (unsigned int i = 0; i < rv->nbuf; i++) {
		if (!buf_check(s, &rv->buf[i], "receive buffer", rv->wr_id))
			return false;
		buf_put(s, &rv->buf[i]);
	}
	rv->nbuf = 0;
	/* WRITE_WITH_IMM: its data is in place when the receive completes */
	if (rv->has_tgt && (int32_t)(rv->tgt_sq_idx - tx->sq_head) >= 0 &&
	    !buf_check(s, &rv->tgt, "WRITE_IMM target at its receive",
		       rv->wr_id))
		return false;
	/* and so is every WRITE the peer posted before the message */
	for (uint32_t j = tx->sq_head; (int32_t)(rv->msg_sq_idx - j) > 0; j++) {
		struct sop *o = &tx->sq[j & (tx->sq_depth - 1)];

		if (o->landed)
			continue;
		o->landed = true;
		for (unsigned int i = 0; i < o->nbuf; i++)
			if (o->buf[i].node == rs->node &&
			    !buf_check(s, &o->buf[i],
				       "earlier WRITE at a message's receive",
				       o->wr_id))
				return false;
	}
	rs->rq_head++;
	return true;
}

/* When the next late receive is due, UINT64_MAX if none waits. */
static uint64_t late_due(struct soak *s)
{
	uint64_t t = UINT64_MAX;

	for (int n = 0; n < 2; n++)
		for (int k = 0; k < s->nqp; k++) {
			const struct side *rs = &s->side[n][k];

			if (rs->rq_posted != rs->rq_tail &&
			    rs->rq[rs->rq_posted & (rs->rq_depth - 1)].post_at <
				    t)
				t = rs->rq[rs->rq_posted & (rs->rq_depth - 1)]
					    .post_at;
		}
	return t;
}

static bool post_late(struct soak *s)
{
	for (int n = 0; n < 2; n++)
		for (int k = 0; k < s->nqp; k++) {
			struct side *rs = &s->side[n][k];

			while (rs->rq_posted != rs->rq_tail) {
				struct rop *rv = &rs->rq[rs->rq_posted &
							 (rs->rq_depth - 1)];

				if (rv->post_at > s->p->now)
					break;
				if (!recv_post(s, rs, rv))
					return false;
				rs->rq_posted++;
			}
		}
	return true;
}

static bool any_cqe(struct ovr_pair *p, void *ctx)
{
	struct soak *s = ctx;

	if (p->now >= s->next_late || p->steps >= s->step_limit)
		return true;
	for (int n = 0; n < 2; n++)
		for (int k = 0; k < s->nqp; k++)
			if (ovr_pair_cq_len(p, n, s->side[n][k].scq) ||
			    ovr_pair_cq_len(p, n, s->side[n][k].rcq))
				return true;
	return false;
}

/* Receives first: a WRITE_WITH_IMM target is checked there while the
 * sender still owns it. */
static bool drain(struct soak *s)
{
	struct ovr_eng_wc wc;

	for (int n = 0; n < 2; n++)
		for (int k = 0; k < s->nqp; k++)
			while (ovr_pair_poll(s->p, n, s->side[n][k].rcq, &wc))
				if (!on_recv_wc(s, &s->side[n][k], &wc))
					return false;
	for (int n = 0; n < 2; n++)
		for (int k = 0; k < s->nqp; k++)
			while (ovr_pair_poll(s->p, n, s->side[n][k].scq, &wc))
				if (!on_send_wc(s, &s->side[n][k], &wc))
					return false;
	return true;
}

/* ---- a run ----------------------------------------------------------------- */

static void dump_state(struct soak *s)
{
	for (int n = 0; n < 2; n++) {
		for (int k = 0; k < s->nqp; k++) {
			struct side *sd = &s->side[n][k];
			struct ovr_eng_qp_stats st;

			ovr_eng_qp_stats(s->p->n[n].eng, sd->qpn, &st);
			print_message(
				"  node %d qp %d: left %u, sq %u (%u signaled), "
				"rq %u matched %u ahead %u late, next %s %u B; "
				"state %u "
				"una %#x nxt %#x rcv %#x inflight %u retx %" PRIu64
				" rto %" PRIu64 "\n",
				n, k, sd->ops_left, sd->sq_tail - sd->sq_head,
				sd->nsig, sd->rq_match - sd->rq_head,
				sd->rq_tail - sd->rq_match,
				sd->rq_tail - sd->rq_posted,
				sd->have_next ? kind_name[sd->nx_kind] : "-",
				sd->have_next ? sd->nx_len : 0, st.state,
				st.snd_una, st.snd_nxt, st.rcv_nxt,
				st.inflight_pkts, st.retx_pkts, st.rto_count);
		}
		print_message("  link %d->%d: %u packets in flight\n", n, 1 - n,
			      ovr_link_inflight(s->p->n[n].out));
	}
}

static bool all_done(struct soak *s)
{
	for (int n = 0; n < 2; n++)
		for (int k = 0; k < s->nqp; k++) {
			struct side *sd = &s->side[n][k];

			if (sd->ops_left || sd->sq_head != sd->sq_tail ||
			    sd->rq_head != sd->rq_match)
				return false;
		}
	return true;
}

static bool traffic(struct soak *s, const uint32_t *mtu)
{
	struct side *order[2 * MAX_QP];
	int nside = 2 * s->nqp;

	for (int n = 0; n < 2; n++)
		for (int k = 0; k < s->nqp; k++)
			order[n * s->nqp + k] = &s->side[n][k];
	for (;;) {
		bool posted;

		if (!post_late(s))
			return false;
		do {
			posted = false;
			for (int i = nside - 1; i > 0; i--) {
				int j = (int)rnd_below(&s->r, (uint64_t)i + 1);
				struct side *t = order[i];

				order[i] = order[j];
				order[j] = t;
			}
			for (int i = 0; i < nside; i++) {
				struct side *sd = order[i];
				uint32_t burst =
					(uint32_t)rnd_range(&s->r, 1, 4);

				for (uint32_t b = 0; b < burst && sd->ops_left;
				     b++) {
					int r = post_op(s, sd, mtu[sd->k]);

					if (r < 0)
						return false;
					if (!r)
						break;
					posted = true;
				}
				if (chance(&s->r, sd->p_ahead) &&
				    post_ahead(s, sd) < 0)
					return false;
			}
		} while (posted);
		/* whatever could not go on: make its unsignaled WRs complete */
		for (int i = 0; i < nside; i++) {
			struct side *sd = order[i];

			if (sd->sq_head != sd->sq_tail && !sd->nsig &&
			    !post_flush(s, sd))
				return false;
		}
		if (all_done(s))
			return true;
		s->next_late = late_due(s);
		s->step_limit = s->p->steps + STALL_STEPS;
		if (!ovr_pair_run(s->p, any_cqe, s, s->p->now + STALL_NS) ||
		    s->p->steps >= s->step_limit) {
			soak_fail(
				s, __LINE__,
				"stalled: no completion in %llu s (simulated) "
				"or %llu events; state below",
				STALL_NS / 1000000000ull, STALL_STEPS);
			dump_state(s);
			return false;
		}
		if (!drain(s))
			return false;
		CHECK(s, s->p->now < RUN_NS, "run took too long (simulated)");
	}
}

/* Quiet, every completion seen, every byte as modelled, counters sane. */
static bool final_checks(struct soak *s)
{
	uint64_t retx = 0, lost = 0, dups = 0, rxdup = 0, rnr = 0;
	struct ovr_link_stats ls[2];
	struct ovr_eng_stats es[2];

	CHECK(s, ovr_pair_run(s->p, NULL, NULL, s->p->now + STALL_NS),
	      "the engines do not go quiet after the last completion");
	for (int n = 0; n < 2; n++) {
		for (uint32_t c = 0; c < OVR_PAIR_MAX_CQ; c++)
			CHECK(s, ovr_pair_cq_len(s->p, n, c) == 0,
			      "node %d cq %u: %zu completions nobody expected",
			      n, c, ovr_pair_cq_len(s->p, n, c));
		for (size_t off = 0; off < s->mem; off += MB) {
			size_t len = s->mem - off < MB ? s->mem - off : MB;

			if (memcmp(arena(s, n) + off, s->sh[n] + off, len)) {
				struct buf b = { .base = off,
						 .rsv = len,
						 .off = off,
						 .len = (uint32_t)len,
						 .node = (uint8_t)n };

				return buf_check(s, &b, "final arena", 0);
			}
		}
		ovr_link_get_stats(s->p->n[n].out, &ls[n]);
		ovr_eng_get_stats(s->p->n[n].eng, &es[n]);
		for (int ev = OVR_EV_QP_FATAL; ev <= OVR_EV_QP_ACCESS_ERR; ev++)
			CHECK(s, s->p->n[n].events[ev] == 0,
			      "node %d: %" PRIu64 " events %d", n,
			      s->p->n[n].events[ev], ev);
		for (int k = 0; k < s->nqp; k++) {
			struct ovr_eng_qp_stats st;

			ovr_eng_qp_stats(s->p->n[n].eng, s->side[n][k].qpn,
					 &st);
			CHECK(s,
			      st.state == OVR_QPS_RTS &&
				      st.inflight_pkts == 0 &&
				      st.snd_una == st.snd_nxt,
			      "node %d qp %d at rest: state %u inflight %u "
			      "una %#x nxt %#x",
			      n, k, st.state, st.inflight_pkts, st.snd_una,
			      st.snd_nxt);
			CHECK(s,
			      s->late || (st.rnr_naks_sent == 0 &&
					  st.rnr_naks_rcvd == 0),
			      "node %d qp %d: RNR NAKs (sent %" PRIu64
			      ", received %" PRIu64
			      ") though every message had its receive",
			      n, k, st.rnr_naks_sent, st.rnr_naks_rcvd);
			retx += st.retx_pkts;
			rxdup += st.rx_dup;
			rnr += st.rnr_naks_sent;
		}
	}
	for (int n = 0; n < 2; n++) {
		const struct ovr_link_stats *in = &ls[1 - n];

		CHECK(s,
		      ls[n].sent == s->p->n[n].tx_pkts &&
			      es[n].tx_pkts <= s->p->n[n].tx_pkts,
		      "node %d: engine sent %" PRIu64 ", rig %" PRIu64
		      ", link took %" PRIu64,
		      n, es[n].tx_pkts, s->p->n[n].tx_pkts, ls[n].sent);
		CHECK(s, es[n].rx_pkts == in->delivered,
		      "node %d: engine received %" PRIu64
		      ", link delivered %" PRIu64,
		      n, es[n].rx_pkts, in->delivered);
		CHECK(s, es[n].rx_bad >= in->corrupted,
		      "node %d: %" PRIu64
		      " corrupted packets arrived, only %" PRIu64 " refused",
		      n, in->corrupted, es[n].rx_bad);
		CHECK(s, es[n].rx_no_qp == 0 && es[n].rx_bad_state == 0,
		      "node %d: rx_no_qp %" PRIu64 " rx_bad_state %" PRIu64, n,
		      es[n].rx_no_qp, es[n].rx_bad_state);
		lost += ls[n].lost + ls[n].corrupted + ls[n].tail_drops;
		dups += ls[n].duplicated;
	}
	/* 20 packets lost and none of them data: about 2^-20 */
	CHECK(s, lost < 20 || retx > 0,
	      "%" PRIu64 " packets lost or corrupted, none resent", lost);
	CHECK(s, dups < 20 || rxdup > 0,
	      "%" PRIu64 " packets duplicated, no duplicate seen", dups);
	print_message("  %.3f ms simulated in %" PRIu64 " events, %" PRIu64
		      "+%" PRIu64 " packets, %" PRIu64
		      " lost/corrupted, %" PRIu64 " dup, %" PRIu64
		      " reordered, %" PRIu64 " resent, %" PRIu64
		      " refused as bad, %" PRIu64 " RNR NAKs\n",
		      (double)s->p->now / 1e6, s->p->steps, ls[0].sent,
		      ls[1].sent, lost, dups, ls[0].reordered + ls[1].reordered,
		      retx, es[0].rx_bad + es[1].rx_bad, rnr);
	return true;
}

/* SEND_WITH_INV took the region's remote rights away: a WRITE to it now
 * fails with REM_ACCESS_ERR, writes nothing, and both QPs go to ERROR,
 * flushing the receives they still held. The run's last act. */
static bool check_invalidated(struct soak *s)
{
	struct side *sd = NULL, *pr;
	struct ovr_eng_wc wc;
	struct sop *o;
	struct buf src;
	struct ovr_eng_sge sg;
	struct ovr_eng_send_wr wr = { 0 };
	struct cq_wait w;

	for (int n = 0; n < 2 && !sd; n++)
		for (int k = 0; k < s->nqp && !sd; k++)
			if (s->side[n][k].n_inv)
				sd = &s->side[n][k];
	if (!sd)
		return true;
	pr = peer_of(s, sd);
	CHECK(s, buf_get(s, sd->node, 8, true, &src), "no room left");
	buf_fill(s, &src);
	sges_of(s, &src, 1, &sg, false);
	o = &sd->sq[sd->sq_tail & (sd->sq_depth - 1)];
	memset(o, 0, sizeof(*o));
	o->kind = K_WRITE;
	o->len = 8;
	wr.wr_id = next_wr_id(sd, false);
	wr.opcode = OVR_WR_RDMA_WRITE;
	wr.send_flags = OVR_SEND_SIGNALED;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.rkey = s->inv_key[1 - sd->node];
	wr.remote_addr = ovr_pair_va(s->p, 1 - sd->node, s->inv_off);
	if (!send_post(s, sd, o, &wr))
		return false;
	w = (struct cq_wait){ sd->node, sd->scq, 1 };
	CHECK(s, ovr_pair_run(s->p, cq_has, &w, s->p->now + STALL_NS),
	      "WRITE to an invalidated region never completes");
	CHECK(s, ovr_pair_poll(s->p, sd->node, sd->scq, &wc), "no completion");
	CHECK(s, wc.wr_id == wr.wr_id && wc.status == OVR_WC_REM_ACCESS_ERR,
	      "WRITE to the region node %d invalidated: wr_id %#" PRIx64
	      " status %u (expected %#" PRIx64 " REM_ACCESS_ERR)",
	      1 - sd->node, wc.wr_id, wc.status, wr.wr_id);
	CHECK(s,
	      !memcmp(arena(s, 1 - sd->node) + s->inv_off,
		      s->sh[1 - sd->node] + s->inv_off, 64),
	      "a refused WRITE changed the invalidated region");
	/* both QPs in ERROR: their receives posted ahead flush, in order */
	CHECK(s, ovr_pair_run(s->p, NULL, NULL, s->p->now + STALL_NS),
	      "no rest after the access error");
	for (int i = 0; i < 2; i++) {
		struct side *rs = i ? pr : sd;

		for (uint32_t j = rs->rq_match; j != rs->rq_tail; j++) {
			struct rop *rv = &rs->rq[j & (rs->rq_depth - 1)];

			CHECK(s, ovr_pair_poll(s->p, rs->node, rs->rcq, &wc),
			      "node %d qp %d: receive wr_id %#" PRIx64
			      " not flushed",
			      rs->node, rs->k, rv->wr_id);
			CHECK(s,
			      wc.wr_id == rv->wr_id &&
				      wc.status == OVR_WC_WR_FLUSH_ERR,
			      "node %d qp %d flush: wr_id %#" PRIx64
			      " status %u, expected %#" PRIx64 " FLUSH_ERR",
			      rs->node, rs->k, wc.wr_id, wc.status, rv->wr_id);
		}
		CHECK(s,
		      ovr_pair_cq_len(s->p, rs->node, rs->rcq) == 0 &&
			      ovr_pair_cq_len(s->p, rs->node, rs->scq) == 0,
		      "node %d qp %d: more completions after the flush",
		      rs->node, rs->k);
	}
	CHECK(s, s->p->n[pr->node].events[OVR_EV_QP_ACCESS_ERR] == 1,
	      "node %d: %" PRIu64 " QP_ACCESS_ERR events, expected 1", pr->node,
	      s->p->n[pr->node].events[OVR_EV_QP_ACCESS_ERR]);
	buf_put(s, &src);
	return true;
}

static const char *run_kind_name(enum run_kind k)
{
	return k == RUN_HUGE ? "huge" : k == RUN_BIG ? "big" : "small";
}

static void draw_link(struct soak *s, struct ovr_link_cfg *l, bool ge,
		      bool clean)
{
	double loss;

	memset(l, 0, sizeof(*l));
	l->rate_bps = rnd_range(&s->r, 10, 100) * 1000000000ull;
	l->delay_ns = rnd_range(&s->r, 1000, 50000);
	l->seed = rnd(&s->r);
	if (clean)
		return;
	l->jitter_ns = chance(&s->r, 0.3) ? 0 : rnd_below(&s->r, 20001);
	l->jitter_fifo = chance(&s->r, 0.2);
	loss = chance(&s->r, 0.15) ? 0 : rnd01(&s->r) * 0.20;
	if (ge && loss > 0) {
		double burst = 2 + 6 * rnd01(&s->r);
		double bad = 0.5 + 0.5 * rnd01(&s->r);
		double pi = loss / bad; /* time in the bad state */

		l->ge_r = 1 / burst;
		l->ge_p = l->ge_r * pi / (1 - pi);
		l->ge_loss_bad = bad;
	} else {
		l->loss = loss;
	}
	if (!chance(&s->r, 0.3)) {
		l->reorder = rnd01(&s->r) * 0.10;
		l->reorder_ns = rnd_range(&s->r, 1000, 50000);
	}
	if (chance(&s->r, 0.1)) {
		l->queue_bytes = (uint32_t)rnd_range(&s->r, 64 << 10, 1 << 20);
		l->ecn_bytes = chance(&s->r, 0.5) ? l->queue_bytes / 4 : 0;
	}
	l->dup = chance(&s->r, 0.3) ? 0 : rnd01(&s->r) * 0.05;
	l->corrupt = chance(&s->r, 0.3) ? 0 : rnd01(&s->r) * 0.05;
}

static void print_link(int i, const struct ovr_link_cfg *l)
{
	print_message("  link %d->%d: %.0f Gbps, delay %" PRIu64
		      " ns, jitter %" PRIu64 " ns%s, loss %.3f, GE p %.4f r "
		      "%.3f bad %.2f, reorder %.3f/%" PRIu64
		      " ns, dup %.3f, corrupt %.3f, queue %u B (ecn %u)\n",
		      i, 1 - i, (double)l->rate_bps / 1e9, l->delay_ns,
		      l->jitter_ns, l->jitter_fifo ? " (fifo)" : "", l->loss,
		      l->ge_p, l->ge_r, l->ge_loss_bad, l->reorder,
		      l->reorder_ns, l->dup, l->corrupt, l->queue_bytes,
		      l->ecn_bytes);
}

static uint32_t pick(struct rng *r, const uint32_t *v, size_t n)
{
	return v[rnd_below(r, n)];
}

#define PICK(r, ...)                                 \
	pick((r), (const uint32_t[]){ __VA_ARGS__ }, \
	     sizeof((const uint32_t[]){ __VA_ARGS__ }) / sizeof(uint32_t))

static bool run_one(struct soak *s)
{
	struct ovr_pair_cfg cfg;
	struct ovr_pair_qp_params qp[MAX_QP];
	uint32_t mtu[MAX_QP], total_ops, big_ops = 0, big_min = 0, big_max = 0;
	uint32_t small_pdu;
	bool ge, clean, late;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	s->r.s = s->seed;
	ovr_pair_cfg_default(&cfg);

	/* sizes and memory */
	switch (s->kind) {
	case RUN_HUGE:
		s->mem = 80 * (size_t)MB;
		s->max_small_log = 14;
		total_ops = (uint32_t)rnd_range(&s->r, 150, 400);
		big_ops = 1 + (uint32_t)rnd_below(&s->r, 2);
		big_min = MB;
		big_max = 4 * MB;
		break;
	case RUN_BIG:
		s->mem = 40 * (size_t)MB;
		s->max_small_log = 15;
		total_ops = (uint32_t)rnd_range(&s->r, 200, 800);
		big_ops = 2 + (uint32_t)rnd_below(&s->r, 5);
		big_min = MB;
		big_max = 4 * MB;
		break;
	default:
		s->mem = 12 * (size_t)MB;
		s->max_small_log = chance(&s->r, 0.2) ? 17 : 13;
		total_ops = (uint32_t)rnd_range(&s->r, 500, 2500);
		break;
	}
	cfg.mem_bytes = s->mem;

	/* links */
	clean = chance(&s->r, 0.08);
	ge = !clean && chance(&s->r, 0.35);
	for (int i = 0; i < 2; i++)
		draw_link(s, &cfg.link[i], ge, clean);

	/* engine */
	cfg.eng.seed = rnd(&s->r) | 1;
	small_pdu = PICK(&s->r, 1500, 2200);
	if (chance(&s->r, 0.15) && s->small_pdu)
		cfg.eng.max_pdu = small_pdu;
	cfg.eng.window_pkts = 1u << rnd_range(&s->r, 6, 12);
	cfg.eng.ack_every = (uint32_t)rnd_range(&s->r, 1, 8);
	cfg.eng.ack_delay_ns = rnd_range(&s->r, 1000, 20000);
	cfg.eng.tx_burst = PICK(&s->r, 1, 4, 16, 64);
	cfg.eng.sb_pool =
		chance(&s->r, 0.15) ? (uint32_t)rnd_range(&s->r, 1, 3) : 256;
	cfg.eng.cc_init_cwnd =
		chance(&s->r, 0.15) ? PICK(&s->r, 16384, 65536, 262144) : 0;

	/* the operation mix */
	for (int k = 0; k < NKIND; k++)
		s->w[k] = (uint32_t)rnd_range(&s->r, kind_weight[k] / 4 + 1,
					      kind_weight[k] * 2);

	/* some runs post receives after their messages at times */
	late = chance(&s->r, 0.25);
	s->nqp = (int)rnd_range(&s->r, 1, MAX_QP);
	for (int k = 0; k < s->nqp; k++) {
		ovr_pair_qp_params_default(&qp[k]);
		qp[k].cap.max_send_wr =
			PICK(&s->r, 1, 2, 4, 8, 16, 64, 256, 1024);
		qp[k].cap.max_recv_wr = PICK(&s->r, 2, 4, 16, 64, 256, 1024);
		qp[k].cap.max_send_sge = (uint32_t)rnd_range(&s->r, 1, MAX_SGE);
		qp[k].cap.max_recv_sge = (uint32_t)rnd_range(&s->r, 1, MAX_SGE);
		qp[k].cap.max_inline_data =
			chance(&s->r, 0.2) ? 0 :
					     (uint32_t)rnd_range(&s->r, 1, 512);
		qp[k].mtu =
			(uint32_t)rnd_range(&s->r, OVR_MTU_1024, OVR_MTU_4096);
		mtu[k] = 128u << qp[k].mtu;
		qp[k].max_rd_atomic = (uint8_t)rnd_range(&s->r, 1, 16);
		qp[k].max_dest_rd_atomic =
			(uint8_t)rnd_range(&s->r, qp[k].max_rd_atomic, 16);
		qp[k].timeout = (uint8_t)PICK(&s->r, 0, 17, 20);
		qp[k].min_rnr_timer = (uint8_t)rnd_range(&s->r, 1, 14);
	}

	print_message("run %u (%s), seed %#" PRIx64
		      " (repro: OVR_SOAK_SEED=<base> OVR_SOAK_ONLY=%u): "
		      "%d QP pair(s), %u ops, %s links, arena %zu MiB\n",
		      s->idx, run_kind_name(s->kind), s->seed, s->idx, s->nqp,
		      total_ops,
		      clean ? "clean" :
		      ge    ? "bursty (Gilbert-Elliott)" :
			      "Bernoulli",
		      s->mem >> 20);
	for (int i = 0; i < 2; i++)
		print_link(i, &cfg.link[i]);
	print_message("  engine: max_pdu %u, window %u, ack every %u / %" PRIu64
		      " ns, tx_burst %u, sb_pool %u, cwnd %u%s\n",
		      cfg.eng.max_pdu, cfg.eng.window_pkts, cfg.eng.ack_every,
		      cfg.eng.ack_delay_ns, cfg.eng.tx_burst, cfg.eng.sb_pool,
		      cfg.eng.cc_init_cwnd, late ? ", late receives" : "");
	for (int k = 0; k < s->nqp; k++)
		print_message("  qp %d: mtu %u, rd_atomic %u/%u, sq %u rq %u, "
			      "sge %u/%u, inline %u, timeout %u\n",
			      k, mtu[k], qp[k].max_rd_atomic,
			      qp[k].max_dest_rd_atomic, qp[k].cap.max_send_wr,
			      qp[k].cap.max_recv_wr, qp[k].cap.max_send_sge,
			      qp[k].cap.max_recv_sge, qp[k].cap.max_inline_data,
			      qp[k].timeout);

	s->p = ovr_pair_create(&cfg);
	CHECK(s, s->p, "ovr_pair_create: %s", strerror(errno));
	for (int n = 0; n < 2; n++) {
		/* known, non-zero contents everywhere */
		memset(arena(s, n), 0x5a, s->mem);
		s->sh[n] = malloc(s->mem);
		CHECK(s, s->sh[n], "no memory for the model");
		memcpy(s->sh[n], arena(s, n), s->mem);
		s->inv_off = 64;
		CHECK(s,
		      ovr_eng_reg_mr(
			      s->p->n[n].eng, s->p->n[n].pd,
			      ovr_pair_va(s->p, n, s->inv_off), 64,
			      OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE |
				      OVR_ACCESS_REMOTE_READ,
			      arena(s, n) + s->inv_off, &s->inv_key[n]) == 0,
		      "reg_mr");
		heap_free(&s->heap[n], 4096, s->mem - 4096);
	}
	for (int k = 0; k < s->nqp; k++) {
		uint32_t qpn[2];
		int rc = ovr_pair_connect(s->p, &qp[k], 2 * (uint32_t)k, qpn);

		CHECK(s, rc == 0, "connect qp %d: %d", k, rc);
		for (int n = 0; n < 2; n++) {
			struct side *sd = &s->side[n][k];
			struct ovr_eng_qp_attr a;

			CHECK(s,
			      ovr_eng_qp_query(s->p->n[n].eng, qpn[n], &a) == 0,
			      "query");
			sd->node = n;
			sd->k = k;
			sd->qpn = qpn[n];
			sd->peer_qpn = qpn[1 - n];
			sd->scq = 2 * (uint32_t)k;
			sd->rcq = 2 * (uint32_t)k + 1;
			sd->sq_depth = a.cap.max_send_wr;
			sd->rq_depth = a.cap.max_recv_wr;
			sd->max_sge = a.cap.max_send_sge;
			sd->max_rsge = a.cap.max_recv_sge;
			sd->max_inline = a.cap.max_inline_data;
			CHECK(s,
			      sd->sq_depth >= qp[k].cap.max_send_wr &&
				      !(sd->sq_depth & (sd->sq_depth - 1)) &&
				      sd->rq_depth >= qp[k].cap.max_recv_wr &&
				      !(sd->rq_depth & (sd->rq_depth - 1)),
			      "queue sizes %u/%u for %u/%u", sd->sq_depth,
			      sd->rq_depth, qp[k].cap.max_send_wr,
			      qp[k].cap.max_recv_wr);
			sd->sq = calloc(sd->sq_depth, sizeof(*sd->sq));
			sd->rq = calloc(sd->rq_depth, sizeof(*sd->rq));
			CHECK(s, sd->sq && sd->rq, "no memory for the model");
			sd->limit = PICK(&s->r, 4, 16, 64, 256);
			if (sd->limit > sd->sq_depth)
				sd->limit = sd->sq_depth;
			sd->sig_every = (uint32_t)rnd_range(
				&s->r, 1, sd->limit < 32 ? sd->limit : 32);
			sd->p_sig = rnd01(&s->r) * 0.5;
			sd->p_inl = rnd01(&s->r) * 0.4;
			sd->p_ahead = chance(&s->r, 0.5) ? 0 :
							   rnd01(&s->r) * 0.3;
			sd->p_late = late ? rnd01(&s->r) * 0.5 : 0;
			sd->ops_left = total_ops / (2 * (uint32_t)s->nqp) +
				       (uint32_t)rnd_below(&s->r, 8);
			sd->big_at = UINT32_MAX;
		}
	}
	/* atomic counters: one per QP and direction, in the target's arena */
	for (int n = 0; n < 2; n++)
		for (int k = 0; k < s->nqp; k++) {
			struct side *sd = &s->side[n][k];

			CHECK(s, buf_get(s, 1 - n, 8, true, &sd->counter),
			      "no room for a counter");
			buf_fill(s, &sd->counter);
			memcpy(&sd->cval, s->sh[1 - n] + sd->counter.off, 8);
		}
	/* big operations at random places; one of exactly 16 MB */
	for (uint32_t i = 0; i < big_ops; i++) {
		struct side *sd = &s->side[rnd_below(&s->r, 2)]
					  [rnd_below(&s->r, (uint64_t)s->nqp)];

		sd->big_at = (uint32_t)rnd_below(&s->r, sd->ops_left);
		sd->big_len = (uint32_t)rnd_range(&s->r, big_min, big_max);
	}
	if (s->kind == RUN_HUGE) {
		struct side *sd = &s->side[rnd_below(&s->r, 2)]
					  [rnd_below(&s->r, (uint64_t)s->nqp)];

		sd->big_at = (uint32_t)rnd_below(&s->r, sd->ops_left);
		sd->big_len = 16 * MB;
	}

	if (!traffic(s, mtu) || !final_checks(s) || !check_invalidated(s))
		return false;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	{
		uint64_t np[NKIND_ALL] = { 0 };
		char line[512];
		int o = 0;

		for (int n = 0; n < 2; n++)
			for (int k = 0; k < s->nqp; k++)
				for (int i = 0; i < NKIND_ALL; i++)
					np[i] += s->side[n][k].nposted[i];
		for (int i = 0; i < NKIND_ALL && o < (int)sizeof(line); i++)
			o += snprintf(line + o, sizeof(line) - (size_t)o,
				      " %s %" PRIu64, kind_name[i], np[i]);
		print_message("  ok: %.1f MB, largest %u B, %" PRIu64
			      " fenced, %" PRIu64 " inline, %" PRIu64
			      " scattered, %" PRIu64 " empty, %" PRIu64
			      " receives ahead, %" PRIu64 " late;%s; %.2f s\n",
			      (double)s->bytes / 1e6, s->max_len, s->fences,
			      s->inlines, s->multi_sge, s->zero_len, s->ahead,
			      s->late, line,
			      (double)(t1.tv_sec - t0.tv_sec) +
				      (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	}
	return true;
}

static void run_free(struct soak *s)
{
	for (int n = 0; n < 2; n++) {
		free(s->sh[n]);
		free(s->heap[n].v);
		for (int k = 0; k < MAX_QP; k++) {
			free(s->side[n][k].sq);
			free(s->side[n][k].rq);
		}
	}
	ovr_pair_destroy(s->p);
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : dflt;
}

static void test_soak(void **state)
{
	uint64_t base = env_u64("OVR_SOAK_SEED", DEFAULT_SEED);
	uint64_t runs = env_u64("OVR_SOAK_RUNS", DEFAULT_RUNS);
	uint64_t only = env_u64("OVR_SOAK_ONLY", UINT64_MAX);
	bool small_pdu = env_u64("OVR_SOAK_SMALL_PDU", 1) != 0;
	static char failed[4096];
	size_t flen = 0;
	unsigned int nfail = 0, nrun = 0;
	bool huge = false;

	(void)state;
	print_message("soak: base seed %#" PRIx64 ", %" PRIu64 " runs\n", base,
		      runs);
	failed[0] = 0;
	for (uint64_t i = only != UINT64_MAX ? only : 0;
	     only != UINT64_MAX ? i == only : i < runs; i++) {
		struct soak *s = calloc(1, sizeof(*s));
		bool ok;

		assert_non_null(s);
		s->idx = (unsigned int)i;
		s->seed = base + i;
		s->small_pdu = small_pdu;
		/* 1 in 16 carries a 16 MB operation, 1 in 4 a few >= 1 MB */
		s->kind = i % 16 == 1 ? RUN_HUGE :
			  i % 4 == 3  ? RUN_BIG :
					RUN_SMALL;
		ok = run_one(s);
		huge |= ok && s->max_len >= 16 * MB;
		nrun++;
		if (!ok) {
			print_message("FAILED: %s\n", s->err);
			nfail++;
			if (flen < sizeof(failed))
				flen += (size_t)snprintf(failed + flen,
							 sizeof(failed) - flen,
							 "\n  %s", s->err);
		}
		run_free(s);
		free(s);
	}
	if (nfail)
		fail_msg("%u of %u runs failed (base seed %#" PRIx64 "):%s",
			 nfail, nrun, base, failed);
	/* the default schedule moves one 16 MB message at least */
	if (only == UINT64_MAX && runs > 1)
		assert_true(huge);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soak),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
