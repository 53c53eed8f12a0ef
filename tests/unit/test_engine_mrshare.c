// SPDX-License-Identifier: MIT
/*
 * The memory-region table shared by threads (engine/mrtab.h, "Sharing"):
 * the data-path operations at the same time on several threads. Two
 * threads bind one type-1 window over and over, each with a binding of
 * its own (different range, rights, region and key), and unbind it now
 * and then, while two others take and drop references and check the
 * window's possible keys at random: every check that passes resolves
 * to exactly one of the two bindings, whole (its key, its range, its
 * rights, its region's bytes), never a mix; the references come back
 * to exactly what the last binding holds, then 0, and deregistration
 * succeeds (-EBUSY while any is held). Then binds and invalidations of
 * a type-2 window racing from two threads, counted against the region's
 * references; and invalidations handed from one thread to another,
 * which every later check on the other sees.
 *
 * The table is compiled into this test (mrtab.c included, below) with
 * its two seams defined: a reader stopped between the first fields of a
 * window and the rest while a bind runs right there (the torn read a
 * seqlock must retry), and, in the threaded tests, readers and writers
 * held up in the middle of a binding for a while, so that the races the
 * threads provoke are wide, not a few nanoseconds.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

struct ovr_mw_entry;
static void read_hook(const struct ovr_mw_entry *w);
static void write_hook(const struct ovr_mw_entry *w);
#define MW_READ_HOOK(w) read_hook(w)
#define MW_WRITE_HOOK(w) write_hook(w)

#include "mrtab.c"

/* How the seams behave: spin this many times (threaded tests) ... */
static atomic_uint hook_spin;
/* ... or, on this thread, run this bind once, mid-read (torn read) */
static _Thread_local struct ovr_mr_table *hook_tab;
static _Thread_local const struct ovr_mw_bind *hook_bind;
static _Thread_local unsigned int hook_fired;

static void hook_wait(void)
{
	for (unsigned int i =
		     atomic_load_explicit(&hook_spin, memory_order_relaxed);
	     i; i--)
		cpu_relax();
}

static void read_hook(const struct ovr_mw_entry *w)
{
	(void)w;
	if (hook_bind) {
		const struct ovr_mw_bind *b = hook_bind;

		hook_bind = NULL; /* once: the retry reads undisturbed */
		hook_fired++;
		if (ovr_mw_bind(hook_tab, b, NULL))
			hook_fired += 100; /* the bind itself failed */
		return;
	}
	hook_wait();
}

static void write_hook(const struct ovr_mw_entry *w)
{
	(void)w;
	hook_wait();
}

#define LW OVR_ACCESS_LOCAL_WRITE
#define RW OVR_ACCESS_REMOTE_WRITE
#define RR OVR_ACCESS_REMOTE_READ
#define PD 7u
#define QPN 0x1234u

#define RLEN 65536u
#define VA1 0x100000ull /* region 1's first byte */
#define VA2 0x900000ull /* region 2's */

/* The two bindings of the type-1 window: window offset, length, rights,
 * region, low key byte. */
struct binding {
	uint64_t va, len;
	unsigned int access;
	int region; /* 1 or 2 */
	uint32_t low;
};

static const struct binding bnd[2] = {
	{ VA1 + 4096, 4096, RW, 1, 0x11 },
	{ VA2 + 8192, 16384, RR, 2, 0x22 },
};

#define BINDS 60000u /* per binder thread */
#define CHECKS 200000u /* per checker thread */

struct shared {
	struct ovr_mr_table *tab;
	uint8_t *buf1, *buf2;
	uint32_t r1, r2; /* the regions' keys */
	uint32_t mw; /* the type-1 window (its allocation key) */
	pthread_barrier_t go; /* all four start together */
	atomic_uint checkers_left;
	/* what went wrong, counted by the threads, asserted by the main */
	atomic_uint bad_bind, bad_ref, mixed, bad_loc, bad_rc;
	atomic_uint ok[2]; /* checks that passed, per binding */
	atomic_uint binds_ok[2], unbinds;
};

