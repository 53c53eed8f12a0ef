// SPDX-License-Identifier: MIT
/*
 * Where ovrdmad's threads run (service/svc_cpu.c): dataplane_cores = auto
 * from the CPUs given, the plan that puts each core and the control
 * thread on a CPU of its own (never on core 0's, which EAL pinned), the
 * CPU list `show cores` prints, and the pinning itself.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "svc.h"

/* "0-3,8" -> set (the inverse of svc_cpu_list, for the tables) */
static void set_of(const char *list, cpu_set_t *set)
{
	char buf[256], *save = NULL;

	CPU_ZERO(set);
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		int lo, hi;

		if (sscanf(t, "%d-%d", &lo, &hi) != 2)
			hi = lo = atoi(t);
		for (int c = lo; c <= hi; c++)
			CPU_SET(c, set);
	}
}

static void test_auto(void **state)
{
	static const struct {
		const char *given;
		uint32_t cores;
	} t[] = {
		{ "", 1 }, /* no affinity known */
		{ "0", 1 },
		{ "0-1", 1 }, /* the 2-CPU machine: one core, as before */
		{ "0-2", 2 },
		{ "4-7", 3 },
		{ "0-15", 15 }, /* the 16-core machine */
		{ "0-63", SVC_MAX_CORES },
	};
	(void)state;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cpu_set_t g;

		set_of(t[i].given, &g);
		assert_int_equal(svc_cores_auto(&g), t[i].cores);
	}
	assert_int_equal(svc_cores_auto(NULL), 1);
}

static void test_plan(void **state)
{
	/* cores, given, core 0's (EAL's main lcore), then the expected
	 * CPU of cores 1.. and of the control thread (-1: any given) */
	static const struct {
		uint32_t ncores;
		const char *given, *main;
		int cpu[4], ctl;
	} t[] = {
		/* -l 0 on 16 CPUs, auto: a CPU each, control last */
		{ 15, "0-15", "0", { -1, 1, 2, 3 }, 15 },
		/* the testbed: the main lcore on every CPU */
		{ 2, "0-1", "0-1", { -1, -1 }, -1 },
		{ 4, "0-15", "0-15", { -1, -1, -1, -1 }, -1 },
		/* two CPUs, one core: the control thread off core 0's */
		{ 1, "0-1", "0", { -1 }, 1 },
		/* two CPUs, two cores: none left for the control thread */
		{ 2, "0-1", "0", { -1, 1 }, -1 },
		/* three cores on two CPUs: the third shares them */
		{ 3, "0-1", "1", { -1, 0, -1 }, -1 },
		/* holes in the given set, core 0 inside it */
		{ 3, "2,5,7,9", "5", { -1, 2, 7 }, 9 },
		/* EAL's lcore outside the given CPUs (-l 0, taskset 4-7) */
		{ 3, "4-7", "0", { -1, 4, 5 }, 6 },
	};
	(void)state;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cpu_set_t g, m;
		int cpu[SVC_MAX_CORES], ctl = 99;

		memset(cpu, 0x55, sizeof(cpu));
		set_of(t[i].given, &g);
		set_of(t[i].main, &m);
		svc_cpu_plan(t[i].ncores, &g, &m, cpu, &ctl);
		for (uint32_t k = 0; k < t[i].ncores && k < 4; k++) {
			if (cpu[k] != t[i].cpu[k])
				fail_msg("case %zu: core %u on %d, want %d", i,
					 k, cpu[k], t[i].cpu[k]);
		}
		if (ctl != t[i].ctl)
			fail_msg("case %zu: control on %d, want %d", i, ctl,
				 t[i].ctl);
	}
	/* 15 cores: 1..14 take CPUs 1..14 in order, none twice */
	{
		cpu_set_t g, m;
		int cpu[SVC_MAX_CORES], ctl;

		set_of("0-15", &g);
		set_of("0", &m);
		svc_cpu_plan(15, &g, &m, cpu, &ctl);
		for (int k = 1; k < 15; k++)
			assert_int_equal(cpu[k], k);
	}
}

static void test_list(void **state)
{
	static const char *const t[] = { "", "5", "0-3,8", "0,2,4",
					 "1-2,4-6,1023" };
	(void)state;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cpu_set_t s;
		char buf[64];

		set_of(t[i], &s);
		assert_int_equal(svc_cpu_list(&s, buf, sizeof(buf)),
				 strlen(t[i]));
		assert_string_equal(buf, t[i]);
	}
	/* a buffer too small: what fits, whole entries only */
	{
		cpu_set_t s;
		char buf[6];

		set_of("0-3,8,10", &s);
		svc_cpu_list(&s, buf, sizeof(buf));
		assert_string_equal(buf, "0-3,8");
	}
}

/* a thread pinned to one CPU runs there only; -1 gives it the set back */
static void test_pin(void **state)
{
	cpu_set_t mine, now;
	int first = -1;
	(void)state;

	assert_int_equal(sched_getaffinity(0, sizeof(mine), &mine), 0);
	for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
		if (CPU_ISSET(c, &mine))
			first = c;
	assert_true(first >= 0);
	assert_int_equal(svc_cpu_pin(pthread_self(), first, &mine), 0);
	assert_int_equal(
		pthread_getaffinity_np(pthread_self(), sizeof(now), &now), 0);
	assert_int_equal(CPU_COUNT(&now), 1);
	assert_true(CPU_ISSET(first, &now));
	assert_int_equal(svc_cpu_pin(pthread_self(), -1, &mine), 0);
	assert_int_equal(
		pthread_getaffinity_np(pthread_self(), sizeof(now), &now), 0);
	assert_true(CPU_EQUAL(&now, &mine));
	/* an empty set leaves the thread as it is */
	CPU_ZERO(&now);
	assert_int_equal(svc_cpu_pin(pthread_self(), -1, &now), 0);
	assert_int_equal(
		pthread_getaffinity_np(pthread_self(), sizeof(now), &now), 0);
	assert_true(CPU_EQUAL(&now, &mine));
	/* a CPU the machine lacks: the error, not a crash */
	assert_int_not_equal(
		svc_cpu_pin(pthread_self(), CPU_SETSIZE - 1, &mine), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auto),
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_pin),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
