// SPDX-License-Identifier: MIT
/*
 * libovr_client's side of two CQ operations (issue 24), against a fake
 * service (a thread answering the control protocol with memfds it keeps
 * mapped, writing CQEs as ovrdmad does):
 *
 *   1. a QP's modify to RESET removes that QP's completions not yet
 *      polled from its CQ (as libmlx5's mlx5_cq_clean); the others stay,
 *      in order, also across the ring's wrap and the gen rule of their
 *      new slots; completions written afterwards follow them;
 *   2. ovr_cl_resize_cq: the reply's ring replaces the old one (read
 *      with the new depth's gen rule from the same consumer index), a
 *      refusal (EINVAL) leaves the CQ as it was, a malformed reply is
 *      EPROTO; ovr_cl_req_notify_cq arms the ring in use;
 *   3. QPs of two dataplane cores (docs/SERVICE.md section 5): their
 *      completions published out of index order (each core writes the
 *      slot it took) are polled in index order, never past a slot not
 *      yet written; a doorbell writes the wake fd of its QP's core (OPEN
 *      passes one per core), and only while that core sleeps;
 *   4. the service dies (last): the receives still posted on an SRQ
 *      complete WR_FLUSH_ERR, each once, in the order posted, on the
 *      receive CQ of its QP, also when some completed out of order and
 *      one was posted more than a ring's depth of posts ago; two at a
 *      time when the poll asks for two.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include <ovrdma/client.h>
#include <ovrdma/ctl.h>
#include <ovrdma/ring.h>

#define PG 4096u

/* ---- the fake service ----------------------------------------------------- */

static struct {
	char dir[64], path[96];
	int lfd;
	pthread_t thr;
	struct ovr_ring_cq *cq; /* the CQ (one) */
	uint32_t depth, prod;
	/* what RESIZE_CQ answers: a ring the test prepared, or an error */
	struct ovr_ring_cq *next;
	uint32_t next_depth;
	int32_t next_status;
	bool next_short; /* a reply whose map_len cannot hold the ring */
	uint32_t resize_cqe; /* what the last RESIZE_CQ asked */
	uint32_t nqp;
	struct ovr_ring_svc *page; /* the service page */
	int wake[2]; /* the two cores' wake eventfds (OPEN passes them) */
	struct ovr_ring_qp *qp_ring[3]; /* by QP handle */
	bool die; /* the next request: no answer, the socket closed */
	struct ovr_ring_srq *srq_ring; /* the SRQ's (one) */
} svc;

/* the fake SRQ's WQE size: one SGE */
#define SRQ_STRIDE (sizeof(struct ovr_ring_rwqe) + sizeof(struct ovr_ring_sge))

static void reply(int fd, const struct ovr_ctl_hdr *q, int32_t status,
		  const void *body, size_t len, const int *fds, int nfds)
{
	struct ovr_ctl_hdr h = *q;
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)body, len } };
	union {
		char b[CMSG_SPACE(sizeof(int) * 3)];
		struct cmsghdr align;
	} cb;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = body ? 2 : 1 };

	h.status = status;
	h.len = (uint32_t)(sizeof(h) + (body ? len : 0));
	if (nfds) {
		struct cmsghdr *cm;

		memset(&cb, 0, sizeof(cb));
		m.msg_control = cb.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	if (sendmsg(fd, &m, MSG_NOSIGNAL) < 0)
		perror("fake service: sendmsg");
}

static int shared(size_t len, void **map)
{
	int fd = memfd_create("fake-svc", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)len))
		abort();
	*map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*map == MAP_FAILED)
		abort();
	return fd;
}

static size_t ring_len(uint32_t depth)
{
	return OVR_RING_CQ_ENTRIES_OFF +
	       (size_t)depth * sizeof(struct ovr_ring_cqe);
}

static struct ovr_ring_cqe *slot(struct ovr_ring_cq *r, uint32_t depth,
				 uint32_t i)
{
	return (struct ovr_ring_cqe *)((uint8_t *)r + OVR_RING_CQ_ENTRIES_OFF) +
	       (i & (depth - 1));
}