static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t mw_key(const struct shared *s, uint32_t low)
{
	return (s->mw & ~0xffu) | low;
}

struct binder_arg {
	struct shared *s;
	int which;
};

/* Bind the window with binding @which over and over, every 7th time
 * unbinding it instead (length 0), BINDS times and until the checkers
 * are done. */
static void *binder(void *arg)
{
	const struct binder_arg *a = arg;
	struct shared *s = a->s;
	const struct binding *b = &bnd[a->which];

	pthread_barrier_wait(&s->go);
	for (uint32_t i = 0; i < BINDS || atomic_load(&s->checkers_left); i++) {
		struct ovr_mw_bind mb = {
			.mw_key = s->mw,
			.new_key = b->low,
			.mr_key = b->region == 1 ? s->r1 : s->r2,
			.pd = PD,
			.qpn = QPN,
			.access = b->access,
			.va = b->va,
			.len = i % 7 == 6 ? 0 : b->len,
		};
		uint32_t k = 0;

		if (ovr_mw_bind(s->tab, &mb, &k) || k != mw_key(s, b->low)) {
			atomic_fetch_add(&s->bad_bind, 1);
			continue;
		}
		if (mb.len)
			atomic_fetch_add(&s->binds_ok[a->which], 1);
		else
			atomic_fetch_add(&s->unbinds, 1);
		for (int j = 0; j < 5; j++)
			hook_wait();
	}
	return NULL;
}

/* A table of @n slots with keys from @seed; the test cannot go on
 * without one (abort: the compiler then knows it is not NULL). */
static struct ovr_mr_table *table(uint32_t n, uint64_t seed)
{
	struct ovr_mr_table *t = ovr_mr_create(n, seed);

	if (!t)
		abort();
	return t;
}

/* Check a random key of the two (or a never-bound low byte), at a
 * random place with random rights; take and drop references on both
 * regions between checks. CHECKS times, and on until both bindings
 * were seen (at most 20 times as long). */
static void *checker(void *arg)
{
	struct shared *s = arg;
	uint64_t seed = (uint64_t)(uintptr_t)arg ^ (uint64_t)pthread_self();

	pthread_barrier_wait(&s->go);
	for (uint32_t i = 0; i < CHECKS || ((!atomic_load(&s->ok[0]) ||
					     !atomic_load(&s->ok[1])) &&
					    i < 20 * CHECKS);
	     i++) {
		uint64_t r = rng(&seed);
		int which = (int)(r & 1);
		uint32_t low = (r >> 1) % 3 == 2 ? 0x33 : bnd[which].low;
		/* mostly around either binding's range (whatever the key),
		 * sometimes anywhere in either region */
		const struct binding *near = &bnd[(r >> 8) & 1];
		uint64_t va =
			(r >> 60) == 0 ?
				((r >> 9) & 1 ? VA1 : VA2) +
					((r >> 10) % RLEN) :
				near->va - 64 + ((r >> 10) % (near->len + 128));
		uint64_t len = 1 + ((r >> 30) & 63);
		unsigned int acc = (r >> 40) & 1 ? RW : RR;
		uint32_t rk = (r >> 41) & 1 ? s->r1 : s->r2;
		struct ovr_mr_loc loc;
		int rc;

		/* a reference on a region, dropped after the check */
		if (ovr_mr_get(s->tab, rk))
			atomic_fetch_add(&s->bad_ref, 1);
		rc = ovr_mr_check_rkey(s->tab, mw_key(s, low), PD, QPN, va, len,
				       acc, &loc);
		if (rc == 0) {
			const struct binding *b = NULL;

			for (int j = 0; j < 2; j++)
				if (low == bnd[j].low && va >= bnd[j].va &&
				    va + len <= bnd[j].va + bnd[j].len &&
				    !(acc & ~bnd[j].access))
					b = &bnd[j];
			if (!b) {
				atomic_fetch_add(&s->mixed, 1);
			} else {
				uint8_t *want = b->region == 1 ?
							s->buf1 + (va - VA1) :
							s->buf2 + (va - VA2);

				if (loc.host != want || loc.dev)
					atomic_fetch_add(&s->bad_loc, 1);
				atomic_fetch_add(&s->ok[b - bnd], 1);
			}
		} else if (rc != -OVR_MR_EKEY && rc != -OVR_MR_EBOUNDS &&
			   rc != -OVR_MR_EACCESS) {
			atomic_fetch_add(&s->bad_rc, 1);
		}
		if (ovr_mr_put(s->tab, rk))
			atomic_fetch_add(&s->bad_ref, 1);
	}
	atomic_fetch_sub(&s->checkers_left, 1);
	return NULL;
}

