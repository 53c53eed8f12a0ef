// SPDX-License-Identifier: MIT
/*
 * The transport engine on the GPU copy engine (docs/GPU.md): two engines
 * whose regions are fake-GPU memory imported through gdr/ (the fake
 * driver from $OVRDMA_LIBCUDA), whose packet buffers are pinned, and
 * whose device copies are queued (ops.dev_copy: ovr_gdr_copy_msg) and
 * waited for once per round (ovr_eng_fence: ovr_gdr_fence), as ovrdmad
 * runs them. The fake performs a queued copy only when its stream is
 * synchronised, so a PDU or completion that left before its fence would
 * carry or announce stale bytes. Checked: WRITE, READ and SEND between
 * device regions byte-exact; no completion before its data is in place;
 * far fewer fences than packets; a failed queued copy is an error
 * completion at the requester or responder, never a success.
 *
 * The pipelined engine (ops.dev_batch_close / dev_batch_poll on
 * ovr_gdr_batch_*, the fake's events made lazy with
 * fakecuda_event_polls): several batches in flight at once, byte-exact
 * data, every completion checked against the device bytes the moment
 * it is delivered, per-QP order across batches; a failed batch between
 * two good ones fails only its QP; a full ring of batches blocks.
 *
 * BAR copies (ops.dev_copy on ovr_gdr_copy_msg, GDRCopy opened on the
 * fake with FAKEGDR=1; last, since it stays on): small messages take no
 * queued copy and no batch, their completions find their bytes in GPU
 * memory; mixed with large ones on one QP they stay in order and never
 * overtake the large ones' queued copies of the same allocation.
 */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <ovrdma/engine.h>
#include <ovrdma/gdr.h>

#include "cuapp.h"
#include "cudadrv.h"
#include "engpair.h"
#include "fakecuda.h"

#define MB (1ull << 20)
#define NBUF 2048 /* packet buffers per node */
#define DEV_LEN (8 * MB) /* fake-GPU memory per node */
#define MAXCQE 4096

static struct cuapp cu;

struct pdu {
	uint32_t slot, len;
};

/* What a successful completion promises (pipelined tests): wr_id's
 * bytes at @off of node @node's device memory equal @want. */
struct expect {
	uint64_t wr_id;
	int node;
	uint64_t off; /* in the node's region, or from @va */
	const uint8_t *want;
	uint32_t len;
	gdr_CUdeviceptr va; /* 0: the node's region */
};

struct node {
	struct ovr_eng *eng;
	uint8_t *bufs; /* NBUF slots of max_pdu, pinned */
	uint32_t free[NBUF], nfree;
	struct pdu wire[NBUF]; /* sent to the other node, not yet received */
	uint32_t nwire;
	uint32_t rxd[NBUF], nrxd; /* received from the other node, held */
	struct {
		uint32_t slot;
		uint64_t seq;
	} park[NBUF]; /* pipelined: received, kept for batch seq */
	uint32_t npark;
	uint64_t closed; /* ovr_eng_dev_close's answer last round */
	struct {
		uint32_t cq;
		struct ovr_eng_wc wc;
	} cqe[MAXCQE];
	uint32_t ncqe;
	struct ovr_gdr_mem *dev; /* its fake-GPU memory */
	gdr_CUdeviceptr va; /* the same, as the "application" sees it */
	uint32_t key; /* region over dev */
	uint8_t *host; /* host memory (DEV_LEN), region hkey */
	uint32_t hkey;
	uint64_t tx_pkts;
	struct rig *rig;
};

struct rig {
	struct node n[2];
	struct ovr_gdr *g;
	uint8_t *arena; /* both nodes' buffers */
	size_t arena_len;
	uint32_t max_pdu;
	uint64_t now;
	uint64_t rounds;
	bool nofence[2]; /* node i's rounds go without ovr_eng_fence */
	bool pipe; /* engines with ops.dev_batch_*: rounds close and poll */
	struct expect *exp; /* checked at each successful completion */
	uint32_t nexp, nchecked;
};

static struct rig *R;

static uint32_t node_of(struct node *n)
{
	return n == &n->rig->n[0] ? 0 : 1;
}

static void *t_tx_alloc(void *ctx, uint32_t cap, void **token)
{
	struct node *n = ctx;
	uint32_t slot;

	if (cap > n->rig->max_pdu || !n->nfree)
		return NULL;
	slot = n->free[--n->nfree];
	*token = (void *)(uintptr_t)(slot + 1);
	return n->bufs + (size_t)slot * n->rig->max_pdu;
}

static void t_tx(void *ctx, void *token, uint32_t len, uint64_t peer,
		 uint64_t qp_user)
{
	struct node *n = ctx;
	uint32_t slot = (uint32_t)(uintptr_t)token - 1;

	(void)qp_user;
	if (!len || peer != 1 - node_of(n)) {
		n->free[n->nfree++] = slot;
		return;
	}
	assert_true(n->nwire < NBUF);
	n->wire[n->nwire++] = (struct pdu){ .slot = slot, .len = len };
	n->tx_pkts++;
}

static void check_expect(struct rig *r, const struct ovr_eng_wc *wc);

static void t_cqe(void *ctx, uint32_t cq, const struct ovr_eng_wc *wc)
{
	struct node *n = ctx;

	if (wc->status == OVR_WC_SUCCESS)
		check_expect(n->rig, wc);
	assert_true(n->ncqe < MAXCQE);
	n->cqe[n->ncqe].cq = cq;
	n->cqe[n->ncqe++].wc = *wc;
}

/* As ovrdmad's (svc_dp.c): small messages through the BAR when
 * ovr_gdr_bar_open was called, the streams otherwise. */
static int t_dev_copy(void *ctx, void *dev, uint64_t off, void *host,
		      uint32_t len, bool to_dev, uint32_t msg_len,
		      unsigned int flags)
{
	(void)ctx;
	(void)flags;
	return ovr_gdr_copy_msg(dev, off, host, len, to_dev, msg_len);
}

static int t_dev_fence(void *ctx)
{
	return ovr_gdr_fence(((struct node *)ctx)->rig->g);
}

static const struct ovr_eng_ops t_ops = {
	.tx_alloc = t_tx_alloc,
	.tx = t_tx,
	.cqe = t_cqe,
	.dev_copy = t_dev_copy,
	.dev_fence = t_dev_fence,
};

/* The two engines share one gdr: their batch slots must not collide. */
#define SLOTS_PER_NODE 32u

