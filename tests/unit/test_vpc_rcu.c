// SPDX-License-Identifier: MIT
/*
 * RCU tests of the VPC tables.
 *
 *  - stress: reader threads (QSBR-registered) look bindings up in a loop,
 *    hold what they found until their next quiescent state and check
 *    that it is intact all along, and read the tenant's host list, while
 *    a control-plane thread adds, moves and deletes bindings (so the host
 *    list is replaced too) and swaps security groups. Freed objects
 *    are poisoned first, so a premature free shows up as a corrupt entry
 *    even without ASan (and as a use after free with it).
 *  - grace period: a reader that holds a binding and does not report a
 *    quiescent state keeps it from being freed (checked for a bounded
 *    time), and once it reports, the free happens (bounded wait). A
 *    reader that went offline holds up nothing.
 *
 * Deterministic: each check is either "never happens while X", sampled
 * over a bounded window, or "happens after Y", with a generous timeout;
 * no sleep stands in for synchronisation.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <ovrdma/vpc.h>
#include <ovrdma/util.h>

#define LOCAL 0xc0a80001u /* this host */
#define TEN 4242u
#define NKEYS 256u
#define KEY(i) (0x0a010000u | ((i) + 1)) /* 10.1.0.1 ... */
#define NREADERS 2
#define STRESS_NS 1000000000ull /* 1 s of updates */
#define HOLD 32 /* pointers a reader holds per loop */

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Hosts are 198.18.x.y (RFC 2544 benchmark space), never this host; the
 * MAC is a function of (vip, host) so that a torn or stale entry fails. */
static uint32_t host_for(uint32_t vip, uint32_t gen)
{
	return 0xc6120000u | ((vip * 2654435761u + gen) & 0xffffu);
}

static void mac_for(uint32_t vip, uint32_t host, uint8_t mac[6])
{
	uint32_t x = vip ^ host ^ 0x5a5a5a5au;

	mac[0] = 0x02;
	mac[1] = (uint8_t)(vip ^ host);
	mac[2] = (uint8_t)(x >> 24);
	mac[3] = (uint8_t)(x >> 16);
	mac[4] = (uint8_t)(x >> 8);
	mac[5] = (uint8_t)x;
}

static int intact(const struct ovr_vpc_vip *e, uint32_t vip)
{
	uint8_t mac[6];

	if (e->vni != TEN || e->vip != vip || e->dev != OVR_VPC_DEV_NONE ||
	    (e->host >> 16) != 0xc612u)
		return 0;
	mac_for(vip, e->host, mac);
	return memcmp(mac, e->mac, 6) == 0;
}

/* A host list as ovr_vpc_tenant_hosts() gives it: hosts of this test,
 * strictly ascending, reserved bytes zero, a MAC of mac_for's making. */
static int hosts_intact(const struct ovr_vpc_host *h, unsigned int n)
{
	static const uint8_t zero[2];
	unsigned int i;

	for (i = 0; i < n; i++)
		if ((h[i].host >> 16) != 0xc612u || h[i].mac[0] != 0x02 ||
		    memcmp(h[i].rsvd, zero, 2) != 0 ||
		    (i && h[i].host <= h[i - 1].host))
			return 0;
	return 1;
}

static struct ovr_vpc_binding binding_for(uint32_t vip, uint32_t gen)
{
	struct ovr_vpc_binding b;

	memset(&b, 0, sizeof(b));
	b.host = host_for(vip, gen);
	b.dev = OVR_VPC_DEV_NONE;
	mac_for(vip, b.host, b.mac);
	return b;
}

static struct ovr_vpc *make_vpc(void)
{
	struct ovr_vpc_config cfg = { .local_host = LOCAL, .size_hint = 64 };
	struct ovr_vpc *vpc = ovr_vpc_create(&cfg);

	assert_non_null(vpc);
	assert_int_equal(ovr_vpc_tenant_add(vpc, TEN), 0);
	return vpc;
}

/* ---- stress -------------------------------------------------------------- */

struct reader {
	struct ovr_vpc *vpc;
	int *stop;
	uint32_t seed;
	uint64_t loops, found, checks, corrupt;
	int failed_register;
};

/* Two rule sets with the same meaning (10.1.0.0/16 in, 10.2/16 out). */
static const struct ovr_vpc_sg_rule sg_a[] = { { 0x0a010000u, 16 } };
static const struct ovr_vpc_sg_rule sg_b[] = {
	{ 0x0a010000u, 17 },
	{ 0x0a018000u, 17 },
	{ 0x0a030000u, 16 },
	{ 0x09000000u, 8 },
};

