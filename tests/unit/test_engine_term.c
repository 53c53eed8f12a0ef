// SPDX-License-Identifier: MIT
/*
 * Explicit disconnect (TERMINATE, docs/TRANSPORT.md §7.1): a QP destroyed
 * or moved to ERROR by its own side ends its peer's outstanding work in
 * about one RTT, also when the TERMINATE is lost (the vanished QPN then
 * answers the peer's next packet); forged or stale TERMINATEs are ignored
 * and counted; answers are rate limited and never answer each other. And
 * QPNs tagged with their engine's core (cfg.qpn_tag).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

#include <ovrdma/wire_codec.h>

#include "eng_util.h"

#define RTT_NS 30000ull /* engpair: 15 us each way */

struct fix {
	struct ovr_pair *p;
	uint32_t qpn[2];
};

/* A connected pair; engines' QPNs tagged @tag of @tag_bits bits */
static struct fix *setup_tag(double loss, uint32_t term_burst, uint32_t tag,
			     uint32_t tag_bits)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct ovr_pair_cfg cfg;
	struct ovr_pair_qp_params qp;

	assert_non_null(f);
	ovr_pair_cfg_default(&cfg);
	cfg.mem_bytes = 24u << 20;
	cfg.eng.term_burst = term_burst;
	cfg.eng.qpn_tag = tag;
	cfg.eng.qpn_tag_bits = tag_bits;
	for (int i = 0; i < 2 && loss > 0; i++) {
		cfg.link[i].loss = loss;
		cfg.link[i].reorder = 0.05;
		cfg.link[i].reorder_ns = 20000;
		cfg.link[i].dup = 0.02;
		cfg.link[i].jitter_ns = 5000;
	}
	ovr_pair_qp_params_default(&qp);
	f->p = ovr_pair_create(&cfg);
	assert_non_null(f->p);
	assert_int_equal(ovr_pair_connect(f->p, &qp, 0, f->qpn), 0);
	return f;
}

static struct fix *setup_with(double loss, uint32_t term_burst)
{
	return setup_tag(loss, term_burst, 0, 0);
}

static int setup_clean(void **state)
{
	*state = setup_with(0, 64);
	return 0;
}

static int setup_lossy(void **state)
{
	*state = setup_with(0.05, 64);
	return 0;
}

static int setup_burst3(void **state)
{
	*state = setup_with(0, 3);
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	ovr_pair_destroy(f->p);
	free(f);
	return 0;
}

static uint32_t qp_state(struct fix *f, int n)
{
	struct ovr_eng_qp_attr a;

	assert_int_equal(ovr_eng_qp_query(f->p->n[n].eng, f->qpn[n], &a), 0);
	return a.qp_state;
}

static void eng_stats(struct fix *f, int n, struct ovr_eng_stats *st)
{
	ovr_eng_get_stats(f->p->n[n].eng, st);
}

/* Drop the first @left TERMINATEs of the reasons in @mask (bits). */
struct dropper {
	unsigned int mask;
	int left;
};

static bool drop_term(struct ovr_pair_node *n, const uint8_t *pdu, uint32_t len,
		      void *ctx)
{
	struct dropper *d = ctx;
	struct ovr_wire_pkt p;

	(void)n;
	if (d->left <= 0 || ovr_wire_parse(pdu, len, &p, NULL) ||
	    p.opcode != OVR_OP_TERMINATE ||
	    !(d->mask & (1u << p.u.term.reason)))
		return false;
	d->left--;
	return true;
}

/*
 * Node 1 keeps node 0 busy (a long WRITE, then more WRs) and has receives
 * posted; node 0 goes away by @destroy (or ERROR). Node 1's send WRs end
 * with REM_ABORT_ERR then FLUSH, its receives flush, QP_FATAL is raised,
 * all within @limit_ns of the event - far less than the retry budget
 * (8 x 67 ms).
 */