/* A CQE at index @i of ring @r as ovrdmad writes it: body, then gen;
 * @wqe_idx (an SRQ receive's tag) in put_idx, 0 in put. */
static void put_idx(struct ovr_ring_cq *r, uint32_t depth, uint32_t i,
		    uint32_t qpn, uint32_t mark, uint32_t flags,
		    uint32_t wqe_idx)
{
	struct ovr_ring_cqe *e = slot(r, depth, i);

	e->wqe_idx = wqe_idx;
	e->qp_num = qpn;
	e->status = 0;
	e->opcode = flags & OVR_CQE_RECV ? OVR_WC_RECV : OVR_WC_SEND;
	e->byte_len = mark;
	e->flags = flags;
	atomic_store_explicit(&e->gen, i / depth + 1, memory_order_release);
}

static void put(struct ovr_ring_cq *r, uint32_t depth, uint32_t i, uint32_t qpn,
		uint32_t mark, uint32_t flags)
{
	put_idx(r, depth, i, qpn, mark, flags, 0);
}

/* The service's next completion on the CQ. */
static void emit(uint32_t qpn, uint32_t mark, uint32_t flags)
{
	put(svc.cq, svc.depth, svc.prod++, qpn, mark, flags);
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
		struct ovr_ctl_hdr h;
		ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
		void *map;
		int fds[3];

		if (n <= 0)
			break;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm;
		     cm = CMSG_NXTHDR(&m, cm))
			if (cm->cmsg_type == SCM_RIGHTS) {
				int k = (int)((cm->cmsg_len - CMSG_LEN(0)) /
					      sizeof(int));

				for (int i = 0; i < k; i++) {
					int passed;

					memcpy(&passed,
					       CMSG_DATA(cm) + i * sizeof(int),
					       sizeof(int));
					close(passed);
				}
			}
		memcpy(&h, buf, sizeof(h));
		if (svc.die)
			break;
		if (h.op == OVR_CTL_HELLO) {
			struct ovr_ctl_hello_rep r = {
				.ring_abi = OVR_RING_ABI_VERSION,
				.incarnation = 1,
			};

			fds[0] = shared(sizeof(struct ovr_ring_svc), &map);
			svc.page = map;
			reply(fd, &h, 0, &r, sizeof(r), fds, 1);
			close(fds[0]);
		} else if (h.op == OVR_CTL_OPEN) {
			struct ovr_ctl_open_rep r = { .ctx_id = 1 };

			snprintf(r.dev.name, sizeof(r.dev.name), "ovrdma0");
			/* two dataplane cores: core 0's wake fd, core 1's */
			r.wake_mask = 1;
			fds[0] = shared(PG, &map);
			fds[1] = svc.wake[0] =
				eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			fds[2] = svc.wake[1] =
				eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			reply(fd, &h, 0, &r, sizeof(r), fds, 3);
			close(fds[0]);
		} else if (h.op == OVR_CTL_CREATE_CQ) {
			struct ovr_ctl_create_cq_rep r = { .cq = 1,
							   .depth = 8 };

			r.map_len = ring_len(r.depth);
			fds[0] = shared(r.map_len, &map);
			svc.cq = map;
			svc.depth = r.depth;
			reply(fd, &h, 0, &r, sizeof(r), fds, 1);
			close(fds[0]);
		} else if (h.op == OVR_CTL_CREATE_QP) {
			struct ovr_ctl_create_qp_rep r = {
				.qp = ++svc.nqp,
				.qpn = 100 + svc.nqp,
				.cap = { 16, 16, 1, 1, 0, 0 },
				.sq_depth = 16,
				.rq_depth = 16,
				.sq_stride = 128,
				.rq_stride = 64,
				.sq_off = sizeof(struct ovr_ring_qp),
				.db_index = svc.nqp,
				/* the first QP on core 0, the next on 1 */
				.wake_mask = 1u << ((svc.nqp - 1) % 2),
			};

			r.rq_off = r.sq_off + 16 * 128;
			r.map_len = 2 * PG;
			fds[0] = shared(r.map_len, &map);
			if (svc.nqp < 3)
				svc.qp_ring[svc.nqp] = map;
			reply(fd, &h, 0, &r, sizeof(r), fds, 1);
			close(fds[0]);
		} else if (h.op == OVR_CTL_CREATE_SRQ) {
			/* 4 receives of one SGE in a ring of 4 slots */
			struct ovr_ctl_create_srq_rep r = {
				.srq = 1,
				.srqn = 7,
				.attr = { .max_wr = 4, .max_sge = 1 },
				.depth = 4,
				.stride = SRQ_STRIDE,
				.slots_off = sizeof(struct ovr_ring_srq),
				.map_len = PG,
				.db_index = 3,
				.wake_mask = 1,
			};

			fds[0] = shared(r.map_len, &map);
			svc.srq_ring = map;
			reply(fd, &h, 0, &r, sizeof(r), fds, 1);
			close(fds[0]);
		} else if (h.op == OVR_CTL_RESIZE_CQ) {
			struct ovr_ctl_resize_cq_req q;
			struct ovr_ctl_resize_cq_rep r = { .cq = 1 };

			memcpy(&q, buf + sizeof(h), sizeof(q));
			svc.resize_cqe = q.cqe;
			if (svc.next_status) {
				reply(fd, &h, svc.next_status, NULL, 0, NULL,
				      0);
				continue;
			}
			r.depth = svc.next_depth;
			r.map_len = svc.next_short ? OVR_RING_CQ_ENTRIES_OFF :
						     ring_len(r.depth);
			fds[0] = shared(ring_len(r.depth), &map);
			/* the prepared content, then the service's view
			 * moves to the new ring */
			memcpy(map, svc.next, ring_len(r.depth));
			if (!svc.next_short) {
				munmap(svc.cq, ring_len(svc.depth));
				svc.cq = map;
				svc.depth = r.depth;
			}
			reply(fd, &h, 0, &r, sizeof(r), fds, 1);
			close(fds[0]);
		} else {
			/* MODIFY_QP, DESTROY_*: done */
			reply(fd, &h, 0, NULL, 0, NULL, 0);
		}
	}
	close(fd);
	return NULL;
}

