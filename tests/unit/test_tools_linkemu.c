// SPDX-License-Identifier: MIT
/*
 * Tests of the in-memory impaired link: every impairment does what its
 * configuration says, exactly where it is deterministic (rate, queue,
 * ECN, delay) and within 5 standard deviations where it is random (loss,
 * bursts, duplication, reordering), and the same seed replays the same
 * run.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ovrdma/linkemu.h>

#define MAXPKT 2048

static struct ovr_link *mk(const struct ovr_link_cfg *c)
{
	struct ovr_link *l = ovr_link_create(c, MAXPKT);

	assert_non_null(l);
	return l;
}

/* Send @n packets numbered 0..n-1 (4-byte big-endian id + filler of
 * @len) at @gap_ns intervals; drain everything; record per id how many
 * copies arrived and the arrival order. Returns packets delivered. */
static uint32_t run(struct ovr_link *l, uint32_t n, uint32_t len,
		    uint64_t gap_ns, uint32_t *copies, uint32_t *order)
{
	uint8_t pkt[MAXPKT], got[MAXPKT];
	uint32_t i, k = 0, glen;
	uint64_t t = 0;

	memset(copies, 0, n * sizeof(*copies));
	for (i = 0; i < n; i++, t += gap_ns) {
		memset(pkt, (int)(i & 0xff), len);
		pkt[0] = (uint8_t)(i >> 24);
		pkt[1] = (uint8_t)(i >> 16);
		pkt[2] = (uint8_t)(i >> 8);
		pkt[3] = (uint8_t)i;
		assert_int_equal(ovr_link_send(l, t, pkt, len), 0);
	}
	while (ovr_link_recv(l, UINT64_MAX, got, sizeof(got), &glen, NULL) ==
	       1) {
		uint32_t id = (uint32_t)got[0] << 24 | (uint32_t)got[1] << 16 |
			      (uint32_t)got[2] << 8 | got[3];

		assert_int_equal(glen, len);
		assert_true(id < n);
		copies[id]++;
		if (order)
			order[k] = id;
		k++;
	}
	return k;
}

/* |observed - expected| <= 5 sigma of a binomial(n, p) */
static void assert_binomial(uint64_t observed, uint64_t n, double p)
{
	double mean = (double)n * p, sd = sqrt((double)n * p * (1 - p));

	if (fabs((double)observed - mean) > 5 * sd + 1)
		fail_msg("observed %llu, expected %.1f +- %.1f",
			 (unsigned long long)observed, mean, 5 * sd);
}

static void test_clean_link_delay_and_bytes(void **state)
{
	struct ovr_link_cfg c = { .delay_ns = 15000, .seed = 1 };
	struct ovr_link *l = mk(&c);
	struct ovr_link_meta m;
	uint8_t pkt[100], got[100];
	uint32_t i, len;

	(void)state;
	for (i = 0; i < 10; i++) {
		memset(pkt, (int)i, sizeof(pkt));
		assert_int_equal(ovr_link_send(l, i * 1000, pkt, sizeof(pkt)),
				 0);
	}
	assert_int_equal(ovr_link_inflight(l), 10);
	assert_int_equal(ovr_link_next_ns(l), 15000);
	/* nothing before its time */
	assert_int_equal(ovr_link_recv(l, 14999, got, sizeof(got), &len, &m),
			 0);
	for (i = 0; i < 10; i++) {
		assert_int_equal(ovr_link_recv(l, 15000 + i * 1000, got,
					       sizeof(got), &len, &m),
				 1);
		assert_int_equal(len, sizeof(pkt));
		memset(pkt, (int)i, sizeof(pkt));
		assert_memory_equal(got, pkt, sizeof(pkt));
		assert_int_equal(m.sent_ns, i * 1000);
		assert_int_equal(m.arrive_ns, 15000 + i * 1000);
		assert_false(m.ce);
	}
	assert_int_equal(ovr_link_next_ns(l), UINT64_MAX);
	ovr_link_destroy(l);
}