static void *reader_main(void *arg)
{
	const struct ovr_vpc_vip *held[HOLD];
	struct ovr_vpc_host hosts[NKEYS];
	uint32_t held_vip[HOLD];
	struct reader *r = arg;
	struct ovr_vpc_thread *t;
	unsigned int i, n, nh;
	uint32_t vip;

	t = ovr_vpc_thread_register(r->vpc);
	if (!t) {
		r->failed_register = 1;
		return NULL;
	}
	while (!__atomic_load_n(r->stop, __ATOMIC_ACQUIRE)) {
		for (n = 0, i = 0; i < HOLD; i++) {
			vip = KEY(rnd(&r->seed) % NKEYS);
			held[n] = ovr_vpc_lookup(t, TEN, vip);
			if (!held[n])
				continue;
			r->checks++;
			if (!intact(held[n], vip))
				r->corrupt++;
			held_vip[n++] = vip;
		}
		/* security group: same answer from either rule set */
		r->checks += 2;
		if (!ovr_vpc_sg_allows(t, TEN, KEY(rnd(&r->seed) % NKEYS)) ||
		    ovr_vpc_sg_allows(t, TEN, 0x0a020000u | (r->seed & 0xffff)))
			r->corrupt++;
		/* the host list: one per vIP at most, each entry whole */
		nh = ovr_vpc_tenant_hosts(t, TEN, hosts, NKEYS);
		r->checks++;
		if (nh > NKEYS || !hosts_intact(hosts, nh))
			r->corrupt++;
		/* everything held is still intact: no quiescent state yet */
		for (i = 0; i < n; i++) {
			r->checks++;
			if (!intact(held[i], held_vip[i]))
				r->corrupt++;
		}
		r->found += n;
		r->loops++;
		ovr_vpc_quiescent();
	}
	ovr_vpc_thread_unregister(t);
	return NULL;
}

/*
 * After all the updates, the tenant's host list is exactly the distinct
 * hosts of the vIPs present (key k is bound to host_for(KEY(k), gen[k])),
 * each with the MAC of a binding to it.
 */
static void check_hosts(struct ovr_vpc *vpc, const uint8_t *present,
			const uint32_t *gen)
{
	static struct ovr_vpc_host got[NKEYS];
	uint32_t want[NKEYS], host, tmp;
	unsigned int n = 0, m, i, j, k;
	struct ovr_vpc_thread *t;
	uint8_t mac[6];
	int ok;

	for (k = 0; k < NKEYS; k++) {
		if (!present[k])
			continue;
		host = host_for(KEY(k), gen[k]);
		for (i = 0; i < n && want[i] != host; i++)
			;
		if (i == n)
			want[n++] = host;
	}
	for (i = 1; i < n; i++) /* insertion sort: ascending */
		for (j = i; j > 0 && want[j - 1] > want[j]; j--) {
			tmp = want[j];
			want[j] = want[j - 1];
			want[j - 1] = tmp;
		}
	t = ovr_vpc_thread_register(vpc);
	assert_non_null(t);
	m = ovr_vpc_tenant_hosts(t, TEN, got, NKEYS);
	ovr_vpc_thread_unregister(t);
	print_message("host list: %u hosts for the vIPs present\n", m);
	assert_int_equal(m, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(got[i].host, want[i]);
		for (ok = 0, k = 0; k < NKEYS && !ok; k++) {
			if (!present[k] ||
			    host_for(KEY(k), gen[k]) != got[i].host)
				continue;
			mac_for(KEY(k), got[i].host, mac);
			ok = memcmp(mac, got[i].mac, 6) == 0;
		}
		assert_true(ok);
	}
}

