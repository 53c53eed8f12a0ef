// SPDX-License-Identifier: MIT
/*
 * The process route's window into an application (docs/SERVICE.md
 * section 4.2): the application's own /proc/self/mem, which it opens and
 * passes with its process-route REG_MR; the context keeps the first.
 *
 * Why that file and not process_vm_readv / writev on the peer's pid: a
 * pid names a process, not an address space. A process keeps its pid
 * and, unless it is close-on-exec, its control socket across execve(),
 * so a context and its registrations outlive the program that made
 * them; after the exec of a set-user-ID program the pid is a more
 * privileged image, and ovrdmad (root, which process_vm_* lets into any
 * process) would read and write that image's memory for the ordinary
 * user whose peer holds the rkey. /proc/PID/mem is bound to the address
 * space it was opened on (the kernel keeps a reference to the mm, not
 * to the pid): once that address space is gone - exec or exit - a read
 * or write through it moves nothing, whatever the pid runs by then.
 * Opening it is the kernel's ptrace access check made with the opener's
 * rights, so ovrdmad needs no privilege for the route and reaches
 * nothing the application could not: its own memory, which a process
 * may always open unless it is not dumpable (PR_SET_DUMPABLE 0, or it
 * changed its user ID since its last exec).
 *
 * Cost: the kernel copies through a bounce page one 4 KB page at a time
 * (docs/PERFORMANCE.md, "Memory routes"). Semantics differ from
 * process_vm_* in one point: /proc/PID/mem writes with FOLL_FORCE, so a
 * WRITE lands in a private page the application made read-only after
 * registering it, as a pinning NIC's DMA into the pinned page would.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "svc.h"

/* "mem" right under a directory named by a number: /proc/PID/mem or
 * /proc/PID/task/TID/mem, wherever that procfs is mounted */
static bool mem_path(const char *p)
{
	const char *base = strrchr(p, '/'), *dir;

	if (!base || base == p || strcmp(base, "/mem"))
		return false;
	for (dir = base; dir > p && dir[-1] != '/'; dir--)
		if (dir[-1] < '0' || dir[-1] > '9')
			return false;
	return dir < base;
}

int svc_procmem_check(int fd)
{
	char link[64], path[PATH_MAX];
	struct statfs sf;
	struct stat st;
	ssize_t n;
	int fl;

	/* procfs makes every PID/mem a regular file of mode 0600 */
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (st.st_mode & 07777) != 0600 || fstatfs(fd, &sf) ||
	    (unsigned long)sf.f_type != PROC_SUPER_MAGIC)
		return -EINVAL;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return -EINVAL;
	path[n] = 0;
	if (!mem_path(path))
		return -EINVAL;
	/* the route writes whenever a region lets the device write */
	if ((fl & O_ACCMODE) != O_RDWR)
		return -EACCES;
	return 0;
}

ssize_t svc_procmem_rw(int fd, bool to_app, const struct iovec *iov, int n,
		       uint64_t addr)
{
	size_t want = 0;
	ssize_t r;

	/* nothing to move (the engine skips empty pieces itself since
	 * eng_dev_copy checks the length; kept as a defence): done, and not
	 * the 0 that says the address space is gone */
	for (int i = 0; i < n; i++)
		want += iov[i].iov_len;
	if (!want)
		return 0;
	do
		r = to_app ? pwritev(fd, iov, n, (off_t)addr) :
			     preadv(fd, iov, n, (off_t)addr);
	while (r < 0 && errno == EINTR);
	if (r > 0)
		return r;
	if (r == 0)
		return -ESRCH; /* the address space is gone */
	/* the kernel says EIO when the first page is not there */
	return errno == EIO ? -EFAULT : -errno;
}
