// SPDX-License-Identifier: MIT
/*
 * libovr_client's memory registration (docs/SERVICE.md section 4)
 * against a fake ovrdmad: a thread that answers HELLO, REG_MR and
 * DEREG_MR on a control socket and keeps what each REG_MR carried.
 *
 * The test executable defines mremap() the way UCX's memory hooks (UCM,
 * UCX 1.13) replace it in applications, and counts the calls:
 * registration must change no mapping, so it is never called.
 *
 *   1. private memory (anonymous pages, a stack buffer, a private file
 *      mapping) takes the process route: the request carries
 *      OVR_CTL_MR_PROC, no segment and no fd, and the application's
 *      /proc/self/maps lines and contents are exactly as before;
 *   2. registering the same pages again, or pages unmapped and mapped
 *      again at the same address, is the same: nothing to remember;
 *   3. a hole in the range is EFAULT; device writes over a read-only
 *      private mapping EACCES, reads of it the process route;
 *   4. MAP_SHARED memory - a memfd mapped twice, a file, shared
 *      anonymous memory - is passed as its own object, the mapping left
 *      as it was (its maps line unchanged, the second mapping still
 *      sharing its pages);
 *   5. a range over private and shared pieces takes the process route
 *      as a whole, every mapping left as it was;
 *   6. a read-only shared mapping registered for device writes is
 *      EACCES; for reads, the object goes read-only;
 *   7. on demand (OVR_ACCESS_ON_DEMAND): the process route with
 *      OVR_CTL_MR_ODP whatever backs the range (shared memory too), a
 *      hole or a read-only piece allowed, ON_DEMAND not among the
 *      rights sent; NULL + SIZE_MAX (implicit) sent as va 0, len
 *      2^64 - 1; NULL + SIZE_MAX without ON_DEMAND is EINVAL;
 *   8. as an ordinary user, who may not open /proc/self/map_files (this
 *      thread without CAP_SYS_ADMIN and CAP_CHECKPOINT_RESTORE): a memfd
 *      the application holds is passed through its descriptor, a file
 *      through its path, and what has neither (a memfd closed after
 *      mmap, shared anonymous memory) takes the process route;
 *   9. a process that is not dumpable (in a child: its user ID changed,
 *      PR_SET_DUMPABLE 0) may not open /proc/self/mem: private memory
 *      is EPERM, shared memory still takes the object route.
 * The process route's request carries this process's /proc/PID/mem,
 * open read-write (docs/SERVICE.md section 4.2).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <ovrdma/client.h>
#include <ovrdma/ctl.h>
#include <ovrdma/ring.h>

#define PG 4096u

/* ---- an application's memory hook --------------------------------------- */

static int hook_calls;

/* UCM's mremap (declared in <sys/mman.h>): no fifth argument, so
 * MREMAP_FIXED's address is lost */
void *mremap(void *old, size_t old_size, size_t new_size, int flags, ...)
{
	long r;

	hook_calls++;
	r = syscall(SYS_mremap, old, old_size, new_size, flags & ~MREMAP_FIXED,
		    NULL);
	return r == -1 ? MAP_FAILED : (void *)r;
}

/* ---- the fake service ----------------------------------------------------- */

struct seen_mr {
	struct ovr_ctl_reg_mr_req q;
	int nfds; /* as received */
	int fds[OVR_CTL_MR_MAX_SEG];
	ino_t ino[OVR_CTL_MR_MAX_SEG];
};

static struct {
	char dir[64], path[96];
	int lfd;
	pthread_t thr;
	struct seen_mr last; /* the latest REG_MR; fds owned here */
	uint32_t next_handle;
} svc;

static void reply(int fd, const struct ovr_ctl_hdr *q, int32_t status,
		  const void *body, size_t len, int pass_fd)
{
	struct ovr_ctl_hdr h = *q;
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)body, len } };
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cb;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = body ? 2 : 1 };

	h.status = status;
	h.len = (uint32_t)(sizeof(h) + (body ? len : 0));
	if (pass_fd >= 0) {
		struct cmsghdr *cm;

		memset(&cb, 0, sizeof(cb));
		m.msg_control = cb.b;
		m.msg_controllen = sizeof(cb.b);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
	}
	if (sendmsg(fd, &m, MSG_NOSIGNAL) < 0)
		perror("fake service: sendmsg");
}

