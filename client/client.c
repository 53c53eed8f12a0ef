// SPDX-License-Identifier: MIT
/*
 * libovr_client (include/ovrdma/client.h): control requests over the
 * Unix socket, the shared rings, and memory registration.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <ovrdma/client.h>
#include <ovrdma/gdr.h>
#include <ovrdma/ring.h>
#include <ovrdma/util.h>

#define PAGE 4096ull

_Static_assert(sizeof(struct ovr_cl_sge) == sizeof(struct ovr_ring_sge) &&
		       offsetof(struct ovr_cl_sge, lkey) ==
			       offsetof(struct ovr_ring_sge, lkey),
	       "work request SGEs are copied into the ring as they are");
#define QP_BUCKETS 1024u
/* dataplane cores whose wake fds OPEN takes (svc->sleeping's bits) */
#define OVR_CL_MAX_WAKE 32u

struct ovr_cl {
	int fd;
	pthread_mutex_t lock;
	uint32_t seq;
	int async_rd, async_wr; /* wr: ours too, for DEVICE_FATAL */
	const struct ovr_ring_svc *svc;
	struct ovr_ring_db *db;
	/* each dataplane core's wake eventfd (OPEN: core i's at i), and
	 * OPEN's svc->sleeping bits (for objects whose reply has none) */
	int wake_fds[OVR_CL_MAX_WAKE];
	uint32_t nwake;
	uint32_t wake_mask;
	atomic_bool dead;
	uint64_t incarnation;
	struct ovr_cl_qp *qps[QP_BUCKETS]; /* by qpn, chained */
	struct ovr_cl_cq *cqs; /* for failing everything when dead */
	/* the watcher: DEVICE_FATAL as soon as the service's end of the
	 * socket closes, for applications that only wait for events */
	pthread_t watcher;
	pid_t watcher_pid; /* 0: none; a forked child has none */
	int watch_stop[2];
	/* this process's /proc/self/mem, the process route's address space
	 * (-1 until the first such registration; under @lock) */
	int mem_fd;
};

struct ovr_cl_cq {
	struct ovr_cl *cl;
	uint32_t handle;
	uint32_t depth;
	uint32_t cons;
	struct ovr_ring_cq *ring;
	struct ovr_ring_cqe *cqe;
	size_t map_len;
	pthread_spinlock_t lock;
	uint32_t arm_sn;
	uint32_t idle_polls;
	struct ovr_cl_cq *next;
};

struct ovr_cl_srq {
	struct ovr_cl *cl;
	uint32_t handle, srqn, db_index;
	uint32_t wake_mask; /* its core's svc->sleeping bit */
	int wake_fd; /* its core's (cl->wake_fds: not ours to close) */
	struct ovr_ctl_srq_attr attr; /* granted; max_wr follows modify */
	struct ovr_ring_srq *ring;
	uint8_t *slots;
	size_t map_len;
	uint32_t depth, stride;
	uint32_t prod; /* WQEs written */
	uint32_t outstanding; /* posted, not completed */
	uint64_t *wrid; /* by tag */
	uint32_t *free_tag; /* a stack of depth tags */
	uint32_t nfree;
	uint32_t *flush_at; /* by tag: flush_dead_srq's scratch */
	pthread_spinlock_t lock; /* posting and completing */
};

struct ovr_cl_qp {
	struct ovr_cl *cl;
	uint32_t handle, qpn, db_index;
	uint32_t wake_mask; /* its core's svc->sleeping bit */
	int wake_fd; /* its core's (cl->wake_fds: not ours to close) */
	uint32_t type;
	struct ovr_cl_srq *srq;
	struct ovr_ctl_qp_cap cap;
	struct ovr_cl_cq *scq, *rcq;
	uint64_t user_handle;
	struct ovr_ring_qp *ring;
	uint8_t *sq, *rq;
	size_t map_len;
	uint32_t sq_depth, rq_depth, sq_stride, rq_stride;
	uint32_t sq_prod, sq_done, rq_prod, rq_done;
	uint32_t sq_stage; /* a send batch's next slot (under sq_lock) */
	/* it left RESET once: a receive posted in RESET again is EINVAL */
	_Atomic bool left_reset;
	uint64_t *sq_wrid, *rq_wrid;
	pthread_spinlock_t sq_lock, rq_lock;
	struct ovr_cl_qp *hnext;
};

/* ---- the socket ---------------------------------------------------------- */

static void watch_start(struct ovr_cl *cl);
static int wake_for(const struct ovr_cl *cl, uint32_t mask, uint32_t *out);

/* A request and its reply, which must carry at least @min_rfds and
 * takes at most @nrfds descriptors into @rfds (the rest closed). */
static int xfer(struct ovr_cl *cl, uint16_t op, const void *body, size_t len,
		const int *fds, int nfds, void *rep, size_t cap, int *rfds,
		int nrfds, int min_rfds)
{
	struct ovr_ctl_hdr h = { .op = op,
				 .version = OVR_CTL_VERSION,
				 .len = (uint32_t)(sizeof(h) + len),
				 .seq = ++cl->seq };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)body, len } };
	union {
		char b[CMSG_SPACE(sizeof(int) * OVR_CTL_MR_MAX_SEG)];
		struct cmsghdr align;
	} cb;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
	struct ovr_ctl_hdr rh;
	char *buf;
	ssize_t n;
	int got = 0;

	if (sizeof(h) + len > OVR_CTL_MSG_MAX)
		return -EMSGSIZE;
	if (nfds) {
		struct cmsghdr *cm;

		memset(&cb, 0, sizeof(cb));
		m.msg_control = cb.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = (struct cmsghdr *)(void *)cb.b;
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	if (sendmsg(cl->fd, &m, MSG_NOSIGNAL) < 0) {
		if (errno == EPIPE || errno == ECONNRESET)
			atomic_store(&cl->dead, true);
		return -errno;
	}
	buf = malloc(OVR_CTL_MSG_MAX);
	if (!buf)
		return -ENOMEM;
	iov[0] = (struct iovec){ buf, OVR_CTL_MSG_MAX };
	m = (struct msghdr){ .msg_iov = iov,
			     .msg_iovlen = 1,
			     .msg_control = cb.b,
			     .msg_controllen = sizeof(cb.b) };
	do
		n = recvmsg(cl->fd, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		free(buf);
		atomic_store(&cl->dead, true);
		return n == 0 ? -ECONNRESET : -errno;
	}
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm;
	     cm = CMSG_NXTHDR(&m, cm))
		if (cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SCM_RIGHTS) {
			int k = (int)((cm->cmsg_len - CMSG_LEN(0)) /
				      sizeof(int));

			for (int i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
				       sizeof(int));
				if (got < nrfds)
					rfds[got++] = fd;
				else
					close(fd);
			}
		}
	memcpy(&rh, buf, sizeof(rh));
	if ((size_t)n < sizeof(rh) || rh.seq != h.seq || rh.op != op) {
		free(buf);
		for (int i = 0; i < got; i++)
			close(rfds[i]);
		return -EPROTO;
	}
	if (rh.status) {
		free(buf);
		for (int i = 0; i < got; i++)
			close(rfds[i]);
		return rh.status;
	}
	if (got < min_rfds) {
		free(buf);
		for (int i = 0; i < got; i++)
			close(rfds[i]);
		return -EPROTO;
	}
	n -= (ssize_t)sizeof(rh);
	if (rep)
		memcpy(rep, buf + sizeof(rh),
		       (size_t)n < cap ? (size_t)n : cap);
	free(buf);
	return (int)n;
}

/* Maps @len bytes of the shared memfd @fd, which it closes. */
static void *map_fd(int fd, size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);

	close(fd);
	return p;
}

/* xfer under the lock; the reply carries at least @min_rfds. */
static int req_min(struct ovr_cl *cl, uint16_t op, const void *body, size_t len,
		   const int *fds, int nfds, void *rep, size_t cap, int *rfds,
		   int nrfds, int min_rfds)
{
	int rc;

	pthread_mutex_lock(&cl->lock);
	rc = xfer(cl, op, body, len, fds, nfds, rep, cap, rfds, nrfds,
		  min_rfds);
	pthread_mutex_unlock(&cl->lock);
	return rc;
}

static int req(struct ovr_cl *cl, uint16_t op, const void *body, size_t len,
	       const int *fds, int nfds, void *rep, size_t cap, int *rfds,
	       int nrfds)
{
	return req_min(cl, op, body, len, fds, nfds, rep, cap, rfds, nrfds,
		       nrfds);
}

int ovr_cl_request(struct ovr_cl *cl, uint16_t op, const void *body, size_t len,
		   void *rep, size_t cap)
{
	return req(cl, op, body, len, NULL, 0, rep, cap, NULL, 0);
}

/* A reply of exactly @cap bytes with @min_rfds to @nrfds descriptors
 * (@rfds preset to -1 where fewer may come), or an error. */
static int req_exact_min(struct ovr_cl *cl, uint16_t op, const void *body,
			 size_t len, const int *fds, int nfds, void *rep,
			 size_t cap, int *rfds, int nrfds, int min_rfds)
{
	int rc = req_min(cl, op, body, len, fds, nfds, rep, cap, rfds, nrfds,
			 min_rfds);

	if (rc >= 0 && (size_t)rc != cap) {
		for (int i = 0; i < nrfds; i++)
			if (rfds[i] >= 0)
				close(rfds[i]);
		return -EPROTO;
	}
	return rc < 0 ? rc : 0;
}