static struct {
	struct ovr_cl *cl;
	struct ovr_cl_cq *cq;
	struct ovr_cl_qp *qa, *qb;
} t;

static int setup(void **state)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct ovr_ctl_qp_cap cap = { 16, 16, 1, 1, 0, 0 };

	(void)state;
	snprintf(svc.dir, sizeof(svc.dir), "/tmp/ovrdma-clcq.XXXXXX");
	if (!mkdtemp(svc.dir))
		return -1;
	snprintf(svc.path, sizeof(svc.path), "%s/sock", svc.dir);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", svc.path);
	svc.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (svc.lfd < 0 || bind(svc.lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(svc.lfd, 1) || pthread_create(&svc.thr, NULL, service, NULL))
		return -1;
	t.cl = ovr_cl_connect(svc.path, "test");
	if (!t.cl || ovr_cl_open(t.cl, "ovrdma0", NULL))
		return -1;
	t.cq = ovr_cl_create_cq(t.cl, 8, OVR_CTL_NO_CHANNEL, 0);
	if (!t.cq)
		return -1;
	t.qa = ovr_cl_create_qp(t.cl, 1, t.cq, t.cq, &cap, false, 0);
	t.qb = ovr_cl_create_qp(t.cl, 1, t.cq, t.cq, &cap, false, 0);
	return t.qa && t.qb ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	ovr_cl_close(t.cl);
	pthread_join(svc.thr, NULL);
	close(svc.lfd);
	unlink(svc.path);
	rmdir(svc.dir);
	return 0;
}