static void forget_last(void)
{
	for (int i = 0; i < svc.last.nfds; i++)
		close(svc.last.fds[i]);
	memset(&svc.last, 0, sizeof(svc.last));
}

static void *service(void *arg)
{
	static char buf[OVR_CTL_MSG_MAX];
	int fd = accept(svc.lfd, NULL, NULL);

	(void)arg;
	if (fd < 0)
		return NULL;
	for (;;) {
		union {
			char b[CMSG_SPACE(sizeof(int) * OVR_CTL_MR_MAX_SEG)];
			struct cmsghdr align;
		} cb;
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cb.b,
				    .msg_controllen = sizeof(cb.b) };
		int fds[OVR_CTL_MR_MAX_SEG], nfds = 0;
		struct ovr_ctl_hdr h;
		ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);

		if (n <= 0)
			break;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm;
		     cm = CMSG_NXTHDR(&m, cm))
			if (cm->cmsg_type == SCM_RIGHTS) {
				nfds = (int)((cm->cmsg_len - CMSG_LEN(0)) /
					     sizeof(int));
				memcpy(fds, CMSG_DATA(cm),
				       sizeof(int) * (size_t)nfds);
			}
		memcpy(&h, buf, sizeof(h));
		if (h.op == OVR_CTL_HELLO) {
			struct ovr_ctl_hello_rep r = {
				.ring_abi = OVR_RING_ABI_VERSION,
				.incarnation = 1,
			};
			int page = memfd_create("fake-svc", MFD_CLOEXEC);

			if (ftruncate(page, sizeof(struct ovr_ring_svc)))
				perror("fake service: ftruncate");
			reply(fd, &h, 0, &r, sizeof(r), page);
			close(page);
		} else if (h.op == OVR_CTL_REG_MR) {
			struct ovr_ctl_reg_mr_rep r = {
				.handle = ++svc.next_handle,
				.lkey = svc.next_handle,
				.rkey = svc.next_handle,
			};

			forget_last();
			memcpy(&svc.last.q, buf + sizeof(h),
			       (size_t)n - sizeof(h));
			svc.last.nfds = nfds;
			for (int i = 0; i < nfds; i++) {
				struct stat st;

				svc.last.fds[i] = fds[i];
				svc.last.ino[i] =
					fstat(fds[i], &st) ? 0 : st.st_ino;
			}
			if (nfds != (svc.last.q.flags & OVR_CTL_MR_PROC ?
					     1 :
					     (int)svc.last.q.nseg))
				reply(fd, &h, -EINVAL, NULL, 0, -1);
			else
				reply(fd, &h, 0, &r, sizeof(r), -1);
		} else if (h.op == OVR_CTL_DEREG_MR) {
			reply(fd, &h, 0, NULL, 0, -1);
		} else {
			for (int i = 0; i < nfds; i++)
				close(fds[i]);
			reply(fd, &h, -EOPNOTSUPP, NULL, 0, -1);
		}
	}
	close(fd);
	return NULL;
}

static int setup(void **state)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct ovr_cl *cl;

	snprintf(svc.dir, sizeof(svc.dir), "/tmp/ovrdma-clmr.XXXXXX");
	if (!mkdtemp(svc.dir))
		return -1;
	snprintf(svc.path, sizeof(svc.path), "%s/sock", svc.dir);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", svc.path);
	svc.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (svc.lfd < 0 || bind(svc.lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(svc.lfd, 1) || pthread_create(&svc.thr, NULL, service, NULL))
		return -1;
	cl = ovr_cl_connect(svc.path, "test");
	if (!cl)
		return -1;
	*state = cl;
	return 0;
}

static int teardown(void **state)
{
	ovr_cl_close(*state);
	pthread_join(svc.thr, NULL);
	forget_last();
	close(svc.lfd);
	unlink(svc.path);
	rmdir(svc.dir);
	return 0;
}