static void test_rate_serializes(void **state)
{
	/* 10 Gbit/s: 1250 bytes take exactly 1 us */
	struct ovr_link_cfg c = { .rate_bps = 10000000000ull,
				  .delay_ns = 500,
				  .seed = 1 };
	struct ovr_link *l = mk(&c);
	struct ovr_link_meta m;
	uint8_t pkt[1250] = { 0 }, got[1250];
	uint32_t i, len;

	(void)state;
	for (i = 0; i < 1000; i++)
		assert_int_equal(ovr_link_send(l, 0, pkt, sizeof(pkt)), 0);
	for (i = 0; i < 1000; i++) {
		assert_int_equal(ovr_link_recv(l, UINT64_MAX, got, sizeof(got),
					       &len, &m),
				 1);
		assert_int_equal(m.arrive_ns, (i + 1) * 1000ull + 500);
	}
	ovr_link_destroy(l);
}

static void test_tail_drop_and_ecn(void **state)
{
	/* 1 Gbit/s: 1000 bytes take 8 us; 10 kB buffer; CE above 3 kB */
	struct ovr_link_cfg c = { .rate_bps = 1000000000ull,
				  .queue_bytes = 10000,
				  .ecn_bytes = 3000,
				  .seed = 1 };
	struct ovr_link *l = mk(&c);
	struct ovr_link_stats st;
	struct ovr_link_meta m;
	uint8_t pkt[1000] = { 0 }, got[1000];
	uint32_t i, len;

	(void)state;
	for (i = 0; i < 20; i++)
		assert_int_equal(ovr_link_send(l, 0, pkt, sizeof(pkt)),
				 i < 10 ? 0 : -ENOBUFS);
	for (i = 0; i < 10; i++) {
		assert_int_equal(ovr_link_recv(l, UINT64_MAX, got, sizeof(got),
					       &len, &m),
				 1);
		/* packet i found i * 1000 bytes ahead of it */
		assert_int_equal(m.ce, i * 1000 > 3000);
	}
	ovr_link_get_stats(l, &st);
	assert_int_equal(st.sent, 20);
	assert_int_equal(st.tail_drops, 10);
	assert_int_equal(st.ce_marked, 6);
	assert_int_equal(st.delivered, 10);
	/* once drained (at 80 us) the queue takes packets again */
	assert_int_equal(ovr_link_send(l, 80000, pkt, sizeof(pkt)), 0);
	ovr_link_destroy(l);
}

static void test_bernoulli_loss(void **state)
{
	static uint32_t copies[200000];
	struct ovr_link_cfg c = { .loss = 0.01, .seed = 7 };
	struct ovr_link *l = mk(&c);
	struct ovr_link_stats st;
	uint32_t got, i, lost = 0;

	(void)state;
	got = run(l, 200000, 64, 100, copies, NULL);
	for (i = 0; i < 200000; i++)
		lost += copies[i] == 0;
	ovr_link_get_stats(l, &st);
	assert_int_equal(got + lost, 200000);
	assert_int_equal(st.lost, lost);
	assert_binomial(lost, 200000, 0.01);
	ovr_link_destroy(l);
}

static void test_gilbert_elliott_bursts(void **state)
{
	static uint32_t copies[200000];
	/* stationary loss p / (p + r) = 3.85 %, mean burst 1 / r = 4 */
	struct ovr_link_cfg c = {
		.ge_p = 0.01, .ge_r = 0.25, .ge_loss_bad = 1.0, .seed = 11
	};
	struct ovr_link *l = mk(&c);
	uint32_t i, lost = 0, bursts = 0;
	double rate, mean_burst;

	(void)state;
	run(l, 200000, 64, 100, copies, NULL);
	for (i = 0; i < 200000; i++) {
		if (!copies[i]) {
			lost++;
			if (i == 0 || copies[i - 1])
				bursts++;
		}
	}
	rate = (double)lost / 200000;
	mean_burst = (double)lost / bursts;
	if (fabs(rate - 0.01 / 0.26) > 0.004 || fabs(mean_burst - 4.0) > 0.4)
		fail_msg("loss %.4f (want 0.0385), mean burst %.2f (want 4)",
			 rate, mean_burst);
	ovr_link_destroy(l);
}

