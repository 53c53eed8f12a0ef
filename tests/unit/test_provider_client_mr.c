// SPDX-License-Identifier: MIT
/*
 * libovr_client's memory registration (docs/SERVICE.md section 4)
 * against a fake ovrdmad: a thread that answers HELLO, REG_MR and
 * DEREG_MR on a control socket and keeps what each REG_MR carried.
 *
 * The test executable defines mremap() the way UCX's memory hooks (UCM,
 * UCX 1.13) replace it in applications: four arguments, MREMAP_FIXED's
 * new address dropped. Registration must not go through it: the remap
 * that moves the pages onto a memfd is a system call of its own.
 *
 *   1. registered pages keep their contents at their addresses, are now
 *      backed by a sealed memfd ("ovrdma-mr") whose bytes the service
 *      sees, and the application's mremap was never called;
 *   2. registering the same pages again reuses that memfd;
 *   3. a registration over two shadows and a gap passes three segments
 *      in address order, the gap moved onto a new memfd;
 *   4. pages unmapped and mapped again at the same address are moved
 *      anew (the old shadow is stale), with the new contents;
 *   5. MAP_SHARED memory - a memfd mapped twice, a file, shared
 *      anonymous memory - is passed as its own object, the mapping left
 *      as it was (its maps line unchanged, the second mapping still
 *      sharing its pages);
 *   6. a range over private and shared pieces gives one segment per
 *      piece, each on its route;
 *   7. a read-only shared mapping registered for device writes is
 *      EACCES; for reads, the object goes read-only.
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
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
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
	for (uint32_t i = 0; i < svc.last.q.nseg; i++)
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
			for (int i = 0; i < nfds; i++) {
				struct stat st;

				svc.last.fds[i] = fds[i];
				svc.last.ino[i] =
					fstat(fds[i], &st) ? 0 : st.st_ino;
			}
			if ((uint32_t)nfds != svc.last.q.nseg)
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

/* the /proc/self/maps line of @addr says what backs it */
static bool backed_by_memfd(const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	bool yes = false;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e;

		if (sscanf(line, "%llx-%llx", &s, &e) == 2 &&
		    (uintptr_t)addr >= s && (uintptr_t)addr < e) {
			yes = strstr(line, "/memfd:ovrdma-mr") != NULL;
			break;
		}
	}
	fclose(f);
	return yes;
}

/* what the service sees of segment @i of the last REG_MR equals the
 * application's memory at @at */
static void check_seg(uint32_t i, const uint8_t *at)
{
	const struct ovr_ctl_mr_seg *s = &svc.last.q.seg[i];
	int seals = fcntl(svc.last.fds[i], F_GET_SEALS);
	uint8_t *p;

	assert_true(seals >= 0);
	assert_int_equal(seals & (F_SEAL_SHRINK | F_SEAL_GROW),
			 F_SEAL_SHRINK | F_SEAL_GROW);
	p = mmap(NULL, s->off + s->len, PROT_READ, MAP_SHARED, svc.last.fds[i],
		 0);
	assert_true(p != MAP_FAILED);
	assert_memory_equal(p + s->off, at, s->len);
	munmap(p, s->off + s->len);
}

