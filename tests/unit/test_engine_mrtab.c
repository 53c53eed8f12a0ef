// SPDX-License-Identifier: MIT
/*
 * Tests of the memory-region table: argument checks, keys (distinct,
 * never 0, stale after reuse, reproducible per seed), every refusal code
 * at its edges, references, invalidation, a full table, and a long
 * randomized run against a naive model.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mrtab.h"

#define LW OVR_ACCESS_LOCAL_WRITE
#define RW OVR_ACCESS_REMOTE_WRITE
#define RR OVR_ACCESS_REMOTE_READ
#define RA OVR_ACCESS_REMOTE_ATOMIC

static uint8_t buf[1 << 16];

static uint64_t test_rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* All n keys non-zero and pairwise distinct (sorts them). */
static void assert_distinct_nonzero(uint32_t *keys, size_t n)
{
	qsort(keys, n, sizeof(*keys), cmp_u32);
	for (size_t i = 0; i < n; i++) {
		assert_int_not_equal(keys[i], 0);
		if (i)
			assert_int_not_equal(keys[i], keys[i - 1]);
	}
}

static void test_create_args(void **state)
{
	struct ovr_mr_table *t;

	(void)state;
	errno = 0;
	assert_null(ovr_mr_create(0, 1));
	assert_int_equal(errno, EINVAL);
	assert_null(ovr_mr_create(3, 1));
	assert_null(ovr_mr_create(1000, 1));
	assert_null(ovr_mr_create(OVR_MR_MAX_REGIONS * 2, 1));
	assert_null(ovr_mr_create(UINT32_MAX, 1));
	ovr_mr_destroy(NULL);

	t = ovr_mr_create(1, 0);
	assert_non_null(t);
	assert_int_equal(ovr_mr_count(t), 0);
	ovr_mr_destroy(t);

	/* 48 bytes a region slot and 40 a window slot (the entries'
	 * static_asserts) plus a small header */
	t = ovr_mr_create(OVR_MR_MAX_REGIONS, 0);
	assert_non_null(t);
	assert_true(ovr_mr_table_bytes(t) >= 88ull * OVR_MR_MAX_REGIONS);
	assert_true(ovr_mr_table_bytes(t) < 88ull * OVR_MR_MAX_REGIONS + 256);
	ovr_mr_destroy(t);
	t = ovr_mr_create(1 << 17, 0);
	assert_non_null(t);
	assert_true(ovr_mr_table_bytes(t) <= 88ull * (1 << 17) + 256);
	ovr_mr_destroy(t);
}

static void test_reg_args(void **state)
{
	struct ovr_mr_table *t = ovr_mr_create(16, 7);
	uint32_t key = 0xdead;
	uint8_t *h;

	(void)state;
	assert_non_null(t);
	/* verbs: remote write and atomic need local write */
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 16, RW, buf, &key), -EINVAL);
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 16, RA, buf, &key), -EINVAL);
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 16, RW | RR | RA, buf, &key),
			 -EINVAL);
	/* unknown flags (0x10 is MW_BIND) */
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 16, 0x20, buf, &key),
			 -EINVAL);
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 16, LW | 0x80, buf, &key),
			 -EINVAL);
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 16, 1u << 31, buf, &key),
			 -EINVAL);
	/* va + length past 2^64 - 1 */
	assert_int_equal(ovr_mr_reg(t, 1, UINT64_MAX - 9, 10, LW, buf, &key),
			 -EINVAL);
	assert_int_equal(ovr_mr_reg(t, 1, 1, UINT64_MAX, LW, buf, &key),
			 -EINVAL);
	assert_int_equal(ovr_mr_reg(t, 1, UINT64_MAX, 1, LW, buf, &key),
			 -EINVAL);
	/* no host bytes for a non-empty region; nowhere to put the key */
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 16, LW, NULL, &key), -EINVAL);
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 16, LW, buf, NULL), -EINVAL);
	assert_int_equal(key, 0xdead); /* untouched on failure */
	assert_int_equal(ovr_mr_count(t), 0);

	/* the edges that are allowed */
	assert_int_equal(ovr_mr_reg(t, 1, UINT64_MAX - 9, 9, LW, buf, &key), 0);
	assert_int_equal(ovr_mr_check(t, key, 1, UINT64_MAX - 1, 1, LW, &h), 0);
	assert_ptr_equal(h, buf + 8);
	assert_int_equal(ovr_mr_reg(t, 1, 0, UINT64_MAX, 0, buf, &key), 0);
	assert_int_equal(ovr_mr_reg(t, 1, UINT64_MAX, 0, 0, NULL, &key), 0);
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 16, 0, buf, &key), 0);
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 16, RR, buf, &key), 0);
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 16, LW | RW, buf, &key), 0);
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 16, LW | RA, buf, &key), 0);
	assert_int_equal(
		ovr_mr_reg(t, 1, 0x1000, 16, LW | RW | RR | RA, buf, &key), 0);
	assert_int_equal(ovr_mr_count(t), 8);
	ovr_mr_destroy(t);
}

static void test_keys_distinct(void **state)
{
	enum { N = 4096 };
	uint32_t *keys = malloc(N * sizeof(*keys));
	struct ovr_mr_table *t = ovr_mr_create(N, 0);
	uint32_t prev = 0;

	(void)state;
	assert_non_null(keys);
	assert_non_null(t);
	for (uint32_t i = 0; i < N; i++) {
		assert_int_equal(
			ovr_mr_reg(t, 0, i * 64ull, 64, LW, buf, &keys[i]), 0);
		assert_int_equal(ovr_mr_count(t), i + 1);
	}
	/* every slot used once: the low bits cover 0..N-1 */
	for (uint32_t i = 0; i < N; i++) {
		uint8_t *h;

		assert_int_equal(
			ovr_mr_check(t, keys[i], 0, i * 64ull, 64, 0, &h), 0);
	}
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(keys[i] & (N - 1), i);
	assert_distinct_nonzero(keys, N);
	ovr_mr_destroy(t);

	/* one slot: the whole key is tag; 10k reuses, never 0 or repeated */
	t = ovr_mr_create(1, 0);
	assert_non_null(t);
	for (int i = 0; i < 10000; i++) {
		uint32_t k;

		assert_int_equal(ovr_mr_reg(t, 0, 0, 0, 0, NULL, &k), 0);
		assert_int_not_equal(k, 0);
		assert_int_not_equal(k, prev);
		assert_int_equal(ovr_mr_check(t, prev, 0, 0, 0, 0,
					      &(uint8_t *){ NULL }),
				 -OVR_MR_EKEY);
		assert_int_equal(ovr_mr_dereg(t, k), 0);
		prev = k;
	}
	ovr_mr_destroy(t);
	free(keys);
}

/*
 * The largest table leaves the fewest tag bits (12). Fill it, then keep
 * freeing one region and registering another, which must land in the
 * freed slot: its new key differs, and the old one is refused by every
 * entry point. The tags are spread over all 4095 non-zero values.
 */