static void peer_goes_away(struct fix *f, bool destroy, uint64_t limit_ns,
			   uint32_t want_verr)
{
	struct ovr_pair *p = f->p;
	struct ovr_eng_stats st;
	struct ovr_eng_wc wc;
	uint64_t t0;

	for (int i = 0; i < 3; i++)
		assert_int_equal(post_recv_one(p, 1, f->qpn[1],
					       100 + (uint64_t)i, 0, 64),
				 0);
	assert_int_equal(post_one(p, 1, f->qpn[1], OVR_WR_RDMA_WRITE, 1, 0,
				  8u << 20, 0, OVR_SEND_SIGNALED),
			 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(post_one(p, 1, f->qpn[1], OVR_WR_RDMA_WRITE,
					  2 + (uint64_t)i, 0, 4096, 0, 0),
				 0);
	/* mid-transfer: well into the 8 MB (670 us at 100 Gbps) */
	ovr_pair_run(p, NULL, NULL, p->now + 100000);
	assert_int_equal(ovr_pair_cq_len(p, 1, 0), 0);
	t0 = p->now;
	if (destroy) {
		assert_int_equal(ovr_eng_qp_destroy(p->n[0].eng, f->qpn[0]), 0);
	} else {
		struct ovr_eng_qp_attr a = { .qp_state = OVR_QPS_ERR };

		assert_int_equal(ovr_eng_qp_modify(p->n[0].eng, f->qpn[0], &a,
						   OVR_QP_STATE, p->now),
				 0);
	}
	assert_true(wait_cq(p, 1, 0, 4));
	assert_true(p->now - t0 < limit_ns);
	assert_true(ovr_pair_poll(p, 1, 0, &wc));
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, OVR_WC_REM_ABORT_ERR);
	assert_int_equal(wc.vendor_err, want_verr);
	assert_int_equal(wc.qp_num, f->qpn[1]);
	for (int i = 0; i < 3; i++) {
		assert_true(ovr_pair_poll(p, 1, 0, &wc));
		assert_int_equal(wc.wr_id, 2 + (uint64_t)i);
		assert_int_equal(wc.status, OVR_WC_WR_FLUSH_ERR);
	}
	assert_false(ovr_pair_poll(p, 1, 0, &wc));
	for (int i = 0; i < 3; i++) {
		assert_true(ovr_pair_poll(p, 1, 1, &wc));
		assert_int_equal(wc.wr_id, 100 + (uint64_t)i);
		assert_int_equal(wc.status, OVR_WC_WR_FLUSH_ERR);
	}
	assert_int_equal(qp_state(f, 1), OVR_QPS_ERR);
	assert_int_equal(p->n[1].events[OVR_EV_QP_FATAL], 1);
	eng_stats(f, 1, &st);
	assert_int_equal(st.rx_term, 1);
	assert_int_equal(st.rx_term_bad, 0);
	/* node 1 is in ERROR for a cause it did not make: it sends no
	 * TERMINATE of its own */
	assert_int_equal(st.tx_term, 0);
	/* everything settles: no packets ping-pong between the two */
	ovr_pair_run(p, NULL, NULL, p->now + 100000000);
	assert_int_equal(ovr_link_inflight(p->n[0].out), 0);
	assert_int_equal(ovr_link_inflight(p->n[1].out), 0);
}

static void test_destroy_mid_transfer(void **state)
{
	struct fix *f = *state;
	struct ovr_eng_stats st;

	peer_goes_away(f, true, 2 * RTT_NS, OVR_VERR_TERM + OVR_TERM_DESTROYED);
	eng_stats(f, 0, &st);
	assert_true(st.tx_term >= 1);
	assert_int_equal(st.qps, 0);
}

/* With loss the TERMINATE itself may be lost (then the answer to node 1's
 * next packet does it): either reason is fine, and the budget allows for
 * a few losses. */
static void peer_goes_away_any(struct fix *f)
{
	struct ovr_pair *p = f->p;
	struct ovr_eng_wc wc;
	uint64_t t0;

	assert_int_equal(post_one(p, 1, f->qpn[1], OVR_WR_RDMA_WRITE, 1, 0,
				  8u << 20, 0, OVR_SEND_SIGNALED),
			 0);
	assert_int_equal(post_one(p, 1, f->qpn[1], OVR_WR_SEND, 2, 0, 100, 0,
				  OVR_SEND_SIGNALED),
			 0);
	ovr_pair_run(p, NULL, NULL, p->now + 100000);
	t0 = p->now;
	assert_int_equal(ovr_eng_qp_destroy(p->n[0].eng, f->qpn[0]), 0);
	assert_true(wait_cq(p, 1, 0, 2));
	assert_true(p->now - t0 < 1000000); /* 1 ms vs a 537 ms budget */
	assert_true(ovr_pair_poll(p, 1, 0, &wc));
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, OVR_WC_REM_ABORT_ERR);
	assert_true(wc.vendor_err == OVR_VERR_TERM + OVR_TERM_DESTROYED ||
		    wc.vendor_err == OVR_VERR_TERM + OVR_TERM_NO_QP_SEQ);
	assert_true(ovr_pair_poll(p, 1, 0, &wc));
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, OVR_WC_WR_FLUSH_ERR);
	assert_int_equal(p->n[1].events[OVR_EV_QP_FATAL], 1);
}