static void test_stress(void **state)
{
	struct reader rd[NREADERS];
	pthread_t th[NREADERS];
	uint32_t gen[NKEYS], seed = 7, i, k;
	uint8_t present[NKEYS];
	struct ovr_vpc_binding b;
	struct ovr_vpc_info mid, end;
	struct ovr_vpc *vpc;
	uint64_t deadline, ops = 0, adds = 0, moves = 0, dels = 0, sgs = 0;
	int stop = 0, rc;

	(void)state;
	vpc = make_vpc();
	memset(present, 0, sizeof(present));
	memset(gen, 0, sizeof(gen));
	for (i = 0; i < NKEYS; i += 2) { /* half there from the start */
		b = binding_for(KEY(i), 0);
		assert_int_equal(ovr_vpc_vip_add(vpc, TEN, KEY(i), &b), 0);
		present[i] = 1;
	}
	assert_int_equal(ovr_vpc_sg_set(vpc, TEN, sg_a, 1), 0);

	for (i = 0; i < NREADERS; i++) {
		memset(&rd[i], 0, sizeof(rd[i]));
		rd[i].vpc = vpc;
		rd[i].stop = &stop;
		rd[i].seed = 0x9e3779b9u * (i + 1);
		assert_int_equal(
			pthread_create(&th[i], NULL, reader_main, &rd[i]), 0);
	}

	/* the control plane: an unregistered thread, as ovrdmad's will be */
	deadline = ovr_mono_ns() + STRESS_NS;
	while (ovr_mono_ns() < deadline) {
		k = rnd(&seed) % NKEYS;
		b = binding_for(KEY(k), ++gen[k]);
		if (!present[k]) {
			rc = ovr_vpc_vip_add(vpc, TEN, KEY(k), &b);
			adds++;
			present[k] = 1;
		} else if (rnd(&seed) % 3) {
			rc = ovr_vpc_vip_move(vpc, TEN, KEY(k), &b);
			moves++;
		} else {
			rc = ovr_vpc_vip_del(vpc, TEN, KEY(k));
			dels++;
			present[k] = 0;
		}
		assert_int_equal(rc, 0);
		if (++ops % 64 == 0) {
			if ((ops / 64) & 1)
				rc = ovr_vpc_sg_set(vpc, TEN, sg_b, 4);
			else
				rc = ovr_vpc_sg_set(vpc, TEN, sg_a, 1);
			assert_int_equal(rc, 0);
			sgs++;
		}
	}
	/* grace periods complete while the readers run (bounded wait) */
	deadline = ovr_mono_ns() + 10 * 1000000000ull;
	do {
		ovr_vpc_info(vpc, &mid);
		if (mid.freed)
			break;
		sleep_ms(1);
	} while (ovr_mono_ns() < deadline);

	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < NREADERS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(rd[i].failed_register, 0);
		print_message("reader %u: %llu loops, %llu found, %llu checks, "
			      "%llu corrupt\n",
			      i, (unsigned long long)rd[i].loops,
			      (unsigned long long)rd[i].found,
			      (unsigned long long)rd[i].checks,
			      (unsigned long long)rd[i].corrupt);
		assert_int_equal(rd[i].corrupt, 0);
		assert_true(rd[i].loops > 10);
		assert_true(rd[i].found > 0);
	}
	print_message("writer: %llu adds, %llu moves, %llu deletes, %llu "
		      "rule sets; %llu of %llu retired freed mid-run\n",
		      (unsigned long long)adds, (unsigned long long)moves,
		      (unsigned long long)dels, (unsigned long long)sgs,
		      (unsigned long long)mid.freed,
		      (unsigned long long)mid.retired);
	assert_true(moves > 100 && dels > 100 && sgs > 2);
	assert_true(mid.freed > 0);

	ovr_vpc_barrier(vpc);
	ovr_vpc_info(vpc, &end);
	/* every move and delete retires a binding, every rule set the one
	 * before; an add, move or delete that changes the tenant's host list
	 * retires the old list too (nearly all of them: hosts are spread
	 * over 2^16 addresses), at most one each, 128 initial adds included */
	assert_true(end.retired >= moves + dels + sgs);
	assert_true(end.retired <=
		    moves + dels + sgs + adds + moves + dels + NKEYS / 2);
	assert_int_equal(end.freed, end.retired);
	for (k = 0, i = 0; i < NKEYS; i++)
		k += present[i];
	assert_int_equal(end.vips, k);
	check_hosts(vpc, present, gen);
	ovr_vpc_destroy(vpc);
}

/* ---- grace periods ------------------------------------------------------- */

enum phase {
	PH_START,
	PH_HOLDING, /* reader holds the binding, online, not quiescent */
	PH_REPORT, /* main: report a quiescent state now */
	PH_REPORTED,
	PH_EXIT,
};

struct staller {
	struct ovr_vpc *vpc;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum phase phase;
	int offline; /* go offline instead of just holding on */
	int intact_while_held;
};

