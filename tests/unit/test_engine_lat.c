// SPDX-License-Identifier: MIT
/*
 * Single-operation latency under loss (docs/TRANSPORT.md §4.1): what
 * perftest's ib_read_lat, ib_atomic_lat, ib_send_lat and ib_write_lat do
 * - one operation at a time, the next posted the moment the last one
 * completes - over a link with 2 % loss and 1 % reordering each way.
 *
 * A lost packet of such an operation has nothing behind it to reveal the
 * loss: it is recovered by a tail-loss probe or the RTO, so what the
 * recovery costs depends on the RTT estimate and the backoff at the side
 * that sent it. Both must stay near the real RTT (30 us here): no
 * operation may wait for a backed-off RTO of hundreds of milliseconds,
 * which is what READs and atomics did while their estimators got no
 * samples: only pure ACKs were sampled, and in this exchange nearly every
 * ACK is piggybacked (the response acknowledges the request, the next
 * request the response).
 *
 * Every operation's time is taken on the simulated clock; the bounds are
 * in units of the clean RTT and of the minimum RTO (200 us), far below
 * the 500 ms cap of a backed-off RTO.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ovrdma/wire_codec.h>

#include "eng_util.h"

#define RTT_NS 30000ull /* engpair: 15 us each way */
#define MIN_RTO_NS 200000ull /* engine default */
#define NOPS 2000

struct fix {
	struct ovr_pair *p;
	uint32_t qpn[2];
	uint64_t think_ns; /* between a completion and the next post */
	uint64_t lat[NOPS];
};

static int setup_with(void **state, uint64_t think_ns)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct ovr_pair_cfg cfg;
	struct ovr_pair_qp_params qp;

	assert_non_null(f);
	ovr_pair_cfg_default(&cfg);
	cfg.mem_bytes = 1u << 20;
	for (int i = 0; i < 2; i++) {
		cfg.link[i].loss = 0.02;
		cfg.link[i].reorder = 0.01;
		cfg.link[i].reorder_ns = 20000;
		cfg.link[i].jitter_ns = 2000;
		cfg.link[i].seed = 101 + (uint64_t)i;
	}
	ovr_pair_qp_params_default(&qp);
	f->p = ovr_pair_create(&cfg);
	assert_non_null(f->p);
	assert_int_equal(ovr_pair_connect(f->p, &qp, 0, f->qpn), 0);
	f->think_ns = think_ns;
	*state = f;
	return 0;
}

/* The application answers at once: its next packet goes out in the poll
 * that completed the last operation, carrying the ACK ... */
static int setup(void **state)
{
	return setup_with(state, 0);
}

/* ... or after 8 us, longer than the peer's delayed-ACK timer (5 us), as
 * perftest does through the provider and the node service. */
static int setup_think(void **state)
{
	return setup_with(state, 8000);
}

/* Let @ns pass, the engines running. */
static void idle(struct ovr_pair *p, uint64_t ns)
{
	ovr_pair_run_to(p, p->now + ns);
}

/* The application thinks. */
static void think(struct fix *f)
{
	if (f->think_ns)
		idle(f->p, f->think_ns);
}