static void test_stale_keys(void **state)
{
	const uint32_t n = OVR_MR_MAX_REGIONS;
	struct ovr_mr_table *t = ovr_mr_create(n, 0x5eed);
	uint32_t *keys = malloc(n * sizeof(*keys));
	uint32_t *hist = calloc(4096, sizeof(*hist));
	uint64_t rng = 99;
	uint8_t *h = NULL;
	uint32_t k;

	(void)state;
	assert_non_null(t);
	assert_non_null(keys);
	assert_non_null(hist);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(ovr_mr_reg(t, 3, 0, 0, 0, NULL, &keys[i]), 0);
	assert_int_equal(ovr_mr_reg(t, 3, 0, 0, 0, NULL, &k), -ENOSPC);

	for (int i = 0; i < 100000; i++) {
		uint32_t s = (uint32_t)test_rng(&rng) & (n - 1);
		uint32_t old = keys[s];

		assert_int_equal(ovr_mr_dereg(t, old), 0);
		assert_int_equal(ovr_mr_reg(t, 4, 0x1000, 8, LW | RW | RR | RA,
					    buf, &k),
				 0);
		assert_int_equal(k & (n - 1), old & (n - 1));
		assert_int_not_equal(k, old);
		assert_int_equal(ovr_mr_check(t, old, 3, 0, 0, 0, &h),
				 -OVR_MR_EKEY);
		assert_int_equal(ovr_mr_check(t, old, 4, 0x1000, 8, RW, &h),
				 -OVR_MR_EKEY);
		assert_int_equal(ovr_mr_get(t, old), -EINVAL);
		assert_int_equal(ovr_mr_put(t, old), -EINVAL);
		assert_int_equal(ovr_mr_invalidate(t, old, 4), -OVR_MR_EKEY);
		assert_int_equal(ovr_mr_dereg(t, old), -EINVAL);
		assert_int_equal(ovr_mr_check(t, k, 4, 0x1000, 8, RW, &h), 0);
		assert_ptr_equal(h, buf);
		keys[s] = k;
	}
	assert_int_equal(ovr_mr_count(t), n);
	for (uint32_t i = 0; i < n; i++)
		hist[keys[i] >> 20]++;
	assert_int_equal(hist[0], 0);
	/* binomial(2^20, 1/4095): mean 256, sd 16 */
	for (int v = 1; v < 4096; v++) {
		assert_true(hist[v] > 128);
		assert_true(hist[v] < 400);
	}
	assert_distinct_nonzero(keys, n);
	ovr_mr_destroy(t);
	free(hist);
	free(keys);
}

static void test_check_errors(void **state)
{
	struct ovr_mr_table *t = ovr_mr_create(64, 11);
	const uint64_t va = 0x7f0000001000ull, len = 4096;
	uint8_t *h = NULL;
	uint32_t key, other;

	(void)state;
	assert_int_equal(ovr_mr_reg(t, 7, va, len, LW | RR, buf, &key), 0);
	assert_int_equal(ovr_mr_reg(t, 8, va, len, LW | RR, buf + 1, &other),
			 0);

	/* key: never issued, 0, a neighbour slot's, a tag bit flipped */
	assert_int_equal(ovr_mr_check(t, 0, 7, va, 1, 0, &h), -OVR_MR_EKEY);
	assert_int_equal(ovr_mr_check(t, key ^ (1u << 31), 7, va, 1, 0, &h),
			 -OVR_MR_EKEY);
	assert_int_equal(ovr_mr_check(t, key ^ (1u << 6), 7, va, 1, 0, &h),
			 -OVR_MR_EKEY);
	assert_int_equal(ovr_mr_check(t, (key & ~63u) | ((key + 5) & 63), 7, va,
				      1, 0, &h),
			 -OVR_MR_EKEY);
	assert_null(h);

	/* pd */
	assert_int_equal(ovr_mr_check(t, key, 8, va, 1, 0, &h), -OVR_MR_EPD);
	assert_int_equal(ovr_mr_check(t, other, 7, va, 1, 0, &h), -OVR_MR_EPD);
	assert_int_equal(ovr_mr_check(t, key, 0, va, 1, 0, &h), -OVR_MR_EPD);

	/* bounds, edge by edge */
	assert_int_equal(ovr_mr_check(t, key, 7, va, len, RR, &h), 0);
	assert_ptr_equal(h, buf);
	assert_int_equal(ovr_mr_check(t, key, 7, va - 1, 1, RR, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 7, va - 1, 2, RR, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 7, va, len + 1, RR, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 7, va + len - 1, 1, RR, &h), 0);
	assert_ptr_equal(h, buf + len - 1); /* the last byte */
	assert_int_equal(ovr_mr_check(t, key, 7, va + len - 1, 2, RR, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 7, va + len, 1, RR, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 7, va + 100, len - 100, RR, &h),
			 0);
	assert_ptr_equal(h, buf + 100);
	assert_int_equal(ovr_mr_check(t, key, 7, va + 100, len - 99, RR, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 7, 0, 1, RR, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 7, UINT64_MAX, 1, RR, &h),
			 -OVR_MR_EBOUNDS);
	/* va + len wraps: would look tiny if summed in 64 bits */
	assert_int_equal(ovr_mr_check(t, key, 7, va + 1, UINT64_MAX, RR, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 7, va + 8, -(va + 8) + 4, RR, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 7, va, UINT64_MAX, RR, &h),
			 -OVR_MR_EBOUNDS);
	/* zero-length accesses: anywhere in [start, end], not outside */
	assert_int_equal(ovr_mr_check(t, key, 7, va, 0, RR, &h), 0);
	assert_ptr_equal(h, buf);
	assert_int_equal(ovr_mr_check(t, key, 7, va + len, 0, RR, &h), 0);
	assert_ptr_equal(h, buf + len);
	assert_int_equal(ovr_mr_check(t, key, 7, va + len + 1, 0, RR, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 7, va - 1, 0, RR, &h),
			 -OVR_MR_EBOUNDS);

	/* access: granted LW | RR; each other bit alone is refused */
	h = NULL;
	assert_int_equal(ovr_mr_check(t, key, 7, va, 8, RW, &h),
			 -OVR_MR_EACCESS);
	assert_int_equal(ovr_mr_check(t, key, 7, va, 8, RA, &h),
			 -OVR_MR_EACCESS);
	assert_int_equal(ovr_mr_check(t, key, 7, va, 8, RR | RW, &h),
			 -OVR_MR_EACCESS);
	assert_int_equal(ovr_mr_check(t, key, 7, va, 8, 0x10, &h),
			 -OVR_MR_EACCESS);
	assert_int_equal(ovr_mr_check(t, key, 7, va, 8, 0x80, &h),
			 -OVR_MR_EACCESS);
	assert_int_equal(ovr_mr_check(t, key, 7, va, 0, RA, &h),
			 -OVR_MR_EACCESS);
	assert_null(h); /* untouched on failure */
	assert_int_equal(ovr_mr_check(t, key, 7, va, 8, LW, &h), 0);
	assert_int_equal(ovr_mr_check(t, key, 7, va, 8, LW | RR, &h), 0);
	assert_int_equal(ovr_mr_check(t, key, 7, va, 8, 0, &h), 0);

	/* precedence: key, then pd, then bounds, then access */
	assert_int_equal(ovr_mr_check(t, key ^ (1u << 31), 8, 0, 1, RA, &h),
			 -OVR_MR_EKEY);
	assert_int_equal(ovr_mr_check(t, key, 8, 0, 1, RA, &h), -OVR_MR_EPD);
	assert_int_equal(ovr_mr_check(t, key, 7, 0, 1, RA, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 7, va, 1, RA, &h),
			 -OVR_MR_EACCESS);

	/* the codes are distinct and lie outside errno's range */
	assert_true(OVR_MR_EKEY > 133);
	assert_int_not_equal(OVR_MR_EKEY, OVR_MR_EPD);
	assert_int_not_equal(OVR_MR_EPD, OVR_MR_EBOUNDS);
	assert_int_not_equal(OVR_MR_EBOUNDS, OVR_MR_EACCESS);
	assert_int_not_equal(OVR_MR_EKEY, OVR_MR_EACCESS);
	ovr_mr_destroy(t);
}

