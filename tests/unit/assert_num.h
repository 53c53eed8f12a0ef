/* SPDX-License-Identifier: MIT */
/*
 * Numeric assertions for cmocka tests of the congestion controllers and
 * the simulator (include after <cmocka.h> and <math.h>).
 */
#ifndef OVRDMA_TEST_ASSERT_NUM_H
#define OVRDMA_TEST_ASSERT_NUM_H

/* |a - b| <= tol, with both values in the message */
#define assert_within(a, b, tol)                                            \
	do {                                                                \
		double a_ = (double)(a), b_ = (double)(b);                  \
		if (!(fabs(a_ - b_) <= (tol)))                              \
			fail_msg("%s = %.12g, expected %.12g", #a, a_, b_); \
	} while (0)

#endif
