// SPDX-License-Identifier: MIT
/*
 * Which CPUs ovrdmad's threads run on (docs/SERVICE.md section 5, "CPUs").
 *
 * ovrdmad is "given" the CPUs of its affinity when it starts (systemd's
 * CPUAffinity=, taskset, a container's cpuset). `dataplane_cores = auto`
 * (the default) is that count less one, the one for the control thread.
 * DPDK's EAL then pins the main thread - dataplane core 0 - to its main
 * lcore's CPUs (`-l 0`: CPU 0), and every thread created after inherits
 * that pin: without a plan all dataplane cores would share core 0's CPU.
 * So svc_run places them: each other core on a CPU of its own, taken in
 * order from the given CPUs that are not core 0's, then the control
 * thread on the next one; a thread for which none is left runs on any
 * of the given CPUs (as every thread does when the main lcore has them
 * all: the testbed's --lcores=0@(0-K)).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "svc.h"

uint32_t svc_cores_auto(const cpu_set_t *given)
{
	int n = given ? CPU_COUNT(given) : 0;

	if (n <= 2)
		return 1;
	return (uint32_t)(n - 1) > SVC_MAX_CORES ? SVC_MAX_CORES :
						   (uint32_t)(n - 1);
}

void svc_cpu_plan(uint32_t ncores, const cpu_set_t *given,
		  const cpu_set_t *main_cpus, int *core_cpu, int *ctl_cpu)
{
	int next = 0;

	core_cpu[0] = -1; /* the main thread: where EAL pinned it */
	/* cores 1 .. ncores - 1, then the control thread (i == ncores):
	 * each the next given CPU that core 0 does not run on, or -1 */
	for (uint32_t i = 1; i <= ncores; i++) {
		int cpu = -1;

		while (given && next < CPU_SETSIZE) {
			int c = next++;

			if (CPU_ISSET(c, given) &&
			    !(main_cpus && CPU_ISSET(c, main_cpus))) {
				cpu = c;
				break;
			}
		}
		if (i < ncores)
			core_cpu[i] = cpu;
		else
			*ctl_cpu = cpu;
	}
}

int svc_cpu_pin(pthread_t t, int cpu, const cpu_set_t *given)
{
	cpu_set_t one;

	if (cpu >= 0) {
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		return pthread_setaffinity_np(t, sizeof(one), &one);
	}
	if (given && CPU_COUNT(given))
		return pthread_setaffinity_np(t, sizeof(*given), given);
	return 0;
}

size_t svc_cpu_list(const cpu_set_t *set, char *buf, size_t cap)
{
	size_t len = 0;
	int lo = -1;

	if (cap)
		buf[0] = 0;
	for (int c = 0; c <= CPU_SETSIZE && set; c++) {
		bool in = c < CPU_SETSIZE && CPU_ISSET(c, set);

		if (in && lo < 0)
			lo = c;
		if (!in && lo >= 0) {
			int n = lo == c - 1 ?
					snprintf(buf + len, cap - len, "%s%d",
						 len ? "," : "", lo) :
					snprintf(buf + len, cap - len,
						 "%s%d-%d", len ? "," : "", lo,
						 c - 1);

			if (n < 0 || (size_t)n >= cap - len)
				return len;
			len += (size_t)n;
			lo = -1;
		}
	}
	return len;
}