static void set_phase(struct staller *s, enum phase p)
{
	pthread_mutex_lock(&s->lock);
	s->phase = p;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* Bounded: a wait that runs out is a failed test, not a hang. */
static int wait_phase(struct staller *s, enum phase p, unsigned int ms)
{
	struct timespec ts;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->lock);
	while (s->phase < p && rc == 0)
		rc = pthread_cond_timedwait(&s->cond, &s->lock, &ts);
	rc = s->phase >= p ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static void *staller_main(void *arg)
{
	struct staller *s = arg;
	struct ovr_vpc_thread *t = ovr_vpc_thread_register(s->vpc);
	const struct ovr_vpc_vip *e;

	if (!t)
		return NULL;
	e = ovr_vpc_lookup(t, TEN, KEY(0));
	if (s->offline) {
		e = NULL; /* an offline reader may hold nothing */
		ovr_vpc_thread_offline();
	}
	set_phase(s, PH_HOLDING);
	/* blocks without a quiescent state: a misbehaving poll loop */
	wait_phase(s, PH_REPORT, 30000);
	s->intact_while_held = e ? intact(e, KEY(0)) : 1;
	if (s->offline)
		ovr_vpc_thread_online();
	ovr_vpc_quiescent();
	set_phase(s, PH_REPORTED);
	wait_phase(s, PH_EXIT, 30000);
	ovr_vpc_thread_unregister(t);
	return NULL;
}

/* Poll the free count for @ms; returns the first value != @from seen. */
static uint64_t watch_freed(struct ovr_vpc *vpc, uint64_t from, unsigned int ms)
{
	struct ovr_vpc_info info;
	uint64_t end = ovr_mono_ns() + ms * 1000000ull;

	do {
		ovr_vpc_info(vpc, &info);
		if (info.freed != from)
			return info.freed;
		sleep_ms(5);
	} while (ovr_mono_ns() < end);
	return from;
}

static void run_staller(int offline)
{
	struct ovr_vpc_info i0, i1;
	struct ovr_vpc_binding b;
	struct staller s;
	pthread_t th;
	uint64_t f;

	memset(&s, 0, sizeof(s));
	s.vpc = make_vpc();
	s.offline = offline;
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	b = binding_for(KEY(0), 1);
	assert_int_equal(ovr_vpc_vip_add(s.vpc, TEN, KEY(0), &b), 0);
	/* another vIP on that host, same next hop: deleting KEY(0) leaves
	 * the tenant's host list as it is, the binding is all it retires */
	assert_int_equal(ovr_vpc_vip_add(s.vpc, TEN, KEY(1), &b), 0);

	assert_int_equal(pthread_create(&th, NULL, staller_main, &s), 0);
	assert_int_equal(wait_phase(&s, PH_HOLDING, 10000), 0);
	ovr_vpc_info(s.vpc, &i0);
	assert_int_equal(ovr_vpc_vip_del(s.vpc, TEN, KEY(0)), 0);
	ovr_vpc_info(s.vpc, &i1);
	assert_int_equal(i1.retired, i0.retired + 1);

	if (!offline) {
		/* the reader has not gone quiescent: nothing may be freed,
		 * however long we look (300 ms here) */
		f = watch_freed(s.vpc, i0.freed, 300);
		assert_int_equal(f, i0.freed);
		set_phase(&s, PH_REPORT);
		assert_int_equal(wait_phase(&s, PH_REPORTED, 10000), 0);
		assert_int_equal(s.intact_while_held, 1);
	}
	/* quiescent (or offline) now: the free follows, within 10 s */
	f = watch_freed(s.vpc, i0.freed, 10000);
	assert_int_equal(f, i0.freed + 1);

	if (offline) {
		set_phase(&s, PH_REPORT);
		assert_int_equal(wait_phase(&s, PH_REPORTED, 10000), 0);
	}
	set_phase(&s, PH_EXIT);
	assert_int_equal(pthread_join(th, NULL), 0);
	pthread_cond_destroy(&s.cond);
	pthread_mutex_destroy(&s.lock);
	ovr_vpc_destroy(s.vpc);
}

static void test_grace_period_waits_for_reader(void **state)
{
	(void)state;
	run_staller(0);
}

static void test_offline_reader_holds_nothing(void **state)
{
	(void)state;
	run_staller(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grace_period_waits_for_reader),
		cmocka_unit_test(test_offline_reader_holds_nothing),
		cmocka_unit_test(test_stress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
