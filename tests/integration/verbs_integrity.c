// SPDX-License-Identifier: MIT
/*
 * verbs_integrity: data integrity of RC transfers, as an ordinary
 * libibverbs program checks it (docs/PROVIDER.md section 6).
 *
 *   verbs_integrity server [-p PORT] [-d DEV]
 *   verbs_integrity client ADDR [-p PORT] [-d DEV] [--seed N] [--qps N]
 *                   [--rounds N] [--window N] [--max-size BYTES] [--uc]
 *
 * --uc: UC QPs instead, and UC's operations only (WRITE, WRITE_WITH_IMM,
 * SEND, SEND_WITH_IMM): for a link without loss, where UC must deliver
 * everything (a lost packet drops its message: the server would wait
 * for it). A UC send completes when the message has left, not arrived,
 * so each QP's round ends with an operation that takes a receive (a
 * last WRITE becomes WRITE_WITH_IMM): the server looks at a round's
 * memory after those receives completed.
 *
 * The client drives: on each of --qps RC QPs it posts rounds of --window
 * operations (RDMA WRITE, WRITE_WITH_IMM, READ, SEND, SEND_WITH_IMM,
 * CMP_AND_SWP, FETCH_AND_ADD), two rounds outstanding at a time, sizes
 * 1 B .. --max-size, random offsets, scatter/gather lists of 1..max_sge
 * pieces with gaps between them, inline where the size allows. Every
 * operation is derived from the seed (printed first; --seed repeats a
 * run), so the server knows without being told what each round must have
 * done to its memory and posts the receives the round's messages need.
 *
 * Checks: each completion (status, opcode, qp_num, wr_id in posting
 * order per QP; receives also byte_len, imm_data, IBV_WC_WITH_IMM); READ
 * destinations and atomic results byte by byte, including the gaps and
 * guard bytes around them (untouched bytes must stay untouched); after
 * each round the server compares every slot of its memory the round
 * could have reached, and every receive buffer with its gaps and guards,
 * against its model; atomics' old values as they complete and the final
 * values at the end. A round's slots are reused two rounds later, after
 * the server said the round was right (out of band, over TCP). Any
 * mismatch ends the program with exit status 1 and a description.
 */
#include <getopt.h>
#include <stdlib.h>

#include "verbs_common.h"

#define GUARD 256u /* bytes checked before and after every buffer */
#define MAX_PIECES 16u
#define GAP_MAX 48u /* between the pieces of a scatter/gather list */
#define NATOM 8u /* 8-byte atomic targets per QP */
#define MAGIC 0x6f76696eu
#define STALL_S 60.0 /* no completion for this long: stuck */

enum optype {
	OP_WRITE,
	OP_WRITE_IMM,
	OP_READ,
	OP_SEND,
	OP_SEND_IMM,
	OP_CAS,
	OP_FAA,
	OP_NTYPES
};
static const char *const op_name[OP_NTYPES] = {
	"WRITE", "WRITE_IMM", "READ", "SEND", "SEND_IMM", "CMP_SWP", "FETCH_ADD"
};
/* percent of each kind */
static const unsigned op_weight[OP_NTYPES] = { 20, 12, 20, 18, 10, 10, 10 };
/* ... on UC, which carries no READ and no atomics */
static const unsigned uc_weight[OP_NTYPES] = { 30, 20, 0, 30, 20, 0, 0 };

struct piece {
	uint32_t off; /* in the slot */
	uint32_t len;
};

struct op {
	uint64_t id; /* data stream */
	uint32_t len; /* message bytes */
	uint32_t roff; /* WRITE / READ: offset in the server's data slot */
	uint8_t type, inl, nls, nrs;
	uint32_t imm;
	uint32_t word; /* atomics: which of the QP's words */
	uint64_t cmp, swp, old; /* old: what the atomic must return */
	struct piece ls[MAX_PIECES]; /* client: source or destination */
	struct piece rs[MAX_PIECES]; /* server: receive buffer (SEND*) */
};

struct params {
	uint32_t magic;
	uint32_t nqp, window, rounds;
	uint64_t seed;
	uint64_t max_size;
	uint32_t ls_max, rs_max, inline_max;
	uint32_t uc; /* UC QPs, UC's operations */
};

struct srv_info {
	uint32_t magic, rs_max;
	uint64_t data_addr, atom_addr;
	uint32_t data_rkey, atom_rkey;
};

struct msg {
	uint32_t type; /* MSG_* */
	uint32_t round;
};
enum { MSG_READY = 1, MSG_DONE, MSG_OK, MSG_FAIL, MSG_FINAL };

static struct params P;
static uint64_t slot_sz;
static struct op *plan; /* [round][qp][window] */
static uint64_t *atom_model; /* [qp][NATOM] */

static struct op *op_at(uint32_t r, uint32_t q, uint32_t j)
{
	return &plan[((size_t)r * P.nqp + q) * P.window + j];
}

/* slot (q, half, j) of a region of nqp x 2 x window slots */
static uint64_t slot_off(uint32_t q, uint32_t r, uint32_t j)
{
	return (((uint64_t)q * 2 + (r & 1)) * P.window + j) * slot_sz;
}

/* The filler of untouched bytes: depends on the position only. */
static inline uint8_t pat(uint64_t pos)
{
	return (uint8_t)(((pos ^ (pos >> 9) ^ (pos >> 17)) * 31u) + 0xa5u);
}