static void test_destroy_lossy(void **state)
{
	peer_goes_away_any(*state);
}

static void test_destroy_term_lost(void **state)
{
	struct fix *f = *state;
	struct dropper d = { 1u << OVR_TERM_DESTROYED, 1 };
	struct ovr_eng_stats st;

	f->p->n[0].tx_filter = drop_term;
	f->p->n[0].tx_filter_ctx = &d;
	peer_goes_away(f, true, 2 * RTT_NS, OVR_VERR_TERM + OVR_TERM_NO_QP_SEQ);
	assert_int_equal(f->p->n[0].tx_filtered, 1);
	eng_stats(f, 0, &st);
	assert_true(st.tx_term >= 2); /* the lost one and an answer */
	assert_true(st.rx_no_qp >= 1);
}

static void test_modify_error(void **state)
{
	peer_goes_away(*state, false, 2 * RTT_NS,
		       OVR_VERR_TERM + OVR_TERM_ERROR);
}

/* The QP in ERROR repeats its TERMINATE to a peer still sending. */
static void test_modify_error_term_lost(void **state)
{
	struct fix *f = *state;
	struct dropper d = { 1u << OVR_TERM_ERROR, 1 };
	struct ovr_eng_stats st;

	f->p->n[0].tx_filter = drop_term;
	f->p->n[0].tx_filter_ctx = &d;
	peer_goes_away(f, false, 2 * RTT_NS, OVR_VERR_TERM + OVR_TERM_ERROR);
	assert_int_equal(f->p->n[0].tx_filtered, 1);
	eng_stats(f, 0, &st);
	assert_true(st.rx_bad_state >= 1);
}

/* Node 1 only receives; node 0 sends and vanishes with its TERMINATE
 * lost: node 1's ACKs to the vanished QPN are answered, its remaining
 * receives flush. */
static void test_destroy_term_lost_ack_answer(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct dropper d = { 1u << OVR_TERM_DESTROYED, 1 };
	struct ovr_eng_stats st;
	struct ovr_eng_wc wc;
	uint64_t t0, idle;

	p->n[0].tx_filter = drop_term;
	p->n[0].tx_filter_ctx = &d;
	for (int i = 0; i < 4; i++)
		assert_int_equal(post_recv_one(p, 1, f->qpn[1],
					       10 + (uint64_t)i,
					       (size_t)i << 20, 1u << 20),
				 0);
	fill_pattern(p->n[0].mem, 100000, 42);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 1, 0, 100000, 0,
				  OVR_SEND_SIGNALED),
			 0);
	/* until the last segment has left node 0, not until it arrived */
	do {
		struct ovr_eng_qp_stats q;

		assert_true(ovr_pair_step(p));
		assert_int_equal(ovr_eng_qp_stats(p->n[0].eng, f->qpn[0], &q),
				 0);
		if (q.tx_pkts >= 25)
			break;
	} while (true);
	assert_int_equal(ovr_pair_cq_len(p, 0, 0), 0);
	t0 = p->now;
	assert_int_equal(ovr_eng_qp_destroy(p->n[0].eng, f->qpn[0]), 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(p->now - t0 < 3 * RTT_NS);
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.wr_id, 10);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 100000);
	assert_memory_equal(p->n[1].mem, p->n[0].mem, 100000);
	/* node 1 owed nothing: its QP stays up, receives still posted (as
	 * on IB when a peer vanishes) */
	{
		struct cq_wait w = { 1, 1, 1 };

		assert_false(ovr_pair_run(p, cq_has, &w, p->now + 10 * RTT_NS));
	}
	assert_int_equal(qp_state(f, 1), OVR_QPS_RTS);
	assert_int_equal(p->n[1].events[OVR_EV_QP_FATAL], 0);
	eng_stats(f, 1, &st);
	/* (each of its ACKs to the gone QPN was answered) */
	assert_true(st.rx_term >= 1);
	assert_int_equal(st.rx_term_idle, st.rx_term);
	idle = st.rx_term_idle;
	/* its next send reaches no QP and is answered: it fails at once,
	 * the receives flush */
	t0 = p->now;
	assert_int_equal(post_one(p, 1, f->qpn[1], OVR_WR_RDMA_WRITE, 77, 0,
				  4096, 0, OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 1, 0, 1));
	assert_true(p->now - t0 < 3 * RTT_NS);
	assert_true(ovr_pair_poll(p, 1, 0, &wc));
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.status, OVR_WC_REM_ABORT_ERR);
	assert_true(wait_cq(p, 1, 1, 3));
	for (int i = 1; i < 4; i++) {
		assert_true(ovr_pair_poll(p, 1, 1, &wc));
		assert_int_equal(wc.wr_id, 10 + (uint64_t)i);
		assert_int_equal(wc.status, OVR_WC_WR_FLUSH_ERR);
	}
	assert_int_equal(qp_state(f, 1), OVR_QPS_ERR);
	assert_int_equal(p->n[1].events[OVR_EV_QP_FATAL], 1);
	eng_stats(f, 1, &st);
	assert_int_equal(st.rx_term_idle, idle);
	assert_true(st.rx_term > idle);
	eng_stats(f, 0, &st);
	assert_true(st.tx_term >= 2);
}