static int req_exact(struct ovr_cl *cl, uint16_t op, const void *body,
		     size_t len, const int *fds, int nfds, void *rep,
		     size_t cap, int *rfds, int nrfds)
{
	return req_exact_min(cl, op, body, len, fds, nfds, rep, cap, rfds,
			     nrfds, nrfds);
}

struct ovr_cl *ovr_cl_connect(const char *path, const char *name)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct ovr_ctl_hello_req hq = { .ring_abi = OVR_RING_ABI_VERSION };
	struct ovr_ctl_hello_rep hr;
	struct ovr_cl *cl;
	int svcfd, rc;
	void *p;

	if (!path)
		path = getenv("OVRDMA_SOCKET");
	if (!path)
		path = OVR_CTL_SOCK_DEFAULT;
	if (strlen(path) >= sizeof(a.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return NULL;
	pthread_mutex_init(&cl->lock, NULL);
	cl->async_rd = cl->async_wr = cl->mem_fd = -1;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	cl->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (cl->fd < 0 || connect(cl->fd, (struct sockaddr *)&a, sizeof(a))) {
		rc = -errno;
		goto fail;
	}
	snprintf(hq.client, sizeof(hq.client), "%s", name ? name : "");
	rc = req_exact(cl, OVR_CTL_HELLO, &hq, sizeof(hq), NULL, 0, &hr,
		       sizeof(hr), &svcfd, 1);
	if (rc)
		goto fail;
	p = map_fd(svcfd, sizeof(struct ovr_ring_svc), PROT_READ);
	if (p == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}
	cl->svc = p;
	cl->incarnation = hr.incarnation;
	return cl;
fail:
	if (cl->fd >= 0)
		close(cl->fd);
	free(cl);
	errno = -rc;
	return NULL;
}

int ovr_cl_cm_open(struct ovr_cl *cl, int ev_fd)
{
	int rc = req(cl, OVR_CTL_CM_OPEN, NULL, 0, &ev_fd, 1, NULL, 0, NULL, 0);

	return rc < 0 ? rc : 0;
}

int ovr_cl_list(struct ovr_cl *cl, struct ovr_ctl_dev *devs, unsigned int max)
{
	char buf[sizeof(struct ovr_ctl_list_rep) + 64 * sizeof(*devs)];
	struct ovr_ctl_list_rep *r = (void *)buf;
	int rc = req(cl, OVR_CTL_LIST_DEVICES, NULL, 0, NULL, 0, buf,
		     sizeof(buf), NULL, 0);

	if (rc < 0)
		return rc;
	if ((size_t)rc < sizeof(*r) ||
	    (size_t)rc != sizeof(*r) + r->n * sizeof(*devs))
		return -EPROTO;
	for (unsigned int i = 0; i < r->n && i < max; i++)
		memcpy(&devs[i], buf + sizeof(*r) + i * sizeof(*devs),
		       sizeof(*devs));
	return (int)r->n;
}

int ovr_cl_open(struct ovr_cl *cl, const char *name, struct ovr_ctl_dev *dev)
{
	struct ovr_ctl_open_req q = { 0 };
	struct ovr_ctl_open_rep r;
	int pfd[2], rfd[1 + OVR_CL_MAX_WAKE], rc;
	uint32_t n = 0;
	void *p;

	if (strlen(name) >= sizeof(q.name))
		return -EINVAL;
	snprintf(q.name, sizeof(q.name), "%s", name);
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	for (uint32_t i = 0; i < 1 + OVR_CL_MAX_WAKE; i++)
		rfd[i] = -1;
	/* the doorbell page and a wake fd per dataplane core (in order:
	 * at least one) */
	rc = req_exact_min(cl, OVR_CTL_OPEN, &q, sizeof(q), &pfd[1], 1, &r,
			   sizeof(r), rfd, 1 + OVR_CL_MAX_WAKE, 2);
	while (!rc && n < OVR_CL_MAX_WAKE && rfd[1 + n] >= 0)
		n++;
	if (rc) {
		close(pfd[0]);
		close(pfd[1]);
		return rc;
	}
	p = map_fd(rfd[0], PAGE, PROT_READ | PROT_WRITE);
	if (p == MAP_FAILED) {
		rc = -errno;
		for (uint32_t i = 0; i < n; i++)
			close(rfd[1 + i]);
		close(pfd[0]);
		close(pfd[1]);
		return rc;
	}
	cl->db = p;
	for (uint32_t i = 0; i < n; i++)
		cl->wake_fds[i] = rfd[1 + i];
	cl->nwake = n;
	cl->wake_mask = r.wake_mask ? r.wake_mask : ~0u;
	cl->async_rd = pfd[0];
	cl->async_wr = pfd[1];
	fcntl(cl->async_wr, F_SETFL, O_NONBLOCK);
	if (!cl->watcher_pid)
		watch_start(cl);
	if (dev)
		*dev = r.dev;
	return 0;
}

int ovr_cl_async_fd(const struct ovr_cl *cl)
{
	return cl->async_rd;
}

static void declare_dead(struct ovr_cl *cl)
{
	struct ovr_ctl_async_event ev = { .event_type = OVR_EV_DEVICE_FATAL };

	if (atomic_exchange(&cl->dead, true))
		return;
	if (cl->async_wr >= 0 &&
	    write(cl->async_wr, &ev, sizeof(ev)) != (ssize_t)sizeof(ev)) {
		/* the reader is not reading: it will see errors anyway */
	}
}

/*
 * The watcher thread of a context: sleeps in poll(2) on the control
 * socket for the hang-up that ovrdmad's exit (or crash) causes, and then
 * declares the context dead, which queues OVR_EV_DEVICE_FATAL on the
 * async fd. Without it an application blocked in ibv_get_async_event (or
 * one that stopped polling) would learn of the death only at its next
 * post or poll. It asks for POLLRDHUP only: replies (POLLIN) stay for
 * the thread that made the request.
 */
static void *watch(void *arg)
{
	struct ovr_cl *cl = arg;
	struct pollfd p[2] = {
		{ .fd = cl->fd, .events = POLLRDHUP },
		{ .fd = cl->watch_stop[0], .events = POLLIN },
	};

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (p[1].revents)
			return NULL;
		if (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
			declare_dead(cl);
			return NULL;
		}
	}
}

/* Starts the watcher with every signal blocked (the application's
 * handlers run on its own threads). Without it only the watching is
 * lost: posts and polls still find a dead service. */
static void watch_start(struct ovr_cl *cl)
{
	sigset_t all, old;

	if (pipe2(cl->watch_stop, O_CLOEXEC))
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&cl->watcher, NULL, watch, cl) == 0) {
		cl->watcher_pid = getpid();
		pthread_setname_np(cl->watcher, "ovrdma-watch");
	} else {
		close(cl->watch_stop[0]);
		close(cl->watch_stop[1]);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void watch_stop(struct ovr_cl *cl)
{
	if (!cl->watcher_pid)
		return;
	/* in a forked child the thread does not exist: only the fds do */
	if (cl->watcher_pid == getpid()) {
		if (write(cl->watch_stop[1], "", 1) == 1)
			pthread_join(cl->watcher, NULL);
	}
	close(cl->watch_stop[0]);
	close(cl->watch_stop[1]);
	cl->watcher_pid = 0;
}

bool ovr_cl_alive(struct ovr_cl *cl)
{
	struct pollfd p = { .fd = cl->fd, .events = POLLIN };

	if (atomic_load(&cl->dead))
		return false;
	/* a stale heartbeat (a dead or stopped service): ask the socket */
	if (atomic_load_explicit(&cl->svc->stopping, memory_order_relaxed) ||
	    ovr_mono_ns() - atomic_load_explicit(&cl->svc->heartbeat_ns,
						 memory_order_relaxed) >
		    OVR_RING_DEAD_NS) {
		if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR))) {
			declare_dead(cl);
			return false;
		}
	}
	return true;
}

static void qp_free(struct ovr_cl *cl, struct ovr_cl_qp *qp);
static void cq_free(struct ovr_cl *cl, struct ovr_cl_cq *cq);

void ovr_cl_close(struct ovr_cl *cl)
{
	if (!cl)
		return;
	watch_stop(cl); /* before the socket it polls goes */
	/* closing the socket makes the service destroy everything the
	 * context owns: only this side's mappings are left to undo */
	close(cl->fd);
	for (unsigned int b = 0; b < QP_BUCKETS; b++)
		while (cl->qps[b])
			qp_free(cl, cl->qps[b]);
	while (cl->cqs)
		cq_free(cl, cl->cqs);
	if (cl->db)
		munmap(cl->db, PAGE);
	if (cl->svc)
		munmap((void *)cl->svc, sizeof(*cl->svc));
	for (uint32_t i = 0; i < cl->nwake; i++)
		close(cl->wake_fds[i]);
	if (cl->async_rd >= 0)
		close(cl->async_rd);
	if (cl->async_wr >= 0)
		close(cl->async_wr);
	if (cl->mem_fd >= 0)
		close(cl->mem_fd);
	pthread_mutex_destroy(&cl->lock);
	free(cl);
}

/* ---- PDs ----------------------------------------------------------------- */

int ovr_cl_alloc_pd(struct ovr_cl *cl, uint32_t *pd)
{
	struct ovr_ctl_pd_rep r;
	int rc = req_exact(cl, OVR_CTL_ALLOC_PD, NULL, 0, NULL, 0, &r,
			   sizeof(r), NULL, 0);

	if (!rc)
		*pd = r.pd;
	return rc;
}

/* Releases one object (every caller destroys, deregisters or frees):
 * with the service gone there is nothing left to release, and the
 * release succeeds, as the kernel's do after a device fatal error. */