static void test_bind_check_refs(void **state)
{
	struct shared *s = calloc(1, sizeof(*s));
	pthread_t th[4];
	struct binder_arg ba[2];
	struct ovr_mw_bind unbind;
	struct ovr_mr_loc loc;
	int64_t refs1, refs2;
	uint32_t k;

	(void)state;
	assert_non_null(s);
	s->buf1 = calloc(1, RLEN);
	s->buf2 = calloc(1, RLEN);
	assert_non_null(s->buf1);
	assert_non_null(s->buf2);
	s->tab = table(1024, 42);
	assert_non_null(s->tab);
	assert_false(ovr_mr_shared(s->tab));
	/* a second user: from here on the table is shared */
	assert_ptr_equal(ovr_mr_share(s->tab), s->tab);
	assert_true(ovr_mr_shared(s->tab));
	assert_int_equal(ovr_mr_reg(s->tab, PD, VA1, RLEN,
				    LW | RW | OVR_ACCESS_MW_BIND, s->buf1,
				    &s->r1),
			 0);
	assert_int_equal(ovr_mr_reg(s->tab, PD, VA2, RLEN,
				    LW | OVR_ACCESS_MW_BIND, s->buf2, &s->r2),
			 0);
	assert_int_equal(ovr_mw_alloc(s->tab, PD, OVR_MW_TYPE_1, &s->mw), 0);
	/* keys of the window never collide with 0x33, the unbound byte */
	assert_int_not_equal(s->mw & 0xff, 0x33);
	atomic_store(&s->checkers_left, 2);
	/* readers and writers held up mid-binding: wide races (binders
	 * rest 5 times as long between binds, so readers get through) */
	atomic_store(&hook_spin, 20);
	assert_int_equal(pthread_barrier_init(&s->go, NULL, 4), 0);
	for (int i = 0; i < 2; i++) {
		ba[i] = (struct binder_arg){ s, i };
		assert_int_equal(pthread_create(&th[i], NULL, binder, &ba[i]),
				 0);
	}
	for (int i = 2; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, checker, s), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);

	assert_int_equal(atomic_load(&s->bad_bind), 0);
	assert_int_equal(atomic_load(&s->bad_ref), 0);
	assert_int_equal(atomic_load(&s->mixed), 0);
	assert_int_equal(atomic_load(&s->bad_loc), 0);
	assert_int_equal(atomic_load(&s->bad_rc), 0);
	pthread_barrier_destroy(&s->go);
	atomic_store(&hook_spin, 0);
	assert_true(atomic_load(&s->binds_ok[0]) +
			    atomic_load(&s->binds_ok[1]) +
			    atomic_load(&s->unbinds) >=
		    2 * BINDS);
	/* both bindings were seen by checks (not a vacuous run) */
	assert_true(atomic_load(&s->ok[0]) > 0);
	assert_true(atomic_load(&s->ok[1]) > 0);

	/* exactly the last binding's reference is left: 1 on its region
	 * (the one its key reaches now), 0 on the other */
	refs1 = ovr_mr_check_rkey(s->tab, mw_key(s, bnd[0].low), PD, QPN,
				  bnd[0].va, 8, RW, &loc) == 0;
	refs2 = ovr_mr_check_rkey(s->tab, mw_key(s, bnd[1].low), PD, QPN,
				  bnd[1].va, 8, RR, &loc) == 0;
	assert_true(refs1 + refs2 <= 1);
	assert_int_equal(ovr_mr_refs(s->tab, s->r1), refs1);
	assert_int_equal(ovr_mr_refs(s->tab, s->r2), refs2);
	/* held references refuse deregistration */
	assert_int_equal(ovr_mr_get(s->tab, s->r1), 0);
	assert_int_equal(ovr_mr_dereg(s->tab, s->r1), -EBUSY);
	assert_int_equal(ovr_mr_put(s->tab, s->r1), 0);
	if (refs2) /* the window holds region 2 */
		assert_int_equal(ovr_mr_dereg(s->tab, s->r2), -EBUSY);
	unbind = (struct ovr_mw_bind){ .mw_key = s->mw, .pd = PD, .len = 0 };
	assert_int_equal(ovr_mw_bind(s->tab, &unbind, &k), 0);
	assert_int_equal(ovr_mr_refs(s->tab, s->r1), 0);
	assert_int_equal(ovr_mr_refs(s->tab, s->r2), 0);
	assert_int_equal(ovr_mr_dereg(s->tab, s->r1), 0);
	assert_int_equal(ovr_mr_dereg(s->tab, s->r2), 0);
	assert_int_equal(ovr_mw_dealloc(s->tab, s->mw), 0);
	/* two users: two destroys, the second frees (ASan: no leak) */
	ovr_mr_destroy(s->tab);
	assert_int_equal(ovr_mr_count(s->tab), 0);
	ovr_mr_destroy(s->tab);
	free(s->buf1);
	free(s->buf2);
	free(s);
}