/* Drops every ACK (node 1's, in the test below). */
static bool drop_acks(struct ovr_pair_node *n, const uint8_t *pdu, uint32_t len,
		      void *ctx)
{
	struct ovr_wire_pkt p;

	(void)n;
	(void)ctx;
	return !ovr_wire_parse(pdu, len, &p, NULL) && p.opcode == OVR_OP_ACK;
}

/*
 * A clean teardown (ibv_rc_pingpong's end): node 1 received node 0's
 * SEND and destroys its QP before its ACK reached node 0 (here: never).
 * The TERMINATE acknowledges what node 1 received, so node 0's SEND
 * completes successfully, and node 0's QP, which owes nothing more, stays
 * in RTS with its receives posted: no error anywhere.
 */
static void test_destroy_after_delivery(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_stats st;
	struct ovr_eng_wc wc;

	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 1, 0, 1u << 20), 0);
	assert_int_equal(post_recv_one(p, 0, f->qpn[0], 2, 0, 1u << 20), 0);
	p->n[1].tx_filter = drop_acks;
	fill_pattern(p->n[0].mem, 20000, 5);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 3, 0, 20000, 0,
				  OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(ovr_pair_cq_len(p, 0, 0), 0); /* no ACK came */
	assert_int_equal(ovr_eng_qp_destroy(p->n[1].eng, f->qpn[1]), 0);
	assert_true(wait_cq(p, 0, 0, 1));
	assert_true(ovr_pair_poll(p, 0, 0, &wc));
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	{
		struct cq_wait w = { 0, 1, 1 };

		assert_false(ovr_pair_run(p, cq_has, &w, p->now + 10 * RTT_NS));
	}
	assert_int_equal(qp_state(f, 0), OVR_QPS_RTS);
	assert_int_equal(p->n[0].events[OVR_EV_QP_FATAL], 0);
	eng_stats(f, 0, &st);
	assert_int_equal(st.rx_term, 1);
	assert_int_equal(st.rx_term_idle, 1);
}

/* A TERMINATE built by hand, delivered to node @n. */
static void inject_term(struct fix *f, int n, uint32_t dqpn, uint32_t sqpn,
			uint8_t reason, uint32_t psn)
{
	struct ovr_wire_pkt p = {
		.version = OVR_WIRE_VERSION,
		.opcode = OVR_OP_TERMINATE,
		.dqpn = dqpn,
		.sqpn = sqpn,
		.tsval = 1,
		.u.term = { .reason = reason, .psn = psn & 0xffffff },
	};
	uint8_t buf[128];
	int len = ovr_wire_build(&p, buf, sizeof(buf));

	assert_true(len > 0);
	ovr_eng_rx_from(f->p->n[n].eng, f->p->now, buf, (uint32_t)len, false,
			(uint64_t)(1 - n));
}

