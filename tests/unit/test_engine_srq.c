// SPDX-License-Identifier: MIT
/*
 * Shared receive queues (docs/TRANSPORT.md §6.1): many QPs take their
 * receives from one SRQ; every message lands once, byte-exact, on the
 * consuming QP's recv CQ with its qp_num, in each QP's order, over a
 * clean and a lossy link; an empty SRQ means RNR and a wait, not an
 * error; the limit event fires once when armed; the verbs around it
 * (post_recv EINVAL, destroy EBUSY, modify, query) behave as verbs say;
 * a region that receives waiting in the SRQ name can be deregistered.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

#include "eng_util.h"

#define NQP 8
#define NMSG 20 /* per QP */
#define NBUF 64 /* receive buffers at node 1 */
#define BUF_LEN (64u << 10)
#define SRC_OFF(j, k) (((size_t)(j)*NMSG + (k)) * BUF_LEN)
#define DST_OFF(b) ((16u << 20) + (size_t)(b)*BUF_LEN)

struct fix {
	struct ovr_pair *p;
	uint32_t srq;
	uint32_t qpn[NQP][2];
};

static struct fix *setup_with(double loss)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct ovr_eng_srq_init si = {
		.pd = 1,
		.user = 0x5151,
		.attr = { .max_wr = NBUF, .max_sge = 2, .srq_limit = 5 },
	};
	struct ovr_pair_cfg cfg;
	struct ovr_pair_qp_params qp;

	assert_non_null(f);
	ovr_pair_cfg_default(&cfg);
	cfg.mem_bytes = 24u << 20;
	for (int i = 0; i < 2 && loss > 0; i++) {
		cfg.link[i].loss = loss;
		cfg.link[i].reorder = 0.05;
		cfg.link[i].reorder_ns = 20000;
		cfg.link[i].dup = 0.02;
		cfg.link[i].corrupt = 0.02;
		cfg.link[i].jitter_ns = 5000;
	}
	f->p = ovr_pair_create(&cfg);
	assert_non_null(f->p);
	assert_int_equal(ovr_eng_srq_create(f->p->n[1].eng, &si, &f->srq), 0);
	assert_int_not_equal(f->srq, 0);
	ovr_pair_qp_params_default(&qp);
	qp.srq[1] = f->srq;
	/* every QP completes to CQ 0 (send) and 1 (recv) on its node */
	for (int j = 0; j < NQP; j++)
		assert_int_equal(ovr_pair_connect(f->p, &qp, 0, f->qpn[j]), 0);
	return f;
}

static int setup_clean(void **state)
{
	*state = setup_with(0);
	return 0;
}

static int setup_lossy(void **state)
{
	*state = setup_with(0.05);
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	ovr_pair_destroy(f->p);
	free(f);
	return 0;
}

/* Post receive buffer @b (two SGEs: 1000 bytes, then the rest). */
static int post_buf(struct fix *f, uint32_t b)
{
	struct ovr_pair *p = f->p;
	struct ovr_eng_sge sge[2] = {
		{ ovr_pair_va(p, 1, DST_OFF(b)), 1000, p->n[1].key },
		{ ovr_pair_va(p, 1, DST_OFF(b) + 1000), BUF_LEN - 1000,
		  p->n[1].key },
	};
	struct ovr_eng_recv_wr wr = { b, sge, 2 };

	return ovr_eng_post_srq_recv(p->n[1].eng, f->srq, &wr, p->now);
}

static uint32_t msg_len(int j, int k)
{
	/* 0 B .. 60 KB: single- and multi-segment, crossing the SGE split */
	return (uint32_t)((j * 7919 + k * 3001) % 61440) * (k % 5 != 0);
}

static int qp_index(struct fix *f, uint32_t qpn)
{
	for (int j = 0; j < NQP; j++)
		if (f->qpn[j][1] == qpn)
			return j;
	return -1;
}

