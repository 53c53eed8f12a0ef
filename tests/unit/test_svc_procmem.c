// SPDX-License-Identifier: MIT
/*
 * svc_procmem.c: the process route reaches an application through the
 * /proc/PID/mem it passed, and only the address space that file was
 * opened on - not whatever its pid runs after an exec, not after an
 * exit; anything else passed in its place is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "svc.h"

#define PG 4096u

static void test_check(void **state)
{
	char dir[] = "/tmp/ovrdma-procmem.XXXXXX", path[96];
	int fd, p[2];

	(void)state;
	fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(svc_procmem_check(fd), 0);
	close(fd);
	snprintf(path, sizeof(path), "/proc/self/task/%ld/mem",
		 (long)syscall(SYS_gettid));
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(svc_procmem_check(fd), 0);
	close(fd);
	/* the route writes: a read-only one is refused as such */
	fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(svc_procmem_check(fd), -EACCES);
	close(fd);
	/* other files of procfs, whose writes may mean something else */
	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(svc_procmem_check(fd), -EINVAL);
	close(fd);
	fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(svc_procmem_check(fd), -EINVAL);
	close(fd);
	/* a file named like it elsewhere, a pipe */
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/123", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/123/mem", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(svc_procmem_check(fd), -EINVAL);
	close(fd);
	unlink(path);
	snprintf(path, sizeof(path), "%s/123", dir);
	rmdir(path);
	rmdir(dir);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(svc_procmem_check(p[1]), -EINVAL);
	close(p[0]);
	close(p[1]);
	assert_int_equal(svc_procmem_check(-1), -EINVAL);
}

/*
 * A child with two pages of a pattern and a hole after them, whose
 * /proc/PID/mem the parent opens. "e" on @cmd makes the child exec a
 * shell (its pid stays) that waits for EOF on @cmd; EOF makes it exit.
 * *@up: EOF once the child exec'd or exited (close-on-exec).
 */
static pid_t child(uint8_t **buf, int *cmd, int *up)
{
	int c[2], u[2];
	uint8_t *p;
	pid_t pid;
	char k;

	p = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(munmap(p + 2 * PG, PG), 0);
	for (unsigned int i = 0; i < 2 * PG; i++)
		p[i] = (uint8_t)(i * 7 + 1);
	assert_int_equal(pipe2(c, 0), 0);
	assert_int_equal(pipe2(u, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(c[1]);
		close(u[0]);
		if (write(u[1], "r", 1) != 1)
			_exit(1);
		if (read(c[0], &k, 1) == 1 && k == 'e' && dup2(c[0], 0) == 0)
			execl("/bin/sh", "sh", "-c", "read x", (char *)NULL);
		_exit(0);
	}
	close(c[0]);
	close(u[1]);
	assert_int_equal(read(u[0], &k, 1), 1);
	*buf = p;
	*cmd = c[1];
	*up = u[0];
	return pid;
}

static int open_mem(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(svc_procmem_check(fd), 0);
	return fd;
}

static void test_copies(void **state)
{
	uint8_t *p, got[2 * PG], put[PG];
	struct iovec v[2] = { { got, 100 }, { got + 100, PG } };
	int cmd, up, fd;
	pid_t pid;

	(void)state;
	pid = child(&p, &cmd, &up);
	fd = open_mem(pid);
	/* two iovecs on our side, one range on the child's */
	assert_int_equal(svc_procmem_rw(fd, false, v, 2, (uintptr_t)p + 5),
			 100 + PG);
	for (unsigned int i = 0; i < 100 + PG; i++)
		assert_int_equal(got[i], (uint8_t)((i + 5) * 7 + 1));
	/* into the child: read back through the file */
	memset(put, 0xab, sizeof(put));
	v[0] = (struct iovec){ put, PG };
	assert_int_equal(svc_procmem_rw(fd, true, v, 1, (uintptr_t)p + PG), PG);
	v[0] = (struct iovec){ got, PG };
	assert_int_equal(svc_procmem_rw(fd, false, v, 1, (uintptr_t)p + PG),
			 PG);
	assert_memory_equal(got, put, PG);
	/* nothing to move is done, not "gone" (the engine copies empty
	 * pieces at times: a queued run of them failed with -ESRCH) */
	v[0] = (struct iovec){ got, 0 };
	v[1] = (struct iovec){ got, 0 };
	assert_int_equal(svc_procmem_rw(fd, true, v, 2, (uintptr_t)p), 0);
	assert_int_equal(svc_procmem_rw(fd, false, v, 1, (uintptr_t)p), 0);
	/* the kernel stops at the hole: what came before, then -EFAULT */
	v[0] = (struct iovec){ got, 2 * PG };
	assert_int_equal(svc_procmem_rw(fd, false, v, 1, (uintptr_t)p + PG),
			 PG);
	assert_int_equal(svc_procmem_rw(fd, false, v, 1, (uintptr_t)p + 2 * PG),
			 -EFAULT);
	assert_int_equal(svc_procmem_rw(fd, true, v, 1, (uintptr_t)p + 2 * PG),
			 -EFAULT);
	/* exit: nothing is reached any more */
	close(cmd);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	v[0] = (struct iovec){ got, PG };
	assert_int_equal(svc_procmem_rw(fd, false, v, 1, (uintptr_t)p), -ESRCH);
	assert_int_equal(svc_procmem_rw(fd, true, v, 1, (uintptr_t)p), -ESRCH);
	close(fd);
	close(up);
	munmap(p, 2 * PG);
}

/* the pid that exec'd runs another program: the file opened before
 * reaches nothing, where process_vm_* on the pid would reach the new
 * program */
static void test_exec(void **state)
{
	uint8_t *p, got[PG], put[PG], *stack_page;
	struct iovec v = { got, PG };
	int cmd, up, fd, fresh;
	char k;
	pid_t pid;

	(void)state;
	pid = child(&p, &cmd, &up);
	fd = open_mem(pid);
	assert_int_equal(svc_procmem_rw(fd, false, &v, 1, (uintptr_t)p), PG);
	assert_int_equal(write(cmd, "e", 1), 1);
	assert_int_equal(read(up, &k, 1), 0); /* exec'd */
	v = (struct iovec){ got, PG };
	assert_int_equal(svc_procmem_rw(fd, false, &v, 1, (uintptr_t)p),
			 -ESRCH);
	memset(put, 0x5a, sizeof(put));
	v = (struct iovec){ put, PG };
	assert_int_equal(svc_procmem_rw(fd, true, &v, 1, (uintptr_t)p), -ESRCH);
	/* the new program's memory is there, for a file opened now */
	fresh = open_mem(pid);
	stack_page = NULL;
	{
		char path[64], line[512];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
		f = fopen(path, "re");
		assert_non_null(f);
		while (fgets(line, sizeof(line), f))
			if (strstr(line, "[stack]")) {
				unsigned long long s;

				assert_int_equal(sscanf(line, "%llx", &s), 1);
				stack_page = (uint8_t *)(uintptr_t)s;
			}
		fclose(f);
	}
	assert_non_null(stack_page);
	v = (struct iovec){ got, 8 };
	assert_int_equal(
		svc_procmem_rw(fresh, false, &v, 1, (uintptr_t)stack_page), 8);
	assert_int_equal(svc_procmem_rw(fd, false, &v, 1,
					(uintptr_t)stack_page),
			 -ESRCH);
	close(fresh);
	close(fd);
	close(cmd);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(up);
	munmap(p, 2 * PG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_copies),
		cmocka_unit_test(test_exec),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