/* ---- type 2: binds and invalidations racing -------------------------- */

#define T2_ROUNDS 100000u

struct t2 {
	struct ovr_mr_table *tab;
	uint32_t mr, mw, key; /* key: the window's key as bound (0x44) */
	atomic_uint binds, invs, bad;
	pthread_barrier_t go;
};

static void *t2_binder(void *arg)
{
	struct t2 *t = arg;
	struct ovr_mw_bind b = {
		.mw_key = t->mw,
		.new_key = 0x44,
		.mr_key = t->mr,
		.pd = PD,
		.qpn = QPN,
		.access = RW,
		.va = VA1,
		.len = 256,
	};

	pthread_barrier_wait(&t->go);
	/* until the other thread has invalidated once, at least */
	for (uint32_t i = 0; i < T2_ROUNDS || !atomic_load(&t->invs); i++) {
		int rc = ovr_mw_bind(t->tab, &b, NULL);

		if (!rc)
			atomic_fetch_add(&t->binds, 1);
		else if (rc != -EBUSY) /* bound already: invalidate first */
			atomic_fetch_add(&t->bad, 1);
	}
	return NULL;
}

static void *t2_invalidator(void *arg)
{
	struct t2 *t = arg;

	pthread_barrier_wait(&t->go);
	/* until it has invalidated once, at least (the binder waits) */
	for (uint32_t i = 0; i < T2_ROUNDS || !atomic_load(&t->invs); i++) {
		/* remote (SEND_WITH_INV) and local (LOCAL_INV) in turn */
		int rc = ovr_mr_invalidate_key(t->tab, t->key, PD, QPN, i & 1);

		if (!rc)
			atomic_fetch_add(&t->invs, 1);
		else if (rc != -OVR_MR_EKEY) /* not bound now */
			atomic_fetch_add(&t->bad, 1);
	}
	return NULL;
}

/* Binds of a type-2 window on one thread, invalidations of it on
 * another: each succeeds only in the state it needs, and the region's
 * references follow exactly (binds - invalidations = bound now). */