static int teardown(void **state)
{
	struct fix *f = *state;

	ovr_pair_destroy(f->p);
	free(f);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sort the samples, print the distribution, check the bounds. */
static void check(struct fix *f, const char *what)
{
	struct ovr_eng_qp_stats st[2];
	uint64_t p50, p99, p999, max;

	qsort(f->lat, NOPS, sizeof(f->lat[0]), cmp_u64);
	p50 = f->lat[NOPS / 2];
	p99 = f->lat[NOPS * 99 / 100];
	p999 = f->lat[NOPS * 999 / 1000];
	max = f->lat[NOPS - 1];
	for (int n = 0; n < 2; n++)
		assert_int_equal(
			ovr_eng_qp_stats(f->p->n[n].eng, f->qpn[n], &st[n]), 0);
	printf("%-6s think %2llu us n=%d us: p50 %.1f p99 %.1f p99.9 %.1f max %.1f; "
	       "tlp %llu/%llu resp_probes %llu rto %llu/%llu "
	       "srtt %.1f/%.1f us rto %.1f/%.1f us\n",
	       what, (unsigned long long)(f->think_ns / 1000), NOPS, p50 / 1e3,
	       p99 / 1e3, p999 / 1e3, max / 1e3,
	       (unsigned long long)st[0].tlp_count,
	       (unsigned long long)st[1].tlp_count,
	       (unsigned long long)st[1].resp_probes,
	       (unsigned long long)st[0].rto_count,
	       (unsigned long long)st[1].rto_count, st[0].srtt_ns / 1e3,
	       st[1].srtt_ns / 1e3, st[0].rto_ns / 1e3, st[1].rto_ns / 1e3);
	/* the clean round trip, plus jitter and the responder's turnaround */
	assert_true(p50 < RTT_NS + 10000);
	/* about 4 % of operations lose a packet: a probe after ~2 srtt
	 * recovers each, p99 is one of them */
	assert_true(p99 < MIN_RTO_NS);
	/* a probe lost as well: the unbacked-off RTO, doubled a few times
	 * at most - never the backed-off cap (500 ms) */
	assert_true(max < 8 * MIN_RTO_NS);
	/* the estimators did not end up backed off either */
	for (int n = 0; n < 2; n++)
		assert_true(st[n].rto_ns < 2 * MIN_RTO_NS);
}

/* One READ or atomic at a time from node 0, as ib_read_lat does. */
static void run_rd(struct fix *f, uint32_t opcode)
{
	struct ovr_pair *p = f->p;
	struct ovr_eng_wc wc;

	for (int i = 0; i < NOPS; i++) {
		uint64_t t0;

		think(f);
		t0 = p->now;
		assert_int_equal(post_one(p, 0, f->qpn[0], opcode, (uint64_t)i,
					  0, 8, 4096, OVR_SEND_SIGNALED),
				 0);
		assert_true(wait_cq(p, 0, 0, 1));
		assert_true(ovr_pair_poll(p, 0, 0, &wc));
		assert_int_equal(wc.status, OVR_WC_SUCCESS);
		assert_int_equal(wc.wr_id, (uint64_t)i);
		f->lat[i] = p->now - t0;
	}
}

static void test_read_lat(void **state)
{
	struct fix *f = *state;

	run_rd(f, OVR_WR_RDMA_READ);
	check(f, "read");
}

static void test_atomic_lat(void **state)
{
	struct fix *f = *state;

	run_rd(f, OVR_WR_ATOMIC_FETCH_AND_ADD);
	check(f, "atomic");
}

/* Drain the send CQs, checking every completion succeeded. */
static void drain_send(struct fix *f)
{
	struct ovr_eng_wc wc;

	for (int n = 0; n < 2; n++)
		while (ovr_pair_poll(f->p, n, 0, &wc))
			assert_int_equal(wc.status, OVR_WC_SUCCESS);
}

/* SEND ping-pong, as ib_send_lat: each side answers the message it
 * receives with its own; the time is the round trip. */
static void test_send_lat(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_wc wc;

	for (int n = 0; n < 2; n++)
		for (int i = 0; i < 8; i++)
			assert_int_equal(
				post_recv_one(p, n, f->qpn[n], 0, 8192, 64), 0);
	for (int i = 0; i < NOPS; i++) {
		f->lat[i] = 0;
		for (int n = 0; n < 2; n++) {
			uint64_t t0;

			think(f);
			t0 = p->now;
			assert_int_equal(post_one(p, n, f->qpn[n], OVR_WR_SEND,
						  0, 0, 8, 0,
						  OVR_SEND_SIGNALED),
					 0);
			assert_true(wait_cq(p, 1 - n, 1, 1));
			assert_true(ovr_pair_poll(p, 1 - n, 1, &wc));
			assert_int_equal(wc.status, OVR_WC_SUCCESS);
			f->lat[i] += p->now - t0;
			assert_int_equal(post_recv_one(p, 1 - n, f->qpn[1 - n],
						       0, 8192, 64),
					 0);
		}
		drain_send(f);
	}
	check(f, "send");
}

struct mem_wait {
	const volatile uint32_t *word;
	uint32_t want;
};

static bool mem_has(struct ovr_pair *p, void *ctx)
{
	const struct mem_wait *w = ctx;

	(void)p;
	return *w->word == w->want;
}

/* WRITE ping-pong, as ib_write_lat: each side polls the last word of its
 * buffer for the iteration number the other side writes there. */
static void test_write_lat(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;

	for (int i = 0; i < NOPS; i++) {
		f->lat[i] = 0;
		for (int n = 0; n < 2; n++) {
			uint32_t v = (uint32_t)i * 2 + (uint32_t)n + 1;
			struct mem_wait w = {
				(const volatile uint32_t *)(p->n[1 - n].mem +
							    4096),
				v,
			};
			uint64_t t0;

			think(f);
			t0 = p->now;
			memcpy(p->n[n].mem, &v, sizeof(v));
			assert_int_equal(post_one(p, n, f->qpn[n],
						  OVR_WR_RDMA_WRITE, 0, 0, 4,
						  4096, OVR_SEND_SIGNALED),
					 0);
			assert_true(ovr_pair_run(p, mem_has, &w,
						 p->now + 10000000000ull));
			f->lat[i] += p->now - t0;
		}
		drain_send(f);
	}
	check(f, "write");
}

/* ---- what the estimator is fed -------------------------------------- */

static int setup_clean(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct ovr_pair_cfg cfg;
	struct ovr_pair_qp_params qp;

	assert_non_null(f);
	ovr_pair_cfg_default(&cfg);
	cfg.mem_bytes = 1u << 20;
	ovr_pair_qp_params_default(&qp);
	f->p = ovr_pair_create(&cfg);
	assert_non_null(f->p);
	assert_int_equal(ovr_pair_connect(f->p, &qp, 0, f->qpn), 0);
	*state = f;
	return 0;
}

static uint64_t srtt_of(struct fix *f, int n)
{
	struct ovr_eng_qp_stats st;

	assert_int_equal(ovr_eng_qp_stats(f->p->n[n].eng, f->qpn[n], &st), 0);
	return st.srtt_ns;
}

/* Drop the next @left pure ACKs node @n sends. */
static bool drop_acks(struct ovr_pair_node *n, const uint8_t *pdu, uint32_t len,
		      void *ctx)
{
	int *left = ctx;
	struct ovr_wire_pkt p;

	(void)n;
	if (*left <= 0 || ovr_wire_parse(pdu, len, &p, NULL) ||
	    p.opcode != OVR_OP_ACK)
		return false;
	(*left)--;
	return true;
}

/*
 * A retransmission that reaches a receiver which already has the packet
 * (its ACK was lost) is answered at once, and that ACK echoes the
 * retransmission's send time: the sender measures the RTT, not its own
 * probe timeout plus the RTT (1 ms here: no sample yet).
 */
static void test_dup_echo(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	int left = 0;

	assert_int_equal(post_recv_one(p, 1, f->qpn[1], 0, 8192, 64), 0);
	idle(p, 1000000);
	p->n[1].tx_filter = drop_acks;
	p->n[1].tx_filter_ctx = &left;
	left = 1;
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 1, 0, 8, 0,
				  OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 0, 0, 1));
	assert_int_equal(left, 0);
	assert_true(srtt_of(f, 0) < 2 * RTT_NS);
}

