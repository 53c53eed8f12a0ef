// SPDX-License-Identifier: MIT
/*
 * The transport engine on the GPU copy engine (docs/GPU.md): two engines
 * whose regions are fake-GPU memory imported through gdr/ (the fake
 * driver from $OVRDMA_LIBCUDA), whose packet buffers are pinned, and
 * whose device copies are queued (ops.dev_copy: ovr_gdr_*_async) and
 * waited for once per round (ovr_eng_fence: ovr_gdr_fence), as ovrdmad
 * runs them. The fake performs a queued copy only when its stream is
 * synchronised, so a PDU or completion that left before its fence would
 * carry or announce stale bytes. Checked: WRITE, READ and SEND between
 * device regions byte-exact; no completion before its data is in place;
 * far fewer fences than packets; a failed queued copy is an error
 * completion at the requester or responder, never a success.
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

struct node {
	struct ovr_eng *eng;
	uint8_t *bufs; /* NBUF slots of max_pdu, pinned */
	uint32_t free[NBUF], nfree;
	struct pdu wire[NBUF]; /* sent to the other node, not yet received */
	uint32_t nwire;
	uint32_t rxd[NBUF], nrxd; /* received from the other node, held */
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

static void t_cqe(void *ctx, uint32_t cq, const struct ovr_eng_wc *wc)
{
	struct node *n = ctx;

	assert_true(n->ncqe < MAXCQE);
	n->cqe[n->ncqe].cq = cq;
	n->cqe[n->ncqe++].wc = *wc;
}

static int t_dev_copy(void *ctx, void *dev, uint64_t off, void *host,
		      uint32_t len, bool to_dev)
{
	(void)ctx;
	return to_dev ? ovr_gdr_write_async(dev, off, host, len) :
			ovr_gdr_read_async(dev, off, host, len);
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

/*
 * One round, as an iteration of ovrdmad's loop covering ROUND_NS: each
 * node receives what the other sent (straight from the sender's pinned
 * buffers), polls - as often as its pacing lets it send within the round
 * - and fences once; only then do the received buffers go back to their
 * sender.
 */
#define ROUND_NS 50000ull

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
		n->eng = ovr_eng_create(&pc.eng, &t_ops, n);
		assert_non_null(n->eng);
		dev_alloc(r->g, n);
		assert_int_equal(
			ovr_eng_reg_mr_dev(n->eng, 1, n->va, DEV_LEN,
					   OVR_ENG_ACCESS_LOCAL_WRITE |
						   OVR_ENG_ACCESS_REMOTE_WRITE |
						   OVR_ENG_ACCESS_REMOTE_READ,
					   n->dev, 0, &n->key),
			0);
		n->host = calloc(1, DEV_LEN);
		assert_non_null(n->host);
		assert_int_equal(
			ovr_eng_reg_mr(n->eng, 1, (uintptr_t)n->host, DEV_LEN,
				       OVR_ENG_ACCESS_LOCAL_WRITE |
					       OVR_ENG_ACCESS_REMOTE_WRITE |
					       OVR_ENG_ACCESS_REMOTE_READ,
				       n->host, &n->hkey),
			0);
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
	qp.access = OVR_ENG_ACCESS_LOCAL_WRITE | OVR_ENG_ACCESS_REMOTE_WRITE |
		    OVR_ENG_ACCESS_REMOTE_READ;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_read),
		cmocka_unit_test(test_send_completion_after_data),
		cmocka_unit_test(test_failed_copy_responder),
		cmocka_unit_test(test_failed_copy_requester),
	};

	(void)R;
	return cmocka_run_group_tests(tests, setup, teardown);
}