static void test_type2_race(void **state)
{
	static uint8_t buf[RLEN];
	struct t2 t = { 0 };
	pthread_t th[2];
	struct ovr_mr_loc loc;
	unsigned int binds, invs;
	bool bound;

	(void)state;
	t.tab = table(256, 43);
	assert_non_null(t.tab);
	ovr_mr_share(t.tab);
	assert_int_equal(ovr_mr_reg(t.tab, PD, VA1, RLEN,
				    LW | OVR_ACCESS_MW_BIND, buf, &t.mr),
			 0);
	assert_int_equal(ovr_mw_alloc(t.tab, PD, OVR_MW_TYPE_2, &t.mw), 0);
	t.key = (t.mw & ~0xffu) | 0x44;
	assert_int_equal(pthread_barrier_init(&t.go, NULL, 2), 0);
	assert_int_equal(pthread_create(&th[0], NULL, t2_binder, &t), 0);
	assert_int_equal(pthread_create(&th[1], NULL, t2_invalidator, &t), 0);
	assert_int_equal(pthread_join(th[0], NULL), 0);
	assert_int_equal(pthread_join(th[1], NULL), 0);
	pthread_barrier_destroy(&t.go);
	assert_int_equal(atomic_load(&t.bad), 0);
	binds = atomic_load(&t.binds);
	invs = atomic_load(&t.invs);
	assert_true(binds > 0 && invs > 0);
	bound = !ovr_mr_check_rkey(t.tab, t.key, PD, QPN, VA1, 8, RW, &loc);
	assert_int_equal(binds - invs, bound ? 1 : 0);
	assert_int_equal(ovr_mr_refs(t.tab, t.mr), bound ? 1 : 0);
	if (bound) {
		assert_ptr_equal(loc.host, buf);
		assert_int_equal(ovr_mr_dereg(t.tab, t.mr), -EBUSY);
		assert_int_equal(
			ovr_mr_invalidate_key(t.tab, t.key, PD, QPN, true), 0);
	}
	assert_int_equal(ovr_mr_refs(t.tab, t.mr), 0);
	assert_int_equal(ovr_mr_dereg(t.tab, t.mr), 0);
	ovr_mr_destroy(t.tab);
	ovr_mr_destroy(t.tab);
}

/* ---- an invalidation on one thread, checks on another ---------------- */

#define HANDOFFS 2000u

struct handoff {
	struct ovr_mr_table *tab;
	uint8_t *buf;
	uint32_t mr, mw, wkey;
	/* round n: 2n the invalidator re-arms and invalidates, 2n + 1 the
	 * checker checks (both spin on it, acquire; set with release) */
	atomic_uint step;
	atomic_uint bad;
};

/* Keep checking the region's key and the type-2 window's while the
 * other thread invalidates them; once told (step odd), a check must
 * fail, every time. */
static void *handoff_checker(void *arg)
{
	struct handoff *h = arg;
	struct ovr_mr_loc loc;

	for (uint32_t n = 0; n < HANDOFFS; n++) {
		/* wait for the invalidation of round n (acquire) */
		while (atomic_load(&h->step) != 2 * n + 1)
			;
		if (ovr_mr_check_rkey(h->tab, h->mr, PD, QPN, VA1, 8, RW,
				      &loc) != -OVR_MR_EACCESS)
			atomic_fetch_add(&h->bad, 1);
		if (ovr_mr_check_rkey(h->tab, h->wkey, PD, QPN, VA1, 8, RW,
				      &loc) != -OVR_MR_EKEY)
			atomic_fetch_add(&h->bad, 1);
		atomic_store(&h->step, 2 * n + 2);
	}
	return NULL;
}