static void test_srq_many_qps(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_srq_attr a = { .srq_limit = 16 };
	int next[NQP] = { 0 }, got = 0, sent_done = 0;
	uint64_t rnr = 0;
	struct ovr_eng_wc wc;
	uint32_t held[NBUF];
	int nheld = 0;
	bool more;

	for (int j = 0; j < NQP; j++)
		for (int k = 0; k < NMSG; k++)
			fill_pattern(p->n[0].mem + SRC_OFF(j, k), msg_len(j, k),
				     (uint64_t)(j * 1000 + k + 1));
	memset(p->n[1].mem + DST_OFF(0), 0xee, (size_t)NBUF * BUF_LEN);
	/* the limit given at create is ignored (verbs): nothing armed */
	assert_int_equal(ovr_eng_srq_query(p->n[1].eng, f->srq, &a), 0);
	assert_int_equal(a.srq_limit, 0);
	assert_int_equal(a.max_wr, NBUF);
	assert_int_equal(a.max_sge, 2);
	for (uint32_t b = 0; b < NBUF; b++)
		assert_int_equal(post_buf(f, b), 0);
	assert_int_equal(post_buf(f, 0), ENOMEM); /* full */
	a.srq_limit = 16;
	assert_int_equal(
		ovr_eng_srq_modify(p->n[1].eng, f->srq, &a, OVR_SRQ_LIMIT), 0);
	/* more messages than receives: the SRQ runs dry (RNR) and is
	 * refilled as receives complete */
	for (int k = 0; k < NMSG; k++)
		for (int j = 0; j < NQP; j++)
			assert_int_equal(post_one(p, 0, f->qpn[j][0],
						  OVR_WR_SEND,
						  (uint64_t)(j * 1000 + k),
						  SRC_OFF(j, k), msg_len(j, k),
						  0, OVR_SEND_SIGNALED),
					 0);
	while (got < NQP * NMSG || sent_done < NQP * NMSG) {
		assert_true(p->now < 10000000000ull);
		more = ovr_pair_step(p);
		while (ovr_pair_poll(p, 0, 0, &wc)) {
			assert_int_equal(wc.status, OVR_WC_SUCCESS);
			sent_done++;
		}
		while (ovr_pair_poll(p, 1, 1, &wc)) {
			int j = qp_index(f, wc.qp_num), k;
			uint32_t b = (uint32_t)wc.wr_id;

			assert_true(j >= 0);
			assert_int_equal(wc.status, OVR_WC_SUCCESS);
			assert_int_equal(wc.opcode, OVR_WC_RECV);
			assert_int_equal(wc.src_qp, f->qpn[j][0]);
			/* each QP's messages complete in its order, once */
			k = next[j]++;
			assert_true(k < NMSG);
			assert_int_equal(wc.byte_len, msg_len(j, k));
			assert_memory_equal(p->n[1].mem + DST_OFF(b),
					    p->n[0].mem + SRC_OFF(j, k),
					    msg_len(j, k));
			/* nothing beyond the message was written */
			if (msg_len(j, k) < BUF_LEN)
				assert_int_equal(
					p->n[1].mem[DST_OFF(b) + msg_len(j, k)],
					0xee);
			memset(p->n[1].mem + DST_OFF(b), 0xee, BUF_LEN);
			held[nheld++] = b;
			got++;
		}
		/* give buffers back in batches, late enough that the SRQ
		 * runs dry now and then: whatever QPs took completes, so
		 * the batch always fills */
		if (nheld >= NBUF - 2) {
			while (nheld)
				assert_int_equal(post_buf(f, held[--nheld]), 0);
		}
		if (!more && (got < NQP * NMSG || sent_done < NQP * NMSG))
			fail_msg("stalled: %d received, %d sent", got,
				 sent_done);
	}
	for (int j = 0; j < NQP; j++) {
		struct ovr_eng_qp_stats st;

		assert_int_equal(next[j], NMSG);
		assert_int_equal(
			ovr_eng_qp_stats(p->n[1].eng, f->qpn[j][1], &st), 0);
		rnr += st.rnr_naks_sent;
	}
	assert_true(rnr > 0); /* it did run dry */
	/* the limit fired once, for this SRQ, and disarmed */
	assert_int_equal(p->n[1].srq_events[OVR_EV_SRQ_LIMIT_REACHED], 1);
	assert_int_equal(p->n[1].last_srq_event_srqn, f->srq);
	assert_int_equal(ovr_eng_srq_query(p->n[1].eng, f->srq, &a), 0);
	assert_int_equal(a.srq_limit, 0);
	ovr_pair_run(p, NULL, NULL, p->now + 10000000);
	assert_int_equal(ovr_pair_cq_len(p, 1, 1), 0);
	assert_int_equal(p->n[1].events[OVR_EV_QP_FATAL], 0);
}

/* Empty SRQ: RNR NAKs and a wait (rnr_retry 7), no error; unarmed: no
 * limit event. */