static void test_duplication(void **state)
{
	static uint32_t copies[100000];
	struct ovr_link_cfg c = { .dup = 0.05, .jitter_ns = 1000, .seed = 3 };
	struct ovr_link *l = mk(&c);
	uint32_t i, twice = 0, got;

	(void)state;
	got = run(l, 100000, 64, 100, copies, NULL);
	for (i = 0; i < 100000; i++) {
		assert_true(copies[i] == 1 || copies[i] == 2);
		twice += copies[i] == 2;
	}
	assert_int_equal(got, 100000 + twice);
	assert_binomial(twice, 100000, 0.05);
	ovr_link_destroy(l);
}

static void test_reordering(void **state)
{
	static uint32_t copies[100000], order[100000];
	/* packets every 1 us; 2 % are held back 10 us: each is overtaken */
	struct ovr_link_cfg c = { .reorder = 0.02,
				  .reorder_ns = 10000,
				  .delay_ns = 5000,
				  .seed = 5 };
	struct ovr_link *l = mk(&c);
	struct ovr_link_stats st;
	uint32_t i, late = 0, maxseen = 0;

	(void)state;
	assert_int_equal(run(l, 100000, 64, 1000, copies, order), 100000);
	for (i = 0; i < 100000; i++) {
		if (i && order[i] < maxseen)
			late++;
		if (order[i] > maxseen)
			maxseen = order[i];
	}
	ovr_link_get_stats(l, &st);
	assert_int_equal(late, st.reordered);
	assert_binomial(late, 100000, 0.02);
	ovr_link_destroy(l);
}

static void test_corruption_flips_one_bit(void **state)
{
	struct ovr_link_cfg c = { .corrupt = 1.0, .seed = 9 };
	struct ovr_link *l = mk(&c);
	uint8_t pkt[256], got[256];
	uint32_t i, j, len;

	(void)state;
	for (i = 0; i < 1000; i++) {
		unsigned int diff = 0;

		for (j = 0; j < sizeof(pkt); j++)
			pkt[j] = (uint8_t)(i * 31 + j);
		assert_int_equal(ovr_link_send(l, i, pkt, sizeof(pkt)), 0);
		assert_int_equal(ovr_link_recv(l, UINT64_MAX, got, sizeof(got),
					       &len, NULL),
				 1);
		for (j = 0; j < sizeof(pkt); j++)
			diff += (unsigned int)__builtin_popcount(pkt[j] ^
								 got[j]);
		assert_int_equal(diff, 1);
	}
	ovr_link_destroy(l);
}

static void test_jitter_bounds_and_fifo(void **state)
{
	static uint32_t copies[20000], order[20000];
	struct ovr_link_cfg c = { .delay_ns = 10000,
				  .jitter_ns = 20000,
				  .seed = 13 };
	struct ovr_link *l = mk(&c);
	struct ovr_link_meta m;
	uint8_t pkt[64] = { 0 }, got[64];
	uint32_t i, len, inversions = 0;

	(void)state;
	for (i = 0; i < 1000; i++) {
		assert_int_equal(ovr_link_send(l, 0, pkt, sizeof(pkt)), 0);
		assert_int_equal(ovr_link_recv(l, UINT64_MAX, got, sizeof(got),
					       &len, &m),
				 1);
		assert_true(m.arrive_ns >= 10000 && m.arrive_ns <= 30000);
	}
	ovr_link_destroy(l);

	/* packets 1 us apart with 20 us jitter: reordered without FIFO... */
	l = mk(&c);
	run(l, 20000, 64, 1000, copies, order);
	for (i = 1; i < 20000; i++)
		inversions += order[i] < order[i - 1];
	assert_true(inversions > 1000);
	ovr_link_destroy(l);
	/* ...and never with it */
	c.jitter_fifo = true;
	l = mk(&c);
	run(l, 20000, 64, 1000, copies, order);
	for (i = 0; i < 20000; i++)
		assert_int_equal(order[i], i);
	ovr_link_destroy(l);
}