/* Polls everything; the marks (byte_len) in order into @out. */
static int drain(uint32_t *out, int max)
{
	struct ovr_cl_wc wc[16];
	int n = 0, k;

	while ((k = ovr_cl_poll_cq(t.cq, 16, wc)) > 0)
		for (int i = 0; i < k && n < max; i++)
			out[n++] = wc[i].byte_len;
	return n;
}

static void to_reset(struct ovr_cl_qp *qp)
{
	struct ovr_ctl_qp_attr a = { .qp_state = OVR_QPS_RESET };

	assert_int_equal(ovr_cl_modify_qp(t.cl, qp, &a, OVR_QP_STATE), 0);
}

static void test_reset_cleans(void **state)
{
	uint32_t a = ovr_cl_qp_num(t.qa), b = ovr_cl_qp_num(t.qb);
	uint32_t got[32];
	int n;

	(void)state;
	/* move the indexes near the wrap: 5 polled */
	for (uint32_t i = 0; i < 5; i++)
		emit(b, 900 + i, 0);
	assert_int_equal(drain(got, 32), 5);
	/* 7 held, A's and B's mixed, over the ring's end (slots 5..11) */
	emit(a, 1, 0);
	emit(b, 2, OVR_CQE_RECV);
	emit(a, 3, OVR_CQE_RECV);
	emit(a, 4, 0);
	emit(b, 5, 0);
	emit(a, 6, 0);
	emit(b, 7, 0);
	to_reset(t.qa);
	/* the service's cons moved past the gap at once */
	assert_int_equal(atomic_load(&svc.cq->cons), 5 + 4);
	emit(b, 8, 0); /* written after */
	n = drain(got, 32);
	assert_int_equal(n, 4);
	assert_int_equal(got[0], 2);
	assert_int_equal(got[1], 5);
	assert_int_equal(got[2], 7);
	assert_int_equal(got[3], 8);
	/* nothing of A's: a RESET of a QP without completions is a no-op */
	to_reset(t.qa);
	emit(a, 9, 0);
	emit(a, 10, 0);
	to_reset(t.qb);
	assert_int_equal(drain(got, 32), 2);
	assert_int_equal(got[0], 9);
	assert_int_equal(got[1], 10);
	/* all of them the QP's: the CQ is empty after */
	emit(b, 11, 0);
	emit(b, 12, 0);
	to_reset(t.qb);
	assert_int_equal(drain(got, 32), 0);
	assert_int_equal(atomic_load(&svc.cq->cons), svc.prod);
}

static void test_resize(void **state)
{
	uint32_t b = ovr_cl_qp_num(t.qb);
	uint32_t cons = svc.prod, got[32];
	struct ovr_ring_cq *next;

	(void)state;
	emit(b, 21, 0);
	emit(b, 22, 0);
	/* refused: the CQ as it was, its completions still there */
	svc.next_status = -EINVAL;
	assert_int_equal(ovr_cl_resize_cq(t.cl, t.cq, 1), -EINVAL);
	assert_int_equal(svc.resize_cqe, 1);
	assert_int_equal(ovr_cl_cq_depth(t.cq), 8);
	svc.next_status = 0;
	/* granted: the new ring holds them at the same indexes, with the
	 * gen of a 32-entry ring */
	next = calloc(1, ring_len(32));
	assert_non_null(next);
	atomic_store(&next->cons, cons);
	put(next, 32, cons, b, 21, 0);
	put(next, 32, cons + 1, b, 22, 0);
	svc.next = next;
	svc.next_depth = 32;
	assert_int_equal(ovr_cl_resize_cq(t.cl, t.cq, 20), 0);
	assert_int_equal(svc.resize_cqe, 20);
	assert_int_equal(ovr_cl_cq_depth(t.cq), 32);
	emit(b, 23, 0); /* into the new ring */
	assert_int_equal(drain(got, 32), 3);
	assert_int_equal(got[0], 21);
	assert_int_equal(got[1], 22);
	assert_int_equal(got[2], 23);
	assert_int_equal(atomic_load(&svc.cq->cons), cons + 3);
	/* the arm goes to the ring in use */
	assert_int_equal(ovr_cl_req_notify_cq(t.cq, true), 0);
	assert_int_equal(atomic_load(&svc.cq->arm) & 1, 1);
	assert_int_not_equal(atomic_load(&svc.cq->arm), 0);
	/* a reply that cannot hold its ring: EPROTO */
	memset(next, 0, ring_len(32));
	svc.next_short = true;
	assert_int_equal(ovr_cl_resize_cq(t.cl, t.cq, 20), -EPROTO);
	svc.next_short = false;
	free(next);
}