static int t_batch_close(void *ctx, unsigned int slot)
{
	struct node *n = ctx;

	assert_true(slot < SLOTS_PER_NODE);
	return ovr_gdr_batch_close(n->rig->g,
				   slot + node_of(n) * SLOTS_PER_NODE);
}

static int t_batch_poll(void *ctx, unsigned int slot, bool wait)
{
	struct node *n = ctx;

	return ovr_gdr_batch_poll(n->rig->g, slot + node_of(n) * SLOTS_PER_NODE,
				  wait);
}

static const struct ovr_eng_ops t_ops_pipe = {
	.tx_alloc = t_tx_alloc,
	.tx = t_tx,
	.cqe = t_cqe,
	.dev_copy = t_dev_copy,
	.dev_fence = t_dev_fence,
	.dev_batch_close = t_batch_close,
	.dev_batch_poll = t_batch_poll,
};

/*
 * One round, as an iteration of ovrdmad's loop covering ROUND_NS: each
 * node receives what the other sent (straight from the sender's pinned
 * buffers), polls - as often as its pacing lets it send within the round
 * - and fences once; only then do the received buffers go back to their
 * sender.
 */
#define ROUND_NS 50000ull

/* Node @n returns the sender @o's buffers whose batch is done. */
static void unpark(struct node *n, struct node *o, uint64_t done)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < n->npark; i++) {
		if (n->park[i].seq <= done)
			o->free[o->nfree++] = n->park[i].slot;
		else
			n->park[k++] = n->park[i];
	}
	n->npark = k;
}

/*
 * The end of a pipelined round, as ovrdmad's loop (svc_dp.c): close
 * this round's batch, release the batches that are done; the frames
 * received this round wait for the batch when they fed it copies.
 */
static void round_pipe(struct rig *r, struct node *n, struct node *o)
{
	uint64_t closed = ovr_eng_dev_close(n->eng);
	uint64_t done = ovr_eng_dev_poll(n->eng);

	(void)r;
	unpark(n, o, done);
	for (uint32_t k = 0; k < n->nrxd; k++) {
		if (closed > done && closed != n->closed)
			n->park[n->npark++] =
				(typeof(n->park[0])){ .slot = n->rxd[k],
						      .seq = closed };
		else
			o->free[o->nfree++] = n->rxd[k];
	}
	n->nrxd = 0;
	n->closed = closed;
}

static void round_once(struct rig *r)
{
	uint64_t start = r->now, end = start + ROUND_NS;

	r->rounds++;
	for (int i = 0; i < 2; i++) {
		struct node *n = &r->n[i], *o = &r->n[1 - i];
		uint64_t t = start, next;

		for (uint32_t k = 0; k < o->nwire; k++) {
			struct pdu *p = &o->wire[k];

			ovr_eng_rx_from(n->eng, t,
					o->bufs + (size_t)p->slot * r->max_pdu,
					p->len, false, (uint64_t)(1 - i));
			n->rxd[n->nrxd++] = p->slot;
		}
		o->nwire = 0;
		while ((next = ovr_eng_poll(n->eng, t, 0)) > t && next < end)
			t = next;
		if (r->pipe) {
			round_pipe(r, n, o);
			continue;
		}
		if (r->nofence[i])
			continue;
		ovr_eng_fence(n->eng);
		for (uint32_t k = 0; k < n->nrxd; k++)
			o->free[o->nfree++] = n->rxd[k];
		n->nrxd = 0;
	}
	r->now = end;
}

/* Run rounds until node @i has @want completions (false after 10000). */
static bool run_until(struct rig *r, int i, uint32_t want)
{
	for (int k = 0; k < 10000; k++) {
		if (r->n[i].ncqe >= want)
			return true;
		round_once(r);
	}
	return false;
}

static void load_app_side(void)
{
	assert_non_null(getenv(OVR_GDR_ENV));
	assert_int_equal(cuapp_load(&cu), 0);
	assert_non_null(cu.fail_nth);
}

static void dev_alloc(struct ovr_gdr *g, struct node *n)
{
	assert_int_equal(cuapp_import(&cu, g, DEV_LEN, &n->va, &n->dev), 0);
}

/* Node @n's engine: pipelined with @batches in flight, or fenced. */
static void node_engine(struct rig *r, struct node *n, bool pipe,
			uint32_t batches)
{
	struct ovr_pair_cfg pc;

	ovr_pair_cfg_default(&pc);
	pc.eng.dev_batches = batches;
	n->eng = ovr_eng_create(&pc.eng, pipe ? &t_ops_pipe : &t_ops, n);
	assert_non_null(n->eng);
	assert_int_equal(ovr_eng_reg_mr_dev(n->eng, 1, n->va, DEV_LEN,
					    OVR_ACCESS_LOCAL_WRITE |
						    OVR_ACCESS_REMOTE_WRITE |
						    OVR_ACCESS_REMOTE_READ,
					    n->dev, 0, &n->key),
			 0);
	assert_int_equal(ovr_eng_reg_mr(n->eng, 1, (uintptr_t)n->host, DEV_LEN,
					OVR_ACCESS_LOCAL_WRITE |
						OVR_ACCESS_REMOTE_WRITE |
						OVR_ACCESS_REMOTE_READ,
					n->host, &n->hkey),
			 0);
	(void)r;
}

/* Both engines anew (pipelined with @batches, or fenced); nothing on
 * the wire, every buffer free. */
static void rig_engines(struct rig *r, bool pipe, uint32_t batches)
{
	for (int i = 0; i < 2; i++)
		ovr_eng_destroy(r->n[i].eng);
	r->pipe = pipe;
	for (int i = 0; i < 2; i++) {
		struct node *n = &r->n[i];

		n->nfree = n->nwire = n->nrxd = n->npark = 0;
		n->closed = 0;
		for (uint32_t k = 0; k < NBUF; k++)
			n->free[n->nfree++] = k;
		node_engine(r, n, pipe, batches);
	}
}

static int setup(void **state)
{
	struct ovr_pair_cfg pc;
	struct rig *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	load_app_side();
	assert_int_equal(ovr_gdr_open(OVR_GDR_NOLOAD, &r->g, NULL, 0), 0);
	ovr_pair_cfg_default(&pc);
	r->max_pdu = pc.eng.max_pdu;
	r->arena_len = (size_t)2 * NBUF * r->max_pdu;
	r->arena = aligned_alloc(4096, (r->arena_len + 4095) & ~4095ul);
	assert_non_null(r->arena);
	assert_int_equal(ovr_gdr_host_register(r->g, r->arena, r->arena_len),
			 0);
	for (int i = 0; i < 2; i++) {
		struct node *n = &r->n[i];

		n->rig = r;
		n->bufs = r->arena + (size_t)i * NBUF * r->max_pdu;
		for (uint32_t k = 0; k < NBUF; k++)
			n->free[n->nfree++] = k;
		dev_alloc(r->g, n);
		n->host = calloc(1, DEV_LEN);
		assert_non_null(n->host);
		node_engine(r, n, false, 0);
	}
	R = r;
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct rig *r = *state;

	for (int i = 0; i < 2; i++) {
		ovr_eng_destroy(r->n[i].eng);
		ovr_gdr_release(r->n[i].dev);
		free(r->n[i].host);
	}
	ovr_gdr_close(r->g);
	free(r->arena);
	free(r);
	return 0;
}