static void pat_fill(uint8_t *base, uint64_t from, uint64_t len)
{
	for (uint64_t i = from; i < from + len; i++)
		base[i] = pat(i);
}

static uint32_t pick_len(struct vc_rng *r)
{
	uint64_t u = vc_range(r, 0, 99), len;

	if (u < 25)
		len = vc_range(r, 1, 64);
	else if (u < 60)
		len = vc_range(r, 65, 8192);
	else if (u < 90)
		len = vc_range(r, 8193, 262144);
	else
		len = vc_range(r, 262145, 4u << 20);
	if (len > P.max_size)
		len = vc_range(r, 1, P.max_size);
	return (uint32_t)len;
}

/* Split @len bytes into 1..@maxn pieces (each at least 1 byte) with gaps,
 * placed at a random offset of a slot; returns the number of pieces. */
static uint8_t split(struct vc_rng *r, uint32_t len, uint32_t maxn,
		     struct piece *out)
{
	uint32_t cuts[MAX_PIECES], n, k = 0, span, at, start;

	if (maxn > MAX_PIECES)
		maxn = MAX_PIECES;
	if (maxn > len)
		maxn = len;
	n = maxn <= 1 ? 1 : (uint32_t)vc_range(r, 1, maxn);
	/* n - 1 distinct cut points in [1, len - 1], sorted */
	for (uint32_t i = 0; i + 1 < n; i++) {
		uint32_t c = (uint32_t)vc_range(r, 1, len - 1), m;

		for (m = 0; m < k && cuts[m] != c; m++)
			;
		if (m < k)
			continue;
		for (m = k; m > 0 && cuts[m - 1] > c; m--)
			cuts[m] = cuts[m - 1];
		cuts[m] = c;
		k++;
	}
	cuts[k] = len;
	span = len;
	for (uint32_t i = 0, prev = 0; i <= k; prev = cuts[i], i++) {
		out[i].len = cuts[i] - prev;
		out[i].off = i ? (uint32_t)vc_range(r, 0, GAP_MAX) : 0;
		span += out[i].off;
	}
	start = (uint32_t)vc_range(r, GUARD, slot_sz - GUARD - span);
	at = start;
	for (uint32_t i = 0; i <= k; i++) {
		at += out[i].off; /* the gap before it */
		out[i].off = at;
		at += out[i].len;
	}
	return (uint8_t)(k + 1);
}

/* Round @r of QP @q, the same on both sides; keeps atom_model current. */
static void plan_round(uint32_t r)
{
	for (uint32_t q = 0; q < P.nqp; q++) {
		struct vc_rng g;

		vc_rng_init(&g, P.seed, ((uint64_t)r << 16) | q);
		for (uint32_t j = 0; j < P.window; j++) {
			struct op *o = op_at(r, q, j);
			const unsigned *wt = P.uc ? uc_weight : op_weight;
			unsigned w = (unsigned)vc_range(&g, 0, 99), t = 0;

			memset(o, 0, sizeof(*o));
			while (w >= wt[t]) {
				w -= wt[t];
				t++;
			}
			/* UC: a sender's completion says only that the
			 * message left, so each QP's round ends with one
			 * that takes a receive - its completion at the
			 * server, after everything before it on the QP
			 * (UC delivers in order), is when the server may
			 * look at the round's memory */
			if (P.uc && j == P.window - 1 && t == OP_WRITE)
				t = OP_WRITE_IMM;
			o->type = (uint8_t)t;
			o->id = ((uint64_t)r << 32) | (q << 16) | j;
			o->imm = (uint32_t)vc_next(&g);
			if (t == OP_CAS || t == OP_FAA) {
				uint64_t *m;

				o->len = 8;
				o->word = (uint32_t)vc_range(&g, 0, NATOM - 1);
				m = &atom_model[q * NATOM + o->word];
				o->old = *m;
				if (t == OP_CAS) {
					/* half of them compare equal */
					o->cmp = vc_range(&g, 0, 1) ?
							 *m :
							 vc_next(&g);
					o->swp = vc_next(&g);
					if (o->cmp == *m)
						*m = o->swp;
				} else {
					o->cmp = vc_next(&g);
					*m += o->cmp;
				}
				o->ls[0].len = 8;
				o->ls[0].off = (uint32_t)vc_range(
					&g, GUARD, slot_sz - GUARD - 8);
				o->nls = 1;
				continue;
			}
			o->len = pick_len(&g);
			o->nls = split(&g, o->len, P.ls_max, o->ls);
			if (t != OP_READ && o->len <= P.inline_max)
				o->inl = (uint8_t)vc_range(&g, 0, 1);
			if (t == OP_WRITE || t == OP_WRITE_IMM || t == OP_READ)
				o->roff = (uint32_t)vc_range(
					&g, GUARD, slot_sz - GUARD - o->len);
			if (t == OP_SEND || t == OP_SEND_IMM) {
				uint32_t slack =
					vc_range(&g, 0, 1) ?
						0 :
						(uint32_t)vc_range(&g, 1, 128);

				o->nrs = split(&g, o->len + slack, P.rs_max,
					       o->rs);
			} else if (t == OP_WRITE_IMM && vc_range(&g, 0, 1)) {
				/* a receive buffer the WRITE must not touch */
				o->nrs = split(&g,
					       (uint32_t)vc_range(&g, 1, 64),
					       P.rs_max, o->rs);
			}
		}
	}
}

static bool consumes_recv(const struct op *o)
{
	return o->type == OP_SEND || o->type == OP_SEND_IMM ||
	       o->type == OP_WRITE_IMM;
}