static void test_forged_terminate(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_qp_stats q0, q1;
	struct ovr_eng_stats st, st0;

	/* some traffic both ways so the PSNs are not where they started */
	fill_pattern(p->n[0].mem, 50000, 7);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, 1, 0,
				  50000, 1u << 20, OVR_SEND_SIGNALED),
			 0);
	assert_int_equal(post_one(p, 1, f->qpn[1], OVR_WR_RDMA_WRITE, 1, 0,
				  20000, 2u << 20, OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 0, 0, 1));
	assert_true(wait_cq(p, 1, 0, 1));
	ovr_pair_run(p, NULL, NULL, p->now + 1000000);
	assert_int_equal(ovr_eng_qp_stats(p->n[0].eng, f->qpn[0], &q0), 0);
	assert_int_equal(ovr_eng_qp_stats(p->n[1].eng, f->qpn[1], &q1), 0);
	eng_stats(f, 1, &st0);

	/* from a QPN that is not node 1's peer */
	inject_term(f, 1, f->qpn[1], f->qpn[0] ^ 0x800, OVR_TERM_DESTROYED,
		    q0.snd_nxt);
	/* the peer's next PSN, but outside node 1's receive window */
	inject_term(f, 1, f->qpn[1], f->qpn[0], OVR_TERM_DESTROYED,
		    q0.snd_nxt + 5000);
	inject_term(f, 1, f->qpn[1], f->qpn[0], OVR_TERM_ERROR,
		    q0.snd_nxt - 1); /* behind what node 1 received */
	/* an echo of a packet node 1 has no longer outstanding */
	inject_term(f, 1, f->qpn[1], f->qpn[0], OVR_TERM_NO_QP_SEQ,
		    q1.snd_nxt - 1);
	/* an echo of an ACK from the future */
	inject_term(f, 1, f->qpn[1], f->qpn[0], OVR_TERM_NO_QP_ACK,
		    q1.rcv_nxt + 1);
	/* to a QPN that does not exist: counted, never answered */
	inject_term(f, 1, f->qpn[1] ^ 0x800, f->qpn[0], OVR_TERM_DESTROYED,
		    q0.snd_nxt);
	eng_stats(f, 1, &st);
	assert_int_equal(st.rx_term_bad - st0.rx_term_bad, 5);
	assert_int_equal(st.rx_no_qp - st0.rx_no_qp, 1);
	assert_int_equal(st.rx_term, 0);
	assert_int_equal(st.tx_term, 0);
	assert_int_equal(qp_state(f, 1), OVR_QPS_RTS);
	assert_int_equal(p->n[1].events[OVR_EV_QP_FATAL], 0);
	/* the QP still works */
	fill_pattern(p->n[0].mem, 5000, 8);
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 5, 4u << 20, 8192), 0);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 2, 0, 5000, 0,
				  OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_memory_equal(p->n[1].mem + (4u << 20), p->n[0].mem, 5000);
	assert_true(wait_cq(p, 0, 0, 2));

	/* and a TERMINATE that does fit ends it (the check is not just
	 * "never"), when node 1 has work outstanding */
	assert_int_equal(ovr_eng_qp_stats(p->n[0].eng, f->qpn[0], &q0), 0);
	assert_int_equal(post_one(p, 1, f->qpn[1], OVR_WR_RDMA_WRITE, 9, 0,
				  4096, 0, OVR_SEND_SIGNALED),
			 0);
	inject_term(f, 1, f->qpn[1], f->qpn[0], OVR_TERM_DESTROYED, q0.snd_nxt);
	eng_stats(f, 1, &st);
	assert_int_equal(st.rx_term, 1);
	assert_int_equal(qp_state(f, 1), OVR_QPS_ERR);
	assert_int_equal(p->n[1].events[OVR_EV_QP_FATAL], 1);
	/* a second one finds the QP in ERROR already */
	inject_term(f, 1, f->qpn[1], f->qpn[0], OVR_TERM_DESTROYED, q0.snd_nxt);
	eng_stats(f, 1, &st);
	assert_int_equal(st.rx_term, 1);
	assert_int_equal(p->n[1].events[OVR_EV_QP_FATAL], 1);
}