static void connect(struct rig *r, uint32_t qpn[2])
{
	struct ovr_pair_qp_params qp;
	struct ovr_eng *eng[2] = { r->n[0].eng, r->n[1].eng };
	const uint32_t pd[2] = { 1, 1 };

	ovr_pair_qp_params_default(&qp);
	qp.access = OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE |
		    OVR_ACCESS_REMOTE_READ;
	assert_int_equal(ovr_eng_connect_two(eng, pd, &qp, 0, r->now, qpn), 0);
	r->n[0].ncqe = r->n[1].ncqe = 0;
}

enum { DEV = 0, HOST = 1 };

/* Node @i posts @op of @len bytes: local side at @loff of its device
 * (DEV) or host (HOST) region, remote at @roff of the peer's. */
static int post(struct rig *r, int i, uint32_t qpn, uint32_t op, uint64_t wr_id,
		int lmem, uint64_t loff, uint32_t len, int rmem, uint64_t roff)
{
	struct node *n = &r->n[i], *o = &r->n[1 - i];
	struct ovr_eng_sge sge = {
		.addr = (lmem == DEV ? n->va : (uintptr_t)n->host) + loff,
		.length = len,
		.lkey = lmem == DEV ? n->key : n->hkey
	};
	struct ovr_eng_send_wr wr = {
		.wr_id = wr_id,
		.opcode = op,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = rmem == DEV ? o->key : o->hkey,
		.remote_addr =
			(rmem == DEV ? o->va : (uintptr_t)o->host) + roff,
	};

	return ovr_eng_post_send(n->eng, qpn, &wr, r->now);
}

static void fill(uint8_t *b, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 29 + seed + (i >> 12));
}

/* Device bytes [off, off + len) of node @i equal @want? */
static void dev_expect(struct rig *r, int i, uint64_t off, const uint8_t *want,
		       size_t len)
{
	uint8_t *got = malloc(len);

	assert_non_null(got);
	assert_int_equal(cu.dtoh(got, r->n[i].va + off, len), 0);
	assert_memory_equal(got, want, len);
	free(got);
}

/* Device bytes [va, va + len) equal @want? */
static void dev_expect_at(gdr_CUdeviceptr va, const uint8_t *want, size_t len)
{
	uint8_t *got = malloc(len);

	assert_non_null(got);
	assert_int_equal(cu.dtoh(got, va, len), 0);
	assert_memory_equal(got, want, len);
	free(got);
}

static void dev_put(struct rig *r, int i, uint64_t off, const uint8_t *b,
		    size_t len)
{
	assert_int_equal(cu.htod(r->n[i].va + off, b, len), 0);
}

/* WRITE and READ between device regions: byte-exact, batched. */
static void test_write_read(void **state)
{
	struct rig *r = *state;
	const uint32_t len = 3 * MB + 1000;
	uint8_t *src = malloc(len), *back = malloc(len);
	struct ovr_eng_stats es0, es1;
	struct fakecuda_stats f0, f1;
	uint64_t tx0, rounds0;
	uint32_t qpn[2];

	assert_non_null(src);
	assert_non_null(back);
	connect(r, qpn);
	fill(src, len, 1);
	dev_put(r, 0, 0, src, len);
	cu.stats(&f0);
	tx0 = r->n[0].tx_pkts;
	rounds0 = r->rounds;
	assert_int_equal(post(r, 0, qpn[0], OVR_WR_RDMA_WRITE, 1, DEV, 0, len,
			      DEV, MB),
			 0);
	assert_true(run_until(r, 0, 1));
	assert_int_equal(r->n[0].cqe[0].wc.status, OVR_WC_SUCCESS);
	dev_expect(r, 1, MB, src, len);
	cu.stats(&f1);
	ovr_eng_get_stats(r->n[0].eng, &es0);
	ovr_eng_get_stats(r->n[1].eng, &es1);
	/* every payload byte went through a queued copy, both sides */
	assert_true(es0.dev_async >= len / 4096);
	assert_true(es1.dev_async >= len / 4096);
	assert_int_equal(es0.dev_copy_err + es1.dev_copy_err, 0);
	assert_true(f1.async_queued - f0.async_queued >= 2 * (len / 4096));
	assert_int_equal(f1.pending, 0);
	/* one fence per node and round at most: far fewer than packets */
	assert_true(r->n[0].tx_pkts - tx0 >= len / 4096);
	assert_true(es0.dev_fences + es1.dev_fences <=
		    2 * (r->rounds - rounds0));
	assert_true(es0.dev_fences * 16 < r->n[0].tx_pkts - tx0);
	assert_true(es1.dev_fences * 16 < r->n[0].tx_pkts - tx0);
	assert_true(f1.syncs - f0.syncs <=
		    2 * (es0.dev_fences + es1.dev_fences));

	/* READ it back into another part of node 0's device memory */
	assert_int_equal(post(r, 0, qpn[0], OVR_WR_RDMA_READ, 2, DEV, 4 * MB,
			      len, DEV, MB),
			 0);
	assert_true(run_until(r, 0, 2));
	assert_int_equal(r->n[0].cqe[1].wc.status, OVR_WC_SUCCESS);
	assert_int_equal(r->n[0].cqe[1].wc.byte_len, len);
	dev_expect(r, 0, 4 * MB, src, len);
	free(src);
	free(back);
}

/*
 * SEND into device memory: while the receiver has not fenced, its
 * receive does not complete, its ACKs do not leave (the sender's WR does
 * not complete either) and the data is not there; after its fence all
 * three are. The sender, fencing, sent everything meanwhile.
 */