/* ---- resources ------------------------------------------------------------ */

static struct vc_dev dev;
static struct ibv_pd *pd;
static struct ibv_cq *scq, *rcq;
static struct ibv_qp **qps;
static int oob;

static struct ibv_mr *reg(void **buf, uint64_t len, int access)
{
	struct ibv_mr *mr;

	*buf = aligned_alloc(4096, (len + 4095) & ~4095ull);
	if (!*buf)
		vc_die("out of memory (%" PRIu64 " bytes)", len);
	memset(*buf, 0, len);
	mr = ibv_reg_mr(pd, *buf, len, access);
	if (!mr)
		vc_die("ibv_reg_mr %" PRIu64 " bytes: %s", len,
		       strerror(errno));
	return mr;
}

static void make_qps(uint32_t sq, uint32_t rq)
{
	uint32_t cqe = P.nqp * (2 * P.window + 4);

	pd = ibv_alloc_pd(dev.ctx);
	scq = ibv_create_cq(dev.ctx, (int)cqe, NULL, NULL, 0);
	rcq = ibv_create_cq(dev.ctx, (int)cqe, NULL, NULL, 0);
	if (!pd || !scq || !rcq)
		vc_die("alloc_pd / create_cq: %s", strerror(errno));
	qps = calloc(P.nqp, sizeof(*qps));
	for (uint32_t q = 0; q < P.nqp; q++) {
		struct ibv_qp_init_attr a = {
			.send_cq = scq,
			.recv_cq = rcq,
			.qp_type = P.uc ? IBV_QPT_UC : IBV_QPT_RC,
			.sq_sig_all = 1,
			.cap = { .max_send_wr = sq,
				 .max_recv_wr = rq,
				 .max_send_sge = (uint32_t)dev.attr.max_sge,
				 .max_recv_sge = (uint32_t)dev.attr.max_sge,
				 .max_inline_data = 256 },
		};

		qps[q] = ibv_create_qp(pd, &a);
		if (!qps[q])
			vc_die("ibv_create_qp: %s", strerror(errno));
		if (q == 0) {
			P.ls_max = a.cap.max_send_sge;
			if (P.ls_max > (uint32_t)dev.attr.max_sge_rd)
				P.ls_max = (uint32_t)dev.attr.max_sge_rd;
			P.rs_max = a.cap.max_recv_sge;
			P.inline_max = a.cap.max_inline_data;
			printf("%s: QP caps granted: send_wr %u recv_wr %u send_sge %u recv_sge %u inline %u\n",
			       vc_prog, a.cap.max_send_wr, a.cap.max_recv_wr,
			       a.cap.max_send_sge, a.cap.max_recv_sge,
			       a.cap.max_inline_data);
		}
	}
}

static void post_recvs(uint32_t r);

static void exchange_and_connect(bool server)
{
	struct vc_qpinfo mine[64], peer[64];
	struct vc_path path = vc_path_default();
	struct msg m;

	for (uint32_t q = 0; q < P.nqp; q++)
		vc_qpinfo_of(&dev, qps[q],
			     (uint32_t)vc_mix(P.seed + q) & 0xffffff, &mine[q]);
	vc_send_all(oob, mine, P.nqp * sizeof(mine[0]));
	vc_recv_must(oob, peer, P.nqp * sizeof(peer[0]));
	for (uint32_t q = 0; q < P.nqp; q++) {
		int rc = vc_connect(&dev, qps[q], mine[q].psn, &peer[q], &path,
				    true);

		if (rc)
			vc_die("connect QP %u: %s", q, strerror(rc));
	}
	/* receives go in once the QPs left RESET (verbs: EINVAL before) */
	if (server) {
		post_recvs(0);
		if (P.rounds > 1)
			post_recvs(1);
	}
	/* neither side sends before the other's QPs can receive */
	m = (struct msg){ .type = MSG_READY };
	vc_send_all(oob, &m, sizeof(m));
	vc_recv_must(oob, &m, sizeof(m));
	if (m.type != MSG_READY)
		vc_die("peer not ready");
}

/* ---- the client ----------------------------------------------------------- */

static uint8_t *lbuf, *model;
static struct ibv_mr *lmr;
static struct srv_info S;

struct cstats {
	uint64_t ops[OP_NTYPES], bytes[OP_NTYPES], inl, sges, cas_hit;
};
static struct cstats cs;

/* posted, not completed: per QP, in posting order */
struct fifo {
	uint64_t *id;
	uint32_t head, tail, cap;
};
static struct fifo *fifos;
static uint32_t *round_left; /* ops of round r not completed */

static void fifo_push(struct fifo *f, uint64_t v)
{
	if (f->tail - f->head >= f->cap)
		vc_die("internal: FIFO full");
	f->id[f->tail++ % f->cap] = v;
}

static enum ibv_wc_opcode wc_op_of(uint8_t t)
{
	static const enum ibv_wc_opcode m[OP_NTYPES] = {
		IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
		IBV_WC_SEND,	   IBV_WC_SEND,	      IBV_WC_COMP_SWAP,
		IBV_WC_FETCH_ADD
	};
	return m[t];
}