static uint8_t *map_pages(void *at, size_t n)
{
	uint8_t *p = mmap(at, n * PG, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0),
			  -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

/* ---- tests -------------------------------------------------------------- */

static void test_move_bypasses_hook(void **state)
{
	uint8_t *p = map_pages(NULL, 4);
	struct ovr_cl_mr *mr;

	fill(p, 4 * PG, 1);
	hook_calls = 0;
	/* 100 bytes into page 0 .. 100 bytes into page 2: pages 0-2 move */
	mr = ovr_cl_reg_mr(*state, 1, p + 100, 2 * PG, 0xf);
	assert_non_null(mr);
	assert_int_equal(hook_calls, 0);
	check_pat(p, 4 * PG, 1);
	assert_true(backed_by_memfd(p));
	assert_true(backed_by_memfd(p + 2 * PG));
	assert_false(backed_by_memfd(p + 3 * PG));
	assert_int_equal(svc.last.q.nseg, 1);
	assert_int_equal(svc.last.q.va, (uintptr_t)p + 100);
	assert_int_equal(svc.last.q.len, 2 * PG);
	assert_int_equal(svc.last.q.span, (uintptr_t)p);
	assert_int_equal(svc.last.q.seg[0].len, 3 * PG);
	check_seg(0, p);
	/* the pages are the service's now: a write shows through */
	p[PG] ^= 0xff;
	check_seg(0, p);
	assert_int_equal(ovr_cl_dereg_mr(*state, mr), 0);
	munmap(p, 4 * PG);
}

static void test_reuse_shadow(void **state)
{
	uint8_t *p = map_pages(NULL, 2);
	struct ovr_cl_mr *a, *b;
	ino_t ino;

	fill(p, 2 * PG, 2);
	a = ovr_cl_reg_mr(*state, 1, p, 2 * PG, 0xf);
	assert_non_null(a);
	ino = svc.last.ino[0];
	b = ovr_cl_reg_mr(*state, 1, p + 8, 64, 0xf);
	assert_non_null(b);
	assert_int_equal(svc.last.q.nseg, 1);
	assert_int_equal(svc.last.ino[0], ino);
	assert_int_equal(svc.last.q.seg[0].len, PG);
	check_pat(p, 2 * PG, 2);
	assert_int_equal(hook_calls, 0);
	ovr_cl_dereg_mr(*state, b);
	ovr_cl_dereg_mr(*state, a);
	munmap(p, 2 * PG);
}

static void test_segments_in_order(void **state)
{
	uint8_t *p = map_pages(NULL, 5);
	struct ovr_cl_mr *a, *b, *c;
	ino_t ia, ib;

	fill(p, 5 * PG, 3);
	a = ovr_cl_reg_mr(*state, 1, p, PG, 0xf); /* page 0 */
	assert_non_null(a);
	ia = svc.last.ino[0];
	b = ovr_cl_reg_mr(*state, 1, p + 3 * PG, 2 * PG, 0xf); /* 3-4 */
	assert_non_null(b);
	ib = svc.last.ino[0];
	/* pages 0..4: shadow a, the gap 1-2 moved now, shadow b */
	c = ovr_cl_reg_mr(*state, 1, p, 5 * PG, 0xf);
	assert_non_null(c);
	assert_int_equal(svc.last.q.nseg, 3);
	assert_int_equal(svc.last.ino[0], ia);
	assert_int_equal(svc.last.ino[2], ib);
	assert_true(svc.last.ino[1] != ia && svc.last.ino[1] != ib);
	assert_int_equal(svc.last.q.seg[0].len, PG);
	assert_int_equal(svc.last.q.seg[1].len, 2 * PG);
	assert_int_equal(svc.last.q.seg[2].len, 2 * PG);
	check_seg(0, p);
	check_seg(1, p + PG);
	check_seg(2, p + 3 * PG);
	check_pat(p, 5 * PG, 3);
	assert_int_equal(hook_calls, 0);
	ovr_cl_dereg_mr(*state, c);
	ovr_cl_dereg_mr(*state, b);
	ovr_cl_dereg_mr(*state, a);
	munmap(p, 5 * PG);
}

static void test_remapped_moved_anew(void **state)
{
	uint8_t *p = map_pages(NULL, 2);
	struct ovr_cl_mr *a, *b;
	ino_t ino;

	fill(p, 2 * PG, 4);
	a = ovr_cl_reg_mr(*state, 1, p, 2 * PG, 0xf);
	assert_non_null(a);
	ino = svc.last.ino[0];
	ovr_cl_dereg_mr(*state, a);
	/* freed and mapped again at the same address, new contents */
	munmap(p, 2 * PG);
	assert_ptr_equal(map_pages(p, 2), p);
	assert_false(backed_by_memfd(p));
	fill(p, 2 * PG, 5);
	b = ovr_cl_reg_mr(*state, 1, p, 2 * PG, 0xf);
	assert_non_null(b);
	assert_int_equal(svc.last.q.nseg, 1);
	assert_true(svc.last.ino[0] != ino);
	check_seg(0, p);
	check_pat(p, 2 * PG, 5);
	assert_int_equal(hook_calls, 0);
	ovr_cl_dereg_mr(*state, b);
	munmap(p, 2 * PG);
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
	assert_false(backed_by_memfd(p + PG));
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
	assert_int_equal(svc.last.q.nseg, 1);
	if (backed_by_memfd(p)) {
		/* no CAP_CHECKPOINT_RESTORE: map_files cannot be opened, and
		 * shared anonymous memory has no other way in */
		print_message("shared anonymous memory shadowed "
			      "(unprivileged)\n");
	} else {
		assert_int_equal(svc.last.q.seg[0].off, 0);
		check_obj_seg(0, p);
	}
	ovr_cl_dereg_mr(*state, mr);
	munmap(p, 2 * PG);
}

static void test_mixed_pieces(void **state)
{
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
	mr = ovr_cl_reg_mr(*state, 1, p, 3 * PG, 0xf);
	assert_non_null(mr);
	assert_int_equal(svc.last.q.nseg, 3);
	assert_true(backed_by_memfd(p));
	assert_false(backed_by_memfd(p + PG));
	assert_true(backed_by_memfd(p + 2 * PG));
	assert_int_equal(svc.last.ino[1], st.st_ino);
	assert_true(svc.last.ino[0] != st.st_ino &&
		    svc.last.ino[2] != st.st_ino);
	check_seg(0, p);
	check_obj_seg(1, p + PG);
	check_seg(2, p + 2 * PG);
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
	assert_int_equal(fcntl(svc.last.fds[0], F_GETFL) & O_ACCMODE, O_RDONLY);
	assert_false(backed_by_memfd(p));
	ovr_cl_dereg_mr(*state, mr);
	munmap(p, PG);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_move_bypasses_hook),
		cmocka_unit_test(test_reuse_shadow),
		cmocka_unit_test(test_segments_in_order),
		cmocka_unit_test(test_remapped_moved_anew),
		cmocka_unit_test(test_memfd_mapped_twice),
		cmocka_unit_test(test_shared_file),
		cmocka_unit_test(test_shared_anon),
		cmocka_unit_test(test_mixed_pieces),
		cmocka_unit_test(test_readonly_shared),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