/* Every valid grant against every need: pass iff need is a subset. */
static void test_access_matrix(void **state)
{
	struct ovr_mr_table *t = ovr_mr_create(32, 5);
	uint8_t *h;

	(void)state;
	for (unsigned int grant = 0; grant < 16; grant++) {
		bool valid = !((grant & (RW | RA)) && !(grant & LW));
		uint32_t key;
		int rc = ovr_mr_reg(t, 1, 0x2000, 64, grant, buf, &key);

		assert_int_equal(rc, valid ? 0 : -EINVAL);
		if (!valid)
			continue;
		for (unsigned int need = 0; need < 32; need++) {
			bool ok = (need & grant) == need;

			assert_int_equal(ovr_mr_check(t, key, 1, 0x2010, 16,
						      need, &h),
					 ok ? 0 : -OVR_MR_EACCESS);
		}
		assert_int_equal(ovr_mr_dereg(t, key), 0);
	}
	assert_int_equal(ovr_mr_count(t), 0);
	ovr_mr_destroy(t);
}

static void test_top_of_space(void **state)
{
	struct ovr_mr_table *t = ovr_mr_create(2, 5);
	uint64_t va = UINT64_MAX - 16;
	uint8_t *h;
	uint32_t key;

	(void)state;
	/* end = 2^64 - 1, the highest a region may reach */
	assert_int_equal(ovr_mr_reg(t, 1, va, 16, LW | RW, buf, &key), 0);
	assert_int_equal(ovr_mr_check(t, key, 1, UINT64_MAX - 1, 1, RW, &h), 0);
	assert_ptr_equal(h, buf + 15);
	assert_int_equal(ovr_mr_check(t, key, 1, UINT64_MAX - 1, 2, RW, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 1, UINT64_MAX, 0, RW, &h), 0);
	assert_ptr_equal(h, buf + 16);
	assert_int_equal(ovr_mr_check(t, key, 1, UINT64_MAX, 1, RW, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 1, va, 17, RW, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 1, va, UINT64_MAX, RW, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, key, 1, va, 16, RW, &h), 0);
	assert_ptr_equal(h, buf);
	ovr_mr_destroy(t);
}

/* The implicit ODP region (docs/SERVICE.md 4.3): va 0, length 2^64 - 1
 * behind the copy op, offsets the addresses themselves; every access
 * inside passes, one past its last byte does not. */
static void test_whole_space(void **state)
{
	struct ovr_mr_table *t = ovr_mr_create(2, 5);
	struct ovr_mr_loc loc;
	int cookie;
	uint32_t key;

	(void)state;
	assert_int_equal(ovr_mr_reg_ops(t, 1, 0, UINT64_MAX, LW | RW | RR | RA,
					&cookie, 0, true, &key),
			 0);
	assert_int_equal(ovr_mr_check_dev(t, key, 1, 0, 8, RA, &loc), 0);
	assert_int_equal(loc.dev_off, 0);
	assert_true(loc.host_ops);
	assert_int_equal(ovr_mr_check_dev(t, key, 1, 0x7ffdeadbe000ull, 4096,
					  RW, &loc),
			 0);
	assert_int_equal(loc.dev_off, 0x7ffdeadbe000ull);
	assert_int_equal(
		ovr_mr_check_dev(t, key, 1, UINT64_MAX - 8, 8, RR, &loc), 0);
	assert_int_equal(loc.dev_off, UINT64_MAX - 8);
	assert_int_equal(ovr_mr_check_dev(t, key, 1, UINT64_MAX - 8, 9, RR,
					  &loc),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check_dev(t, key, 1, 1, UINT64_MAX, RR, &loc),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check_dev(t, key, 2, 0, 8, RR, &loc),
			 -OVR_MR_EPD);
	assert_int_equal(ovr_mr_dereg(t, key), 0);
	ovr_mr_destroy(t);
}

/* Device-memory regions: a cookie and an offset, never a host pointer. */
static void test_device_regions(void **state)
{
	struct ovr_mr_table *t = ovr_mr_create(16, 7);
	int cookie;
	struct ovr_mr_loc loc;
	uint8_t *host = NULL;
	uint32_t key, hkey;

	(void)state;
	assert_non_null(t);
	assert_int_equal(ovr_mr_reg_dev(t, 1, 0x10000, 4096, LW, NULL, 0, &key),
			 -EINVAL);
	assert_int_equal(ovr_mr_reg_dev(t, 1, 0x10000, 4096, LW, &cookie,
					UINT64_MAX - 100, &key),
			 -EINVAL);
	assert_int_equal(ovr_mr_reg_dev(t, 1, 0x10000, 4096, RW, &cookie, 512,
					&key),
			 -EINVAL);
	assert_int_equal(ovr_mr_reg_dev(t, 1, 0x10000, 4096, LW | RR | RW,
					&cookie, 512, &key),
			 0);
	assert_int_equal(ovr_mr_reg(t, 1, 0x9000, 16, LW, buf, &hkey), 0);
	assert_true(ovr_mr_is_dev(t, key));
	assert_false(ovr_mr_is_dev(t, hkey));
	assert_int_equal(ovr_mr_check_dev(t, key, 1, 0x10010, 100, RR, &loc),
			 0);
	assert_null(loc.host);
	assert_ptr_equal(loc.dev, &cookie);
	assert_int_equal(loc.dev_off, 512 + 0x10);
	/* the usual checks still apply */
	assert_int_equal(ovr_mr_check_dev(t, key, 2, 0x10010, 100, RR, &loc),
			 -OVR_MR_EPD);
	assert_int_equal(ovr_mr_check_dev(t, key, 1, 0x10f00, 0x200, RR, &loc),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check_dev(t, key, 1, 0x10000, 8, RA, &loc),
			 -OVR_MR_EACCESS);
	/* memcpy-only callers never get a device region */
	assert_int_equal(ovr_mr_check(t, key, 1, 0x10010, 100, RR, &host),
			 -OVR_MR_EACCESS);
	assert_null(host);
	/* host regions through check_dev */
	assert_int_equal(ovr_mr_check_dev(t, hkey, 1, 0x9004, 8, 0, &loc), 0);
	assert_ptr_equal(loc.host, buf + 4);
	assert_null(loc.dev);
	assert_int_equal(ovr_mr_dereg(t, key), 0);
	assert_false(ovr_mr_is_dev(t, key));
	assert_int_equal(ovr_mr_check_dev(t, key, 1, 0x10010, 1, 0, &loc),
			 -OVR_MR_EKEY);
	ovr_mr_destroy(t);
}