static void test_srq_empty_rnr(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_qp_stats st;
	struct ovr_eng_wc wc;

	fill_pattern(p->n[0].mem, 30000, 3);
	assert_int_equal(post_one(p, 0, f->qpn[3][0], OVR_WR_SEND_WITH_IMM, 1,
				  0, 30000, 0, OVR_SEND_SIGNALED),
			 0);
	assert_false(ovr_pair_run(p, NULL, NULL, p->now + 20000000));
	assert_int_equal(ovr_pair_cq_len(p, 0, 0), 0);
	assert_int_equal(ovr_eng_qp_stats(p->n[1].eng, f->qpn[3][1], &st), 0);
	assert_true(st.rnr_naks_sent > 0);
	assert_int_equal(post_buf(f, 9), 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.qp_num, f->qpn[3][1]);
	assert_int_equal(wc.byte_len, 30000);
	assert_memory_equal(p->n[1].mem + DST_OFF(9), p->n[0].mem, 30000);
	assert_true(wait_cq(p, 0, 0, 1));
	assert_true(ovr_pair_poll(p, 0, 0, &wc));
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(p->n[1].srq_events[OVR_EV_SRQ_LIMIT_REACHED], 0);
}

static void test_srq_verbs(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng *e = p->n[1].eng;
	struct ovr_eng_srq_attr a = { 0 };
	struct ovr_eng_srq_init si = { .pd = 2, .attr = { 4, 1, 0 } };
	struct ovr_eng_qp_init qi = { .pd = 1, .cap = { 4, 4, 1, 1, 0 } };
	uint32_t srq2, qpn;
	struct ovr_eng_wc wc;

	/* a QP with an SRQ has no receive queue of its own */
	assert_int_equal(post_recv_one(p, 1, f->qpn[0][1], 1, 0, 64), EINVAL);
	/* create: bad sizes, then an SRQ in another PD a QP cannot use */
	si.attr.max_wr = 0;
	assert_int_equal(ovr_eng_srq_create(e, &si, &srq2), -EINVAL);
	si.attr = (struct ovr_eng_srq_attr){ 4, 17, 0 };
	assert_int_equal(ovr_eng_srq_create(e, &si, &srq2), -EINVAL);
	si.attr = (struct ovr_eng_srq_attr){ 3, 1, 0 };
	assert_int_equal(ovr_eng_srq_create(e, &si, &srq2), 0);
	assert_int_equal(ovr_eng_srq_query(e, srq2, &a), 0);
	assert_int_equal(a.max_wr, 4); /* rounded up */
	qi.srq = srq2;
	assert_int_equal(ovr_eng_qp_create(e, &qi, &qpn), -EINVAL);
	qi.srq = srq2 ^ 0x100; /* no such SRQ */
	assert_int_equal(ovr_eng_qp_create(e, &qi, &qpn), -EINVAL);
	/* modify: limit beyond the size, shrinking, unknown bits */
	a = (struct ovr_eng_srq_attr){ .srq_limit = 5 };
	assert_int_equal(ovr_eng_srq_modify(e, srq2, &a, OVR_SRQ_LIMIT),
			 -EINVAL);
	a.max_wr = 2;
	assert_int_equal(ovr_eng_srq_modify(e, srq2, &a, OVR_SRQ_MAX_WR),
			 -EINVAL);
	assert_int_equal(ovr_eng_srq_modify(e, srq2, &a, 4), -EINVAL);
	/* growing keeps what is posted */
	for (int i = 0; i < 4; i++) {
		struct ovr_eng_sge sge = { ovr_pair_va(p, 1, 0), 8, 0 };
		struct ovr_eng_recv_wr wr = { (uint64_t)i, &sge, 0 };

		assert_int_equal(ovr_eng_post_srq_recv(e, srq2, &wr, 0), 0);
	}
	a = (struct ovr_eng_srq_attr){ .max_wr = 9, .srq_limit = 6 };
	assert_int_equal(ovr_eng_srq_modify(e, srq2, &a,
					    OVR_SRQ_MAX_WR | OVR_SRQ_LIMIT),
			 0);
	assert_int_equal(ovr_eng_srq_query(e, srq2, &a), 0);
	assert_int_equal(a.max_wr, 16);
	assert_int_equal(a.srq_limit, 6);
	for (int i = 4; i < 16; i++) {
		struct ovr_eng_recv_wr wr = { (uint64_t)i, NULL, 0 };

		assert_int_equal(ovr_eng_post_srq_recv(e, srq2, &wr, 0), 0);
	}
	{
		struct ovr_eng_recv_wr wr = { 99, NULL, 0 };

		assert_int_equal(ovr_eng_post_srq_recv(e, srq2, &wr, 0),
				 ENOMEM);
	}
	assert_int_equal(ovr_eng_srq_destroy(e, srq2), 0);
	assert_int_equal(ovr_eng_srq_query(e, srq2, &a), -EINVAL);

	/* the shared SRQ is busy while QPs use it */
	assert_int_equal(ovr_eng_srq_destroy(e, f->srq), -EBUSY);
	/* a QP that took receives and goes to ERROR flushes those only,
	 * and says it took its last: the others stay in the SRQ */
	for (uint32_t b = 0; b < 3; b++)
		assert_int_equal(post_buf(f, b), 0);
	assert_int_equal(post_one(p, 0, f->qpn[0][0], OVR_WR_SEND, 1, 0, 100, 0,
				  OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 0);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	{
		struct ovr_eng_qp_attr qa = { .qp_state = OVR_QPS_ERR };

		assert_int_equal(ovr_eng_qp_modify(e, f->qpn[0][1], &qa,
						   OVR_QP_STATE, p->now),
				 0);
	}
	assert_false(ovr_pair_poll(p, 1, 1, &wc)); /* it held none */
	assert_int_equal(p->n[1].events[OVR_EV_QP_LAST_WQE_REACHED], 1);
	/* another QP gets the remaining two */
	assert_int_equal(post_one(p, 0, f->qpn[1][0], OVR_WR_SEND, 2, 0, 100, 0,
				  OVR_SEND_SIGNALED),
			 0);
	assert_int_equal(post_one(p, 0, f->qpn[1][0], OVR_WR_SEND, 3, 0, 100, 0,
				  OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 1, 1, 2));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.qp_num, f->qpn[1][1]);
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 2);
	for (int j = 0; j < NQP; j++) {
		assert_int_equal(ovr_eng_srq_destroy(e, f->srq), -EBUSY);
		assert_int_equal(ovr_eng_qp_destroy(e, f->qpn[j][1]), 0);
	}
	assert_int_equal(ovr_eng_srq_destroy(e, f->srq), 0);
	assert_int_equal(ovr_eng_post_srq_recv(
				 e, f->srq, &(struct ovr_eng_recv_wr){ 0 }, 0),
			 EINVAL);
	/* its regions are no longer referenced */
	assert_int_equal(ovr_eng_dereg_mr(e, p->n[1].key), 0);
}

