// SPDX-License-Identifier: MIT
/*
 * svc_mem.c: a tracked mapping of a file truncated under it takes loads
 * and stores past the end of file into stand-in pages, counted; a
 * SIGBUS anywhere else still kills the process.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "svc.h"

#define PG 4096u

static uint8_t *map_tmp(int *fd)
{
	char path[] = "/tmp/ovrdma-svcmem.XXXXXX";
	uint8_t *p;

	*fd = mkstemp(path);
	assert_true(*fd >= 0);
	unlink(path);
	assert_int_equal(ftruncate(*fd, 2 * PG), 0);
	p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	assert_true(p != MAP_FAILED);
	return p;
}

static void test_truncated_stand_in(void **state)
{
	volatile uint8_t *p;
	uint64_t cnt = 0, before = svc_mem_truncated_pages();
	int fd;

	(void)state;
	p = map_tmp(&fd);
	p[0] = 1;
	assert_int_equal(svc_mem_track((void *)p, 2 * PG, PG, &cnt), 0);
	assert_int_equal(ftruncate(fd, PG), 0);
	p[PG + 5] = 7; /* past the end: a stand-in page takes it */
	assert_int_equal(p[PG + 5], 7);
	assert_int_equal(cnt, 1);
	assert_int_equal(p[0], 1); /* the file's page is still the file's */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(p[10], 0); /* reads zeros */
	assert_int_equal(cnt, 2);
	assert_int_equal(svc_mem_truncated_pages() - before, 2);
	svc_mem_untrack((void *)p);
	munmap((void *)p, 2 * PG);
	close(fd);
}

static void test_untracked_still_fatal(void **state)
{
	volatile uint8_t *p;
	uint64_t cnt = 0;
	int fd, st;
	pid_t pid;

	(void)state;
	p = map_tmp(&fd);
	assert_int_equal(ftruncate(fd, 0), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* cmocka's own handler out of the way (the one the fault
		 * goes back to), then ours installed: the range is not
		 * tracked */
		signal(SIGBUS, SIG_DFL);
		if (svc_mem_track((void *)(p + 2 * PG), PG, PG, &cnt))
			_exit(2);
		svc_mem_untrack((void *)(p + 2 * PG));
		p[0] = 1;
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGBUS);
	assert_int_equal(cnt, 0);
	munmap((void *)p, 2 * PG);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_untracked_still_fatal),
		cmocka_unit_test(test_truncated_stand_in),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