static void test_send_completion_after_data(void **state)
{
	struct rig *r = *state;
	const uint32_t len = 32 * 1024 - 17; /* within the first window */
	uint8_t *src = malloc(len), *zero = calloc(1, len);
	struct ovr_eng_sge rsge;
	struct ovr_eng_recv_wr rwr = { .wr_id = 9,
				       .sg_list = &rsge,
				       .num_sge = 1 };
	struct ovr_eng_stats es;
	uint32_t qpn[2];
	int k;

	assert_non_null(src);
	assert_non_null(zero);
	connect(r, qpn);
	fill(src, len, 2);
	dev_put(r, 0, 0, src, len);
	dev_put(r, 1, 2 * MB, zero, len);
	rsge = (struct ovr_eng_sge){ .addr = r->n[1].va + 2 * MB,
				     .length = len,
				     .lkey = r->n[1].key };
	assert_int_equal(ovr_eng_post_recv(r->n[1].eng, qpn[1], &rwr, r->now),
			 0);
	assert_int_equal(
		post(r, 0, qpn[0], OVR_WR_SEND, 3, DEV, 0, len, DEV, 0), 0);
	r->nofence[1] = true;
	for (k = 0; k < 20; k++)
		round_once(r);
	assert_true(r->n[1].nrxd > 0); /* what the window let through */
	assert_int_equal(r->n[1].ncqe, 0);
	assert_int_equal(r->n[0].ncqe, 0);
	dev_expect(r, 1, 2 * MB, zero, len);
	ovr_eng_get_stats(r->n[1].eng, &es);
	assert_true(es.dev_async > 0);
	assert_true(es.dev_held > 0);
	r->nofence[1] = false;
	assert_true(run_until(r, 1, 1));
	assert_int_equal(r->n[1].cqe[0].wc.status, OVR_WC_SUCCESS);
	assert_int_equal(r->n[1].cqe[0].wc.byte_len, len);
	dev_expect(r, 1, 2 * MB, src, len);
	assert_true(run_until(r, 0, 1));
	assert_int_equal(r->n[0].cqe[0].wc.status, OVR_WC_SUCCESS);
	free(src);
	free(zero);
}

/*
 * The responder's copy into device memory fails (the sources are host
 * memory: every queued copy is the responder's): a WRITE's requester
 * gets REM_OP_ERR, a SEND's receive completes in error - never a
 * success - and so does the SEND.
 */
static void test_failed_copy_responder(void **state)
{
	struct rig *r = *state;
	const uint32_t len = 512 * 1024;
	struct ovr_eng_sge rsge;
	struct ovr_eng_recv_wr rwr = { .wr_id = 11,
				       .sg_list = &rsge,
				       .num_sge = 1 };
	struct ovr_eng_stats es0, es;
	uint32_t qpn[2];

	fill(r->n[0].host, len, 3);
	ovr_eng_get_stats(r->n[1].eng, &es0);
	connect(r, qpn);
	cu.fail_nth(20);
	assert_int_equal(post(r, 0, qpn[0], OVR_WR_RDMA_WRITE, 4, HOST, 0, len,
			      DEV, 0),
			 0);
	assert_true(run_until(r, 0, 1));
	cu.fail_nth(0);
	assert_int_equal(r->n[0].cqe[0].wc.wr_id, 4);
	assert_int_equal(r->n[0].cqe[0].wc.status, OVR_WC_REM_OP_ERR);
	ovr_eng_get_stats(r->n[1].eng, &es);
	assert_int_equal(es.dev_fence_err - es0.dev_fence_err, 1);
	assert_int_equal(es.dev_copy_err - es0.dev_copy_err, 1);

	connect(r, qpn);
	rsge = (struct ovr_eng_sge){ .addr = r->n[1].va,
				     .length = len,
				     .lkey = r->n[1].key };
	assert_int_equal(ovr_eng_post_recv(r->n[1].eng, qpn[1], &rwr, r->now),
			 0);
	cu.fail_nth(60);
	assert_int_equal(
		post(r, 0, qpn[0], OVR_WR_SEND, 5, HOST, 0, len, DEV, 0), 0);
	assert_true(run_until(r, 1, 1));
	assert_true(run_until(r, 0, 1));
	cu.fail_nth(0);
	/* the receive fails: LOC_QP_OP_ERR when it had completed in the
	 * failed batch, else flushed with the QP */
	assert_int_equal(r->n[1].cqe[0].wc.wr_id, 11);
	assert_true(r->n[1].cqe[0].wc.status == OVR_WC_LOC_QP_OP_ERR ||
		    r->n[1].cqe[0].wc.status == OVR_WC_WR_FLUSH_ERR);
	assert_int_equal(r->n[0].cqe[0].wc.wr_id, 5);
	assert_int_equal(r->n[0].cqe[0].wc.status, OVR_WC_REM_OP_ERR);
}

/* The requester's own copies fail - reading a WRITE's source, placing a
 * READ's response: LOC_QP_OP_ERR, vendor_err DEV_COPY, and no PDU
 * built from a failed read reaches the peer. */
static void test_failed_copy_requester(void **state)
{
	struct rig *r = *state;
	const uint32_t len = 256 * 1024;
	uint8_t *zero = calloc(1, len);
	uint32_t qpn[2];

	assert_non_null(zero);
	memset(r->n[1].host, 0, len);
	/* buffers that held other bytes before: a leak would show */
	for (uint32_t k = 0; k < NBUF; k++)
		memset(r->n[0].bufs + (size_t)k * r->max_pdu, 0x5a, r->max_pdu);
	connect(r, qpn);
	cu.fail_nth(1);
	assert_int_equal(post(r, 0, qpn[0], OVR_WR_RDMA_WRITE, 6, DEV, 0, len,
			      HOST, 0),
			 0);
	assert_true(run_until(r, 0, 1));
	cu.fail_nth(0);
	assert_int_equal(r->n[0].cqe[0].wc.status, OVR_WC_LOC_QP_OP_ERR);
	assert_int_equal(r->n[0].cqe[0].wc.vendor_err, OVR_VERR_DEV_COPY);
	for (int k = 0; k < 20; k++)
		round_once(r);
	assert_memory_equal(r->n[1].host, zero, len);

	connect(r, qpn);
	fill(r->n[1].host, len, 4);
	cu.fail_nth(3);
	assert_int_equal(post(r, 0, qpn[0], OVR_WR_RDMA_READ, 7, DEV, 0, len,
			      HOST, 0),
			 0);
	assert_true(run_until(r, 0, 1));
	cu.fail_nth(0);
	assert_int_equal(r->n[0].cqe[0].wc.wr_id, 7);
	assert_int_equal(r->n[0].cqe[0].wc.status, OVR_WC_LOC_QP_OP_ERR);
	assert_int_equal(r->n[0].cqe[0].wc.vendor_err, OVR_VERR_DEV_COPY);
	free(zero);
}