static void test_same_seed_same_run(void **state)
{
	static uint32_t c1[50000], c2[50000], o1[60000], o2[60000];
	struct ovr_link_cfg c = { .loss = 0.05,
				  .dup = 0.05,
				  .reorder = 0.05,
				  .reorder_ns = 5000,
				  .jitter_ns = 3000,
				  .seed = 42 };
	struct ovr_link *a = mk(&c), *b = mk(&c);
	uint32_t na, nb;

	(void)state;
	na = run(a, 50000, 100, 1000, c1, o1);
	nb = run(b, 50000, 100, 1000, c2, o2);
	assert_int_equal(na, nb);
	assert_memory_equal(o1, o2, na * sizeof(o1[0]));
	ovr_link_destroy(b);
	c.seed = 43;
	b = mk(&c);
	nb = run(b, 50000, 100, 1000, c2, o2);
	assert_true(na != nb || memcmp(o1, o2, na * sizeof(o1[0])) != 0);
	ovr_link_destroy(a);
	ovr_link_destroy(b);
}

static void test_blackhole_and_runtime_change(void **state)
{
	static uint32_t copies[1000];
	struct ovr_link_cfg c = { .blackhole = true, .seed = 1 };
	struct ovr_link *l = mk(&c);
	struct ovr_link_stats st;

	(void)state;
	assert_int_equal(run(l, 1000, 64, 10, copies, NULL), 0);
	ovr_link_get_stats(l, &st);
	assert_int_equal(st.blackholed, 1000);
	c.blackhole = false;
	assert_int_equal(ovr_link_set_cfg(l, &c), 0);
	assert_int_equal(run(l, 1000, 64, 10, copies, NULL), 1000);
	c.loss = -0.1;
	assert_int_equal(ovr_link_set_cfg(l, &c), -EINVAL);
	ovr_link_destroy(l);
}

static void test_bad_config_and_sizes(void **state)
{
	struct ovr_link_cfg c = { .seed = 1 };
	struct ovr_link *l;
	uint8_t pkt[MAXPKT + 1] = { 0 }, got[16];
	uint32_t len;

	(void)state;
	c.loss = 1.5;
	errno = 0;
	assert_null(ovr_link_create(&c, MAXPKT));
	assert_int_equal(errno, EINVAL);
	c.loss = NAN;
	assert_null(ovr_link_create(&c, MAXPKT));
	c.loss = 0;
	c.ge_p = 0.1; /* a bad state with no way out */
	assert_null(ovr_link_create(&c, MAXPKT));
	c.ge_p = 0;
	assert_null(ovr_link_create(&c, 0));

	l = mk(&c);
	assert_int_equal(ovr_link_send(l, 0, pkt, MAXPKT + 1), -EMSGSIZE);
	assert_int_equal(ovr_link_send(l, 0, pkt, 100), 0);
	assert_int_equal(ovr_link_recv(l, 0, got, sizeof(got), &len, NULL),
			 -ENOSPC);
	assert_int_equal(ovr_link_inflight(l), 1); /* kept */
	/* zero-length packets are packets */
	assert_int_equal(ovr_link_send(l, 0, pkt, 0), 0);
	ovr_link_destroy(l); /* frees what is in flight (ASan checks) */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_link_delay_and_bytes),
		cmocka_unit_test(test_rate_serializes),
		cmocka_unit_test(test_tail_drop_and_ecn),
		cmocka_unit_test(test_bernoulli_loss),
		cmocka_unit_test(test_gilbert_elliott_bursts),
		cmocka_unit_test(test_duplication),
		cmocka_unit_test(test_reordering),
		cmocka_unit_test(test_corruption_flips_one_bit),
		cmocka_unit_test(test_jitter_bounds_and_fifo),
		cmocka_unit_test(test_same_seed_same_run),
		cmocka_unit_test(test_blackhole_and_runtime_change),
		cmocka_unit_test(test_bad_config_and_sizes),
	};

	return cmocka_run_group_tests_name("tools_linkemu", tests, NULL, NULL);
}