static void *handoff_invalidator(void *arg)
{
	struct handoff *h = arg;
	struct ovr_mr_loc loc;

	for (uint32_t n = 0; n < HANDOFFS; n++) {
		struct ovr_mw_bind b = {
			.mw_key = h->mw,
			.new_key = 0x55,
			.pd = PD,
			.qpn = QPN,
			.access = RW,
			.va = VA1,
			.len = 64,
		};

		while (atomic_load(&h->step) != 2 * n)
			;
		/* re-arm: a region with its remote rights, the window bound
		 * to it (registration is a control operation: the checker
		 * does not touch the table while it waits) */
		if (n && ovr_mr_dereg(h->tab, h->mr))
			atomic_fetch_add(&h->bad, 1);
		if (ovr_mr_reg(h->tab, PD, VA1, RLEN,
			       LW | RW | OVR_ACCESS_MW_BIND, h->buf, &h->mr))
			atomic_fetch_add(&h->bad, 1);
		b.mr_key = h->mr;
		if (ovr_mw_bind(h->tab, &b, NULL) ||
		    ovr_mr_check_rkey(h->tab, h->mr, PD, QPN, VA1, 8, RW,
				      &loc) ||
		    ovr_mr_check_rkey(h->tab, h->wkey, PD, QPN, VA1, 8, RW,
				      &loc))
			atomic_fetch_add(&h->bad, 1);
		/* SEND_WITH_INV of the region, LOCAL_INV of the window */
		if (ovr_mr_invalidate_key(h->tab, h->mr, PD, QPN, true) ||
		    ovr_mr_invalidate_key(h->tab, h->wkey, PD, QPN, false))
			atomic_fetch_add(&h->bad, 1);
		atomic_store(&h->step, 2 * n + 1); /* release */
	}
	return NULL;
}

static void test_invalidate_seen(void **state)
{
	static uint8_t buf[RLEN];
	struct handoff h = { 0 };
	pthread_t th[2];

	(void)state;
	h.tab = table(256, 44);
	assert_non_null(h.tab);
	ovr_mr_share(h.tab);
	h.buf = buf;
	assert_int_equal(ovr_mw_alloc(h.tab, PD, OVR_MW_TYPE_2, &h.mw), 0);
	h.wkey = (h.mw & ~0xffu) | 0x55;
	assert_int_equal(pthread_create(&th[0], NULL, handoff_checker, &h), 0);
	assert_int_equal(pthread_create(&th[1], NULL, handoff_invalidator, &h),
			 0);
	assert_int_equal(pthread_join(th[0], NULL), 0);
	assert_int_equal(pthread_join(th[1], NULL), 0);
	assert_int_equal(atomic_load(&h.bad), 0);
	assert_int_equal(atomic_load(&h.step), 2 * HANDOFFS);
	/* the window was invalidated last: its reference is gone */
	assert_int_equal(ovr_mr_refs(h.tab, h.mr), 0);
	assert_int_equal(ovr_mr_dereg(h.tab, h.mr), 0);
	ovr_mr_destroy(h.tab);
	ovr_mr_destroy(h.tab);
}

/*
 * A check stopped after reading the first fields of a type-1 window
 * bound with binding 0 (range in region 1), while the window is rebound
 * with binding 1 (range in region 2, another key and rights): the check
 * of binding 1's key at binding 0's address must see binding 1 whole -
 * out of its range, -EBOUNDS - not binding 0's range with binding 1's
 * key, rights and region (which would pass, pointing into region 2 at
 * an offset of region 1's). And binding 0's key, checked the same way,
 * is dead.
 */