/* A sequenced packet or an ACK for a QPN that does not exist, from node 1 */
static void inject_noqp(struct fix *f, uint8_t opcode, uint64_t from)
{
	struct ovr_wire_pkt p = {
		.version = OVR_WIRE_VERSION,
		.opcode = opcode,
		.dqpn = f->qpn[0] ^ 0x800,
		.sqpn = f->qpn[1],
		.tsval = 1,
	};
	uint8_t buf[256];
	int len;

	if (opcode == OVR_OP_SEND) {
		p.psn = 77;
		p.flags = OVR_F_LAST;
	} else if (opcode == OVR_OP_ACK || opcode == OVR_OP_NAK) {
		p.flags = OVR_F_ACK;
		p.ack_psn = 55;
		if (opcode == OVR_OP_NAK)
			p.u.nak.code = OVR_NAK_REM_OP;
	} else if (opcode == OVR_OP_TERMINATE) {
		p.u.term.reason = OVR_TERM_NO_QP_SEQ;
		p.u.term.psn = 3;
	}
	len = ovr_wire_build(&p, buf, sizeof(buf));
	assert_true(len > 0);
	ovr_eng_rx_from(f->p->n[0].eng, f->p->now, buf, (uint32_t)len, false,
			from);
}

static bool capture(struct ovr_pair_node *n, const uint8_t *pdu, uint32_t len,
		    void *ctx)
{
	struct ovr_wire_pkt *out = ctx;

	(void)n;
	assert_int_equal(ovr_wire_parse(pdu, len, out, NULL), 0);
	return true; /* and drop it */
}

static void test_noqp_answers(void **state)
{
	struct fix *f = *state;
	struct ovr_pair_node *n0 = &f->p->n[0];
	struct ovr_wire_pkt got;
	struct ovr_eng_stats st;

	n0->tx_filter = capture;
	n0->tx_filter_ctx = &got;
	/* a sequenced packet: answered, its PSN echoed, to where it came
	 * from, on behalf of no QP */
	memset(&got, 0, sizeof(got));
	inject_noqp(f, OVR_OP_SEND, 1);
	assert_int_equal(got.opcode, OVR_OP_TERMINATE);
	assert_int_equal(got.dqpn, f->qpn[1]);
	assert_int_equal(got.sqpn, f->qpn[0] ^ 0x800);
	assert_int_equal(got.u.term.reason, OVR_TERM_NO_QP_SEQ);
	assert_int_equal(got.u.term.psn, 77);
	assert_int_equal(n0->last_peer, 1);
	assert_int_equal(n0->last_user, 0);
	/* an ACK: its ack_psn echoed */
	inject_noqp(f, OVR_OP_ACK, 1);
	assert_int_equal(got.u.term.reason, OVR_TERM_NO_QP_ACK);
	assert_int_equal(got.u.term.psn, 55);
	/* neither a TERMINATE, a NAK nor a CNP is answered, nor anything
	 * whose sender is unknown */
	inject_noqp(f, OVR_OP_TERMINATE, 1);
	inject_noqp(f, OVR_OP_NAK, 1);
	inject_noqp(f, OVR_OP_CNP, 1);
	inject_noqp(f, OVR_OP_SEND, OVR_ENG_FROM_NONE);
	ovr_eng_get_stats(n0->eng, &st);
	assert_int_equal(st.tx_term, 2);
	assert_int_equal(n0->tx_filtered, 2);
	assert_int_equal(st.term_limited, 1);
	/* the burst (3) is spent after one more; time refills it */
	for (int i = 0; i < 10; i++)
		inject_noqp(f, OVR_OP_SEND, 1);
	ovr_eng_get_stats(n0->eng, &st);
	assert_int_equal(st.tx_term, 3);
	assert_int_equal(st.term_limited, 10);
	f->p->now += 200000; /* 10000/s: 2 tokens in 200 us */
	for (int i = 0; i < 10; i++)
		inject_noqp(f, OVR_OP_SEND, 1);
	ovr_eng_get_stats(n0->eng, &st);
	assert_int_equal(st.tx_term, 5);
	assert_int_equal(st.term_limited, 18);
}

/*
 * Engines of several dataplane cores on one node (cfg.qpn_tag): every
 * QPN carries its engine's tag above the slot, a packet for a QPN whose
 * tag is another engine's reaches no QP here (answered as for a QPN that
 * does not exist, never delivered to the QP in the same slot), and the
 * configurations that would not fit 24 bits are refused.
 */
#define TAG_BITS 3u
#define TAG 5u