/*
 * An RNR NAK echoes the send time of the packet it refuses, not that of
 * the last packet accepted (100 ms earlier here): the refused one was
 * never received, so nothing else would be right.
 */
static void test_nak_echo(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_qp_stats st;

	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE, 1, 0, 8,
				  4096, OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 0, 0, 1));
	idle(p, 100000000);
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_SEND, 2, 0, 8, 0,
				  OVR_SEND_SIGNALED),
			 0);
	do {
		assert_true(ovr_pair_step(p));
		assert_int_equal(ovr_eng_qp_stats(p->n[0].eng, f->qpn[0], &st),
				 0);
	} while (!st.rnr_naks_rcvd);
	assert_true(st.srtt_ns < 2 * RTT_NS);
}

/*
 * A requester whose ACK of a READ response was lost acknowledges the
 * response again on its next request, sent after a pause (500 us here):
 * that packet carries no timestamp echo, so the responder does not take
 * the pause for an RTT (its first sample would have been 530 us).
 */
static void test_stale_echo(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_wc wc;
	int left = 1;

	p->n[0].tx_filter = drop_acks;
	p->n[0].tx_filter_ctx = &left;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_READ,
					  (uint64_t)i, 0, 8, 4096,
					  OVR_SEND_SIGNALED),
				 0);
		assert_true(wait_cq(p, 0, 0, 1));
		assert_true(ovr_pair_poll(p, 0, 0, &wc));
		assert_int_equal(wc.status, OVR_WC_SUCCESS);
		idle(p, 500000);
	}
	assert_int_equal(left, 0);
	assert_true(srtt_of(f, 1) > 0);
	assert_true(srtt_of(f, 1) < 2 * RTT_NS);
}