static void test_torn_read(void **state)
{
	static uint8_t b1[RLEN], b2[RLEN];
	struct ovr_mr_table *t = table(64, 46);
	struct ovr_mw_bind mb[2];
	struct ovr_mr_loc loc;
	uint32_t r1, r2, mw;

	(void)state;
	assert_non_null(t);
	assert_int_equal(ovr_mr_reg(t, PD, VA1, RLEN,
				    LW | RW | OVR_ACCESS_MW_BIND, b1, &r1),
			 0);
	assert_int_equal(ovr_mr_reg(t, PD, VA2, RLEN, LW | OVR_ACCESS_MW_BIND,
				    b2, &r2),
			 0);
	assert_int_equal(ovr_mw_alloc(t, PD, OVR_MW_TYPE_1, &mw), 0);
	for (int i = 0; i < 2; i++)
		mb[i] = (struct ovr_mw_bind){
			.mw_key = mw,
			.new_key = bnd[i].low,
			.mr_key = i ? r2 : r1,
			.pd = PD,
			.qpn = QPN,
			.access = bnd[i].access,
			.va = bnd[i].va,
			.len = bnd[i].len,
		};
	assert_int_equal(ovr_mw_bind(t, &mb[0], NULL), 0);
	hook_tab = t;
	hook_bind = &mb[1];
	hook_fired = 0;
	assert_int_equal(ovr_mr_check_rkey(t, (mw & ~0xffu) | bnd[1].low, PD,
					   QPN, bnd[0].va, 8, RR, &loc),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(hook_fired, 1);
	/* and back, binding 0 mid-check of its key at binding 1's
	 * address: torn, binding 1's range would pass with binding 0's
	 * key, rights and region */
	hook_bind = &mb[0];
	assert_int_equal(ovr_mr_check_rkey(t, (mw & ~0xffu) | bnd[0].low, PD,
					   QPN, bnd[1].va, 8, RW, &loc),
			 -OVR_MR_EBOUNDS);
	assert_int_equal(hook_fired, 2);
	/* binding 1 mid-check of binding 0's key: dead either way */
	hook_bind = &mb[1];
	assert_int_equal(ovr_mr_check_rkey(t, (mw & ~0xffu) | bnd[0].low, PD,
					   QPN, bnd[0].va, 8, RW, &loc),
			 -OVR_MR_EKEY);
	assert_int_equal(hook_fired, 3);
	/* undisturbed, binding 1 serves its range, in region 2 */
	assert_int_equal(ovr_mr_check_rkey(t, (mw & ~0xffu) | bnd[1].low, PD,
					   QPN, bnd[1].va + 8, 8, RR, &loc),
			 0);
	assert_ptr_equal(loc.host, b2 + (bnd[1].va + 8 - VA2));
	assert_int_equal(ovr_mr_refs(t, r1), 0);
	assert_int_equal(ovr_mr_refs(t, r2), 1);
	assert_int_equal(ovr_mr_dereg(t, r2), -EBUSY);
	assert_int_equal(ovr_mw_dealloc(t, mw), 0);
	assert_int_equal(ovr_mr_refs(t, r2), 0);
	hook_tab = NULL;
	ovr_mr_destroy(t);
}

/* Users: the table goes with the last ovr_mr_destroy, in any order. */
static void test_users(void **state)
{
	static uint8_t buf[64];
	struct ovr_mr_table *t = table(16, 45);
	uint32_t k;

	(void)state;
	assert_non_null(t);
	ovr_mr_share(t);
	ovr_mr_share(t);
	ovr_mr_destroy(t);
	ovr_mr_destroy(t);
	/* one user left: still usable (ASan would see a freed table) */
	assert_int_equal(ovr_mr_reg(t, PD, VA1, sizeof(buf), LW, buf, &k), 0);
	assert_int_equal(ovr_mr_get(t, k), 0);
	assert_int_equal(ovr_mr_refs(t, k), 1);
	assert_int_equal(ovr_mr_put(t, k), 0);
	assert_int_equal(ovr_mr_put(t, k), -ERANGE);
	assert_int_equal(ovr_mr_count(t), 1);
	ovr_mr_destroy(t);
	ovr_mr_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_users),
		cmocka_unit_test(test_torn_read),
		cmocka_unit_test(test_bind_check_refs),
		cmocka_unit_test(test_type2_race),
		cmocka_unit_test(test_invalidate_seen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