/* Completions of two cores' QPs, each published when its core wrote
 * it: the client takes them in index order only. */
static void test_out_of_order(void **state)
{
	uint32_t a = ovr_cl_qp_num(t.qa), b = ovr_cl_qp_num(t.qb);
	uint32_t got[32], p;

	(void)state;
	drain(got, 32);
	p = svc.prod;
	/* core 1 took slot p + 1 and published it first */
	put(svc.cq, svc.depth, p + 1, b, 31, OVR_CQE_RECV);
	assert_int_equal(drain(got, 32), 0);
	put(svc.cq, svc.depth, p + 2, b, 32, OVR_CQE_RECV);
	assert_int_equal(drain(got, 32), 0);
	/* core 0's slot p: all three, in index order */
	put(svc.cq, svc.depth, p, a, 30, OVR_CQE_RECV);
	assert_int_equal(drain(got, 32), 3);
	assert_int_equal(got[0], 30);
	assert_int_equal(got[1], 31);
	assert_int_equal(got[2], 32);
	svc.prod = p + 3;
	assert_int_equal(atomic_load(&svc.cq->cons), svc.prod);
}

/* What a wake fd was written since the last look: its counter. */
static uint64_t woken(int fd)
{
	uint64_t v = 0;

	return read(fd, &v, sizeof(v)) == sizeof(v) ? v : 0;
}

static void post_one(struct ovr_cl_qp *qp, uint64_t id)
{
	struct ovr_cl_send_wr wr = { .wr_id = id, .opcode = OVR_WR_SEND };

	assert_int_equal(ovr_cl_post_send(qp, &wr), 0);
}

/* A doorbell writes its QP's core's wake fd, only while it sleeps. qa
 * is core 0's QP, qb core 1's. */
static void test_wake_per_core(void **state)
{
	static const struct {
		uint32_t sleeping;
		bool on_b;
		uint64_t w0, w1;
	} step[] = {
		{ 0, false, 0, 0 }, { 0, true, 0, 0 }, /* all awake */
		{ 2, false, 0, 0 }, { 2, true, 0, 1 }, /* core 1 asleep */
		{ 1, false, 1, 0 }, { 1, true, 0, 0 }, /* core 0 asleep */
		{ 3, false, 1, 0 }, { 3, true, 0, 1 }, /* both */
	};

	(void)state;
	/* (the earlier tests' made-up send completions moved the QPs' send
	 * counts: a RESET starts them afresh) */
	to_reset(t.qa);
	to_reset(t.qb);
	for (int i = 1; i <= 2; i++)
		atomic_store(&svc.qp_ring[i]->state, OVR_QPS_RTS);
	woken(svc.wake[0]);
	woken(svc.wake[1]);
	/* each post: the cores asleep, the QP, the writes each wake fd
	 * must then have seen */
	for (unsigned int i = 0; i < sizeof(step) / sizeof(step[0]); i++) {
		atomic_store(&svc.page->sleeping, step[i].sleeping);
		post_one(step[i].on_b ? t.qb : t.qa, i);
		assert_int_equal(woken(svc.wake[0]), step[i].w0);
		assert_int_equal(woken(svc.wake[1]), step[i].w1);
	}
	atomic_store(&svc.page->sleeping, 0);
}