/* A successful completion: the bytes it promises are in place now. */
static void check_expect(struct rig *r, const struct ovr_eng_wc *wc)
{
	for (uint32_t i = 0; i < r->nexp; i++) {
		const struct expect *x = &r->exp[i];

		if (x->wr_id != wc->wr_id)
			continue;
		if (x->va)
			dev_expect_at(x->va + x->off, x->want, x->len);
		else
			dev_expect(r, x->node, x->off, x->want, x->len);
		r->nchecked++;
	}
}

static void expect(struct rig *r, uint64_t wr_id, int node, uint64_t off,
		   const uint8_t *want, uint32_t len)
{
	r->exp[r->nexp++] = (struct expect){ .wr_id = wr_id,
					     .node = node,
					     .off = off,
					     .want = want,
					     .len = len };
}

/* Wait for every batch; every parked buffer back. */
static void rig_settle(struct rig *r)
{
	for (int i = 0; i < 2; i++) {
		ovr_eng_fence(r->n[i].eng);
		unpark(&r->n[i], &r->n[1 - i], UINT64_MAX);
	}
}

/* The status of @wr_id's completion at @n; -1: none. */
static int cqe_status(struct node *n, uint64_t wr_id)
{
	for (uint32_t i = 0; i < n->ncqe; i++)
		if (n->cqe[i].wc.wr_id == wr_id)
			return (int)n->cqe[i].wc.status;
	return -1;
}

/* Node @i's completions of QP @qpn come in increasing wr_id order. */
static void assert_qp_order(struct node *n, uint32_t qpn)
{
	uint64_t last = 0;

	for (uint32_t i = 0; i < n->ncqe; i++) {
		if (n->cqe[i].wc.qp_num != qpn)
			continue;
		assert_true(n->cqe[i].wc.wr_id > last);
		last = n->cqe[i].wc.wr_id;
	}
}

/*
 * Pipelined: WRITEs (GPU to GPU) on one QP and SENDs into GPU receive
 * buffers on another, with the fake's events answering NOT_READY twice
 * each, so that a batch takes three rounds and several are in flight
 * on both nodes. Every completion is checked against the device bytes
 * when it is delivered (the WRITE's and SEND's at the requester: the
 * responder's copies are done before its ACK left; the receive's);
 * per-QP order holds across batches; the data is byte-exact.
 */
static void test_pipe_write_send(void **state)
{
	enum { NW = 8, WLEN = 256 * 1024, NS = 4, SSTEP = 64 * 1024 };
	const uint32_t slen = SSTEP - 13;
	struct rig *r = *state;
	const size_t srclen = 2 * MB + NS * SSTEP;
	uint8_t *src = malloc(srclen), *zero = calloc(1, 2 * MB);
	struct expect exp[NW + 2 * NS];
	struct ovr_eng_stats es[2];
	struct ovr_gdr_stats gs;
	struct fakecuda_stats f0, f1;
	uint32_t qa[2], qb[2];

	assert_non_null(src);
	assert_non_null(zero);
	assert_non_null(cu.event_polls);
	rig_engines(r, true, 4);
	cu.event_polls(2);
	cu.stats(&f0);
	connect(r, qa);
	connect(r, qb);
	fill(src, srclen, 11);
	dev_put(r, 0, 0, src, srclen);
	dev_put(r, 1, 0, zero, NS * SSTEP);
	dev_put(r, 1, 4 * MB, zero, 2 * MB);
	r->exp = exp;
	r->nexp = r->nchecked = 0;
	for (uint32_t j = 0; j < NS; j++) {
		struct ovr_eng_sge sge = { .addr = r->n[1].va + j * SSTEP,
					   .length = slen,
					   .lkey = r->n[1].key };
		struct ovr_eng_recv_wr rwr = { .wr_id = 200 + j,
					       .sg_list = &sge,
					       .num_sge = 1 };

		assert_int_equal(
			ovr_eng_post_recv(r->n[1].eng, qb[1], &rwr, r->now), 0);
		expect(r, 200 + j, 1, j * SSTEP, src + 2 * MB + j * SSTEP,
		       slen);
	}
	for (uint32_t i = 0; i < NW; i++) {
		assert_int_equal(post(r, 0, qa[0], OVR_WR_RDMA_WRITE, 100 + i,
				      DEV, i * WLEN, WLEN, DEV,
				      4 * MB + i * WLEN),
				 0);
		expect(r, 100 + i, 1, 4 * MB + i * WLEN, src + i * WLEN, WLEN);
	}
	for (uint32_t j = 0; j < NS; j++) {
		assert_int_equal(post(r, 0, qb[0], OVR_WR_SEND, 300 + j, DEV,
				      2 * MB + j * SSTEP, slen, DEV, 0),
				 0);
		expect(r, 300 + j, 1, j * SSTEP, src + 2 * MB + j * SSTEP,
		       slen);
	}
	assert_true(run_until(r, 0, NW + NS));
	assert_true(run_until(r, 1, NS));
	for (uint32_t i = 0; i < r->n[0].ncqe; i++)
		assert_int_equal(r->n[0].cqe[i].wc.status, OVR_WC_SUCCESS);
	for (uint32_t i = 0; i < r->n[1].ncqe; i++) {
		assert_int_equal(r->n[1].cqe[i].wc.status, OVR_WC_SUCCESS);
		assert_int_equal(r->n[1].cqe[i].wc.byte_len, slen);
	}
	assert_qp_order(&r->n[0], qa[0]);
	assert_qp_order(&r->n[0], qb[0]);
	assert_qp_order(&r->n[1], qb[1]);
	assert_int_equal(r->nchecked, NW + 2 * NS);
	dev_expect(r, 1, 4 * MB, src, 2 * MB);
	for (int i = 0; i < 2; i++) {
		ovr_eng_get_stats(r->n[i].eng, &es[i]);
		print_message("gdr_engine: node %d: %llu batches, %llu queued "
			      "copies, max %llu in flight, %llu polls not "
			      "ready, %llu blocking waits\n",
			      i, (unsigned long long)es[i].dev_batches,
			      (unsigned long long)es[i].dev_async,
			      (unsigned long long)es[i].dev_batch_max_inflight,
			      (unsigned long long)es[i].dev_batch_not_ready,
			      (unsigned long long)es[i].dev_batch_waits);
		assert_true(es[i].dev_batch_max_inflight > 1);
		assert_true(es[i].dev_batch_max_inflight <= 4);
		assert_true(es[i].dev_batch_not_ready > 0);
		assert_int_equal(es[i].dev_fences, 0);
		assert_int_equal(es[i].dev_fence_err, 0);
	}
	rig_settle(r);
	cu.stats(&f1);
	assert_true(f1.event_not_ready > f0.event_not_ready);
	assert_int_equal(f1.pending, 0);
	ovr_gdr_get_stats(r->g, &gs);
	assert_int_equal(gs.pending, 0);
	assert_true(gs.batches > 0);
	cu.event_polls(0);
	r->exp = NULL;
	r->nexp = 0;
	free(src);
	free(zero);
}

