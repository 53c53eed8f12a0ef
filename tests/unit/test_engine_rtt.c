// SPDX-License-Identifier: MIT
/* Tests of the RTT estimator against RFC 6298's arithmetic. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rtt.h"

#define US 1000ull
#define MS 1000000ull

static void test_init_checks(void **state)
{
	struct ovr_dp_rtt r;

	(void)state;
	assert_int_equal(ovr_dp_rtt_init(&r, MS, 0, 10 * MS, US), -EINVAL);
	assert_int_equal(ovr_dp_rtt_init(&r, MS, 2 * MS, 10 * MS, US), -EINVAL);
	assert_int_equal(ovr_dp_rtt_init(&r, 20 * MS, US, 10 * MS, US),
			 -EINVAL);
	assert_int_equal(ovr_dp_rtt_init(&r, MS, 100 * US, 10 * MS, US), 0);
	assert_int_equal(r.rto_ns, MS); /* before any sample */
	assert_int_equal(ovr_dp_rtt_pto(&r, false, 0), MS);
}

static void test_rfc6298_arithmetic(void **state)
{
	struct ovr_dp_rtt r;

	(void)state;
	assert_int_equal(ovr_dp_rtt_init(&r, MS, 10 * US, 10 * MS, US), 0);
	ovr_dp_rtt_sample(&r, 40 * US);
	assert_int_equal(r.srtt_ns, 40 * US);
	assert_int_equal(r.rttvar_ns, 20 * US);
	assert_int_equal(r.rto_ns, 40 * US + 80 * US);
	ovr_dp_rtt_sample(&r, 80 * US);
	/* rttvar = (3 * 20 + 40) / 4 = 25; srtt = (7 * 40 + 80) / 8 = 45 */
	assert_int_equal(r.rttvar_ns, 25 * US);
	assert_int_equal(r.srtt_ns, 45 * US);
	assert_int_equal(r.rto_ns, 45 * US + 100 * US);
	assert_int_equal(r.min_rtt_ns, 40 * US);
	/* a steady RTT shrinks rttvar until min_rto holds the floor */
	for (int i = 0; i < 200; i++)
		ovr_dp_rtt_sample(&r, 30 * US);
	assert_true(r.srtt_ns >= 30 * US && r.srtt_ns < 31 * US);
	assert_int_equal(r.min_rtt_ns, 30 * US);
	assert_true(r.rto_ns >= 30 * US + US && r.rto_ns < 32 * US);
}

static void test_clamps_and_backoff(void **state)
{
	struct ovr_dp_rtt r;

	(void)state;
	assert_int_equal(ovr_dp_rtt_init(&r, MS, 200 * US, 4 * MS, US), 0);
	ovr_dp_rtt_sample(&r, 10 * US);
	assert_int_equal(r.rto_ns, 200 * US); /* min_rto */
	ovr_dp_rtt_backoff(&r);
	assert_int_equal(r.rto_ns, 400 * US);
	ovr_dp_rtt_backoff(&r);
	ovr_dp_rtt_backoff(&r);
	assert_int_equal(r.rto_ns, 1600 * US);
	ovr_dp_rtt_backoff(&r);
	ovr_dp_rtt_backoff(&r);
	ovr_dp_rtt_backoff(&r);
	assert_int_equal(r.rto_ns, 4 * MS); /* max_rto */
	assert_int_equal(r.backoff, 6);
	ovr_dp_rtt_sample(&r, 10 * US); /* a sample ends the backoff */
	assert_int_equal(r.backoff, 0);
	assert_int_equal(r.rto_ns, 200 * US);
	ovr_dp_rtt_sample(&r, 100 * MS); /* huge sample: capped */
	assert_int_equal(r.rto_ns, 4 * MS);
}

static void test_probe_timeout(void **state)
{
	struct ovr_dp_rtt r;

	(void)state;
	assert_int_equal(ovr_dp_rtt_init(&r, MS, 500 * US, 10 * MS, US), 0);
	ovr_dp_rtt_sample(&r, 30 * US);
	assert_int_equal(ovr_dp_rtt_pto(&r, false, 25 * US), 60 * US);
	assert_int_equal(ovr_dp_rtt_pto(&r, true, 25 * US), 85 * US);
	/* never later than the RTO */
	ovr_dp_rtt_sample(&r, 400 * US);
	assert_true(ovr_dp_rtt_pto(&r, true, 5 * MS) <= r.rto_ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_checks),
		cmocka_unit_test(test_rfc6298_arithmetic),
		cmocka_unit_test(test_clamps_and_backoff),
		cmocka_unit_test(test_probe_timeout),
	};

	return cmocka_run_group_tests_name("engine_rtt", tests, NULL, NULL);
}