/* ---- helpers ---------------------------------------------------------------- */

static uint8_t pat(uintptr_t a, unsigned int salt)
{
	return (uint8_t)((a >> 3) * 131 + (a & 7) + salt);
}

static void fill(uint8_t *p, size_t len, unsigned int salt)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pat((uintptr_t)(p + i), salt);
}

static void check_pat(const uint8_t *p, size_t len, unsigned int salt)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pat((uintptr_t)(p + i), salt))
			fail_msg("byte %zu of %p: 0x%02x, want 0x%02x", i,
				 (const void *)p, p[i],
				 pat((uintptr_t)(p + i), salt));
}

static uint8_t *map_pages(void *at, size_t n)
{
	uint8_t *p = mmap(at, n * PG, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0),
			  -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

/* ---- the object route ----------------------------------------------------- */

/* the /proc/self/maps line of @addr, in @line */
static void maps_line_of(const void *addr, char *line, size_t cap)
{
	FILE *f = fopen("/proc/self/maps", "re");

	assert_non_null(f);
	line[0] = 0;
	while (fgets(line, (int)cap, f)) {
		unsigned long long s, e;

		if (sscanf(line, "%llx-%llx", &s, &e) == 2 &&
		    (uintptr_t)addr >= s && (uintptr_t)addr < e)
			break;
		line[0] = 0;
	}
	fclose(f);
	assert_true(line[0] != 0);
}

static ino_t maps_ino(const void *addr)
{
	char line[512];
	unsigned long long ino;

	maps_line_of(addr, line, sizeof(line));
	assert_int_equal(sscanf(line, "%*s %*s %*s %*s %llu", &ino), 1);
	return (ino_t)ino;
}

/* segment @i of the last REG_MR is the object itself: what the service
 * maps of it is the application's memory at @at, and the service's
 * stores show through @at */
static void check_obj_seg(uint32_t i, uint8_t *at)
{
	const struct ovr_ctl_mr_seg *s = &svc.last.q.seg[i];
	uint8_t *p;

	assert_int_equal(svc.last.ino[i], maps_ino(at));
	p = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 svc.last.fds[i], (off_t)s->off);
	assert_true(p != MAP_FAILED);
	assert_memory_equal(p, at, s->len);
	p[s->len - 1] ^= 0x5a;
	assert_int_equal(p[s->len - 1], at[s->len - 1]);
	p[s->len - 1] ^= 0x5a;
	munmap(p, s->len);
}

/* ---- the process route ---------------------------------------------------- */

/* the last REG_MR took the process route for [va, va + len): no
 * segment, one fd, this process's /proc/PID/mem opened read-write,
 * through which the service reads what the application holds */
static void check_proc(const void *va, size_t len)
{
	char link[64], path[64], want[64];
	uint8_t b[64];
	ssize_t n;

	assert_int_equal(svc.last.q.flags, OVR_CTL_MR_PROC);
	assert_int_equal(svc.last.q.nseg, 0);
	assert_int_equal(svc.last.nfds, 1);
	assert_int_equal(svc.last.q.va, (uintptr_t)va);
	assert_int_equal(svc.last.q.len, len);
	assert_int_equal(svc.last.q.span, (uintptr_t)va & ~(uintptr_t)(PG - 1));
	snprintf(link, sizeof(link), "/proc/self/fd/%d", svc.last.fds[0]);
	n = readlink(link, path, sizeof(path) - 1);
	assert_true(n > 0);
	path[n] = 0;
	snprintf(want, sizeof(want), "/proc/%d/mem", (int)getpid());
	assert_string_equal(path, want);
	assert_int_equal(fcntl(svc.last.fds[0], F_GETFL) & O_ACCMODE, O_RDWR);
	n = pread(svc.last.fds[0], b, len < sizeof(b) ? len : sizeof(b),
		  (off_t)(uintptr_t)va);
	assert_int_equal(n, len < sizeof(b) ? len : sizeof(b));
	assert_memory_equal(b, va, (size_t)n);
}