/*
 * Pipelined, three batches in flight at the responder, one QP's each
 * (WRITEs from host memory into GPU memory: the responder's copies are
 * the only ones): QP a's, QP b's, QP a's. QP b's copy fails. Only QP b
 * fails (REM_OP_ERR, its bytes not placed); QP a's WRITEs of the batch
 * before and the batch after complete, in order, with their bytes.
 */
static void test_pipe_failed_middle(void **state)
{
	const uint32_t len = 4000;
	struct rig *r = *state;
	uint8_t *zero = calloc(1, 3 * 64 * 1024);
	struct ovr_eng_stats es0, es;
	struct expect exp[2];
	uint32_t qa[2], qb[2];

	assert_non_null(zero);
	rig_engines(r, true, 8);
	cu.event_polls(3);
	connect(r, qa);
	connect(r, qb);
	fill(r->n[0].host, 3 * len, 21);
	dev_put(r, 1, 0, zero, 3 * 64 * 1024);
	ovr_eng_get_stats(r->n[1].eng, &es0);
	r->exp = exp;
	r->nexp = r->nchecked = 0;
	expect(r, 1, 1, 0, r->n[0].host, len);
	expect(r, 3, 1, 128 * 1024, r->n[0].host + 2 * len, len);

	assert_int_equal(post(r, 0, qa[0], OVR_WR_RDMA_WRITE, 1, HOST, 0, len,
			      DEV, 0),
			 0);
	round_once(r);
	cu.fail_nth(1);
	assert_int_equal(post(r, 0, qb[0], OVR_WR_RDMA_WRITE, 2, HOST, len, len,
			      DEV, 64 * 1024),
			 0);
	round_once(r);
	cu.fail_nth(0);
	assert_int_equal(post(r, 0, qa[0], OVR_WR_RDMA_WRITE, 3, HOST, 2 * len,
			      len, DEV, 128 * 1024),
			 0);
	round_once(r);
	/* one batch per round, none done yet */
	assert_int_equal(ovr_eng_dev_inflight(r->n[1].eng), 3);
	assert_int_equal(r->n[0].ncqe, 0);

	assert_true(run_until(r, 0, 3));
	assert_int_equal(cqe_status(&r->n[0], 1), OVR_WC_SUCCESS);
	assert_int_equal(cqe_status(&r->n[0], 3), OVR_WC_SUCCESS);
	assert_int_equal(cqe_status(&r->n[0], 2), OVR_WC_REM_OP_ERR);
	assert_qp_order(&r->n[0], qa[0]);
	assert_int_equal(r->nchecked, 2);
	dev_expect(r, 1, 64 * 1024, zero, len);
	ovr_eng_get_stats(r->n[1].eng, &es);
	assert_int_equal(es.dev_fence_err - es0.dev_fence_err, 1);
	assert_int_equal(es.dev_copy_err - es0.dev_copy_err, 1);
	assert_true(es.dev_batch_max_inflight >= 3);
	rig_settle(r);
	cu.event_polls(0);
	r->exp = NULL;
	r->nexp = 0;
	free(zero);
}

/*
 * Pipelined with room for two batches and events that stay NOT_READY
 * for 50 queries: closing a third batch waits for the oldest
 * (cuEventSynchronize). Never more than two in flight; a 1 MB WRITE
 * from GPU to GPU memory still arrives byte-exact.
 */
static void test_pipe_ring_full(void **state)
{
	const uint32_t len = MB;
	struct rig *r = *state;
	uint8_t *src = malloc(len);
	struct ovr_eng_stats es[2];
	struct fakecuda_stats f0, f1;
	struct ovr_gdr_stats gs0, gs;
	struct expect exp[1];
	uint32_t qa[2];

	assert_non_null(src);
	rig_engines(r, true, 2);
	cu.event_polls(50);
	connect(r, qa);
	fill(src, len, 31);
	dev_put(r, 0, 0, src, len);
	cu.stats(&f0);
	ovr_gdr_get_stats(r->g, &gs0);
	r->exp = exp;
	r->nexp = r->nchecked = 0;
	expect(r, 7, 1, 5 * MB, src, len);
	assert_int_equal(post(r, 0, qa[0], OVR_WR_RDMA_WRITE, 7, DEV, 0, len,
			      DEV, 5 * MB),
			 0);
	assert_true(run_until(r, 0, 1));
	assert_int_equal(r->n[0].cqe[0].wc.status, OVR_WC_SUCCESS);
	assert_int_equal(r->nchecked, 1);
	dev_expect(r, 1, 5 * MB, src, len);
	for (int i = 0; i < 2; i++) {
		ovr_eng_get_stats(r->n[i].eng, &es[i]);
		assert_int_equal(es[i].dev_batch_max_inflight, 2);
		assert_true(es[i].dev_batch_waits > 0);
	}
	cu.stats(&f1);
	assert_true(f1.event_syncs > f0.event_syncs);
	ovr_gdr_get_stats(r->g, &gs);
	assert_true(gs.batch_waits > gs0.batch_waits);
	rig_settle(r);
	cu.event_polls(0);
	r->exp = NULL;
	r->nexp = 0;
	free(src);
}

/* ---- BAR copies (GDRCopy) ------------------------------------------------ */

/*
 * One round of small messages GPU to GPU on QP @q (node 0 the
 * requester): a SEND of 1000 bytes into a receive, a WRITE of 2000, a
 * READ of 1500 - each under the BAR limits both ways - every completion
 * checked against the device bytes when it is delivered.
 */