static void test_zero_length(void **state)
{
	struct ovr_mr_table *t = ovr_mr_create(4, 5);
	uint8_t *h = buf;
	uint32_t knull, kbuf;

	(void)state;
	assert_int_equal(
		ovr_mr_reg(t, 2, 0x5000, 0, LW | RW | RR, NULL, &knull), 0);
	assert_int_equal(ovr_mr_reg(t, 2, 0x5000, 0, RR, buf + 9, &kbuf), 0);

	assert_int_equal(ovr_mr_check(t, knull, 2, 0x5000, 0, RW, &h), 0);
	assert_null(h);
	assert_int_equal(ovr_mr_check(t, kbuf, 2, 0x5000, 0, RR, &h), 0);
	assert_ptr_equal(h, buf + 9);
	/* any non-empty access is out of bounds, even at va */
	assert_int_equal(ovr_mr_check(t, kbuf, 2, 0x5000, 1, RR, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, knull, 2, 0x5000, 1, 0, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, kbuf, 2, 0x5001, 0, RR, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, kbuf, 2, 0x4fff, 0, RR, &h),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check(t, kbuf, 2, 0x4fff, 1, RR, &h),
			 -OVR_MR_EBOUNDS);
	/* still keyed, still in a pd, still access-checked */
	assert_int_equal(ovr_mr_check(t, kbuf, 3, 0x5000, 0, RR, &h),
			 -OVR_MR_EPD);
	assert_int_equal(ovr_mr_check(t, kbuf, 2, 0x5000, 0, RW, &h),
			 -OVR_MR_EACCESS);
	assert_int_equal(ovr_mr_check(t, kbuf, 2, 0x5000, 0, LW, &h),
			 -OVR_MR_EACCESS);
	assert_int_equal(ovr_mr_dereg(t, kbuf), 0);
	assert_int_equal(ovr_mr_check(t, kbuf, 2, 0x5000, 0, 0, &h),
			 -OVR_MR_EKEY);
	assert_int_equal(ovr_mr_dereg(t, knull), 0);
	assert_int_equal(ovr_mr_count(t), 0);
	ovr_mr_destroy(t);
}

static void test_refcount(void **state)
{
	struct ovr_mr_table *t = ovr_mr_create(8, 5);
	uint8_t *h;
	uint32_t key, other;

	(void)state;
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 64, LW | RR, buf, &key), 0);
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 64, LW, buf, &other), 0);
	assert_int_equal(ovr_mr_put(t, key), -ERANGE); /* none held */
	for (int i = 0; i < 3; i++)
		assert_int_equal(ovr_mr_get(t, key), 0);
	assert_int_equal(ovr_mr_refs(t, key), 3);
	assert_int_equal(ovr_mr_refs(t, other), 0);
	/* busy: refused, and the region is intact */
	assert_int_equal(ovr_mr_dereg(t, key), -EBUSY);
	assert_int_equal(ovr_mr_count(t), 2);
	assert_int_equal(ovr_mr_check(t, key, 1, 0x1000, 64, RR, &h), 0);
	assert_ptr_equal(h, buf);
	/* references are per region */
	assert_int_equal(ovr_mr_dereg(t, other), 0);
	assert_int_equal(ovr_mr_put(t, key), 0);
	assert_int_equal(ovr_mr_put(t, key), 0);
	assert_int_equal(ovr_mr_dereg(t, key), -EBUSY);
	assert_int_equal(ovr_mr_put(t, key), 0);
	assert_int_equal(ovr_mr_put(t, key), -ERANGE);
	assert_int_equal(ovr_mr_dereg(t, key), 0);
	assert_int_equal(ovr_mr_dereg(t, key), -EINVAL);
	assert_int_equal(ovr_mr_refs(t, key), -EINVAL);
	assert_int_equal(ovr_mr_get(t, key), -EINVAL);
	assert_int_equal(ovr_mr_put(t, key), -EINVAL);
	assert_int_equal(ovr_mr_get(t, 0), -EINVAL);
	assert_int_equal(ovr_mr_dereg(t, 0), -EINVAL);
	assert_int_equal(ovr_mr_count(t), 0);

	/* a new occupant of the slot starts with no references */
	assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 64, LW, buf, &key), 0);
	assert_int_equal(ovr_mr_put(t, key), -ERANGE);
	assert_int_equal(ovr_mr_dereg(t, key), 0);
	ovr_mr_destroy(t);
}

static void test_invalidate(void **state)
{
	struct ovr_mr_table *t = ovr_mr_create(8, 5);
	const unsigned int all = LW | RW | RR | RA;
	uint8_t *h;
	uint32_t key;

	(void)state;
	assert_int_equal(ovr_mr_reg(t, 4, 0x1000, 64, all, buf, &key), 0);
	assert_int_equal(ovr_mr_get(t, key), 0);
	/* wrong pd: refused, rights unchanged */
	assert_int_equal(ovr_mr_invalidate(t, key, 5), -OVR_MR_EPD);
	assert_int_equal(ovr_mr_check(t, key, 4, 0x1000, 8, all, &h), 0);
	assert_int_equal(ovr_mr_invalidate(t, key ^ (1u << 31), 4),
			 -OVR_MR_EKEY);
	assert_int_equal(ovr_mr_invalidate(t, 0, 4), -OVR_MR_EKEY);

	assert_int_equal(ovr_mr_invalidate(t, key, 4), 0);
	assert_int_equal(ovr_mr_check(t, key, 4, 0x1000, 8, RW, &h),
			 -OVR_MR_EACCESS);
	assert_int_equal(ovr_mr_check(t, key, 4, 0x1000, 8, RR, &h),
			 -OVR_MR_EACCESS);
	assert_int_equal(ovr_mr_check(t, key, 4, 0x1000, 8, RA, &h),
			 -OVR_MR_EACCESS);
	/* local use, the key and the references stay */
	assert_int_equal(ovr_mr_check(t, key, 4, 0x1000, 8, LW, &h), 0);
	assert_int_equal(ovr_mr_check(t, key, 4, 0x1000, 8, 0, &h), 0);
	assert_int_equal(ovr_mr_invalidate(t, key, 4), 0); /* idempotent */
	assert_int_equal(ovr_mr_dereg(t, key), -EBUSY);
	assert_int_equal(ovr_mr_put(t, key), 0);
	assert_int_equal(ovr_mr_dereg(t, key), 0);
	assert_int_equal(ovr_mr_invalidate(t, key, 4), -OVR_MR_EKEY);

	/* the slot's next region has its own rights */
	assert_int_equal(ovr_mr_reg(t, 4, 0x1000, 64, all, buf, &key), 0);
	assert_int_equal(ovr_mr_check(t, key, 4, 0x1000, 8, RW, &h), 0);
	ovr_mr_destroy(t);
}