/* the maps lines of @n pages at @p, one string */
static void maps_lines(const uint8_t *p, size_t n, char *out, size_t cap)
{
	size_t at = 0;

	for (size_t i = 0; i < n; i++) {
		char line[512];

		maps_line_of(p + i * PG, line, sizeof(line));
		at += (size_t)snprintf(out + at, cap - at, "%s", line);
		assert_true(at < cap);
	}
}

static void test_private_untouched(void **state)
{
	uint8_t *p = map_pages(NULL, 4);
	char before[4096], after[4096];
	struct ovr_cl_mr *mr;

	fill(p, 4 * PG, 1);
	maps_lines(p, 4, before, sizeof(before));
	hook_calls = 0;
	/* 100 bytes into page 0 .. 100 bytes into page 2 */
	mr = ovr_cl_reg_mr(*state, 1, p + 100, 2 * PG, 0xf);
	assert_non_null(mr);
	check_proc(p + 100, 2 * PG);
	maps_lines(p, 4, after, sizeof(after));
	assert_string_equal(before, after);
	check_pat(p, 4 * PG, 1);
	assert_int_equal(hook_calls, 0);
	assert_int_equal(ovr_cl_dereg_mr(*state, mr), 0);
	maps_lines(p, 4, after, sizeof(after));
	assert_string_equal(before, after);
	munmap(p, 4 * PG);
}

static void test_stack_and_private_file(void **state)
{
	char path[] = "/tmp/ovrdma-clmr-priv.XXXXXX";
	uint8_t stack_buf[3000];
	char before[512], after[512];
	int fd = mkstemp(path);
	struct ovr_cl_mr *mr;
	uint8_t *p;

	fill(stack_buf, sizeof(stack_buf), 2);
	maps_line_of(stack_buf, before, sizeof(before));
	mr = ovr_cl_reg_mr(*state, 1, stack_buf, sizeof(stack_buf), 0xf);
	assert_non_null(mr);
	check_proc(stack_buf, sizeof(stack_buf));
	maps_line_of(stack_buf, after, sizeof(after));
	assert_string_equal(before, after);
	check_pat(stack_buf, sizeof(stack_buf), 2);
	ovr_cl_dereg_mr(*state, mr);

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(ftruncate(fd, 2 * PG), 0);
	p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	assert_true(p != MAP_FAILED);
	fill(p, 2 * PG, 3);
	maps_line_of(p, before, sizeof(before));
	mr = ovr_cl_reg_mr(*state, 1, p, 2 * PG, 0xf);
	assert_non_null(mr);
	check_proc(p, 2 * PG);
	maps_line_of(p, after, sizeof(after));
	assert_string_equal(before, after);
	check_pat(p, 2 * PG, 3);
	ovr_cl_dereg_mr(*state, mr);
	munmap(p, 2 * PG);
	close(fd);
}

static void test_again_and_remapped(void **state)
{
	uint8_t *p = map_pages(NULL, 2);
	char before[1024], after[1024];
	struct ovr_cl_mr *a, *b;

	fill(p, 2 * PG, 4);
	maps_lines(p, 2, before, sizeof(before));
	a = ovr_cl_reg_mr(*state, 1, p, 2 * PG, 0xf);
	assert_non_null(a);
	check_proc(p, 2 * PG);
	b = ovr_cl_reg_mr(*state, 1, p + 8, 64, 0xf);
	assert_non_null(b);
	check_proc(p + 8, 64);
	maps_lines(p, 2, after, sizeof(after));
	assert_string_equal(before, after);
	ovr_cl_dereg_mr(*state, b);
	ovr_cl_dereg_mr(*state, a);
	/* freed and mapped again at the same address, new contents */
	munmap(p, 2 * PG);
	assert_ptr_equal(map_pages(p, 2), p);
	fill(p, 2 * PG, 5);
	maps_lines(p, 2, before, sizeof(before));
	b = ovr_cl_reg_mr(*state, 1, p, 2 * PG, 0xf);
	assert_non_null(b);
	check_proc(p, 2 * PG);
	maps_lines(p, 2, after, sizeof(after));
	assert_string_equal(before, after);
	check_pat(p, 2 * PG, 5);
	assert_int_equal(hook_calls, 0);
	ovr_cl_dereg_mr(*state, b);
	munmap(p, 2 * PG);
}