/* Drop the first READ response node @n sends. */
static bool drop_resp(struct ovr_pair_node *n, const uint8_t *pdu, uint32_t len,
		      void *ctx)
{
	int *left = ctx;
	struct ovr_wire_pkt p;

	(void)n;
	if (*left <= 0 || ovr_wire_parse(pdu, len, &p, NULL) ||
	    p.opcode != OVR_OP_READ_RESP)
		return false;
	(*left)--;
	return true;
}

/*
 * The responder's timers are the slower (it has no sample yet: its probe
 * timeout is the initial RTO, 1 ms), the requester's are not (WRITEs
 * taught it the RTT). The READ's only response packet is lost; the
 * requester's probe repeats the request, and the repeat makes the
 * responder resend the response at once: the READ completes in about
 * 2 srtt + RTT, not 1 ms.
 */
static void test_resp_probe(void **state)
{
	struct fix *f = *state;
	struct ovr_pair *p = f->p;
	struct ovr_eng_qp_stats st;
	struct ovr_eng_wc wc;
	uint64_t t0;
	int left = 1;

	for (int i = 0; i < 8; i++) {
		assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_WRITE,
					  (uint64_t)i, 0, 8, 4096,
					  OVR_SEND_SIGNALED),
				 0);
		assert_true(wait_cq(p, 0, 0, 1));
		assert_true(ovr_pair_poll(p, 0, 0, &wc));
		assert_int_equal(wc.status, OVR_WC_SUCCESS);
	}
	idle(p, 100000);
	assert_true(srtt_of(f, 0) < 2 * RTT_NS);
	assert_int_equal(srtt_of(f, 1), 0);
	p->n[1].tx_filter = drop_resp;
	p->n[1].tx_filter_ctx = &left;
	t0 = p->now;
	assert_int_equal(post_one(p, 0, f->qpn[0], OVR_WR_RDMA_READ, 9, 0, 8,
				  4096, OVR_SEND_SIGNALED),
			 0);
	assert_true(wait_cq(p, 0, 0, 1));
	assert_true(ovr_pair_poll(p, 0, 0, &wc));
	assert_int_equal(wc.status, OVR_WC_SUCCESS);
	assert_int_equal(left, 0);
	assert_true(p->now - t0 < 5 * RTT_NS);
	assert_int_equal(ovr_eng_qp_stats(p->n[1].eng, f->qpn[1], &st), 0);
	assert_int_equal(st.resp_probes, 1);
	assert_int_equal(st.rto_count, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_lat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomic_lat, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_send_lat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_lat, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_read_lat, setup_think,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomic_lat, setup_think,
						teardown),
		cmocka_unit_test_setup_teardown(test_send_lat, setup_think,
						teardown),
		cmocka_unit_test_setup_teardown(test_write_lat, setup_think,
						teardown),
		cmocka_unit_test_setup_teardown(test_dup_echo, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_nak_echo, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_stale_echo, setup_clean,
						teardown),
		cmocka_unit_test_setup_teardown(test_resp_probe, setup_clean,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