/* ibv_rereg_mr's CHANGE_PD / CHANGE_ACCESS: in place, key kept */
static void test_modify(void **state)
{
	struct ovr_mr_table *t = ovr_mr_create(8, 9);
	struct ovr_mr_loc loc;
	int cookie;
	uint8_t *h = NULL;
	uint32_t key, dkey;

	(void)state;
	assert_int_equal(ovr_mr_reg(t, 4, 0x1000, 64, LW, buf, &key), 0);
	assert_int_equal(ovr_mr_get(t, key), 0);
	assert_int_equal(ovr_mr_check(t, key, 4, 0x1000, 8, RW, &h),
			 -OVR_MR_EACCESS);
	/* refused: the region stays as it was */
	assert_int_equal(ovr_mr_modify(t, key, 5, RW), -EINVAL);
	assert_int_equal(ovr_mr_modify(t, key, 5, LW | 0x100), -EINVAL);
	assert_int_equal(ovr_mr_modify(t, key ^ (1u << 31), 5, LW), -EINVAL);
	assert_int_equal(ovr_mr_modify(t, 0, 5, LW), -EINVAL);
	assert_int_equal(ovr_mr_check(t, key, 4, 0x1000, 8, LW, &h), 0);
	/* new rights: granted at once, taken away at once */
	assert_int_equal(ovr_mr_modify(t, key, 4, LW | RW | RR), 0);
	assert_int_equal(ovr_mr_check(t, key, 4, 0x1008, 8, RW | RR, &h), 0);
	assert_ptr_equal(h, buf + 8);
	assert_int_equal(ovr_mr_modify(t, key, 4, 0), 0);
	assert_int_equal(ovr_mr_check(t, key, 4, 0x1000, 8, LW, &h),
			 -OVR_MR_EACCESS);
	assert_int_equal(ovr_mr_check(t, key, 4, 0x1000, 8, 0, &h), 0);
	/* new PD: the old one is refused, the range and key stay */
	assert_int_equal(ovr_mr_modify(t, key, 6, LW), 0);
	assert_int_equal(ovr_mr_check(t, key, 4, 0x1000, 8, 0, &h),
			 -OVR_MR_EPD);
	assert_int_equal(ovr_mr_check(t, key, 6, 0x1000, 64, LW, &h), 0);
	assert_int_equal(ovr_mr_check(t, key, 6, 0x1000, 65, 0, &h),
			 -OVR_MR_EBOUNDS);
	/* pd 0, access 0: unusable, still deregistered as usual */
	assert_int_equal(ovr_mr_modify(t, key, 0, 0), 0);
	assert_int_equal(ovr_mr_check(t, key, 6, 0x1000, 8, 0, &h),
			 -OVR_MR_EPD);
	assert_int_equal(ovr_mr_refs(t, key), 1);
	assert_int_equal(ovr_mr_dereg(t, key), -EBUSY);
	assert_int_equal(ovr_mr_put(t, key), 0);
	assert_int_equal(ovr_mr_dereg(t, key), 0);
	assert_int_equal(ovr_mr_modify(t, key, 4, LW), -EINVAL);
	/* a device region stays one */
	assert_int_equal(ovr_mr_reg_dev(t, 1, 0x10000, 4096, LW, &cookie, 512,
					&dkey),
			 0);
	assert_int_equal(ovr_mr_modify(t, dkey, 2, LW | RR), 0);
	assert_true(ovr_mr_is_dev(t, dkey));
	assert_int_equal(ovr_mr_check_dev(t, dkey, 2, 0x10010, 16, RR, &loc),
			 0);
	assert_ptr_equal(loc.dev, &cookie);
	assert_int_equal(loc.dev_off, 512 + 0x10);
	ovr_mr_destroy(t);
}