static void test_hole_and_rights(void **state)
{
	uint8_t *p = map_pages(NULL, 3);
	struct ovr_cl_mr *mr;

	munmap(p + PG, PG);
	errno = 0;
	assert_null(ovr_cl_reg_mr(*state, 1, p, 3 * PG, 0xf));
	assert_int_equal(errno, EFAULT);
	assert_int_equal(mprotect(p + 2 * PG, PG, PROT_READ), 0);
	errno = 0;
	assert_null(ovr_cl_reg_mr(*state, 1, p + 2 * PG, PG, 0xf));
	assert_int_equal(errno, EACCES);
	mr = ovr_cl_reg_mr(*state, 1, p + 2 * PG, PG, 4 /* REMOTE_READ */);
	assert_non_null(mr);
	check_proc(p + 2 * PG, PG);
	ovr_cl_dereg_mr(*state, mr);
	munmap(p, PG);
	munmap(p + 2 * PG, PG);
}

static void test_memfd_mapped_twice(void **state)
{
	int fd = memfd_create("app-shm", MFD_CLOEXEC);
	char before[512], after[512];
	struct ovr_cl_mr *mr;
	struct stat st;
	uint8_t *p, *q;

	assert_int_equal(ftruncate(fd, 4 * PG), 0);
	assert_int_equal(fstat(fd, &st), 0);
	p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	q = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED && q != MAP_FAILED);
	fill(p, 4 * PG, 6);
	maps_line_of(p, before, sizeof(before));
	mr = ovr_cl_reg_mr(*state, 1, p + PG + 10, 2 * PG, 0xf);
	assert_non_null(mr);
	maps_line_of(p, after, sizeof(after));
	assert_string_equal(before, after);
	assert_int_equal(svc.last.q.flags, 0);
	assert_int_equal(svc.last.q.nseg, 1);
	assert_int_equal(svc.last.ino[0], st.st_ino);
	assert_int_equal(svc.last.q.seg[0].off, PG);
	assert_int_equal(svc.last.q.seg[0].len, 3 * PG);
	assert_int_equal(fcntl(svc.last.fds[0], F_GETFL) & O_ACCMODE, O_RDWR);
	check_obj_seg(0, p + PG);
	/* the other mapping still shares the pages */
	q[2 * PG] ^= 0xff;
	assert_int_equal(p[2 * PG], q[2 * PG]);
	check_obj_seg(0, p + PG);
	assert_int_equal(hook_calls, 0);
	ovr_cl_dereg_mr(*state, mr);
	munmap(q, 4 * PG);
	munmap(p, 4 * PG);
	close(fd);
}

static void test_shared_file(void **state)
{
	char path[] = "/tmp/ovrdma-clmr-file.XXXXXX";
	int fd = mkstemp(path);
	char before[512], after[512];
	struct ovr_cl_mr *mr;
	struct stat st;
	uint8_t *p;

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(ftruncate(fd, 4 * PG), 0);
	assert_int_equal(fstat(fd, &st), 0);
	/* file pages 1-3 */
	p = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, PG);
	assert_true(p != MAP_FAILED);
	fill(p, 3 * PG, 7);
	maps_line_of(p, before, sizeof(before));
	mr = ovr_cl_reg_mr(*state, 1, p + PG, PG, 0xf);
	assert_non_null(mr);
	maps_line_of(p, after, sizeof(after));
	assert_string_equal(before, after);
	assert_int_equal(svc.last.q.nseg, 1);
	assert_int_equal(svc.last.ino[0], st.st_ino);
	assert_int_equal(svc.last.q.seg[0].off, 2 * PG);
	assert_int_equal(svc.last.q.seg[0].len, PG);
	check_obj_seg(0, p + PG);
	ovr_cl_dereg_mr(*state, mr);
	munmap(p, 3 * PG);
	close(fd);
}