static void srq_post(struct ovr_cl_srq *srq, uint64_t id)
{
	struct ovr_cl_sge sge = { .addr = 0x1000, .length = 64, .lkey = 1 };
	struct ovr_cl_recv_wr wr = { .wr_id = id,
				     .sg_list = &sge,
				     .num_sge = 1 };

	assert_int_equal(ovr_cl_post_srq_recv(srq, &wr), 0);
}

/* The service completes on the CQ, for QP @qpn, the SRQ receive of
 * posting @p: the tag its WQE names (a ring of 4 slots). */
static void srq_complete(uint32_t qpn, uint32_t p)
{
	const struct ovr_ring_rwqe *w =
		(const void *)((uint8_t *)svc.srq_ring +
			       sizeof(struct ovr_ring_srq) +
			       (size_t)(p & 3u) * SRQ_STRIDE);

	put_idx(svc.cq, svc.depth, svc.prod++, qpn, 64,
		OVR_CQE_RECV | OVR_CQE_SRQ, w->tag);
}

static void test_dead_srq_flush(void **state)
{
	static const uint64_t want[] = { 14, 15, 16, 10 };
	struct ovr_ctl_srq_attr sa = { .max_wr = 4, .max_sge = 1 };
	struct ovr_ctl_qp_cap cap = { 16, 16, 1, 1, 0, 0 };
	struct ovr_ctl_qp_attr a = { .qp_state = OVR_QPS_RESET };
	uint32_t qpn, got[32];
	struct ovr_cl_srq *srq;
	struct ovr_cl_wc wc[2];
	struct ovr_cl_qp *qp;
	unsigned int n = 0;

	(void)state;
	drain(got, 32);
	srq = ovr_cl_create_srq(t.cl, 1, &sa, 0);
	assert_non_null(srq);
	qp = ovr_cl_create_qp_ex(t.cl, 1, t.cq, t.cq, srq, OVR_QPT_RC, &cap,
				 false, 0);
	assert_non_null(qp);
	qpn = ovr_cl_qp_num(qp);
	/* posts 0-3 (ids 10-13); 0 is taken and stays so; 2, 1 and 3
	 * complete, out of order, and posts 4-6 (ids 14-16) reuse their
	 * tags: post 0's slot is then post 4's, more than the ring's depth
	 * of posts behind */
	for (uint32_t i = 0; i < 4; i++)
		srq_post(srq, 10 + i);
	srq_complete(qpn, 2);
	srq_complete(qpn, 1);
	srq_complete(qpn, 3);
	assert_int_equal(drain(got, 32), 3);
	for (uint32_t i = 4; i < 7; i++)
		srq_post(srq, 10 + i);
	/* the service dies: the request gets no answer */
	svc.die = true;
	assert_int_not_equal(ovr_cl_modify_qp(t.cl, qp, &a, OVR_QP_STATE), 0);
	for (int polls = 0; polls < 20000 && n < 8; polls++) {
		int k = ovr_cl_poll_cq(t.cq, 2, wc);

		assert_true(k >= 0 && k <= 2);
		for (int i = 0; i < k; i++) {
			assert_int_equal(wc[i].status, OVR_WC_WR_FLUSH_ERR);
			if (wc[i].qp_num != qpn)
				continue; /* the other QPs' sends, flushed */
			assert_int_equal(wc[i].opcode, OVR_WC_RECV);
			assert_true(n < 4);
			assert_int_equal(wc[i].wr_id, want[n]);
			n++;
		}
	}
	assert_int_equal(n, 4);
	/* what is left goes on this side alone */
	assert_int_equal(ovr_cl_destroy_qp(t.cl, qp, NULL), 0);
	assert_int_equal(ovr_cl_destroy_srq(t.cl, srq, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reset_cleans),
		cmocka_unit_test(test_resize),
		cmocka_unit_test(test_out_of_order),
		cmocka_unit_test(test_wake_per_core),
		cmocka_unit_test(test_dead_srq_flush), /* last: it kills */
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