static void describe(const struct op *o, uint32_t r, uint32_t q, uint32_t j)
{
	fprintf(stderr,
		"%s: op round %u qp %u slot %u: %s len %u roff %u inline %u local pieces %u recv pieces %u imm 0x%08x\n",
		vc_prog, r, q, j, op_name[o->type], o->len, o->roff, o->inl,
		o->nls, o->nrs, o->imm);
	for (unsigned i = 0; i < o->nls; i++)
		fprintf(stderr, "   local piece %u: off %u len %u\n", i,
			o->ls[i].off, o->ls[i].len);
	for (unsigned i = 0; i < o->nrs; i++)
		fprintf(stderr, "   recv piece %u: off %u len %u\n", i,
			o->rs[i].off, o->rs[i].len);
}

/*
 * Check a slot holding @n pieces that must contain @data (its first
 * @dlen bytes spread over the pieces in order), and the pattern
 * everywhere else between the slot's guard bytes; then restore the
 * pattern. Returns -1 (and prints) on a mismatch.
 */
static int check_pieces(uint8_t *region, uint64_t base, const struct piece *pc,
			unsigned n, const uint8_t *data, uint32_t dlen,
			const char *what)
{
	uint64_t lo = pc[0].off - GUARD,
		 hi = pc[n - 1].off + pc[n - 1].len + GUARD;
	uint64_t at = lo;
	uint32_t d = 0;
	int bad = 0;

	for (unsigned i = 0; i <= n && !bad; i++) {
		uint64_t end = i < n ? pc[i].off : hi;

		/* gap or guard */
		for (; at < end; at++)
			if (region[base + at] != pat(base + at)) {
				fprintf(stderr,
					"%s: %s: byte %" PRIu64
					" of the slot (%s) is 0x%02x, must be untouched 0x%02x\n",
					vc_prog, what, at,
					i == 0 ? "guard before" :
					i == n ? "guard after or slack" :
						 "gap between pieces",
					region[base + at], pat(base + at));
				bad = 1;
				break;
			}
		if (bad || i == n)
			break;
		for (uint32_t k = 0; k < pc[i].len; k++, at++) {
			uint8_t want = d < dlen ? data[d] : pat(base + at);

			if (region[base + at] != want) {
				fprintf(stderr,
					"%s: %s: piece %u byte %u (message byte %u of %u) is 0x%02x, expected 0x%02x\n",
					vc_prog, what, i, k, d, dlen,
					region[base + at], want);
				bad = 1;
				break;
			}
			d++;
		}
	}
	pat_fill(region, base + lo, hi - lo);
	return bad ? -1 : 0;
}

static uint8_t *scratch; /* max_size bytes: a message's expected data */

static void post_op(uint32_t r, uint32_t q, uint32_t j)
{
	struct op *o = op_at(r, q, j);
	uint64_t base = slot_off(q, r, j);
	struct ibv_sge sg[MAX_PIECES];
	struct ibv_send_wr wr = { 0 }, *bad = NULL;
	uint32_t d = 0;
	int rc;

	for (unsigned i = 0; i < o->nls; i++)
		sg[i] = (struct ibv_sge){
			.addr = (uintptr_t)(lbuf + base + o->ls[i].off),
			.length = o->ls[i].len,
			.lkey = lmr->lkey,
		};
	wr.wr_id = o->id;
	wr.sg_list = sg;
	wr.num_sge = o->nls;
	wr.send_flags = IBV_SEND_SIGNALED | (o->inl ? IBV_SEND_INLINE : 0);
	switch (o->type) {
	case OP_WRITE:
	case OP_WRITE_IMM:
	case OP_SEND:
	case OP_SEND_IMM:
		vc_fill(scratch, o->len, P.seed, o->id);
		for (unsigned i = 0; i < o->nls; i++) {
			memcpy(lbuf + base + o->ls[i].off, scratch + d,
			       o->ls[i].len);
			d += o->ls[i].len;
		}
		break;
	default:
		break;
	}
	switch (o->type) {
	case OP_WRITE:
	case OP_WRITE_IMM:
		wr.opcode = o->type == OP_WRITE ? IBV_WR_RDMA_WRITE :
						  IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.wr.rdma.remote_addr = S.data_addr + base + o->roff;
		wr.wr.rdma.rkey = S.data_rkey;
		/* the server's memory as it will be */
		memcpy(model + base + o->roff, scratch, o->len);
		break;
	case OP_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = S.data_addr + base + o->roff;
		wr.wr.rdma.rkey = S.data_rkey;
		break;
	case OP_SEND:
		wr.opcode = IBV_WR_SEND;
		break;
	case OP_SEND_IMM:
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		break;
	case OP_CAS:
	case OP_FAA:
		wr.opcode = o->type == OP_CAS ? IBV_WR_ATOMIC_CMP_AND_SWP :
						IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr =
			S.atom_addr + ((uint64_t)q * NATOM + o->word) * 8;
		wr.wr.atomic.rkey = S.atom_rkey;
		wr.wr.atomic.compare_add = o->cmp;
		wr.wr.atomic.swap = o->swp;
		if (o->type == OP_CAS && o->cmp == o->old)
			cs.cas_hit++;
		break;
	}
	if (o->type == OP_WRITE_IMM || o->type == OP_SEND_IMM)
		wr.imm_data = htonl(o->imm);
	rc = ibv_post_send(qps[q], &wr, &bad);
	if (rc)
		vc_die("ibv_post_send (round %u qp %u slot %u, %s): %s", r, q,
		       j, op_name[o->type], strerror(rc));
	if (o->inl) {
		/* inline data was copied by the post: the buffer is ours */
		for (unsigned i = 0; i < o->nls; i++)
			memset(lbuf + base + o->ls[i].off, 0xee, o->ls[i].len);
		cs.inl++;
	}
	fifo_push(&fifos[q], ((uint64_t)r << 32) | j);
	cs.ops[o->type]++;
	cs.bytes[o->type] += o->len;
	cs.sges += o->nls;
}