static void test_shared_anon(void **state)
{
	uint8_t *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char before[512], after[512];
	struct ovr_cl_mr *mr;

	assert_true(p != MAP_FAILED);
	fill(p, 2 * PG, 8);
	maps_line_of(p, before, sizeof(before));
	mr = ovr_cl_reg_mr(*state, 1, p, 2 * PG, 0xf);
	assert_non_null(mr);
	maps_line_of(p, after, sizeof(after));
	assert_string_equal(before, after);
	if (svc.last.q.flags & OVR_CTL_MR_PROC) {
		/* no CAP_CHECKPOINT_RESTORE: map_files cannot be opened, and
		 * shared anonymous memory has no other way in */
		print_message("shared anonymous memory: process route "
			      "(unprivileged)\n");
		check_proc(p, 2 * PG);
	} else {
		assert_int_equal(svc.last.q.nseg, 1);
		assert_int_equal(svc.last.q.seg[0].off, 0);
		check_obj_seg(0, p);
	}
	check_pat(p, 2 * PG, 8);
	ovr_cl_dereg_mr(*state, mr);
	munmap(p, 2 * PG);
}

static void test_mixed_pieces(void **state)
{
	char before[2048], after[2048];
	uint8_t *p = map_pages(NULL, 3);
	int fd = memfd_create("app-mid", MFD_CLOEXEC);
	struct ovr_cl_mr *mr;
	struct stat st;

	assert_int_equal(ftruncate(fd, PG), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_ptr_equal(mmap(p + PG, PG, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_FIXED, fd, 0),
			 p + PG);
	fill(p, 3 * PG, 9);
	maps_lines(p, 3, before, sizeof(before));
	mr = ovr_cl_reg_mr(*state, 1, p, 3 * PG, 0xf);
	assert_non_null(mr);
	/* the whole registration, the shared piece too */
	check_proc(p, 3 * PG);
	maps_lines(p, 3, after, sizeof(after));
	assert_string_equal(before, after);
	assert_int_equal(maps_ino(p + PG), st.st_ino);
	check_pat(p, 3 * PG, 9);
	ovr_cl_dereg_mr(*state, mr);
	munmap(p, 3 * PG);
	close(fd);
}

static void test_readonly_shared(void **state)
{
	int fd = memfd_create("app-ro", MFD_CLOEXEC);
	struct ovr_cl_mr *mr;
	uint8_t *p;

	assert_int_equal(ftruncate(fd, PG), 0);
	p = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	errno = 0;
	assert_null(ovr_cl_reg_mr(*state, 1, p, PG, 0xf));
	assert_int_equal(errno, EACCES);
	mr = ovr_cl_reg_mr(*state, 1, p, PG, 4 /* REMOTE_READ */);
	assert_non_null(mr);
	assert_int_equal(svc.last.q.nseg, 1);
	assert_int_equal(svc.last.q.flags, 0);
	assert_int_equal(fcntl(svc.last.fds[0], F_GETFL) & O_ACCMODE, O_RDONLY);
	ovr_cl_dereg_mr(*state, mr);
	munmap(p, PG);
	close(fd);
}

static void test_on_demand(void **state)
{
	int fd = memfd_create("app-odp", MFD_CLOEXEC);
	struct ovr_cl_mr *mr;
	uint8_t *p, *q;

	/* shared memory: still the process route */
	assert_int_equal(ftruncate(fd, 2 * PG), 0);
	q = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(q != MAP_FAILED);
	mr = ovr_cl_reg_mr(*state, 1, q, 2 * PG, 0xf | OVR_ACCESS_ON_DEMAND);
	assert_non_null(mr);
	assert_int_equal(svc.last.q.flags, OVR_CTL_MR_PROC | OVR_CTL_MR_ODP);
	assert_int_equal(svc.last.q.access, 0xf);
	assert_int_equal(svc.last.q.nseg, 0);
	assert_int_equal(svc.last.nfds, 1); /* /proc/self/mem */
	assert_int_equal(svc.last.q.va, (uintptr_t)q);
	assert_int_equal(svc.last.q.span, (uintptr_t)q);
	ovr_cl_dereg_mr(*state, mr);
	/* a hole and a read-only page for device writes: fine on demand */
	p = map_pages(NULL, 3);
	munmap(p + PG, PG);
	assert_int_equal(mprotect(p + 2 * PG, PG, PROT_READ), 0);
	mr = ovr_cl_reg_mr(*state, 1, p + 10, 3 * PG - 20,
			   0xf | OVR_ACCESS_ON_DEMAND);
	assert_non_null(mr);
	assert_int_equal(svc.last.q.flags, OVR_CTL_MR_PROC | OVR_CTL_MR_ODP);
	assert_int_equal(svc.last.q.va, (uintptr_t)(p + 10));
	assert_int_equal(svc.last.q.len, 3 * PG - 20);
	assert_int_equal(svc.last.q.span, (uintptr_t)p);
	ovr_cl_dereg_mr(*state, mr);
	/* the whole address space */
	mr = ovr_cl_reg_mr(*state, 1, NULL, SIZE_MAX, 1 | OVR_ACCESS_ON_DEMAND);
	assert_non_null(mr);
	assert_int_equal(svc.last.q.flags, OVR_CTL_MR_PROC | OVR_CTL_MR_ODP);
	assert_int_equal(svc.last.q.va, 0);
	assert_true(svc.last.q.len == UINT64_MAX);
	assert_int_equal(svc.last.q.span, 0);
	ovr_cl_dereg_mr(*state, mr);
	errno = 0;
	assert_null(ovr_cl_reg_mr(*state, 1, NULL, SIZE_MAX, 1));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(hook_calls, 0);
	munmap(p, PG);
	munmap(p + 2 * PG, PG);
	munmap(q, 2 * PG);
	close(fd);
}

/* ---- an ordinary user ---------------------------------------------------- */

#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

/* This thread's effective capabilities, less (@drop) or back to what
 * *@saved holds; what opening map_files needs is the first pair */
static void caps_map_files(bool drop, struct __user_cap_data_struct *saved)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	assert_int_equal(syscall(SYS_capget, &h, d), 0);
	if (drop) {
		memcpy(saved, d, sizeof(d));
		d[0].effective &= ~(1u << CAP_SYS_ADMIN);
		d[1].effective &= ~(1u << (CAP_CHECKPOINT_RESTORE - 32));
	} else {
		d[0].effective = saved[0].effective;
		d[1].effective = saved[1].effective;
	}
	assert_int_equal(syscall(SYS_capset, &h, d), 0);
}