static int setup_tagged(void **state)
{
	*state = setup_tag(0, 8, TAG, TAG_BITS);
	return 0;
}

static void test_qpn_tag(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_pair_node *n0 = &p->n[0];
	struct ovr_pair_cfg cfg;
	uint32_t sb, other, qpn;
	struct ovr_eng_qp_attr a;
	struct ovr_wire_pkt got, pkt = {
		.version = OVR_WIRE_VERSION,
		.opcode = OVR_OP_SEND,
		.flags = OVR_F_LAST,
		.psn = 9,
		.sqpn = f->qpn[1],
		.tsval = 1,
	};
	struct ovr_eng_wc wc;
	struct ovr_eng_stats st;
	uint8_t buf[256];
	int len;

	ovr_pair_cfg_default(&cfg);
	sb = ovr_eng_slot_bits(cfg.eng.max_qp);
	assert_true(sb >= 4);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ovr_eng_qpn_tag(f->qpn[i], sb, TAG_BITS), TAG);
		assert_true(f->qpn[i] >> (sb + TAG_BITS)); /* a generation */
	}
	/* the QPs work */
	fill_pattern(p->n[0].mem, 3000, 7);
	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 1, 8192, 4096), 0);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 2, 0, 3000, 0,
				  OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 1, 1, 1));
	assert_true(ovr_pair_poll(p, 1, 1, &wc));
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_memory_equal(p->n[1].mem + 8192, p->n[0].mem, 3000);
	/* the same slot and generation under another engine's tag */
	other = f->qpn[0] ^ (2u << sb);
	assert_int_not_equal(ovr_eng_qp_query(n0->eng, other, &a), 0);
	memset(&got, 0, sizeof(got));
	n0->tx_filter = capture;
	n0->tx_filter_ctx = &got;
	pkt.dqpn = other;
	len = ovr_wire_build(&pkt, buf, sizeof(buf));
	assert_true(len > 0);
	ovr_eng_rx_from(n0->eng, p->now, buf, (uint32_t)len, false, 1);
	assert_int_equal(got.opcode, OVR_OP_TERMINATE);
	assert_int_equal(got.u.term.reason, OVR_TERM_NO_QP_SEQ);
	assert_int_equal(got.sqpn, other);
	ovr_eng_get_stats(n0->eng, &st);
	assert_int_equal(st.rx_no_qp, 1);
	n0->tx_filter = NULL;
	assert_int_equal(qp_state(f, 0), OVR_QPS_RTS);
	/* QPNs made and unmade keep the tag, through generations */
	for (int i = 0; i < 3000; i++) {
		struct ovr_eng_qp_init init = {
			.pd = n0->pd,
			.send_cq = 0,
			.recv_cq = 1,
			.cap = { 4, 4, 1, 1, 0 },
		};

		assert_int_equal(ovr_eng_qp_create(n0->eng, &init, &qpn), 0);
		assert_int_equal(ovr_eng_qpn_tag(qpn, sb, TAG_BITS), TAG);
		assert_true(qpn > 1 && qpn <= 0xffffff);
		assert_int_equal(ovr_eng_qp_destroy(n0->eng, qpn), 0);
	}
	/* what does not fit is refused */
	cfg.eng.qpn_tag_bits = 2;
	cfg.eng.qpn_tag = 4;
	errno = 0;
	assert_null(ovr_eng_create(&cfg.eng, &p->ops, n0));
	assert_int_equal(errno, EINVAL);
	cfg.eng.qpn_tag = 3;
	cfg.eng.max_qp = 1u << 19;
	assert_null(ovr_eng_create(&cfg.eng, &p->ops, n0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_destroy_after_delivery,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_destroy_mid_transfer,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_destroy_term_lost,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(
			test_destroy_term_lost_ack_answer, setup_clean,
			teardown),
		cmocka_unit_test_setup_teardown(test_modify_error, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_modify_error_term_lost,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_destroy_lossy, setup_lossy,
						teardown),
		cmocka_unit_test_setup_teardown(test_forged_terminate,
						setup_clean, teardown),
		cmocka_unit_test_setup_teardown(test_forged_terminate,
						setup_lossy, teardown),
		cmocka_unit_test_setup_teardown(test_noqp_answers, setup_burst3,
						teardown),
		cmocka_unit_test_setup_teardown(test_qpn_tag, setup_tagged,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