static void post_round(uint32_t r)
{
	plan_round(r);
	round_left[r] = P.nqp * P.window;
	/* interleaved over the QPs, a window of each outstanding */
	for (uint32_t j = 0; j < P.window; j++)
		for (uint32_t q = 0; q < P.nqp; q++)
			post_op(r, q, j);
}

static void client_complete(const struct ibv_wc *wc)
{
	uint32_t q, r, j;
	struct op *o;
	uint64_t head, base;
	char what[128];

	for (q = 0; q < P.nqp && qps[q]->qp_num != wc->qp_num; q++)
		;
	if (q == P.nqp)
		vc_die("completion for unknown qp_num %u (wr_id 0x%" PRIx64
		       ", status %s)",
		       wc->qp_num, wc->wr_id, vc_st(wc->status));
	if (fifos[q].head == fifos[q].tail)
		vc_die("QP %u: completion with nothing outstanding (wr_id 0x%" PRIx64
		       ")",
		       q, wc->wr_id);
	head = fifos[q].id[fifos[q].head++ % fifos[q].cap];
	r = (uint32_t)(head >> 32);
	j = (uint32_t)head & 0xffff;
	o = op_at(r, q, j);
	if (wc->status != IBV_WC_SUCCESS) {
		describe(o, r, q, j);
		vc_die("QP %u: %s completed with %s (vendor_err 0x%x)", q,
		       op_name[o->type], vc_st(wc->status), wc->vendor_err);
	}
	if (wc->wr_id != o->id) {
		describe(o, r, q, j);
		vc_die("QP %u: completion out of order: wr_id 0x%" PRIx64
		       ", oldest outstanding 0x%" PRIx64,
		       q, wc->wr_id, o->id);
	}
	if (wc->opcode != wc_op_of(o->type))
		vc_die("QP %u: %s completed with opcode %d", q,
		       op_name[o->type], wc->opcode);
	base = slot_off(q, r, j);
	snprintf(what, sizeof(what), "round %u qp %u slot %u %s", r, q, j,
		 op_name[o->type]);
	if (o->type == OP_READ) {
		if (check_pieces(lbuf, base, o->ls, o->nls,
				 model + base + o->roff, o->len, what)) {
			describe(o, r, q, j);
			vc_die("READ data differs from the server's memory");
		}
	} else if (o->type == OP_CAS || o->type == OP_FAA) {
		if (check_pieces(lbuf, base, o->ls, 1, (const uint8_t *)&o->old,
				 8, what)) {
			describe(o, r, q, j);
			vc_die("atomic returned a wrong original value (expected 0x%016" PRIx64
			       ")",
			       o->old);
		}
	} else {
		/* sources: back to the pattern for the next use */
		pat_fill(lbuf, base + o->ls[0].off - GUARD,
			 o->ls[o->nls - 1].off + o->ls[o->nls - 1].len -
				 o->ls[0].off + 2 * GUARD);
	}
	round_left[r]--;
}

static void client_poll(uint32_t until_round_done)
{
	double last = vc_now();

	while (round_left[until_round_done]) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(scq, 16, wc);

		if (n < 0)
			vc_die("ibv_poll_cq: %d", n);
		for (int i = 0; i < n; i++)
			client_complete(&wc[i]);
		if (n) {
			last = vc_now();
		} else if (vc_now() - last > STALL_S) {
			vc_die("no completion for %.0f s; round %u has %u ops outstanding",
			       STALL_S, until_round_done,
			       round_left[until_round_done]);
		}
	}
}

static void wait_ok(uint32_t r)
{
	struct msg m;

	vc_recv_must(oob, &m, sizeof(m));
	if (m.type == MSG_FAIL)
		vc_die("the server found round %u wrong (see its log)",
		       m.round);
	if (m.type != MSG_OK || m.round != r)
		vc_die("out of band: expected OK for round %u, got %u/%u", r,
		       m.type, m.round);
}