static int handle_op(struct ovr_cl *cl, uint16_t op, uint32_t handle)
{
	struct ovr_ctl_handle_req q = { .handle = handle };
	int rc = req_exact(cl, op, &q, sizeof(q), NULL, 0, NULL, 0, NULL, 0);

	return rc && atomic_load(&cl->dead) ? 0 : rc;
}

int ovr_cl_dealloc_pd(struct ovr_cl *cl, uint32_t pd)
{
	return handle_op(cl, OVR_CTL_DEALLOC_PD, pd);
}

/* ---- memory registration --------------------------------------------------
 *
 * Two routes (docs/SERVICE.md section 4), and registration changes
 * nothing in the process: it reads /proc/self/maps, decides, and asks.
 * When every VMA piece of the range is MAP_SHARED memory backed by a
 * regular file the client can open (memfd, shm, hugetlbfs, shared
 * anonymous memory through map_files, a file), those objects are passed
 * (the object route): the service maps the same pages. Otherwise - any
 * private piece (malloc, stacks, private mappings), a device file's
 * mapping, an object the process may not reopen, more pieces than a
 * request carries - the whole registration takes the process route: the
 * request carries this process's /proc/self/mem, and the service reads
 * and writes the application's memory through it, as it is at the time
 * of each copy. That file, not the pid, names the address space: the
 * kernel checks this process's right to it when it is opened here, and
 * it reaches nothing once this address space is gone (an exec).
 */

struct maps_line {
	uint64_t start, end, off;
	ino_t ino;
	dev_t dev;
	bool shared, writable;
	char path[256]; /* "" when none, or too long to keep */
};

/* @line's path, after the inode; "" for anonymous or truncated lines */
static void maps_path(struct maps_line *m, const char *p)
{
	size_t n = strlen(p);

	m->path[0] = 0;
	if (!n || p[n - 1] != '\n' || n > sizeof(m->path))
		return;
	memcpy(m->path, p, n - 1);
	m->path[n - 1] = 0;
}

static int read_maps(struct maps_line **out, size_t *n)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off, ino;
		unsigned int maj, min;
		char perms[8];
		int at = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &s, &e,
			   perms, &off, &maj, &min, &ino, &at) != 7 ||
		    strlen(perms) < 4)
			continue;
		if (*n == cap) {
			struct maps_line *t;

			cap = cap ? cap * 2 : 256;
			t = realloc(*out, cap * sizeof(*t));
			if (!t) {
				fclose(f);
				return -ENOMEM;
			}
			*out = t;
		}
		struct maps_line *m = &(*out)[(*n)++];

		*m = (struct maps_line){ .start = s,
					 .end = e,
					 .off = off,
					 .ino = (ino_t)ino,
					 .dev = makedev(maj, min),
					 .shared = perms[3] == 's',
					 .writable = perms[1] == 'w' };
		maps_path(m, line + at);
	}
	fclose(f);
	return 0;
}

/* The client's side of a region the service registered (reply @r); if
 * that fails, the registration is undone. */
static struct ovr_cl_mr *mr_new(struct ovr_cl *cl,
				const struct ovr_ctl_reg_mr_rep *r, void *addr,
				size_t len)
{
	struct ovr_cl_mr *mr = calloc(1, sizeof(*mr));

	if (!mr) {
		handle_op(cl, OVR_CTL_DEREG_MR, r->handle);
		errno = ENOMEM;
		return NULL;
	}
	*mr = (struct ovr_cl_mr){ .handle = r->handle,
				  .lkey = r->lkey,
				  .rkey = r->rkey,
				  .addr = addr,
				  .length = len };
	return mr;
}

/* Does @m's object still sit behind @fd (the path or fd it was found by
 * may name another file by now)? */
static bool obj_is(int fd, const struct maps_line *m)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_ino == m->ino &&
	       st.st_dev == m->dev;
}

/*
 * @m's object without /proc/self/map_files, which only a process with
 * CAP_CHECKPOINT_RESTORE (or CAP_SYS_ADMIN) may open: by its path when
 * it still has one, else through a descriptor of the process's own on
 * it (a memfd the application keeps open). -ENOENT: not found (shared
 * anonymous memory, a deleted file nobody holds open).
 */
static int obj_find(const struct maps_line *m, int flags)
{
	char p[64];
	struct dirent *e;
	DIR *d;
	int fd;

	if (m->path[0] == '/' && !strstr(m->path, " (deleted)")) {
		fd = open(m->path, flags);
		if (fd >= 0 && obj_is(fd, m))
			return fd;
		if (fd >= 0)
			close(fd);
	}
	d = opendir("/proc/self/fd");
	if (!d)
		return -ENOENT;
	fd = -ENOENT;
	while (fd < 0 && (e = readdir(d))) {
		int n = atoi(e->d_name);

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || n == dirfd(d) ||
		    !obj_is(n, m))
			continue;
		/* opened anew: the application's descriptor may be
		 * read-only, and its offset is not ours to share */
		snprintf(p, sizeof(p), "/proc/self/fd/%d", n);
		fd = open(p, flags);
		if (fd >= 0 && !obj_is(fd, m)) {
			close(fd);
			fd = -ENOENT;
		}
	}
	closedir(d);
	return fd < 0 ? -ENOENT : fd;
}

/*
 * The object behind the MAP_SHARED mapping @m, opened for the device's
 * access (@wr: it writes); -EACCES when the mapping is read-only and the
 * device would write (a NIC could not either), -ENOENT when there is no
 * regular file to pass (a device file's mapping; an object the process
 * may not reopen): the registration takes the process route.
 */