static void test_map_files_denied(void **state)
{
	struct __user_cap_data_struct saved[2];
	char dir[] = "/tmp/ovrdma-clmr-user.XXXXXX", path[96], mf[80];
	int held = memfd_create("app-held", MFD_CLOEXEC);
	int gone = memfd_create("app-gone", MFD_CLOEXEC);
	struct ovr_cl_mr *mr;
	struct stat st_held, st_file;
	uint8_t *a, *b, *c, *d;
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/data", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0 && held >= 0 && gone >= 0);
	assert_int_equal(ftruncate(fd, 2 * PG), 0);
	assert_int_equal(ftruncate(held, 2 * PG), 0);
	assert_int_equal(ftruncate(gone, 2 * PG), 0);
	assert_int_equal(fstat(held, &st_held), 0);
	assert_int_equal(fstat(fd, &st_file), 0);
	a = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, held, 0);
	b = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	c = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, gone, 0);
	d = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(a != MAP_FAILED && b != MAP_FAILED && c != MAP_FAILED &&
		    d != MAP_FAILED);
	close(fd); /* the file still has its path */
	close(gone); /* this memfd has neither path nor descriptor */
	fill(a, 2 * PG, 10);
	fill(b, 2 * PG, 11);
	fill(c, 2 * PG, 12);
	fill(d, 2 * PG, 13);

	caps_map_files(true, saved);
	snprintf(mf, sizeof(mf), "/proc/self/map_files/%lx-%lx",
		 (unsigned long)(uintptr_t)a,
		 (unsigned long)(uintptr_t)a + 2 * PG);
	errno = 0;
	fd = open(mf, O_RDWR | O_CLOEXEC);
	assert_int_equal(fd, -1);
	assert_int_equal(errno, EPERM); /* what an ordinary user gets */

	mr = ovr_cl_reg_mr(*state, 1, a, 2 * PG, 0xf);
	assert_non_null(mr);
	assert_int_equal(svc.last.q.flags, 0);
	assert_int_equal(svc.last.q.nseg, 1);
	assert_int_equal(svc.last.ino[0], st_held.st_ino);
	assert_int_equal(fcntl(svc.last.fds[0], F_GETFL) & O_ACCMODE, O_RDWR);
	check_obj_seg(0, a);
	ovr_cl_dereg_mr(*state, mr);

	mr = ovr_cl_reg_mr(*state, 1, b + PG, PG, 0xf);
	assert_non_null(mr);
	assert_int_equal(svc.last.q.nseg, 1);
	assert_int_equal(svc.last.ino[0], st_file.st_ino);
	assert_int_equal(svc.last.q.seg[0].off, PG);
	check_obj_seg(0, b + PG);
	ovr_cl_dereg_mr(*state, mr);
	/* for reads only, the object goes read-only */
	mr = ovr_cl_reg_mr(*state, 1, b, PG, 4 /* REMOTE_READ */);
	assert_non_null(mr);
	assert_int_equal(svc.last.q.nseg, 1);
	assert_int_equal(fcntl(svc.last.fds[0], F_GETFL) & O_ACCMODE, O_RDONLY);
	ovr_cl_dereg_mr(*state, mr);

	mr = ovr_cl_reg_mr(*state, 1, c, 2 * PG, 0xf);
	assert_non_null(mr);
	check_proc(c, 2 * PG);
	ovr_cl_dereg_mr(*state, mr);
	mr = ovr_cl_reg_mr(*state, 1, d, 2 * PG, 0xf);
	assert_non_null(mr);
	check_proc(d, 2 * PG);
	ovr_cl_dereg_mr(*state, mr);
	caps_map_files(false, saved);

	check_pat(a, 2 * PG, 10);
	check_pat(b, 2 * PG, 11);
	check_pat(c, 2 * PG, 12);
	check_pat(d, 2 * PG, 13);
	munmap(a, 2 * PG);
	munmap(b, 2 * PG);
	munmap(c, 2 * PG);
	munmap(d, 2 * PG);
	close(held);
	unlink(path);
	rmdir(dir);
}