/*
 * Deregistering a region that posted receives name: it succeeds (as on
 * hardware; pyverbs deregisters before it destroys the SRQ), and each
 * of those receives completes LOC_PROT_ERR when a message comes for it,
 * its sender REM_OP_ERR: receives waiting in the SRQ and in a QP's own
 * RQ alike. A receive that does not name the region is untouched. A
 * send still outstanding keeps the region busy, and then no receive is
 * touched. Nothing keeps a reference afterwards.
 */
static void test_srq_dereg_posted(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng *e = p->n[1].eng;
	uint64_t va = ovr_pair_va(p, 1, DST_OFF(0));
	uint64_t va0 = ovr_pair_va(p, 0, 1u << 20);
	uint32_t key2, key0;
	struct ovr_eng_wc wc;
	/* wr 20: the region only; 21: the arena's; 22: both */
	struct ovr_eng_sge g20 = { va, 100, 0 }, g21 = { va + 200, 100, 0 },
			   g22[2] = { { va + 400, 50, 0 },
				      { va + 500, 50, 0 } },
			   g30 = { va0, 100, 0 }, g31 = { va0 + 200, 100, 0 };

	assert_int_equal(ovr_eng_reg_mr(e, 1, va, 4096, OVR_ACCESS_LOCAL_WRITE,
					p->n[1].mem + DST_OFF(0), &key2),
			 0);
	g20.lkey = key2;
	g21.lkey = p->n[1].key;
	g22[0].lkey = p->n[1].key;
	g22[1].lkey = key2;
	assert_int_equal(ovr_eng_post_srq_recv(
				 e, f->srq,
				 &(struct ovr_eng_recv_wr){ 20, &g20, 1 }, 0),
			 0);
	assert_int_equal(ovr_eng_post_srq_recv(
				 e, f->srq,
				 &(struct ovr_eng_recv_wr){ 21, &g21, 1 }, 0),
			 0);
	assert_int_equal(ovr_eng_post_srq_recv(
				 e, f->srq,
				 &(struct ovr_eng_recv_wr){ 22, g22, 2 }, 0),
			 0);
	assert_int_equal(ovr_eng_dereg_mr(e, key2), 0);
	assert_int_equal(ovr_eng_dereg_mr(e, key2), -EINVAL); /* gone */
	/* QP 0 takes wr 20, QP 1 wr 21, QP 2 wr 22 */
	for (int j = 0; j < 3; j++) {
		assert_int_equal(post_one(p, 0, f->qpn[j][0], OVR_WR_SEND,
					  (uint64_t)j, 0, 64, 0,
					  OVR_SEND_SIGNALED),
				 0);
		assert_true(wait_cq(p, 1, 1, 1));
		assert_true(ovr_pair_poll(p, 1, 1, &wc));
		assert_int_equal(wc.wr_id, 20 + j);
		assert_int_equal(wc.status,
				 j == 1 ? OVR_WC_SUCCESS : OVR_WC_LOC_PROT_ERR);
		assert_true(wait_cq(p, 0, 0, 1));
		assert_true(ovr_pair_poll(p, 0, 0, &wc));
		assert_int_equal(wc.status,
				 j == 1 ? OVR_WC_SUCCESS : OVR_WC_REM_OP_ERR);
	}
	assert_memory_equal(p->n[1].mem + DST_OFF(0) + 200, p->n[0].mem, 64);

	/* node 0's QPs have RQs of their own: receives 30 and 31 in QP 5
	 * name a region of node 0 that a SEND of QP 6, waiting for a
	 * receive at node 1 (RNR), also uses */
	assert_int_equal(ovr_eng_reg_mr(p->n[0].eng, 1, va0, 4096,
					OVR_ACCESS_LOCAL_WRITE,
					p->n[0].mem + (1u << 20), &key0),
			 0);
	g30.lkey = key0;
	g31.lkey = key0;
	assert_int_equal(
		ovr_eng_post_recv(p->n[0].eng, f->qpn[5][0],
				  &(struct ovr_eng_recv_wr){ 30, &g30, 1 }, 0),
		0);
	assert_int_equal(
		ovr_eng_post_recv(p->n[0].eng, f->qpn[5][0],
				  &(struct ovr_eng_recv_wr){ 31, &g31, 1 }, 0),
		0);
	{
		struct ovr_eng_send_wr wr = { .wr_id = 6,
					      .opcode = OVR_WR_SEND,
					      .send_flags = OVR_SEND_SIGNALED,
					      .sg_list = &g30,
					      .num_sge = 1 };

		assert_int_equal(ovr_eng_post_send(p->n[0].eng, f->qpn[6][0],
						   &wr, p->now),
				 0);
	}
	assert_false(ovr_pair_run(p, NULL, NULL, p->now + 5000000));
	assert_int_equal(ovr_eng_dereg_mr(p->n[0].eng, key0), -EBUSY);
	/* the SEND lands; its completion frees the region */
	assert_int_equal(post_buf(f, 7), 0);
	assert_true(wait_cq(p, 0, 0, 1));
	assert_true(ovr_pair_poll(p, 0, 0, &wc));
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(ovr_eng_dereg_mr(p->n[0].eng, key0), 0);
	/* receive 30 was untouched by the refused dereg, and is revoked
	 * now: a SEND for it fails; 31 behind it, revoked too, completes
	 * with the same error when the QP flushes */
	assert_int_equal(post_one(p, 1, f->qpn[5][1], OVR_WR_SEND, 50, 0, 64, 0,
				  OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 0, 1, 2));
	assert_true(ovr_pair_poll(p, 0, 1, &wc));
	assert_int_equal(wc.wr_id, 30);
	assert_int_equal(wc.status, OVR_WC_LOC_PROT_ERR);
	assert_true(ovr_pair_poll(p, 0, 1, &wc));
	assert_int_equal(wc.wr_id, 31);
	assert_int_equal(wc.status, OVR_WC_LOC_PROT_ERR);
	assert_true(wait_cq(p, 1, 0, 1));
	assert_true(ovr_pair_poll(p, 1, 0, &wc));
	assert_int_equal(wc.status, OVR_WC_REM_OP_ERR);

	/* no reference left behind on node 1 */
	for (int j = 0; j < NQP; j++)
		assert_int_equal(ovr_eng_qp_destroy(e, f->qpn[j][1]), 0);
	assert_int_equal(ovr_eng_srq_destroy(e, f->srq), 0);
	assert_int_equal(ovr_eng_dereg_mr(e, p->n[1].key), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_srq_many_qps, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_srq_many_qps, setup_lossy,
						teardown),
		cmocka_unit_test_setup_teardown(test_srq_empty_rnr, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_srq_empty_rnr, setup_lossy,
						teardown),
		cmocka_unit_test_setup_teardown(test_srq_verbs, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_srq_dereg_posted,
						setup_clean, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