static int run_client(const char *addr, int port)
{
	struct msg m;
	double t0, el;
	uint64_t total_ops = 0, total_bytes = 0;

	oob = vc_tcp_client(addr, port);
	make_qps(2 * P.window + 4, 4);
	vc_send_all(oob, &P, sizeof(P));
	vc_recv_must(oob, &S, sizeof(S));
	if (S.magic != MAGIC)
		vc_die("server speaks something else");
	if (S.rs_max < P.rs_max)
		P.rs_max = S.rs_max;
	/* the plan's limits are the ones both sides now agree on */
	vc_send_all(oob, &P, sizeof(P));

	slot_sz = (P.max_size + 2 * GUARD + MAX_PIECES * GAP_MAX + 256 + 4095) &
		  ~4095ull;
	{
		uint64_t region = slot_sz * P.nqp * 2 * P.window;
		void *b;

		lmr = reg(&b, region, IBV_ACCESS_LOCAL_WRITE);
		lbuf = b;
		pat_fill(lbuf, 0, region);
		model = malloc(region);
		if (!model)
			vc_die("out of memory");
		vc_fill(model, region, P.seed, ~0ull);
	}
	scratch = malloc(P.max_size + 8);
	plan = calloc((size_t)P.rounds * P.nqp * P.window, sizeof(*plan));
	atom_model = calloc(P.nqp * NATOM, sizeof(*atom_model));
	fifos = calloc(P.nqp, sizeof(*fifos));
	round_left = calloc(P.rounds, sizeof(*round_left));
	if (!scratch || !plan || !atom_model || !fifos || !round_left)
		vc_die("out of memory");
	for (uint32_t q = 0; q < P.nqp; q++) {
		fifos[q].cap = 2 * P.window + 4;
		fifos[q].id = calloc(fifos[q].cap, sizeof(uint64_t));
	}
	for (uint32_t k = 0; k < P.nqp * NATOM; k++)
		atom_model[k] = vc_mix(P.seed ^ (0xa70000ull + k));
	exchange_and_connect(false);

	t0 = vc_now();
	post_round(0);
	if (P.rounds > 1)
		post_round(1);
	for (uint32_t r = 0; r < P.rounds; r++) {
		client_poll(r);
		m = (struct msg){ .type = MSG_DONE, .round = r };
		vc_send_all(oob, &m, sizeof(m));
		if (r + 2 < P.rounds) {
			/* round r + 2 reuses round r's slots */
			wait_ok(r);
			post_round(r + 2);
		}
	}
	for (uint32_t r = P.rounds > 2 ? P.rounds - 2 : 0; r < P.rounds; r++)
		wait_ok(r);
	m = (struct msg){ .type = MSG_FINAL };
	vc_send_all(oob, &m, sizeof(m));
	vc_recv_must(oob, &m, sizeof(m));
	if (m.type != MSG_OK)
		vc_die("the server found the final atomic values wrong");
	el = vc_now() - t0;

	for (int t = 0; t < OP_NTYPES; t++) {
		total_ops += cs.ops[t];
		total_bytes += cs.bytes[t];
	}
	printf("%s: PASS: seed %" PRIu64
	       ", %u QPs x window %u x %u rounds: %" PRIu64 " ops, %" PRIu64
	       " bytes in %.2f s (%.1f MB/s, %.0f ops/s)\n",
	       vc_prog, P.seed, P.nqp, P.window, P.rounds, total_ops,
	       total_bytes, el, (double)total_bytes / el / 1e6,
	       (double)total_ops / el);
	for (int t = 0; t < OP_NTYPES; t++)
		printf("%s:   %-10s %6" PRIu64 " ops %12" PRIu64 " bytes\n",
		       vc_prog, op_name[t], cs.ops[t], cs.bytes[t]);
	printf("%s:   inline %" PRIu64
	       ", mean SGEs %.2f, CAS that swapped %" PRIu64 "\n",
	       vc_prog, cs.inl,
	       total_ops ? (double)cs.sges / (double)total_ops : 0, cs.cas_hit);
	for (uint32_t q = 0; q < P.nqp; q++)
		ibv_destroy_qp(qps[q]);
	ibv_dereg_mr(lmr);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	ibv_dealloc_pd(pd);
	ibv_close_device(dev.ctx);
	return 0;
}

/* ---- the server ----------------------------------------------------------- */

static uint8_t *dbuf, *rbuf, *abuf, *smodel;
static struct ibv_mr *dmr, *rmr, *amr;

struct rexp {
	uint32_t round, j;
};
struct rfifo {
	struct rexp *e;
	uint32_t head, tail, cap;
};
static struct rfifo *rfifos;
static uint32_t *recv_left;
static uint64_t srv_recvs, srv_checked;

static void post_recvs(uint32_t r)
{
	plan_round(r);
	recv_left[r] = 0;
	for (uint32_t q = 0; q < P.nqp; q++)
		for (uint32_t j = 0; j < P.window; j++) {
			struct op *o = op_at(r, q, j);
			uint64_t base = slot_off(q, r, j);
			struct ibv_sge sg[MAX_PIECES];
			struct ibv_recv_wr wr = { 0 }, *bad;
			struct rfifo *f = &rfifos[q];
			int rc;

			if (!consumes_recv(o))
				continue;
			for (unsigned i = 0; i < o->nrs; i++)
				sg[i] = (struct ibv_sge){
					.addr = (uintptr_t)(rbuf + base +
							    o->rs[i].off),
					.length = o->rs[i].len,
					.lkey = rmr->lkey,
				};
			wr.wr_id = o->id;
			wr.sg_list = sg;
			wr.num_sge = o->nrs;
			rc = ibv_post_recv(qps[q], &wr, &bad);
			if (rc)
				vc_die("ibv_post_recv: %s", strerror(rc));
			if (f->tail - f->head >= f->cap)
				vc_die("internal: receive FIFO full");
			f->e[f->tail++ % f->cap] = (struct rexp){ r, j };
			recv_left[r]++;
		}
}