/* in a child (its own fake service and connection): exit status 0, or
 * the number of the check that failed */
static int not_dumpable(void)
{
	uint8_t *priv = map_pages(NULL, 1);
	int m = memfd_create("app-nd", MFD_CLOEXEC);
	struct ovr_cl *cl;
	struct ovr_cl_mr *mr;
	void *st;
	uint8_t *sh;

	if (m < 0 || ftruncate(m, PG) || setup(&st))
		return 1;
	cl = st;
	unlink(svc.path); /* the connection stays */
	rmdir(svc.dir);
	sh = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
	if (sh == MAP_FAILED)
		return 2;
	/* a service that dropped root, as daemons do: not dumpable */
	if (geteuid() == 0 &&
	    (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)))
		return 3;
	if (prctl(PR_SET_DUMPABLE, 0) || prctl(PR_GET_DUMPABLE) != 0)
		return 4;
	errno = 0;
	if (ovr_cl_reg_mr(cl, 1, priv, PG, 0xf) || errno != EPERM)
		return 5;
	mr = ovr_cl_reg_mr(cl, 1, sh, PG, 0xf);
	if (!mr || svc.last.q.nseg != 1)
		return 6;
	return 0;
}

static void test_not_dumpable(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(not_dumpable());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_private_untouched),
		cmocka_unit_test(test_stack_and_private_file),
		cmocka_unit_test(test_again_and_remapped),
		cmocka_unit_test(test_hole_and_rights),
		cmocka_unit_test(test_memfd_mapped_twice),
		cmocka_unit_test(test_shared_file),
		cmocka_unit_test(test_shared_anon),
		cmocka_unit_test(test_mixed_pieces),
		cmocka_unit_test(test_readonly_shared),
		cmocka_unit_test(test_on_demand),
		cmocka_unit_test(test_map_files_denied),
		cmocka_unit_test(test_not_dumpable),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