static int obj_open(const struct maps_line *m, bool wr)
{
	int flags = (wr ? O_RDWR : O_RDONLY) | O_CLOEXEC;
	char p[80];
	struct stat st;
	int fd;

	if (wr && !m->writable)
		return -EACCES;
	snprintf(p, sizeof(p), "/proc/self/map_files/%llx-%llx",
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(p, flags);
	if (fd < 0 && errno == EACCES)
		return -EACCES;
	if (fd < 0)
		return obj_find(m, flags);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

/*
 * The route of [start, end): its object segments appended to @q and @fds
 * (opened here: the caller closes the nseg of them), or *@proc when any
 * piece cannot take the object route (then no fd is left open). A hole
 * in the range is -EFAULT; device writes over a read-only piece
 * -EACCES (a NIC could not write it either).
 */
static int mr_route(uint64_t start, uint64_t end, unsigned int access,
		    struct ovr_ctl_reg_mr_req *q, int *fds, bool *proc)
{
	bool wr = access & (OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE |
			    OVR_ACCESS_REMOTE_ATOMIC);
	struct maps_line *maps = NULL;
	size_t nmaps = 0, j = 0;
	uint64_t at;
	int rc;

	*proc = false;
	rc = read_maps(&maps, &nmaps);
	for (at = start; !rc && at < end;) {
		const struct maps_line *m;
		uint64_t pe;
		int fd;

		while (j < nmaps && maps[j].end <= at)
			j++;
		if (j == nmaps || maps[j].start > at) {
			rc = -EFAULT; /* a hole */
			break;
		}
		m = &maps[j];
		pe = m->end < end ? m->end : end;
		if (wr && !m->writable) {
			rc = -EACCES;
			break;
		}
		fd = -ENOENT;
		if (m->shared && !*proc && q->nseg < OVR_CTL_MR_MAX_SEG)
			fd = obj_open(m, wr);
		if (fd == -EACCES) {
			rc = fd;
		} else if (fd >= 0) {
			q->seg[q->nseg].off = m->off + (at - m->start);
			q->seg[q->nseg].len = pe - at;
			fds[q->nseg++] = fd;
		} else {
			*proc = true; /* still walked: holes, rights */
		}
		at = pe;
	}
	free(maps);
	if (rc || *proc) {
		for (uint32_t i = 0; i < q->nseg; i++)
			close(fds[i]);
		q->nseg = 0;
	}
	return rc;
}

/*
 * This process's /proc/self/mem, opened once per connection (the
 * service keeps the first it gets, docs/SERVICE.md section 4.2); -EPERM
 * when the process may not open it: it is not dumpable (prctl
 * PR_SET_DUMPABLE 0, or it changed its user ID since its exec), and then
 * neither may the service reach its private memory on its behalf.
 */
static int mem_fd(struct ovr_cl *cl)
{
	int fd;

	pthread_mutex_lock(&cl->lock);
	if (cl->mem_fd < 0)
		cl->mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	fd = cl->mem_fd < 0 ? (errno == EACCES ? -EPERM : -errno) : cl->mem_fd;
	pthread_mutex_unlock(&cl->lock);
	return fd;
}

/*
 * On demand (OVR_ACCESS_ON_DEMAND): the process route whatever backs the
 * range, and the maps are not read. ODP's contract is that the device
 * follows the process's address space - what is mapped at an address
 * when the device reaches it, not when the range was registered - so a
 * hole at registration is fine (a copy into it fails later, as a page
 * fault the NIC cannot resolve), and the object route, whose mapping of
 * the objects would outlive an munmap or a new mapping at the same
 * address, would break it. addr NULL and len SIZE_MAX: the whole
 * address space (implicit ODP).
 */
struct ovr_cl_mr *ovr_cl_reg_mr(struct ovr_cl *cl, uint32_t pd, void *addr,
				size_t len, unsigned int access)
{
	struct ovr_ctl_reg_mr_req q = { 0 };
	struct ovr_ctl_reg_mr_rep r;
	int fds[OVR_CTL_MR_MAX_SEG];
	uint64_t va = (uint64_t)(uintptr_t)addr;
	uint64_t start = va & ~(PAGE - 1), end;
	bool odp = access & OVR_ACCESS_ON_DEMAND;
	bool implicit = odp && va == 0 && len == SIZE_MAX;
	bool proc = odp;
	int rc = 0;

	access &= ~(unsigned int)OVR_ACCESS_ON_DEMAND;
	/* the last page is the implicit region's alone (as the service
	 * says); rounding any other range up must not wrap */
	if (!len ||
	    (!implicit && (va + len < va || va + len > UINT64_MAX - PAGE))) {
		errno = EINVAL;
		return NULL;
	}
	if (!odp) {
		end = (va + len + PAGE - 1) & ~(PAGE - 1);
		rc = mr_route(start, end, access, &q, fds, &proc);
	}
	if (!rc && proc) {
		rc = mem_fd(cl); /* kept: not among the nseg closed below */
		fds[0] = rc;
		rc = rc < 0 ? rc : 0;
	}
	if (!rc) {
		q.pd = pd;
		q.access = access;
		q.va = va;
		q.len = len;
		q.span = start;
		q.flags = (proc ? OVR_CTL_MR_PROC : 0) |
			  (odp ? OVR_CTL_MR_ODP : 0);
		rc = req_exact(cl, OVR_CTL_REG_MR, &q,
			       offsetof(struct ovr_ctl_reg_mr_req, seg) +
				       q.nseg * sizeof(q.seg[0]),
			       fds, proc ? 1 : (int)q.nseg, &r, sizeof(r), NULL,
			       0);
	}
	for (uint32_t i = 0; i < q.nseg; i++)
		close(fds[i]);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	return mr_new(cl, &r, addr, len);
}

struct ovr_cl_mr *ovr_cl_reg_mr_gpu(struct ovr_cl *cl, uint32_t pd,
				    uint64_t iova, size_t len,
				    unsigned int access,
				    const struct ovr_gdr_export *ex,
				    uint64_t offset)
{
	struct ovr_ctl_reg_mr_gpu_req q = {
		.pd = pd,
		.access = access,
		.va = iova,
		.len = len,
		.offset = offset,
		.alloc_base = ex->base,
		.alloc_size = ex->size,
		.device = ex->device,
		.kind = ex->kind,
	};
	struct ovr_ctl_reg_mr_rep r;
	bool fd = ex->kind == OVR_GDR_KIND_FD;
	int rc;

	if (fd && ex->fd < 0) {
		errno = EBADF;
		return NULL;
	}
	if (!fd)
		memcpy(q.ipc, ex->ipc, sizeof(q.ipc));
	memcpy(q.uuid, ex->uuid, sizeof(q.uuid));
	rc = req_exact(cl, OVR_CTL_REG_MR_GPU, &q, sizeof(q),
		       fd ? &ex->fd : NULL, fd ? 1 : 0, &r, sizeof(r), NULL, 0);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	return mr_new(cl, &r, (void *)(uintptr_t)iova, len);
}

int ovr_cl_dereg_mr(struct ovr_cl *cl, struct ovr_cl_mr *mr)
{
	int rc = handle_op(cl, OVR_CTL_DEREG_MR, mr->handle);

	if (!rc || atomic_load(&cl->dead))
		free(mr);
	return atomic_load(&cl->dead) ? 0 : rc;
}

/*
 * REREG_MR: @mr's PD and/or rights changed in place (@flags enum
 * ovr_ctl_rereg_flags), its keys kept (updated from the reply all the
 * same); OVR_CTL_REREG_INVALIDATE makes it unusable. A failure leaves
 * it unusable too (ctl.h); it is still deregistered as usual.
 */
int ovr_cl_rereg_mr(struct ovr_cl *cl, struct ovr_cl_mr *mr, unsigned int flags,
		    uint32_t pd, unsigned int access)
{
	struct ovr_ctl_rereg_mr_req q = {
		.handle = mr->handle, .flags = flags, .pd = pd, .access = access
	};
	struct ovr_ctl_reg_mr_rep r;
	bool inval = flags & OVR_CTL_REREG_INVALIDATE;
	int rc;

	rc = req_exact(cl, OVR_CTL_REREG_MR, &q, sizeof(q), NULL, 0,
		       inval ? NULL : &r, inval ? 0 : sizeof(r), NULL, 0);
	if (!rc && !inval) {
		mr->lkey = r.lkey;
		mr->rkey = r.rkey;
	}
	return rc;
}

/* ---- memory windows -------------------------------------------------------- */

int ovr_cl_alloc_mw(struct ovr_cl *cl, uint32_t pd, unsigned int type,
		    uint32_t *handle, uint32_t *rkey)
{
	struct ovr_ctl_alloc_mw_req q = { .pd = pd, .type = type };
	struct ovr_ctl_alloc_mw_rep r;
	int rc = req_exact(cl, OVR_CTL_ALLOC_MW, &q, sizeof(q), NULL, 0, &r,
			   sizeof(r), NULL, 0);

	if (!rc) {
		*handle = r.handle;
		*rkey = r.rkey;
	}
	return rc;
}

int ovr_cl_dealloc_mw(struct ovr_cl *cl, uint32_t handle)
{
	return handle_op(cl, OVR_CTL_DEALLOC_MW, handle);
}

/* ---- completion channels and CQs ------------------------------------------ */

int ovr_cl_create_channel(struct ovr_cl *cl, uint32_t *channel, int *fd)
{
	struct ovr_ctl_channel_rep r;
	int p[2], rc;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	rc = req_exact(cl, OVR_CTL_CREATE_CHANNEL, NULL, 0, &p[1], 1, &r,
		       sizeof(r), NULL, 0);
	close(p[1]);
	if (rc) {
		close(p[0]);
		return rc;
	}
	*channel = r.channel;
	*fd = p[0];
	return 0;
}

int ovr_cl_destroy_channel(struct ovr_cl *cl, uint32_t channel)
{
	return handle_op(cl, OVR_CTL_DESTROY_CHANNEL, channel);
}

struct ovr_cl_cq *ovr_cl_create_cq(struct ovr_cl *cl, uint32_t cqe,
				   uint32_t channel, uint64_t user_handle)
{
	struct ovr_ctl_create_cq_req q = { .cqe = cqe,
					   .channel = channel,
					   .user_handle = user_handle };
	struct ovr_ctl_create_cq_rep r;
	struct ovr_cl_cq *cq;
	int fd, rc;
	void *p;

	rc = req_exact(cl, OVR_CTL_CREATE_CQ, &q, sizeof(q), NULL, 0, &r,
		       sizeof(r), &fd, 1);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	p = map_fd(fd, r.map_len, PROT_READ | PROT_WRITE);
	cq = calloc(1, sizeof(*cq));
	if (p == MAP_FAILED || !cq || !r.depth || (r.depth & (r.depth - 1)) ||
	    r.map_len <
		    OVR_RING_CQ_ENTRIES_OFF +
			    (uint64_t)r.depth * sizeof(struct ovr_ring_cqe)) {
		if (p != MAP_FAILED)
			munmap(p, r.map_len);
		free(cq);
		handle_op(cl, OVR_CTL_DESTROY_CQ, r.cq);
		errno = EPROTO;
		return NULL;
	}
	cq->cl = cl;
	cq->handle = r.cq;
	cq->depth = r.depth;
	cq->ring = p;
	cq->cqe = (void *)((uint8_t *)p + OVR_RING_CQ_ENTRIES_OFF);
	cq->map_len = r.map_len;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_lock(&cl->lock);
	cq->next = cl->cqs;
	cl->cqs = cq;
	pthread_mutex_unlock(&cl->lock);
	return cq;
}

uint32_t ovr_cl_cq_depth(const struct ovr_cl_cq *cq)
{
	return cq->depth;
}

/*
 * RESIZE_CQ (ctl.h): the service copies what the ring holds into a new
 * one and from then on writes only there; the CQ's lock is held from
 * the request until the new ring is mapped, so no poll or arm of this
 * process looks at the old ring after the service left it (a poller
 * of another thread spins for that long: a control round trip).
 */
int ovr_cl_resize_cq(struct ovr_cl *cl, struct ovr_cl_cq *cq, uint32_t cqe)
{
	struct ovr_ctl_resize_cq_req q = { .cq = cq->handle, .cqe = cqe };
	struct ovr_ctl_resize_cq_rep r;
	int fd, rc;
	void *p;

	pthread_spin_lock(&cq->lock);
	rc = req_exact(cl, OVR_CTL_RESIZE_CQ, &q, sizeof(q), NULL, 0, &r,
		       sizeof(r), &fd, 1);
	if (rc) {
		pthread_spin_unlock(&cq->lock);
		return rc;
	}
	p = map_fd(fd, r.map_len, PROT_READ | PROT_WRITE);
	if (p == MAP_FAILED || !r.depth || (r.depth & (r.depth - 1)) ||
	    r.map_len <
		    OVR_RING_CQ_ENTRIES_OFF +
			    (uint64_t)r.depth * sizeof(struct ovr_ring_cqe)) {
		/* the service writes the new ring now: this CQ is lost */
		rc = p == MAP_FAILED ? -ENOMEM : -EPROTO;
		if (p != MAP_FAILED)
			munmap(p, r.map_len);
		pthread_spin_unlock(&cq->lock);
		return rc;
	}
	munmap(cq->ring, cq->map_len);
	cq->ring = p;
	cq->cqe = (void *)((uint8_t *)p + OVR_RING_CQ_ENTRIES_OFF);
	cq->depth = r.depth;
	cq->map_len = r.map_len;
	pthread_spin_unlock(&cq->lock);
	return 0;
}

/* Forgets @cq on this side only. */
static void cq_free(struct ovr_cl *cl, struct ovr_cl_cq *cq)
{
	pthread_mutex_lock(&cl->lock);
	for (struct ovr_cl_cq **p = &cl->cqs; *p; p = &(*p)->next)
		if (*p == cq) {
			*p = cq->next;
			break;
		}
	pthread_mutex_unlock(&cl->lock);
	munmap(cq->ring, cq->map_len);
	pthread_spin_destroy(&cq->lock);
	free(cq);
}

int ovr_cl_destroy_cq(struct ovr_cl *cl, struct ovr_cl_cq *cq, uint32_t *events)
{
	int rc = handle_op(cl, OVR_CTL_DESTROY_CQ, cq->handle);

	if (rc && !atomic_load(&cl->dead))
		return rc;
	if (events)
		*events = atomic_load_explicit(&cq->ring->events,
					       memory_order_acquire);
	cq_free(cl, cq);
	return 0;
}

static struct ovr_cl_qp *qp_lookup(struct ovr_cl *cl, uint32_t qpn)
{
	struct ovr_cl_qp *qp = cl->qps[qpn % QP_BUCKETS];

	while (qp && qp->qpn != qpn)
		qp = qp->hnext;
	return qp;
}

/* A WR of @qp flushed: WR_FLUSH_ERR (@opcode: OVR_WC_RECV or 0). */
static struct ovr_cl_wc flushed(const struct ovr_cl_qp *qp, uint64_t wr_id,
				uint32_t opcode)
{
	return (struct ovr_cl_wc){
		.wr_id = wr_id,
		.status = OVR_WC_WR_FLUSH_ERR,
		.opcode = opcode,
		.qp_num = qp->qpn,
		.qp_user = qp->user_handle,
	};
}

/* the tag of @q's WQE of posting @p (in its ring's slot of it) */
static uint32_t srq_tag(const struct ovr_cl_srq *q, uint32_t p)
{
	const uint8_t *slot =
		q->slots + (size_t)(p & (q->depth - 1)) * q->stride;

	return ((const struct ovr_ring_rwqe *)slot)->tag;
}

/*
 * The service is gone: the receives still posted on @qp's SRQ complete
 * with WR_FLUSH_ERR on @qp's receive CQ, at most @n into @wc (the first
 * QP of the SRQ whose CQ is polled takes them; each once), in the order
 * they were posted: a posted receive is a tag not on the free stack, its
 * WQE the newest of the ring's last depth slots that names it (a tag
 * completed and posted again appears twice). One the ring no longer
 * holds (taken by a QP long ago while newer ones came and went) comes
 * last.
 */
static int flush_dead_srq(struct ovr_cl_qp *qp, int n, struct ovr_cl_wc *wc)
{
	const uint32_t done = UINT32_MAX;
	struct ovr_cl_srq *q = qp->srq;
	uint32_t *at = q->flush_at, first;
	int k = 0;

	pthread_spin_lock(&q->lock);
	if (!q->outstanding) {
		pthread_spin_unlock(&q->lock);
		return 0;
	}
	memset(at, 0, q->depth * sizeof(*at));
	/* at[tag]: done (free), 1 + the posting that holds it, 0: unseen */
	for (uint32_t i = 0; i < q->nfree; i++)
		at[q->free_tag[i]] = done;
	first = q->prod > q->depth ? q->prod - q->depth : 0;
	for (uint32_t p = q->prod; p-- > first;) {
		uint32_t t = srq_tag(q, p);

		if (t < q->depth && !at[t])
			at[t] = p - first + 1;
	}
	for (uint32_t p = first, t; p != q->prod + q->depth && k < n; p++) {
		if (p - first < q->prod - first) {
			t = srq_tag(q, p);
			if (t >= q->depth || at[t] != p - first + 1)
				continue;
		} else {
			/* then the tags no slot named */
			t = p - q->prod;
			if (at[t])
				continue;
		}
		at[t] = done;
		wc[k++] = flushed(qp, q->wrid[t], OVR_WC_RECV);
		q->outstanding--;
		q->free_tag[q->nfree++] = t;
	}
	pthread_spin_unlock(&q->lock);
	return k;
}

/* The service is gone: every outstanding WR of @cq's QPs (and of their
 * SRQs) completes with WR_FLUSH_ERR, once. */
static int flush_dead(struct ovr_cl_cq *cq, int n, struct ovr_cl_wc *wc)
{
	struct ovr_cl *cl = cq->cl;
	int k = 0;

	for (unsigned int b = 0; b < QP_BUCKETS && k < n; b++)
		for (struct ovr_cl_qp *qp = cl->qps[b]; qp && k < n;
		     qp = qp->hnext) {
			while (qp->scq == cq && qp->sq_done != qp->sq_prod &&
			       k < n) {
				uint32_t i = qp->sq_done++ & (qp->sq_depth - 1);

				wc[k++] = flushed(qp, qp->sq_wrid[i], 0);
			}
			while (qp->rcq == cq && qp->rq_done != qp->rq_prod &&
			       k < n) {
				uint32_t i = qp->rq_done++ & (qp->rq_depth - 1);

				wc[k++] = flushed(qp, qp->rq_wrid[i],
						  OVR_WC_RECV);
			}
			if (qp->rcq == cq && qp->srq && k < n)
				k += flush_dead_srq(qp, n - k, wc + k);
		}
	return k;
}

int ovr_cl_poll_cq(struct ovr_cl_cq *cq, int n, struct ovr_cl_wc *wc)
{
	bool skipped = false;
	int k = 0;

	pthread_spin_lock(&cq->lock);
	while (k < n) {
		struct ovr_ring_cqe *e = &cq->cqe[cq->cons & (cq->depth - 1)];
		uint32_t gen =
			atomic_load_explicit(&e->gen, memory_order_acquire);
		struct ovr_cl_qp *qp;
		struct ovr_cl_wc *w = &wc[k];

		if (gen != cq->cons / cq->depth + 1)
			break;
		qp = qp_lookup(cq->cl, e->qp_num);
		if (!qp) {
			/* of a QP destroyed since: discarded, as mlx5's
			 * destroy_qp cleans the QP's entries out of its
			 * CQs (libfabric's verbs provider polls its CQ
			 * after ibv_destroy_qp and takes every wr_id it
			 * gets for its own) */
			cq->cons++;
			skipped = true;
			continue;
		}
		*w = (struct ovr_cl_wc){
			.status = e->status,
			.opcode = e->opcode,
			.byte_len = e->byte_len,
			.imm_data = e->imm_data,
			.qp_num = e->qp_num,
			.src_qp = e->src_qp,
			.wc_flags = e->wc_flags,
			.vendor_err = e->vendor_err,
			.ts_us = e->ts_us,
		};
		if (qp) {
			w->qp_user = qp->user_handle;
			if ((e->flags & OVR_CQE_SRQ) && qp->srq) {
				struct ovr_cl_srq *q = qp->srq;
				uint32_t tag = e->wqe_idx & (q->depth - 1);

				pthread_spin_lock(&q->lock);
				w->wr_id = q->wrid[tag];
				if (q->outstanding) {
					q->outstanding--;
					q->free_tag[q->nfree++] = tag;
				}
				pthread_spin_unlock(&q->lock);
			} else if (e->flags & OVR_CQE_RECV) {
				w->wr_id = qp->rq_wrid[e->wqe_idx &
						       (qp->rq_depth - 1)];
				qp->rq_done = e->wqe_idx + 1;
			} else {
				w->wr_id = qp->sq_wrid[e->wqe_idx &
						       (qp->sq_depth - 1)];
				/* RC completes in order: everything up to
				 * this one is retired */
				qp->sq_done = e->wqe_idx + 1;
			}
		}
		cq->cons++;
		k++;
	}
	if (k || skipped) {
		atomic_store_explicit(&cq->ring->cons, cq->cons,
				      memory_order_release);
		cq->idle_polls = 0;
	} else if (++cq->idle_polls >= 4096) {
		cq->idle_polls = 0;
		if (!ovr_cl_alive(cq->cl))
			k = flush_dead(cq, n, wc);
	} else if (atomic_load_explicit(&cq->cl->dead, memory_order_relaxed)) {
		k = flush_dead(cq, n, wc);
	}
	pthread_spin_unlock(&cq->lock);
	return k;
}

int ovr_cl_req_notify_cq(struct ovr_cl_cq *cq, bool solicited_only)
{
	if (atomic_load(&cq->cl->dead))
		return -EIO;
	/* the ring may be replaced by ovr_cl_resize_cq() */
	pthread_spin_lock(&cq->lock);
	cq->arm_sn++;
	atomic_store_explicit(&cq->ring->arm,
			      (cq->arm_sn << 1) | (solicited_only ? 1u : 0u),
			      memory_order_release);
	pthread_spin_unlock(&cq->lock);
	/* the caller polls next: a CQE the service wrote before it saw
	 * this arm must be visible to that poll (see cq_write()) */
	atomic_thread_fence(memory_order_seq_cst);
	return 0;
}

/* ---- QPs ----------------------------------------------------------------- */

struct ovr_cl_qp *ovr_cl_create_qp(struct ovr_cl *cl, uint32_t pd,
				   struct ovr_cl_cq *send_cq,
				   struct ovr_cl_cq *recv_cq,
				   const struct ovr_ctl_qp_cap *cap,
				   bool sq_sig_all, uint64_t user_handle)
{
	return ovr_cl_create_qp_ex(cl, pd, send_cq, recv_cq, NULL, OVR_QPT_RC,
				   cap, sq_sig_all, user_handle);
}

struct ovr_cl_qp *ovr_cl_create_qp_ex(struct ovr_cl *cl, uint32_t pd,
				      struct ovr_cl_cq *send_cq,
				      struct ovr_cl_cq *recv_cq,
				      struct ovr_cl_srq *srq, uint32_t qp_type,
				      const struct ovr_ctl_qp_cap *cap,
				      bool sq_sig_all, uint64_t user_handle)
{
	struct ovr_ctl_create_qp_req q = {
		.pd = pd,
		.send_cq = send_cq->handle,
		.recv_cq = recv_cq->handle,
		.srq = srq ? srq->handle : 0,
		.qp_type = qp_type,
		.sq_sig_all = sq_sig_all,
		.cap = *cap,
		.user_handle = user_handle,
	};
	struct ovr_ctl_create_qp_rep r;
	struct ovr_cl_qp *qp;
	int fd, rc;
	void *p;

	rc = req_exact(cl, OVR_CTL_CREATE_QP, &q, sizeof(q), NULL, 0, &r,
		       sizeof(r), &fd, 1);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	p = map_fd(fd, r.map_len, PROT_READ | PROT_WRITE);
	qp = calloc(1, sizeof(*qp));
	if (qp) {
		qp->sq_wrid = calloc(r.sq_depth, sizeof(uint64_t));
		qp->rq_wrid =
			calloc(r.rq_depth ? r.rq_depth : 1, sizeof(uint64_t));
	}
	if (p == MAP_FAILED || !qp || !qp->sq_wrid || !qp->rq_wrid ||
	    r.rq_off + (uint64_t)r.rq_depth * r.rq_stride > r.map_len ||
	    r.sq_off + (uint64_t)r.sq_depth * r.sq_stride > r.map_len ||
	    r.db_index >= OVR_RING_MAX_QP_PER_CTX) {
		if (p != MAP_FAILED)
			munmap(p, r.map_len);
		if (qp) {
			free(qp->sq_wrid);
			free(qp->rq_wrid);
		}
		free(qp);
		handle_op(cl, OVR_CTL_DESTROY_QP, r.qp);
		errno = ENOMEM;
		return NULL;
	}
	qp->cl = cl;
	qp->handle = r.qp;
	qp->qpn = r.qpn;
	qp->type = qp_type;
	qp->srq = srq;
	qp->db_index = r.db_index;
	qp->wake_fd = wake_for(cl, r.wake_mask, &qp->wake_mask);
	qp->cap = r.cap;
	qp->scq = send_cq;
	qp->rcq = recv_cq;
	qp->user_handle = user_handle;
	qp->ring = p;
	qp->sq = (uint8_t *)p + r.sq_off;
	qp->rq = (uint8_t *)p + r.rq_off;
	qp->map_len = r.map_len;
	qp->sq_depth = r.sq_depth;
	qp->rq_depth = r.rq_depth;
	qp->sq_stride = r.sq_stride;
	qp->rq_stride = r.rq_stride;
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_lock(&cl->lock);
	qp->hnext = cl->qps[qp->qpn % QP_BUCKETS];
	cl->qps[qp->qpn % QP_BUCKETS] = qp;
	pthread_mutex_unlock(&cl->lock);
	return qp;
}

uint32_t ovr_cl_qp_num(const struct ovr_cl_qp *qp)
{
	return qp->qpn;
}

void ovr_cl_qp_cap(const struct ovr_cl_qp *qp, struct ovr_ctl_qp_cap *cap)
{
	*cap = qp->cap;
}

/*
 * A QP went to RESET: the completions of @qpn that @cq holds and the
 * application has not polled go, as libmlx5 (mlx5_cq_clean) and libmlx4
 * remove them - RESET forgets the QP's work, and a completion of it
 * polled later would name a WR of the QP's previous life (rdma-core's
 * test_mr_rereg_addr polls the CQ again after restarting its QPs). The
 * rest keep their order: from the newest valid entry down to cons,
 * each kept one moves up by the number removed so far (its gen
 * rewritten for its new index), then cons moves past the gap. Only
 * entries the service has written and the client not consumed are
 * touched - the client's own - and the service only ever writes
 * beyond them. An SRQ receive's tag goes back to the SRQ as a poll
 * would give it. O(completions held).
 */
static void cq_clean(struct ovr_cl_cq *cq, uint32_t qpn, struct ovr_cl_srq *srq)
{
	uint32_t end, gone = 0;

	pthread_spin_lock(&cq->lock);
	for (end = cq->cons; end - cq->cons < cq->depth; end++) {
		const struct ovr_ring_cqe *e = &cq->cqe[end & (cq->depth - 1)];

		if (atomic_load_explicit(&e->gen, memory_order_acquire) !=
		    end / cq->depth + 1)
			break;
	}
	for (uint32_t i = end; i != cq->cons;) {
		struct ovr_ring_cqe *e = &cq->cqe[--i & (cq->depth - 1)];
		struct ovr_ring_cqe *to;
		uint32_t j = i + gone;

		if (e->qp_num == qpn) {
			if ((e->flags & OVR_CQE_SRQ) && srq) {
				uint32_t tag = e->wqe_idx & (srq->depth - 1);

				pthread_spin_lock(&srq->lock);
				if (srq->outstanding) {
					srq->outstanding--;
					srq->free_tag[srq->nfree++] = tag;
				}
				pthread_spin_unlock(&srq->lock);
			}
			gone++;
			continue;
		}
		if (!gone)
			continue;
		to = &cq->cqe[j & (cq->depth - 1)];
		memcpy(to, e, offsetof(struct ovr_ring_cqe, gen));
		atomic_store_explicit(&to->gen, j / cq->depth + 1,
				      memory_order_relaxed);
	}
	if (gone) {
		cq->cons += gone;
		atomic_store_explicit(&cq->ring->cons, cq->cons,
				      memory_order_release);
	}
	pthread_spin_unlock(&cq->lock);
}

int ovr_cl_modify_qp(struct ovr_cl *cl, struct ovr_cl_qp *qp,
		     const struct ovr_ctl_qp_attr *attr, unsigned int mask)
{
	struct ovr_ctl_modify_qp_req q = { .qp = qp->handle,
					   .mask = mask,
					   .attr = *attr };
	int rc = req_exact(cl, OVR_CTL_MODIFY_QP, &q, sizeof(q), NULL, 0, NULL,
			   0, NULL, 0);

	if (!rc && (mask & OVR_QP_STATE) && attr->qp_state == OVR_QPS_RESET) {
		/* RESET discards all work without completions, and those
		 * of its completions not polled yet */
		cq_clean(qp->rcq, qp->qpn, qp->srq);
		if (qp->scq != qp->rcq)
			cq_clean(qp->scq, qp->qpn, NULL);
		qp->sq_done = qp->sq_prod;
		qp->rq_done = qp->rq_prod;
	} else if (!rc && (mask & OVR_QP_STATE)) {
		atomic_store_explicit(&qp->left_reset, true,
				      memory_order_relaxed);
	}
	return rc;
}

int ovr_cl_connect_rc(struct ovr_cl *cl, struct ovr_cl_qp *qp,
		      const struct ovr_ctl_dev *dev, uint32_t dqpn,
		      uint32_t dvip, uint32_t access, const char **what)
{
	struct ovr_ctl_qp_attr a = { 0 };
	const char *step = "modify INIT";
	int rc;

	a.qp_state = OVR_QPS_INIT;
	a.qp_access_flags = access;
	a.port_num = 1;
	rc = ovr_cl_modify_qp(cl, qp, &a,
			      OVR_QP_STATE | OVR_QP_PKEY_INDEX | OVR_QP_PORT |
				      OVR_QP_ACCESS_FLAGS);
	if (!rc) {
		step = "modify RTR";
		a = (struct ovr_ctl_qp_attr){ 0 };
		a.qp_state = OVR_QPS_RTR;
		a.path_mtu = dev->active_mtu;
		a.dest_qp_num = dqpn;
		a.rq_psn = 0;
		a.max_dest_rd_atomic = 16;
		a.min_rnr_timer = 12;
		a.hop_limit = 64;
		a.is_global = 1;
		a.dgid[10] = a.dgid[11] = 0xff; /* ::ffff:<peer vIP> */
		a.dgid[12] = (uint8_t)(dvip >> 24);
		a.dgid[13] = (uint8_t)(dvip >> 16);
		a.dgid[14] = (uint8_t)(dvip >> 8);
		a.dgid[15] = (uint8_t)dvip;
		rc = ovr_cl_modify_qp(cl, qp, &a,
				      OVR_QP_STATE | OVR_QP_AV |
					      OVR_QP_PATH_MTU |
					      OVR_QP_DEST_QPN | OVR_QP_RQ_PSN |
					      OVR_QP_MAX_DEST_RD_ATOMIC |
					      OVR_QP_MIN_RNR_TIMER);
	}
	if (!rc) {
		step = "modify RTS";
		a = (struct ovr_ctl_qp_attr){ 0 };
		a.qp_state = OVR_QPS_RTS;
		a.sq_psn = 0;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 16;
		rc = ovr_cl_modify_qp(
			cl, qp, &a,
			OVR_QP_STATE | OVR_QP_SQ_PSN | OVR_QP_TIMEOUT |
				OVR_QP_RETRY_CNT | OVR_QP_RNR_RETRY |
				OVR_QP_MAX_QP_RD_ATOMIC);
	}
	if (rc && what)
		*what = step;
	return rc;
}

int ovr_cl_query_qp(struct ovr_cl *cl, struct ovr_cl_qp *qp,
		    struct ovr_ctl_qp_attr *attr)
{
	struct ovr_ctl_handle_req q = { .handle = qp->handle };
	struct ovr_ctl_query_qp_rep r;
	int rc = req_exact(cl, OVR_CTL_QUERY_QP, &q, sizeof(q), NULL, 0, &r,
			   sizeof(r), NULL, 0);

	if (!rc)
		*attr = r.attr;
	return rc;
}

int ovr_cl_qp_stats(struct ovr_cl *cl, struct ovr_cl_qp *qp,
		    struct ovr_ctl_qp_stats_rep *st)
{
	struct ovr_ctl_handle_req q = { .handle = qp->handle };

	return req_exact(cl, OVR_CTL_QP_STATS, &q, sizeof(q), NULL, 0, st,
			 sizeof(*st), NULL, 0);
}

/* Forgets @qp on this side only. */
static void qp_free(struct ovr_cl *cl, struct ovr_cl_qp *qp)
{
	pthread_mutex_lock(&cl->lock);
	for (struct ovr_cl_qp **p = &cl->qps[qp->qpn % QP_BUCKETS]; *p;
	     p = &(*p)->hnext)
		if (*p == qp) {
			*p = qp->hnext;
			break;
		}
	pthread_mutex_unlock(&cl->lock);
	munmap(qp->ring, qp->map_len);
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	free(qp->sq_wrid);
	free(qp->rq_wrid);
	free(qp);
}

int ovr_cl_destroy_qp(struct ovr_cl *cl, struct ovr_cl_qp *qp, uint32_t *events)
{
	int rc = handle_op(cl, OVR_CTL_DESTROY_QP, qp->handle);

	if (rc && !atomic_load(&cl->dead))
		return rc;
	if (events)
		*events = atomic_load_explicit(&qp->ring->events,
					       memory_order_acquire);
	qp_free(cl, qp);
	return 0;
}

/* ---- posting ------------------------------------------------------------- */

/* The wake fd and sleeping bits of an object whose create reply said
 * @mask (its core's bit; 0: OPEN's, the first wake fd). */
static int wake_for(const struct ovr_cl *cl, uint32_t mask, uint32_t *out)
{
	uint32_t k = mask ? (uint32_t)__builtin_ctz(mask) : 0;

	*out = mask ? mask : cl->wake_mask;
	return cl->wake_fds[k < cl->nwake ? k : 0];
}

static void ring_doorbell(struct ovr_cl *cl, uint32_t idx, uint32_t wake_mask,
			  int wake_fd)
{
	struct ovr_ring_db *db = cl->db;
	uint64_t one = 1;

	atomic_fetch_or_explicit(&db->bits[idx / 64], 1ull << (idx % 64),
				 memory_order_release);
	atomic_fetch_or_explicit(&db->summary, 1ull << (idx / 64),
				 memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	if ((atomic_load_explicit(&cl->svc->sleeping, memory_order_relaxed) &
	     wake_mask) &&
	    write(wake_fd, &one, sizeof(one)) != sizeof(one)) {
		/* the counter is full: the service is awake anyway */
	}
}

static bool state_allows_send(uint32_t st)
{
	return st == OVR_QPS_RTS || st == OVR_QPS_SQD || st == OVR_QPS_SQE ||
	       st == OVR_QPS_ERR;
}

/*
 * Send batches (client.h): ovr_cl_send_start() takes the QP's send side
 * and ovr_cl_send_add() writes WQEs at sq_stage, past sq_prod, where the
 * service does not look (it reads slots below the ring's sq_prod only);
 * ovr_cl_send_complete() publishes them with one store-release of
 * sq_prod and one doorbell, ovr_cl_send_abort() forgets them (their
 * slots are written again by the next WRs). ovr_cl_post_send() is a
 * batch of one: every send WQE is written by swqe_write() below.
 *
 * Room: a WR is added while fewer than max_send_wr are posted and not
 * completed, counting the batch's (sq_stage - sq_done); sq_done only
 * grows (ovr_cl_poll_cq, without this lock), so a stale value only
 * refuses early. The slot at sq_stage is then not one the service may
 * still read: those are in [sq_done, sq_prod).
 */
void ovr_cl_send_start(struct ovr_cl_qp *qp)
{
	pthread_spin_lock(&qp->sq_lock);
	qp->sq_stage = qp->sq_prod;
}

/* One send WQE into slot @idx; the checks are ovr_cl_post_send()'s.
 * Must hold qp->sq_lock. */
static int swqe_write(struct ovr_cl_qp *qp, uint32_t idx,
		      const struct ovr_cl_send_wr *wr)
{
	struct ovr_ring_swqe *w;
	uint8_t *slot;
	uint32_t total = 0;
	bool inl = wr->send_flags & OVR_SEND_INLINE;

	if (atomic_load_explicit(&qp->cl->dead, memory_order_relaxed))
		return EIO;
	if (qp->type == OVR_QPT_UD &&
	    ((wr->opcode != OVR_WR_SEND && wr->opcode != OVR_WR_SEND_WITH_IMM) ||
	     !wr->ud_peer || wr->ud_peer > UINT32_MAX))
		return EINVAL;
	/* UC carries SENDs and WRITEs only; READ and atomics are refused
	 * at posting, as rxe's post_send does */
	if (qp->type == OVR_QPT_UC &&
	    (wr->opcode >= 32 || !(OVR_UC_WR_OPCODES >> wr->opcode & 1)))
		return EINVAL;
	if (!state_allows_send(atomic_load_explicit(&qp->ring->state,
						    memory_order_acquire)))
		return EINVAL;
	if (wr->num_sge > qp->cap.max_send_sge && !inl)
		return EINVAL;
	for (uint32_t i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (inl && total > qp->cap.max_inline_data)
		return EINVAL;
	if (idx - qp->sq_done >= qp->cap.max_send_wr)
		return ENOMEM;
	slot = qp->sq + (size_t)(idx & (qp->sq_depth - 1)) * qp->sq_stride;
	w = (struct ovr_ring_swqe *)slot;
	*w = (struct ovr_ring_swqe){
		.remote_addr = wr->remote_addr,
		.compare_add = wr->compare_add,
		.swap = wr->swap,
		.opcode = wr->opcode,
		.send_flags = wr->send_flags,
		.num_sge = inl ? 0 : wr->num_sge,
		.inline_len = inl ? total : 0,
		.imm_data = wr->imm_data,
		.rkey = wr->rkey,
		.invalidate_rkey = wr->invalidate_rkey,
	};
	if (qp->type == OVR_QPT_UD) {
		w->ah = (uint32_t)wr->ud_peer;
		w->remote_qpn = wr->remote_qpn;
		w->remote_qkey = wr->remote_qkey;
	}
	if (wr->opcode == OVR_WR_BIND_MW) {
		/* ring.h: the bind in the header's own fields */
		w->invalidate_rkey = wr->bind_mw.mw_rkey;
		w->rkey = wr->bind_mw.rkey;
		w->remote_addr = wr->bind_mw.addr;
		w->compare_add = wr->bind_mw.length;
		w->swap = (uint64_t)wr->bind_mw.access << 32 |
			  wr->bind_mw.mr_lkey;
	}
	if (inl) {
		uint8_t *d = slot + sizeof(*w);

		for (uint32_t i = 0; i < wr->num_sge; i++) {
			memcpy(d, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			d += wr->sg_list[i].length;
		}
	} else if (wr->num_sge) {
		memcpy(slot + sizeof(*w), wr->sg_list,
		       wr->num_sge * sizeof(struct ovr_ring_sge));
	}
	qp->sq_wrid[idx & (qp->sq_depth - 1)] = wr->wr_id;
	return 0;
}

int ovr_cl_send_add(struct ovr_cl_qp *qp, const struct ovr_cl_send_wr *wr)
{
	int rc = swqe_write(qp, qp->sq_stage, wr);

	if (!rc)
		qp->sq_stage++;
	return rc;
}

void ovr_cl_send_complete(struct ovr_cl_qp *qp)
{
	bool any = qp->sq_stage != qp->sq_prod;

	if (any) {
		qp->sq_prod = qp->sq_stage;
		/* the WQEs and their wr_ids before the index */
		atomic_store_explicit(&qp->ring->sq_prod, qp->sq_prod,
				      memory_order_release);
	}
	pthread_spin_unlock(&qp->sq_lock);
	if (any)
		ring_doorbell(qp->cl, qp->db_index, qp->wake_mask, qp->wake_fd);
}

void ovr_cl_send_abort(struct ovr_cl_qp *qp)
{
	pthread_spin_unlock(&qp->sq_lock);
}

int ovr_cl_post_send(struct ovr_cl_qp *qp, const struct ovr_cl_send_wr *wr)
{
	int rc;

	ovr_cl_send_start(qp);
	rc = ovr_cl_send_add(qp, wr);
	if (rc) {
		ovr_cl_send_abort(qp);
		return rc;
	}
	ovr_cl_send_complete(qp);
	return 0;
}

/* Any state, RESET included while the QP has never left it: ovrdmad
 * keeps what is posted in RESET in the ring until the QP leaves RESET
 * (docs/PROVIDER.md, "Receives posted in RESET"); a QP modified back to
 * RESET refuses receives (EINVAL), as rdma-core's test_qpex expects. */
int ovr_cl_post_recv(struct ovr_cl_qp *qp, const struct ovr_cl_recv_wr *wr)
{
	struct ovr_ring_rwqe *w;
	uint8_t *slot;

	if (atomic_load_explicit(&qp->cl->dead, memory_order_relaxed))
		return EIO;
	if (qp->srq)
		return EINVAL;
	if (atomic_load_explicit(&qp->left_reset, memory_order_relaxed) &&
	    atomic_load_explicit(&qp->ring->state, memory_order_acquire) ==
		    OVR_QPS_RESET)
		return EINVAL;
	if (wr->num_sge > qp->cap.max_recv_sge)
		return EINVAL;
	pthread_spin_lock(&qp->rq_lock);
	if (qp->rq_prod - qp->rq_done >= qp->cap.max_recv_wr) {
		pthread_spin_unlock(&qp->rq_lock);
		return ENOMEM;
	}
	slot = qp->rq +
	       (size_t)(qp->rq_prod & (qp->rq_depth - 1)) * qp->rq_stride;
	w = (struct ovr_ring_rwqe *)slot;
	*w = (struct ovr_ring_rwqe){ .num_sge = wr->num_sge };
	if (wr->num_sge)
		memcpy(slot + sizeof(*w), wr->sg_list,
		       wr->num_sge * sizeof(struct ovr_ring_sge));
	qp->rq_wrid[qp->rq_prod & (qp->rq_depth - 1)] = wr->wr_id;
	qp->rq_prod++;
	atomic_store_explicit(&qp->ring->rq_prod, qp->rq_prod,
			      memory_order_release);
	pthread_spin_unlock(&qp->rq_lock);
	ring_doorbell(qp->cl, qp->db_index, qp->wake_mask, qp->wake_fd);
	return 0;
}

/* ---- shared receive queues ------------------------------------------------ */

struct ovr_cl_srq *ovr_cl_create_srq(struct ovr_cl *cl, uint32_t pd,
				     const struct ovr_ctl_srq_attr *attr,
				     uint64_t user_handle)
{
	struct ovr_ctl_create_srq_req q = { .pd = pd,
					    .attr = *attr,
					    .user_handle = user_handle };
	struct ovr_ctl_create_srq_rep r;
	struct ovr_cl_srq *srq;
	int fd, rc;
	void *p;

	q.attr.srq_limit = 0;
	rc = req_exact(cl, OVR_CTL_CREATE_SRQ, &q, sizeof(q), NULL, 0, &r,
		       sizeof(r), &fd, 1);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	p = map_fd(fd, r.map_len, PROT_READ | PROT_WRITE);
	srq = calloc(1, sizeof(*srq));
	if (srq && r.depth && !(r.depth & (r.depth - 1))) {
		srq->wrid = calloc(r.depth, sizeof(uint64_t));
		srq->free_tag = calloc(r.depth, sizeof(uint32_t));
		srq->flush_at = calloc(r.depth, sizeof(uint32_t));
	}
	if (p == MAP_FAILED || !srq || !srq->wrid || !srq->free_tag ||
	    !srq->flush_at || r.attr.max_wr > r.depth ||
	    r.stride < sizeof(struct ovr_ring_rwqe) +
			       r.attr.max_sge * sizeof(struct ovr_ring_sge) ||
	    r.slots_off < sizeof(struct ovr_ring_srq) ||
	    r.slots_off + (uint64_t)r.depth * r.stride > r.map_len ||
	    r.db_index >= OVR_RING_MAX_QP_PER_CTX) {
		if (p != MAP_FAILED)
			munmap(p, r.map_len);
		if (srq) {
			free(srq->wrid);
			free(srq->free_tag);
			free(srq->flush_at);
		}
		free(srq);
		handle_op(cl, OVR_CTL_DESTROY_SRQ, r.srq);
		errno = ENOMEM;
		return NULL;
	}
	srq->cl = cl;
	srq->handle = r.srq;
	srq->srqn = r.srqn;
	srq->db_index = r.db_index;
	srq->wake_fd = wake_for(cl, r.wake_mask, &srq->wake_mask);
	srq->attr = r.attr;
	srq->ring = p;
	srq->slots = (uint8_t *)p + r.slots_off;
	srq->map_len = r.map_len;
	srq->depth = r.depth;
	srq->stride = r.stride;
	for (uint32_t i = 0; i < r.depth; i++)
		srq->free_tag[i] = r.depth - 1 - i;
	srq->nfree = r.depth;
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	return srq;
}

void ovr_cl_srq_attr(const struct ovr_cl_srq *srq,
		     struct ovr_ctl_srq_attr *attr)
{
	*attr = srq->attr;
}

uint32_t ovr_cl_srq_num(const struct ovr_cl_srq *srq)
{
	return srq->srqn;
}

int ovr_cl_modify_srq(struct ovr_cl *cl, struct ovr_cl_srq *srq,
		      const struct ovr_ctl_srq_attr *attr, unsigned int mask)
{
	struct ovr_ctl_modify_srq_req q = { .srq = srq->handle,
					    .mask = mask,
					    .attr = *attr };
	int rc;

	if ((mask & OVR_SRQ_MAX_WR) && attr->max_wr > srq->depth)
		return -EINVAL;
	rc = req_exact(cl, OVR_CTL_MODIFY_SRQ, &q, sizeof(q), NULL, 0, NULL, 0,
		       NULL, 0);
	if (!rc && (mask & OVR_SRQ_MAX_WR)) {
		struct ovr_ctl_srq_attr a;

		/* the engine rounds up; allow what it granted */
		if (!ovr_cl_query_srq(cl, srq, &a) && a.max_wr <= srq->depth) {
			pthread_spin_lock(&srq->lock);
			srq->attr.max_wr = a.max_wr;
			pthread_spin_unlock(&srq->lock);
		}
	}
	return rc;
}

int ovr_cl_query_srq(struct ovr_cl *cl, struct ovr_cl_srq *srq,
		     struct ovr_ctl_srq_attr *attr)
{
	struct ovr_ctl_handle_req q = { .handle = srq->handle };
	struct ovr_ctl_query_srq_rep r;
	int rc = req_exact(cl, OVR_CTL_QUERY_SRQ, &q, sizeof(q), NULL, 0, &r,
			   sizeof(r), NULL, 0);

	if (!rc)
		*attr = r.attr;
	return rc;
}

int ovr_cl_destroy_srq(struct ovr_cl *cl, struct ovr_cl_srq *srq,
		       uint32_t *events)
{
	int rc = handle_op(cl, OVR_CTL_DESTROY_SRQ, srq->handle);

	if (rc && !atomic_load(&cl->dead))
		return rc;
	if (events)
		*events = atomic_load_explicit(&srq->ring->events,
					       memory_order_acquire);
	munmap(srq->ring, srq->map_len);
	pthread_spin_destroy(&srq->lock);
	free(srq->wrid);
	free(srq->free_tag);
	free(srq->flush_at);
	free(srq);
	return 0;
}

int ovr_cl_post_srq_recv(struct ovr_cl_srq *srq,
			 const struct ovr_cl_recv_wr *wr)
{
	struct ovr_ring_rwqe *w;
	uint8_t *slot;
	uint32_t tag;

	if (atomic_load_explicit(&srq->cl->dead, memory_order_relaxed))
		return EIO;
	if (wr->num_sge > srq->attr.max_sge)
		return EINVAL;
	pthread_spin_lock(&srq->lock);
	if (srq->outstanding >= srq->attr.max_wr || !srq->nfree) {
		pthread_spin_unlock(&srq->lock);
		return ENOMEM;
	}
	tag = srq->free_tag[--srq->nfree];
	srq->outstanding++;
	srq->wrid[tag] = wr->wr_id;
	slot = srq->slots +
	       (size_t)(srq->prod & (srq->depth - 1)) * srq->stride;
	w = (struct ovr_ring_rwqe *)slot;
	*w = (struct ovr_ring_rwqe){ .num_sge = wr->num_sge, .tag = tag };
	if (wr->num_sge)
		memcpy(slot + sizeof(*w), wr->sg_list,
		       wr->num_sge * sizeof(struct ovr_ring_sge));
	srq->prod++;
	atomic_store_explicit(&srq->ring->prod, srq->prod,
			      memory_order_release);
	pthread_spin_unlock(&srq->lock);
	ring_doorbell(srq->cl, srq->db_index, srq->wake_mask, srq->wake_fd);
	return 0;
}

/* ---- address handles ------------------------------------------------------ */

int ovr_cl_create_ah(struct ovr_cl *cl,
		     const struct ovr_ctl_create_ah_req *attr, uint32_t *ah)
{
	struct ovr_ctl_create_ah_rep r;
	int rc = req_exact(cl, OVR_CTL_CREATE_AH, attr, sizeof(*attr), NULL, 0,
			   &r, sizeof(r), NULL, 0);

	if (!rc)
		*ah = r.ah;
	return rc;
}

int ovr_cl_mcast(struct ovr_cl *cl, const struct ovr_cl_qp *qp, bool attach,
		 const uint8_t gid[16], uint32_t flags)
{
	struct ovr_ctl_mcast_req q = { .qp = qp->handle, .flags = flags };

	memcpy(q.gid, gid, sizeof(q.gid));
	return req_exact(cl,
			 attach ? OVR_CTL_ATTACH_MCAST : OVR_CTL_DETACH_MCAST,
			 &q, sizeof(q), NULL, 0, NULL, 0, NULL, 0);
}

int ovr_cl_destroy_ah(struct ovr_cl *cl, uint32_t ah)
{
	int rc = handle_op(cl, OVR_CTL_DESTROY_AH, ah);

	return atomic_load(&cl->dead) ? 0 : rc;
}