static void srv_fail(uint32_t r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
static void srv_fail(uint32_t r, const char *fmt, ...)
{
	struct msg m = { .type = MSG_FAIL, .round = r };
	va_list ap;

	fprintf(stderr, "%s: FAIL: ", vc_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	vc_send_all(oob, &m, sizeof(m));
	exit(1);
}

static void server_complete(const struct ibv_wc *wc)
{
	uint32_t q;
	struct rexp x;
	struct op *o;
	enum ibv_wc_opcode want_op;
	bool imm;

	for (q = 0; q < P.nqp && qps[q]->qp_num != wc->qp_num; q++)
		;
	if (q == P.nqp)
		srv_fail(0, "receive completion for unknown qp_num %u",
			 wc->qp_num);
	if (rfifos[q].head == rfifos[q].tail)
		srv_fail(0, "QP %u: receive completion with none posted", q);
	x = rfifos[q].e[rfifos[q].head++ % rfifos[q].cap];
	o = op_at(x.round, q, x.j);
	if (wc->status != IBV_WC_SUCCESS) {
		describe(o, x.round, q, x.j);
		srv_fail(x.round, "QP %u: receive for %s completed with %s", q,
			 op_name[o->type], vc_st(wc->status));
	}
	if (wc->wr_id != o->id) {
		describe(o, x.round, q, x.j);
		srv_fail(
			x.round,
			"QP %u: receive completions out of order: wr_id 0x%" PRIx64
			", oldest posted 0x%" PRIx64,
			q, wc->wr_id, o->id);
	}
	want_op = o->type == OP_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM :
					    IBV_WC_RECV;
	imm = o->type != OP_SEND;
	if (wc->opcode != want_op || wc->byte_len != o->len ||
	    !!(wc->wc_flags & IBV_WC_WITH_IMM) != imm ||
	    (imm && wc->imm_data != htonl(o->imm))) {
		describe(o, x.round, q, x.j);
		srv_fail(
			x.round,
			"QP %u: receive for %s: opcode %d (want %d), byte_len %u (want %u), wc_flags 0x%x, imm_data 0x%08x (want 0x%08x)",
			q, op_name[o->type], wc->opcode, want_op, wc->byte_len,
			o->len, wc->wc_flags, ntohl(wc->imm_data), o->imm);
	}
	recv_left[x.round]--;
	srv_recvs++;
}

static void server_poll(uint32_t r)
{
	double last = vc_now();

	while (recv_left[r]) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(rcq, 16, wc);

		if (n < 0)
			srv_fail(r, "ibv_poll_cq: %d", n);
		for (int i = 0; i < n; i++)
			server_complete(&wc[i]);
		if (n)
			last = vc_now();
		else if (vc_now() - last > STALL_S)
			srv_fail(
				r,
				"round %u: %u receives not completed after %.0f s (the client saw its sends complete)",
				r, recv_left[r], STALL_S);
	}
}

static void verify_round(uint32_t r)
{
	for (uint32_t q = 0; q < P.nqp; q++)
		for (uint32_t j = 0; j < P.window; j++) {
			struct op *o = op_at(r, q, j);
			uint64_t base = slot_off(q, r, j);
			char what[128];

			snprintf(what, sizeof(what),
				 "round %u qp %u slot %u %s receive buffer", r,
				 q, j, op_name[o->type]);
			if (o->type == OP_WRITE || o->type == OP_WRITE_IMM) {
				vc_fill(scratch, o->len, P.seed, o->id);
				memcpy(smodel + base + o->roff, scratch,
				       o->len);
			}
			if (o->nrs) {
				if (o->type != OP_WRITE_IMM)
					vc_fill(scratch, o->len, P.seed, o->id);
				if (check_pieces(
					    rbuf, base, o->rs, o->nrs, scratch,
					    o->type == OP_WRITE_IMM ? 0 :
								      o->len,
					    what)) {
					describe(o, r, q, j);
					srv_fail(r, "%s wrong", what);
				}
			}
			/* the whole slot, guards and all, is the model */
			if (memcmp(dbuf + base, smodel + base, slot_sz)) {
				uint64_t k = 0;

				while (dbuf[base + k] == smodel[base + k])
					k++;
				describe(o, r, q, j);
				srv_fail(
					r,
					"round %u qp %u slot %u (%s, remote offset %u, %u bytes): data byte %" PRIu64
					" of the slot is 0x%02x, expected 0x%02x",
					r, q, j, op_name[o->type], o->roff,
					o->len, k, dbuf[base + k],
					smodel[base + k]);
			}
			srv_checked += slot_sz;
		}
}

static int run_server(int port)
{
	struct srv_info info = { .magic = MAGIC };
	struct msg m;
	uint64_t region;
	void *b;

	oob = vc_tcp_server(port);
	vc_recv_must(oob, &P, sizeof(P));
	if (P.magic != MAGIC || !P.nqp || P.nqp > 64 || !P.window ||
	    P.window > 64 || !P.rounds || P.max_size < 8 ||
	    P.max_size > (64u << 20))
		vc_die("bad parameters from the client");
	printf("%s: seed %" PRIu64 " (from the client)\n", vc_prog, P.seed);
	{
		struct params want = P;

		make_qps(4, 2 * P.window + 4);
		info.rs_max = P.rs_max;
		P = want;
	}
	slot_sz = (P.max_size + 2 * GUARD + MAX_PIECES * GAP_MAX + 256 + 4095) &
		  ~4095ull;
	region = slot_sz * P.nqp * 2 * P.window;
	dmr = reg(&b, region,
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ);
	dbuf = b;
	rmr = reg(&b, region, IBV_ACCESS_LOCAL_WRITE);
	rbuf = b;
	amr = reg(&b, P.nqp * NATOM * 8,
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
			  IBV_ACCESS_REMOTE_READ);
	abuf = b;
	vc_fill(dbuf, region, P.seed, ~0ull);
	smodel = malloc(region);
	if (!smodel)
		vc_die("out of memory");
	memcpy(smodel, dbuf, region);
	pat_fill(rbuf, 0, region);
	info.data_addr = (uintptr_t)dbuf;
	info.data_rkey = dmr->rkey;
	info.atom_addr = (uintptr_t)abuf;
	info.atom_rkey = amr->rkey;
	vc_send_all(oob, &info, sizeof(info));
	vc_recv_must(oob, &P, sizeof(P)); /* with the agreed limits */

	scratch = malloc(P.max_size + 8);
	plan = calloc((size_t)P.rounds * P.nqp * P.window, sizeof(*plan));
	atom_model = calloc(P.nqp * NATOM, sizeof(*atom_model));
	rfifos = calloc(P.nqp, sizeof(*rfifos));
	recv_left = calloc(P.rounds, sizeof(*recv_left));
	if (!scratch || !plan || !atom_model || !rfifos || !recv_left)
		vc_die("out of memory");
	for (uint32_t q = 0; q < P.nqp; q++) {
		rfifos[q].cap = 2 * P.window + 4;
		rfifos[q].e = calloc(rfifos[q].cap, sizeof(struct rexp));
	}
	for (uint32_t k = 0; k < P.nqp * NATOM; k++) {
		atom_model[k] = vc_mix(P.seed ^ (0xa70000ull + k));
		memcpy(abuf + 8 * k, &atom_model[k], 8);
	}
	exchange_and_connect(true);

	for (uint32_t r = 0; r < P.rounds; r++) {
		vc_recv_must(oob, &m, sizeof(m));
		if (m.type != MSG_DONE || m.round != r)
			vc_die("out of band: expected DONE %u, got %u/%u", r,
			       m.type, m.round);
		server_poll(r);
		verify_round(r);
		if (r + 2 < P.rounds)
			post_recvs(r + 2);
		m = (struct msg){ .type = MSG_OK, .round = r };
		vc_send_all(oob, &m, sizeof(m));
	}
	vc_recv_must(oob, &m, sizeof(m));
	if (m.type != MSG_FINAL)
		vc_die("out of band: expected FINAL");
	for (uint32_t k = 0; k < P.nqp * NATOM; k++) {
		uint64_t v;

		memcpy(&v, abuf + 8 * k, 8);
		if (v != atom_model[k])
			srv_fail(P.rounds,
				 "atomic word %u of QP %u is 0x%016" PRIx64
				 ", expected 0x%016" PRIx64,
				 k % NATOM, k / NATOM, v, atom_model[k]);
	}
	m = (struct msg){ .type = MSG_OK, .round = P.rounds };
	vc_send_all(oob, &m, sizeof(m));
	printf("%s: PASS: %" PRIu64 " receives checked, %" PRIu64
	       " bytes of memory compared, %u atomic words final\n",
	       vc_prog, srv_recvs, srv_checked, P.nqp * NATOM);
	for (uint32_t q = 0; q < P.nqp; q++)
		ibv_destroy_qp(qps[q]);
	ibv_dereg_mr(dmr);
	ibv_dereg_mr(rmr);
	ibv_dereg_mr(amr);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	ibv_dealloc_pd(pd);
	ibv_close_device(dev.ctx);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: verbs_integrity server [-p PORT] [-d DEV]\n"
		"       verbs_integrity client ADDR [-p PORT] [-d DEV] [--seed N] [--qps N]\n"
		"                       [--rounds N] [--window N] [--max-size BYTES] [--uc]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "qps", required_argument, NULL, 'q' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "window", required_argument, NULL, 'w' },
		{ "max-size", required_argument, NULL, 'm' },
		{ "uc", no_argument, NULL, 'u' },
		{ NULL, 0, NULL, 0 },
	};
	const char *devname = NULL, *role, *addr = NULL;
	int port = 18650, c;
	bool server;

	vc_prog = "verbs_integrity";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		usage();
	role = argv[1];
	server = !strcmp(role, "server");
	if (!server && strcmp(role, "client"))
		usage();
	if (!server) {
		if (argc < 3)
			usage();
		addr = argv[2];
	}
	optind = server ? 2 : 3;
	P = (struct params){ .magic = MAGIC,
			     .nqp = 4,
			     .window = 6,
			     .rounds = 20,
			     .seed = (uint64_t)time(NULL) * 2654435761u ^
				     (uint64_t)getpid(),
			     .max_size = 4u << 20 };
	while ((c = getopt_long(argc, argv, "p:d:", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			port = atoi(optarg);
			break;
		case 'd':
			devname = optarg;
			break;
		case 's':
			P.seed = strtoull(optarg, NULL, 0);
			break;
		case 'q':
			P.nqp = (uint32_t)atoi(optarg);
			break;
		case 'r':
			P.rounds = (uint32_t)atoi(optarg);
			break;
		case 'w':
			P.window = (uint32_t)atoi(optarg);
			break;
		case 'm':
			P.max_size = strtoull(optarg, NULL, 0);
			break;
		case 'u':
			P.uc = 1;
			break;
		default:
			usage();
		}
	}
	if (!P.nqp || P.nqp > 64 || !P.window || P.window > 64 || !P.rounds ||
	    P.max_size < 8 || P.max_size > (64u << 20))
		usage();
	if (!server)
		printf("%s: seed %" PRIu64 " (repeat with --seed %" PRIu64
		       "), %u %s QPs, window %u, %u rounds, sizes 1..%" PRIu64
		       "\n",
		       vc_prog, P.seed, P.seed, P.nqp, P.uc ? "UC" : "RC",
		       P.window, P.rounds, P.max_size);
	vc_open(&dev, devname);
	return server ? run_server(port) : run_client(addr, port);
}