static void test_full(void **state)
{
	struct ovr_mr_table *t = ovr_mr_create(8, 5);
	uint32_t keys[8], k;

	(void)state;
	for (int i = 0; i < 8; i++)
		assert_int_equal(ovr_mr_reg(t, 1, 0, 8, 0, buf, &keys[i]), 0);
	assert_int_equal(ovr_mr_reg(t, 1, 0, 8, 0, buf, &k), -ENOSPC);
	/* invalid arguments are reported first */
	assert_int_equal(ovr_mr_reg(t, 1, 0, 8, RW, buf, &k), -EINVAL);
	assert_int_equal(ovr_mr_count(t), 8);
	assert_int_equal(ovr_mr_dereg(t, keys[5]), 0);
	assert_int_equal(ovr_mr_count(t), 7);
	assert_int_equal(ovr_mr_reg(t, 1, 0, 8, 0, buf, &k), 0);
	assert_int_equal(k & 7, keys[5] & 7);
	assert_int_equal(ovr_mr_reg(t, 1, 0, 8, 0, buf, &k), -ENOSPC);
	/* drain and refill: every slot comes back */
	for (int i = 0; i < 8; i++)
		if (i != 5)
			assert_int_equal(ovr_mr_dereg(t, keys[i]), 0);
	assert_int_equal(ovr_mr_dereg(t, k), 0);
	assert_int_equal(ovr_mr_count(t), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(ovr_mr_reg(t, 1, 0, 8, 0, buf, &keys[i]), 0);
	assert_int_equal(ovr_mr_reg(t, 1, 0, 8, 0, buf, &k), -ENOSPC);
	/* freed in the order 0-4, 6, 7, 5: reused in that order */
	for (int i = 0; i < 8; i++)
		assert_int_equal(keys[i] & 7, i < 5 ? i : i < 7 ? i + 1 : 5);
	assert_distinct_nonzero(keys, 8);
	ovr_mr_destroy(t);
}

/* A fixed interleaving of reg and dereg; the keys it got, in order. */
static void key_sequence(uint64_t seed, uint32_t *out, int n)
{
	struct ovr_mr_table *t = ovr_mr_create(16, seed);
	uint32_t live[16];
	int nlive = 0;

	assert_non_null(t);
	for (int i = 0; i < n; i++) {
		if (nlive == 16 || (i % 3 == 2 && nlive)) {
			int j = (i * 7) % nlive;

			assert_int_equal(ovr_mr_dereg(t, live[j]), 0);
			live[j] = live[--nlive];
		}
		assert_int_equal(ovr_mr_reg(t, 0, 0, 0, 0, NULL, &out[i]), 0);
		live[nlive++] = out[i];
	}
	ovr_mr_destroy(t);
}

static void test_seed_reproducible(void **state)
{
	enum { N = 200 };
	uint32_t a[N], b[N], c[N], r1[N], r2[N];

	(void)state;
	key_sequence(42, a, N);
	key_sequence(42, b, N);
	key_sequence(43, c, N);
	assert_memory_equal(a, b, sizeof(a));
	assert_memory_not_equal(a, c, sizeof(a));
	/* seed 0: from getrandom, so two tables differ */
	key_sequence(0, r1, N);
	key_sequence(0, r2, N);
	assert_memory_not_equal(r1, r2, sizeof(r1));
	assert_memory_not_equal(r1, a, sizeof(r1));
}

/* ---- randomized run against a naive model ---- */

#define MSLOTS 64

struct model_mr {
	bool live;
	uint32_t key;
	uint32_t pd;
	uint64_t va;
	uint64_t len;
	unsigned int access;
	uint8_t *host;
	uint32_t refs;
};

struct model {
	struct model_mr mr[MSLOTS]; /* in no particular order */
	uint32_t last_key[MSLOTS]; /* by slot: the latest key issued */
	uint32_t hist[256]; /* keys ever issued, a ring */
	unsigned int nhist;
	uint32_t count;
};

static struct model_mr *model_find(struct model *m, uint32_t key)
{
	for (int i = 0; i < MSLOTS; i++)
		if (m->mr[i].live && m->mr[i].key == key)
			return &m->mr[i];
	return NULL;
}

static int model_check(struct model *m, uint32_t key, uint32_t pd, uint64_t va,
		       uint64_t len, unsigned int need, uint8_t **host)
{
	struct model_mr *r = model_find(m, key);

	if (!r)
		return -OVR_MR_EKEY;
	if (r->pd != pd)
		return -OVR_MR_EPD;
	/* in 128 bits, where nothing wraps */
	if (va < r->va ||
	    (unsigned __int128)va + len > (unsigned __int128)r->va + r->len)
		return -OVR_MR_EBOUNDS;
	/* MW_BIND (0x10) is not a right a check may ask for */
	for (int bit = 0; bit < 32; bit++)
		if ((need >> bit & 1) && !((r->access & 15) >> bit & 1))
			return -OVR_MR_EACCESS;
	*host = va == r->va ? r->host : r->host + (va - r->va);
	return 0;
}

static int model_reg(struct model *m, uint64_t va, uint64_t len,
		     unsigned int access, uint8_t *host)
{
	if (access > 31 || ((access & (RW | RA)) && !(access & LW)) ||
	    (unsigned __int128)va + len > UINT64_MAX || (!host && len))
		return -EINVAL;
	if (m->count == MSLOTS)
		return -ENOSPC;
	return 0;
}

static void model_add(struct model *m, uint32_t key, uint32_t pd, uint64_t va,
		      uint64_t len, unsigned int access, uint8_t *host)
{
	uint32_t slot = key & (MSLOTS - 1);

	assert_int_not_equal(key, 0);
	assert_null(model_find(m, key));
	for (int i = 0; i < MSLOTS; i++) /* the slot was free */
		assert_false(m->mr[i].live &&
			     (m->mr[i].key & (MSLOTS - 1)) == slot);
	assert_int_not_equal(key, m->last_key[slot]);
	m->last_key[slot] = key;
	m->hist[m->nhist++ % 256] = key;
	for (int i = 0; i < MSLOTS; i++) {
		if (!m->mr[i].live) {
			m->mr[i] = (struct model_mr){
				.live = true,
				.key = key,
				.pd = pd,
				.va = va,
				.len = len,
				.access = access,
				.host = host,
			};
			m->count++;
			return;
		}
	}
	fail();
}

static uint32_t pick_key(struct model *m, uint64_t *rng)
{
	uint64_t r = test_rng(rng);
	unsigned int sel = r % 10;

	r >>= 8;
	if (sel < 6 && m->count) {
		for (;;) {
			struct model_mr *x = &m->mr[r % MSLOTS];

			if (x->live)
				return x->key;
			r = test_rng(rng);
		}
	}
	if (sel < 8 && m->nhist)
		return m->hist[r % (m->nhist < 256 ? m->nhist : 256)];
	if (sel < 9)
		return (uint32_t)r;
	return m->nhist ? m->hist[(m->nhist - 1) % 256] ^ (1u << (r % 32)) : 0;
}

static uint64_t pick_len(uint64_t *rng)
{
	uint64_t r = test_rng(rng);

	switch (r % 8) {
	case 0:
		return 0;
	case 1:
		return 1;
	default:
		return 1 + (r >> 8) % 4096;
	}
}

static uint64_t pick_va(uint64_t *rng)
{
	uint64_t r = test_rng(rng);

	switch (r % 4) {
	case 0:
		return UINT64_MAX - (r >> 8) % 8192; /* may not fit */
	case 1:
		return (r >> 8) % 8192;
	default:
		return 0x10000 + ((r >> 8) % 64) * 0x1000;
	}
}

static void model_run(uint64_t table_seed, uint64_t op_seed, int ops)
{
	struct ovr_mr_table *t = ovr_mr_create(MSLOTS, table_seed);
	struct model *m = calloc(1, sizeof(*m));
	uint64_t rng = op_seed;
	unsigned int seen[6] = { 0 }; /* outcomes of check: 0, 4 codes */

	assert_non_null(t);
	assert_non_null(m);
	for (int i = 0; i < ops; i++) {
		uint64_t r = test_rng(&rng);
		unsigned int op = r % 100;
		uint32_t key = pick_key(m, &rng);
		struct model_mr *x = model_find(m, key);

		r >>= 8;
		if (op < 25) {
			uint32_t pd = r % 4;
			unsigned int acc = (r >> 4) % 16;
			uint64_t va = pick_va(&rng), len = pick_len(&rng);
			uint8_t *host = buf + (r >> 12) % (sizeof(buf) - 4096);
			uint32_t k = 0;
			int want, got;

			if ((r >> 32) % 32 == 0)
				acc |= 0x10u << ((r >> 40) % 4);
			if (!len && (r >> 48) % 2)
				host = NULL;
			want = model_reg(m, va, len, acc, host);
			got = ovr_mr_reg(t, pd, va, len, acc, host, &k);
			assert_int_equal(got, want);
			if (!got)
				model_add(m, k, pd, va, len, acc, host);
		} else if (op < 35) {
			int want = !x ? -EINVAL : x->refs ? -EBUSY : 0;

			assert_int_equal(ovr_mr_dereg(t, key), want);
			if (!want) {
				x->live = false;
				m->count--;
			}
		} else if (op < 80) {
			/* around a live region, or anywhere */
			uint64_t va, len;
			uint32_t pd = (r % 8) ? (x ? x->pd : 0) : (r >> 3) % 4;
			unsigned int need = (r >> 5) % 16;
			uint8_t *hw = NULL, *hg = NULL;
			int want, got;

			if (x && (r >> 9) % 4) {
				uint64_t lo = (r >> 11) % (x->len + 3);

				va = x->va + lo - 1; /* from start - 1 */
				switch ((r >> 24) % 5) {
				case 0:
					len = 0;
					break;
				case 1:
					len = x->len - (lo - 1);
					break;
				case 2:
					len = x->len - (lo - 1) + 1;
					break;
				case 3:
					len = UINT64_MAX - (r >> 30) % 4;
					break;
				default:
					len = (r >> 30) % 64;
				}
			} else {
				va = pick_va(&rng);
				len = pick_len(&rng);
			}
			if ((r >> 40) % 64 == 0)
				need |= 0x10u << ((r >> 46) % 4);
			want = model_check(m, key, pd, va, len, need, &hw);
			got = ovr_mr_check(t, key, pd, va, len, need, &hg);
			assert_int_equal(got, want);
			assert_ptr_equal(hg, hw);
			seen[got ? -got - OVR_MR_EKEY + 1 : 0]++;
		} else if (op < 88) {
			int want = !x ? -EINVAL : 0;

			assert_int_equal(ovr_mr_get(t, key), want);
			if (x)
				x->refs++;
		} else if (op < 96) {
			int want = !x ? -EINVAL : !x->refs ? -ERANGE : 0;

			assert_int_equal(ovr_mr_put(t, key), want);
			if (!want)
				x->refs--;
		} else {
			uint32_t pd = (r % 4) ? (x ? x->pd : 0) : (r >> 2) % 4;
			int want = !x	       ? -OVR_MR_EKEY :
				   x->pd != pd ? -OVR_MR_EPD :
						 0;

			assert_int_equal(ovr_mr_invalidate(t, key, pd), want);
			if (!want)
				x->access &= LW;
		}
		if (i % 997 == 0) {
			assert_int_equal(ovr_mr_count(t), m->count);
			for (int j = 0; j < MSLOTS; j++) {
				struct model_mr *y = &m->mr[j];
				uint8_t *h = NULL;

				if (!y->live)
					continue;
				assert_int_equal(ovr_mr_check(t, y->key, y->pd,
							      y->va, y->len,
							      y->access & 15,
							      &h),
						 0);
				assert_ptr_equal(h, y->host);
			}
		}
	}
	assert_int_equal(ovr_mr_count(t), m->count);
	/* the run reached every outcome */
	for (int c = 0; c < 5; c++)
		assert_true(seen[c] > 100);
	ovr_mr_destroy(t);
	free(m);
}

/* ---- memory windows ----------------------------------------------------- */

#define MWB OVR_ACCESS_MW_BIND

static int bind_w(struct ovr_mr_table *t, uint32_t mw, uint32_t nk, uint32_t mr,
		  uint32_t pd, uint32_t qpn, unsigned int acc, uint64_t va,
		  uint64_t len, uint32_t *out)
{
	struct ovr_mw_bind b = { .mw_key = mw,
				 .new_key = nk,
				 .mr_key = mr,
				 .pd = pd,
				 .qpn = qpn,
				 .access = acc,
				 .va = va,
				 .len = len };

	return ovr_mw_bind(t, &b, out);
}

/* Allocation: types, keys (never 0, never a region's, distinct), the
 * count, deallocation by any key of the window, ENOSPC. */
static void test_mw_alloc(void **state)
{
	struct ovr_mr_table *t = ovr_mr_create(16, 11);
	uint32_t keys[16], mr[16], k;

	(void)state;
	assert_int_equal(ovr_mw_alloc(t, 1, 0, &k), -EINVAL);
	assert_int_equal(ovr_mw_alloc(t, 1, 3, &k), -EINVAL);
	assert_int_equal(ovr_mw_alloc(t, 1, OVR_MW_TYPE_2, NULL), -EINVAL);
	for (int i = 0; i < 16; i++)
		assert_int_equal(
			ovr_mr_reg(t, 1, 0x1000, 64, LW | MWB, buf, &mr[i]), 0);
	for (int i = 0; i < 16; i++)
		assert_int_equal(ovr_mw_alloc(t, 1, 1 + (i & 1), &keys[i]), 0);
	assert_int_equal(ovr_mw_alloc(t, 1, OVR_MW_TYPE_1, &k), -ENOSPC);
	assert_int_equal(ovr_mw_count(t), 16);
	assert_int_equal(ovr_mr_count(t), 16);
	/* no key of any window (all 256 of each) is a region's */
	for (int i = 0; i < 16; i++)
		for (uint32_t b = 0; b < 256; b++)
			assert_int_equal(ovr_mr_refs(t, (keys[i] & ~0xffu) | b),
					 -EINVAL);
	/* an unbound window's key reaches nothing, nor is it an lkey */
	{
		struct ovr_mr_loc loc;
		uint8_t *h;

		assert_int_equal(ovr_mr_check_rkey(t, keys[0], 1, 0, 0x1000, 0,
						   0, &loc),
				 -OVR_MR_EKEY);
		assert_int_equal(ovr_mr_check(t, keys[0], 1, 0x1000, 0, 0, &h),
				 -OVR_MR_EKEY);
		assert_int_equal(ovr_mr_get(t, keys[0]), -EINVAL);
	}
	/* deallocated by a key with other low 8 bits (binds change them) */
	assert_int_equal(ovr_mw_dealloc(t, keys[3] ^ 0x5a), 0);
	assert_int_equal(ovr_mw_dealloc(t, keys[3]), -EINVAL);
	assert_int_equal(ovr_mw_count(t), 15);
	assert_int_equal(ovr_mw_alloc(t, 1, OVR_MW_TYPE_2, &k), 0);
	assert_int_not_equal(k >> 8, keys[3] >> 8); /* a new tag */
	keys[3] = k;
	assert_distinct_nonzero(keys, 16);
	/* regions registered while windows live avoid their keys too */
	for (int i = 0; i < 16; i++)
		assert_int_equal(ovr_mr_dereg(t, mr[i]), 0);
	for (int round = 0; round < 200; round++) {
		assert_int_equal(ovr_mr_reg(t, 1, 0x1000, 64, LW, buf, &k), 0);
		for (int i = 0; i < 16; i++)
			assert_int_not_equal(k >> 8, keys[i] >> 8);
		assert_int_equal(ovr_mr_dereg(t, k), 0);
	}
	ovr_mr_destroy(t);
}

/* Binding: every refusal leaves the window as it was. */
static void test_mw_bind_rules(void **state)
{
	struct ovr_mr_table *t = ovr_mr_create(64, 12);
	uint32_t mr, plain, ro, other, w1, w2, k, k2;
	uint64_t va = 0x10000;

	(void)state;
	assert_int_equal(ovr_mr_reg(t, 1, va, 4096, LW | MWB, buf, &mr), 0);
	assert_int_equal(ovr_mr_reg(t, 1, va, 4096, LW, buf, &plain), 0);
	assert_int_equal(ovr_mr_reg(t, 1, va, 4096, MWB, buf, &ro), 0);
	assert_int_equal(ovr_mr_reg(t, 2, va, 4096, LW | MWB, buf, &other), 0);
	assert_int_equal(ovr_mw_alloc(t, 1, OVR_MW_TYPE_1, &w1), 0);
	assert_int_equal(ovr_mw_alloc(t, 1, OVR_MW_TYPE_2, &w2), 0);

	assert_int_equal(bind_w(t, w2 ^ 0x100, w2, mr, 1, 7, RW, va, 64, &k),
			 -ENOENT);
	assert_int_equal(bind_w(t, w2, w2 + 1, mr, 2, 7, RW, va, 64, &k),
			 -EPERM); /* the QP's PD */
	assert_int_equal(bind_w(t, w2, w2 + 1, other, 1, 7, RW, va, 64, &k),
			 -EPERM); /* the region's PD */
	assert_int_equal(bind_w(t, w2, w2 + 1, plain, 1, 7, RW, va, 64, &k),
			 -EACCES); /* no MW_BIND */
	assert_int_equal(bind_w(t, w2, w2 + 1, ro, 1, 7, RW, va, 64, &k),
			 -EACCES); /* writable window, no LOCAL_WRITE */
	assert_int_equal(bind_w(t, w2, w2 + 1, ro, 1, 7, RR, va, 64, &k), 0);
	assert_int_equal(ovr_mr_invalidate_key(t, k, 1, 7, false), 0);
	assert_int_equal(bind_w(t, w2, w2 + 1, mr, 1, 7, RW, va + 4090, 7, &k),
			 -ERANGE);
	assert_int_equal(bind_w(t, w2, w2 + 1, mr, 1, 7, RW, va - 1, 7, &k),
			 -ERANGE);
	assert_int_equal(bind_w(t, w2, w2 + 1, mr, 1, 7, RW, UINT64_MAX - 2, 7,
				&k),
			 -ERANGE);
	assert_int_equal(bind_w(t, w2, w2 + 1, mr, 1, 7, 0x20, va, 8, &k),
			 -EINVAL);
	assert_int_equal(bind_w(t, w2, w2 + 1, mr ^ 0x10000, 1, 7, RW, va, 8,
				&k),
			 -EINVAL); /* no such region */
	assert_int_equal(bind_w(t, w2, w2 + 1, mr, 1, 7, RW, va, 0, &k),
			 -EINVAL); /* type 2: never zero-length */
	assert_int_equal(ovr_mr_refs(t, mr), 0);
	/* the whole region, to its last byte */
	assert_int_equal(bind_w(t, w2, w2 + 1, mr, 1, 7, RW, va, 4096, &k), 0);
	assert_int_equal(k, (w2 & ~0xffu) | ((w2 + 1) & 0xffu));
	assert_int_equal(ovr_mr_refs(t, mr), 1);
	assert_int_equal(ovr_mr_dereg(t, mr), -EBUSY);
	assert_int_equal(bind_w(t, k, k + 1, mr, 1, 7, RW, va, 64, &k2),
			 -EBUSY); /* bound type 2 */
	/* type 1: re-bound in place, then unbound (length 0) */
	assert_int_equal(bind_w(t, w1, w1 + 1, mr, 1, 9, RW, va, 64, &k), 0);
	assert_int_equal(ovr_mr_refs(t, mr), 2);
	assert_int_equal(bind_w(t, k, k + 1, mr, 1, 9, RR, va + 64, 64, &k2),
			 0);
	assert_int_equal(ovr_mr_refs(t, mr), 2);
	assert_int_equal(bind_w(t, k2, k2 + 1, 0, 1, 9, 0, 0, 0, &k), 0);
	assert_int_equal(ovr_mr_refs(t, mr), 1);
	/* deallocation of the bound type 2 lets the region go */
	assert_int_equal(ovr_mw_dealloc(t, w2), 0);
	assert_int_equal(ovr_mr_refs(t, mr), 0);
	assert_int_equal(ovr_mr_dereg(t, mr), 0);
	ovr_mr_destroy(t);
}

/* Remote access through windows: range, rights, QP, keys. */
static void test_mw_check(void **state)
{
	struct ovr_mr_table *t = ovr_mr_create(64, 13);
	uint32_t mr, w1, w2, k1, k2;
	uint64_t va = 0x20000;
	struct ovr_mr_loc loc;

	(void)state;
	assert_int_equal(ovr_mr_reg(t, 4, va, 8192, LW | MWB, buf, &mr), 0);
	assert_int_equal(ovr_mw_alloc(t, 4, OVR_MW_TYPE_1, &w1), 0);
	assert_int_equal(ovr_mw_alloc(t, 4, OVR_MW_TYPE_2, &w2), 0);
	assert_int_equal(
		bind_w(t, w1, w1 + 1, mr, 4, 5, RR, va + 100, 200, &k1), 0);
	assert_int_equal(bind_w(t, w2, w2 + 1, mr, 4, 5, RW | RA, va + 4096,
				4096, &k2),
			 0);
	/* the region's byte, through the window */
	assert_int_equal(
		ovr_mr_check_rkey(t, k1, 4, 6, va + 100, 200, RR, &loc), 0);
	assert_ptr_equal(loc.host, buf + 100);
	assert_int_equal(ovr_mr_check_rkey(t, k2, 4, 5, va + 8184, 8, RA, &loc),
			 0);
	assert_ptr_equal(loc.host, buf + 8184);
	/* out of the window (inside the region) */
	assert_int_equal(ovr_mr_check_rkey(t, k1, 4, 6, va + 99, 1, RR, &loc),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(ovr_mr_check_rkey(t, k1, 4, 6, va + 299, 2, RR, &loc),
			 -OVR_MR_EBOUNDS);
	/* rights: the window's, not the region's */
	assert_int_equal(ovr_mr_check_rkey(t, k1, 4, 6, va + 100, 8, RW, &loc),
			 -OVR_MR_EACCESS);
	assert_int_equal(ovr_mr_check_rkey(t, k2, 4, 5, va + 4096, 8, RR, &loc),
			 -OVR_MR_EACCESS);
	assert_int_equal(ovr_mr_check_rkey(t, mr, 4, 5, va, 8, RR, &loc),
			 -OVR_MR_EACCESS);
	/* PD; type 2B: only QP 5 */
	assert_int_equal(ovr_mr_check_rkey(t, k1, 3, 6, va + 100, 8, RR, &loc),
			 -OVR_MR_EPD);
	assert_int_equal(ovr_mr_check_rkey(t, k2, 4, 6, va + 4096, 8, RW, &loc),
			 -OVR_MR_EKEY);
	/* another consumer key of the window; an invalidated one */
	assert_int_equal(ovr_mr_check_rkey(t, k2 ^ 0x40, 4, 5, va + 4096, 8, RW,
					   &loc),
			 -OVR_MR_EKEY);
	assert_int_equal(ovr_mr_invalidate_key(t, k1, 4, 6, true),
			 -OVR_MR_EACCESS); /* type 1 */
	assert_int_equal(ovr_mr_invalidate_key(t, k2, 4, 6, true),
			 -OVR_MR_EKEY); /* remote, another QP */
	assert_int_equal(ovr_mr_invalidate_key(t, k2, 3, 5, false),
			 -OVR_MR_EPD);
	assert_int_equal(ovr_mr_invalidate_key(t, k2 ^ 1, 4, 5, true),
			 -OVR_MR_EKEY);
	assert_int_equal(ovr_mr_invalidate_key(t, k2, 4, 5, true), 0);
	assert_int_equal(ovr_mr_check_rkey(t, k2, 4, 5, va + 4096, 8, RW, &loc),
			 -OVR_MR_EKEY);
	assert_int_equal(ovr_mr_invalidate_key(t, k2, 4, 5, true),
			 -OVR_MR_EKEY); /* not bound any more */
	assert_int_equal(ovr_mr_refs(t, mr), 1); /* the type-1 window's */
	/* a region's key: its remote rights go, as ovr_mr_invalidate */
	assert_int_equal(ovr_mr_invalidate_key(t, mr, 4, 5, false), 0);
	ovr_mr_destroy(t);
}

static void test_model(void **state)
{
	(void)state;
	model_run(0x1234, 1, 100000);
	model_run(0, 2, 100000); /* keys from getrandom */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_args),
		cmocka_unit_test(test_reg_args),
		cmocka_unit_test(test_keys_distinct),
		cmocka_unit_test(test_stale_keys),
		cmocka_unit_test(test_check_errors),
		cmocka_unit_test(test_access_matrix),
		cmocka_unit_test(test_top_of_space),
		cmocka_unit_test(test_whole_space),
		cmocka_unit_test(test_zero_length),
		cmocka_unit_test(test_device_regions),
		cmocka_unit_test(test_refcount),
		cmocka_unit_test(test_invalidate),
		cmocka_unit_test(test_modify),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_seed_reproducible),
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_mw_alloc),
		cmocka_unit_test(test_mw_bind_rules),
		cmocka_unit_test(test_mw_check),
	};

	return cmocka_run_group_tests_name("engine_mrtab", tests, NULL, NULL);
}