static void small_msgs(struct rig *r, const uint32_t q[2], uint8_t *src,
		       unsigned int seed, struct expect *exp)
{
	enum { SLEN = 1000, WLEN = 2000, RLEN = 1500 };
	struct ovr_eng_sge sge = { .addr = r->n[1].va + 6 * MB,
				   .length = SLEN,
				   .lkey = r->n[1].key };
	struct ovr_eng_recv_wr rwr = { .wr_id = 500 + seed,
				       .sg_list = &sge,
				       .num_sge = 1 };

	fill(src, 3 * 4096, seed);
	dev_put(r, 0, 0, src, 3 * 4096);
	dev_put(r, 1, 7 * MB, src + 2 * 4096, RLEN);
	r->exp = exp;
	r->nexp = r->nchecked = 0;
	assert_int_equal(ovr_eng_post_recv(r->n[1].eng, q[1], &rwr, r->now), 0);
	expect(r, 500 + seed, 1, 6 * MB, src, SLEN);
	assert_int_equal(post(r, 0, q[0], OVR_WR_SEND, 600 + seed, DEV, 0, SLEN,
			      DEV, 0),
			 0);
	expect(r, 600 + seed, 1, 6 * MB, src, SLEN);
	assert_int_equal(post(r, 0, q[0], OVR_WR_RDMA_WRITE, 700 + seed, DEV,
			      4096, WLEN, DEV, 5 * MB),
			 0);
	expect(r, 700 + seed, 1, 5 * MB, src + 4096, WLEN);
	assert_int_equal(post(r, 0, q[0], OVR_WR_RDMA_READ, 800 + seed, DEV,
			      3 * MB, RLEN, DEV, 7 * MB),
			 0);
	expect(r, 800 + seed, 0, 3 * MB, src + 2 * 4096, RLEN);
	assert_true(run_until(r, 0, 3));
	assert_true(run_until(r, 1, 1));
	for (int i = 0; i < 2; i++)
		for (uint32_t k = 0; k < r->n[i].ncqe; k++)
			assert_int_equal(r->n[i].cqe[k].wc.status,
					 OVR_WC_SUCCESS);
	assert_int_equal(r->nchecked, 4);
	assert_qp_order(&r->n[0], q[0]);
	rig_settle(r);
	r->exp = NULL;
	r->nexp = 0;
}

/*
 * Small messages between GPU regions, pipelined, the fake's events
 * lazy: with the streams every one of them takes queued copies and
 * batches on both nodes; with GDRCopy on (the fake gdrdrv) none - each
 * copy is a BAR copy, done at once - and every completion still finds
 * its bytes in GPU memory when it is delivered (the fake holds BAR
 * writes until a read-back), byte-exact.
 */
static void test_bar_small(void **state)
{
	struct rig *r = *state;
	uint8_t *src = malloc(3 * 4096);
	struct ovr_eng_stats es0[2], es1[2];
	struct ovr_gdr_stats gs0, gs1;
	struct fakegdr_stats f0, f1;
	struct expect exp[4];
	uint32_t q[2];

	assert_non_null(src);
	assert_non_null(cu.gdr_stats);
	cu.event_polls(2);

	/* the streams */
	rig_engines(r, true, 4);
	connect(r, q);
	small_msgs(r, q, src, 61, exp);
	for (int i = 0; i < 2; i++) {
		ovr_eng_get_stats(r->n[i].eng, &es1[i]);
		assert_true(es1[i].dev_async > 0);
		assert_true(es1[i].dev_batches > 0);
	}

	/* GDRCopy on: the same without a queued copy or a batch */
	setenv("FAKEGDR", "1", 1);
	assert_int_equal(ovr_gdr_bar_open(r->g, NULL, NULL, 0), 0);
	ovr_gdr_get_stats(r->g, &gs0);
	cu.gdr_stats(&f0);
	rig_engines(r, true, 4);
	connect(r, q);
	for (int i = 0; i < 2; i++)
		ovr_eng_get_stats(r->n[i].eng, &es0[i]);
	small_msgs(r, q, src, 62, exp);
	ovr_gdr_get_stats(r->g, &gs1);
	cu.gdr_stats(&f1);
	for (int i = 0; i < 2; i++) {
		ovr_eng_get_stats(r->n[i].eng, &es1[i]);
		print_message("gdr_engine: BAR: node %d: %llu device copies, "
			      "%llu queued, %llu batches, %llu held\n",
			      i,
			      (unsigned long long)(es1[i].dev_copies -
						   es0[i].dev_copies),
			      (unsigned long long)(es1[i].dev_async -
						   es0[i].dev_async),
			      (unsigned long long)(es1[i].dev_batches -
						   es0[i].dev_batches),
			      (unsigned long long)(es1[i].dev_held -
						   es0[i].dev_held));
		assert_true(es1[i].dev_copies > es0[i].dev_copies);
		assert_int_equal(es1[i].dev_async, es0[i].dev_async);
		assert_int_equal(es1[i].dev_batches, es0[i].dev_batches);
		assert_int_equal(es1[i].dev_copy_err, 0);
	}
	/* node 0: SEND and WRITE sources, READ placement; node 1: the
	 * receive, the WRITE, the READ's source - one BAR copy each */
	assert_int_equal(gs1.bar_copies - gs0.bar_copies, 6);
	assert_int_equal(gs1.bar_reads - gs0.bar_reads, 3);
	assert_int_equal(gs1.bar_pins, 2); /* one allocation per node */
	assert_int_equal(gs1.async_copies, gs0.async_copies);
	assert_int_equal(f1.posted_bytes, 0);
	assert_true(f1.flushes - f0.flushes >= 3);
	cu.event_polls(0);
	free(src);
}

/* Node @i posts @op of @len bytes from @laddr (key @lkey) to @raddr
 * (key @rkey) of the peer. */
static int post_at(struct rig *r, int i, uint32_t qpn, uint32_t op,
		   uint64_t wr_id, uint64_t laddr, uint32_t lkey, uint32_t len,
		   uint64_t raddr, uint32_t rkey)
{
	struct ovr_eng_sge sge = { .addr = laddr, .length = len, .lkey = lkey };
	struct ovr_eng_send_wr wr = {
		.wr_id = wr_id,
		.opcode = op,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = rkey,
		.remote_addr = raddr,
	};

	return ovr_eng_post_send(r->n[i].eng, qpn, &wr, r->now);
}

/*
 * On one QP, small messages between large ones whose copies are queued
 * and whose batches are in flight (the fake's events lazy): small
 * WRITEs into bytes a large WRITE before them also writes land after it
 * (they take the streams while stream copies of their allocation are
 * not known done: a BAR copy would overtake them); small WRITEs and a
 * SEND between two other GPU allocations go through the BAR at once,
 * their completions still behind the large ones'. Every completion
 * checked when delivered, in order; the bytes byte-exact.
 */
static void test_bar_mixed(void **state)
{
	enum { BIG = 256 * 1024, SMALL = 1000, SLEN = 800 };
	const unsigned int acc = OVR_ACCESS_LOCAL_WRITE |
				 OVR_ACCESS_REMOTE_WRITE |
				 OVR_ACCESS_REMOTE_READ;
	struct rig *r = *state;
	const size_t srclen = 2 * BIG + 4 * 4096;
	uint8_t *src = malloc(srclen), *want = malloc(BIG);
	struct ovr_gdr_mem *dev2[2];
	gdr_CUdeviceptr va2[2];
	uint32_t key2[2];
	struct ovr_gdr_stats gs0, gs1;
	struct expect exp[8];
	struct ovr_eng_sge rsge;
	struct ovr_eng_recv_wr rwr = { .wr_id = 16,
				       .sg_list = &rsge,
				       .num_sge = 1 };
	uint32_t q[2];

	assert_non_null(src);
	assert_non_null(want);
	cu.event_polls(2);
	rig_engines(r, true, 4);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(
			cuapp_import(&cu, r->g, 2 * MB, &va2[i], &dev2[i]), 0);
		assert_int_equal(ovr_eng_reg_mr_dev(r->n[i].eng, 1, va2[i],
						    2 * MB, acc, dev2[i], 0,
						    &key2[i]),
				 0);
	}
	connect(r, q);
	fill(src, srclen, 71);
	dev_put(r, 0, 0, src, srclen);
	assert_int_equal(cu.htod(va2[0], src + 2 * BIG, 2 * 4096), 0);
	rsge = (struct ovr_eng_sge){ .addr = va2[1] + 8192,
				     .length = SLEN,
				     .lkey = key2[1] };
	assert_int_equal(ovr_eng_post_recv(r->n[1].eng, q[1], &rwr, r->now), 0);
	ovr_gdr_get_stats(r->g, &gs0);
	r->exp = exp;
	r->nexp = r->nchecked = 0;
	/* 1: big, region 1 at 4 MB */
	assert_int_equal(post(r, 0, q[0], OVR_WR_RDMA_WRITE, 1, DEV, 0, BIG,
			      DEV, 4 * MB),
			 0);
	expect(r, 1, 1, 4 * MB, src, BIG - 2 * SMALL); /* before 2's */
	/* 2: small, into 1's last packet (placed last) */
	assert_int_equal(post(r, 0, q[0], OVR_WR_RDMA_WRITE, 2, DEV, 2 * BIG,
			      SMALL, DEV, 4 * MB + BIG - 2 * SMALL),
			 0);
	expect(r, 2, 1, 4 * MB + BIG - 2 * SMALL, src + 2 * BIG, SMALL);
	/* 3, 4: small, region 2 to region 2 (a WRITE and a SEND) */
	assert_int_equal(post_at(r, 0, q[0], OVR_WR_RDMA_WRITE, 3, va2[0],
				 key2[0], SMALL, va2[1], key2[1]),
			 0);
	expect(r, 3, 1, 0, src + 2 * BIG, SMALL);
	r->exp[r->nexp - 1].va = va2[1];
	assert_int_equal(post_at(r, 0, q[0], OVR_WR_SEND, 4, va2[0] + 4096,
				 key2[0], SLEN, 0, 0),
			 0);
	expect(r, 4, 1, 8192, src + 2 * BIG + 4096, SLEN);
	r->exp[r->nexp - 1].va = va2[1];
	expect(r, 16, 1, 8192, src + 2 * BIG + 4096, SLEN);
	r->exp[r->nexp - 1].va = va2[1];
	/* 5: big, region 1 after 1; 6: small, inside 5 */
	assert_int_equal(post(r, 0, q[0], OVR_WR_RDMA_WRITE, 5, DEV, BIG, BIG,
			      DEV, 4 * MB + BIG),
			 0);
	expect(r, 5, 1, 4 * MB + BIG, src + BIG, BIG - SMALL);
	assert_int_equal(post(r, 0, q[0], OVR_WR_RDMA_WRITE, 6, DEV,
			      2 * BIG + 2 * 4096, SMALL, DEV,
			      4 * MB + 2 * BIG - SMALL),
			 0);
	expect(r, 6, 1, 4 * MB + 2 * BIG - SMALL, src + 2 * BIG + 2 * 4096,
	       SMALL);
	assert_true(run_until(r, 0, 5));
	assert_true(run_until(r, 1, 1));
	for (int i = 0; i < 2; i++)
		for (uint32_t k = 0; k < r->n[i].ncqe; k++)
			assert_int_equal(r->n[i].cqe[k].wc.status,
					 OVR_WC_SUCCESS);
	assert_int_equal(r->n[0].ncqe, 6);
	assert_qp_order(&r->n[0], q[0]);
	assert_int_equal(r->nchecked, 7);
	rig_settle(r);
	/* the small ones are in place, over the big ones around them */
	memcpy(want, src, BIG);
	memcpy(want + BIG - 2 * SMALL, src + 2 * BIG, SMALL);
	dev_expect(r, 1, 4 * MB, want, BIG);
	memcpy(want, src + BIG, BIG);
	memcpy(want + BIG - SMALL, src + 2 * BIG + 2 * 4096, SMALL);
	dev_expect(r, 1, 4 * MB + BIG, want, BIG);
	dev_expect_at(va2[1], src + 2 * BIG, SMALL);
	dev_expect_at(va2[1] + 8192, src + 2 * BIG + 4096, SLEN);
	ovr_gdr_get_stats(r->g, &gs1);
	print_message("gdr_engine: mixed: %llu BAR copies, %llu small "
		      "copies took the streams behind stream copies\n",
		      (unsigned long long)(gs1.bar_copies - gs0.bar_copies),
		      (unsigned long long)(gs1.bar_busy - gs0.bar_busy));
	/* 3 and 4: read and placed through the BAR; 2 and 6 behind the
	 * streams on both nodes */
	assert_int_equal(gs1.bar_copies - gs0.bar_copies, 4);
	assert_true(gs1.bar_busy - gs0.bar_busy >= 4);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ovr_eng_dereg_mr(r->n[i].eng, key2[i]), 0);
		ovr_gdr_release(dev2[i]);
	}
	cu.event_polls(0);
	r->exp = NULL;
	r->nexp = 0;
	free(src);
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_send_completion_after_data),
		cmocka_unit_test(test_failed_copy_responder),
		cmocka_unit_test(test_failed_copy_requester),
		cmocka_unit_test(test_pipe_write_send),
		cmocka_unit_test(test_pipe_failed_middle),
		cmocka_unit_test(test_pipe_ring_full),
		/* last: GDRCopy stays on for the rig's gdr once opened */
		cmocka_unit_test(test_bar_small),
		cmocka_unit_test(test_bar_mixed),
	};

	(void)R;
	return cmocka_run_group_tests(tests, setup, teardown);
}
