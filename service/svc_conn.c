// SPDX-License-Identifier: MIT
/*
 * ovrdmad's control socket (docs/SERVICE.md section 2): the listening
 * socket, a connection per application context, HELLO / LIST_DEVICES /
 * OPEN, the dispatch of every other request to the room that owns it
 * (svc_verbs.c, svc_qp.c, svc_admin.c), and a context's teardown. Runs
 * on the control thread with the dataplane parked (svc_loop.c, stopping
 * the world), so requests may call the engine directly.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "svc.h"

#define MAX_FDS ((int)OVR_CTL_MR_MAX_SEG)

/* ---- the socket ---------------------------------------------------------- */

/*
 * A pidfd for the peer of @fd, whose pid SO_PEERCRED gave: -1 when none
 * can be had (then process-route copies learn of its exit themselves:
 * svc_procmem_rw's -ESRCH). The pid was the peer's when it connected;
 * the peer may have died and its pid been reused since. Still connected
 * after the pidfd was opened means it had not died then (its exit would
 * have closed the socket), so the pidfd is the peer's: from then on a
 * readable pidfd says it exited.
 */
static int peer_pidfd(int fd, pid_t pid)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };
	int pfd;

	if (pid <= 0)
		return -1;
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0)
		return -1;
	if (poll(&p, 1, 0) != 0 &&
	    (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL))) {
		close(pfd);
		return -1;
	}
	return pfd; /* close-on-exec, as pidfd_open makes it */
}

int svc_ctl_listen(struct svc *s)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN,
				  .data.u64 = SVC_EV_LISTEN };
	char dir[sizeof(a.sun_path)], *slash;
	mode_t old;
	int fd, rc;

	if (strlen(s->conf.socket) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", s->conf.socket);
	snprintf(dir, sizeof(dir), "%s", s->conf.socket);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		svc_mkdir_pub(dir); /* /run/ovrdma; exists is fine */
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* a stale socket from a crashed run: replace it, but never one that
	 * a live service still answers on */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
		fprintf(stderr, "ovrdmad: %s: another ovrdmad is running\n",
			s->conf.socket);
		close(fd);
		return -EADDRINUSE;
	}
	close(fd);
	unlink(s->conf.socket);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* born 0600: connect() checks the socket's mode only when a client
	 * connects, and one that got in before the chmod below would keep
	 * its context (ovrdmad's umask may be anything) */
	old = umask(0177);
	rc = bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64) ?
		     -errno :
		     0;
	umask(old);
	if (rc) {
		fprintf(stderr, "ovrdmad: %s: %s\n", s->conf.socket,
			strerror(-rc));
		close(fd);
		return rc;
	}
	if (s->conf.group[0]) {
		struct group *g = getgrnam(s->conf.group);

		if (!g || chown(s->conf.socket, 0, g->gr_gid) ||
		    chmod(s->conf.socket, 0660)) {
			fprintf(stderr, "ovrdmad: socket group '%s': %s\n",
				s->conf.group,
				g ? strerror(errno) : "no such group");
			close(fd);
			return -EINVAL;
		}
	} else {
		chmod(s->conf.socket, 0600);
	}
	s->listen_fd = fd;
	return epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

void svc_ctl_accept(struct svc *s)
{
	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ucred cr;
		socklen_t crl = sizeof(cr);
		struct svc_ctx *c;
		struct epoll_event ev = { .events = EPOLLIN };

		if (fd < 0)
			return;
		if (s->nctx >= s->conf.max_contexts ||
		    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) ||
		    !(c = calloc(1, sizeof(*c)))) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->id = s->next_ctx_id++;
		c->pid = cr.pid;
		c->pidfd = peer_pidfd(fd, cr.pid);
		c->uid = cr.uid;
		c->gid = cr.gid;
		c->memfd = -1;
		c->dev = -1;
		c->async_fd = -1;
		c->cm_ev_fd = -1;
		memset(c->db_owner, SVC_DB_NONE, sizeof(c->db_owner));
		c->core = svc_core_pick(s);
		ev.data.u64 = (uint64_t)(uintptr_t)c;
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			if (c->pidfd >= 0)
				close(c->pidfd);
			close(fd);
			svc_core_unpick(c);
			free(c);
			continue;
		}
		/* the peer's exit wakes the loop: no check per copy */
		ev.data.u64 = (uint64_t)(uintptr_t)c | SVC_EV_PIDFD;
		if (c->pidfd >= 0 &&
		    epoll_ctl(s->epfd, EPOLL_CTL_ADD, c->pidfd, &ev)) {
			close(c->pidfd);
			c->pidfd = -1; /* no early notice of its exit */
		}
		c->next = s->ctxs;
		s->ctxs = c;
		s->nctx++;
		s->cnt.ctx_opened++;
	}
}

/* ---- teardown ------------------------------------------------------------ */

/*
 * The pidfd of @c is readable: its process has exited (the socket may
 * outlive it, held by a child). From now on process-route copies fail
 * -ESRCH without a syscall; the pidfd leaves the epoll set, or its
 * level-triggered readiness would keep the loop from sleeping. The
 * context itself goes when its socket hangs up.
 */
void svc_ctx_exited(struct svc *s, struct svc_ctx *c)
{
	if (c->dead || c->pidfd < 0)
		return;
	c->dead = true;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->pidfd, NULL);
}

/* Destroys object @i (a @type) of a context that is going away. */
static void ctx_obj_destroy(struct svc *s, struct svc_ctx *c, uint32_t i,
			    uint8_t type)
{
	switch (type) {
	case SVC_OBJ_QP:
		svc_qp_destroy(s, c, i + 1);
		break;
	case SVC_OBJ_SRQ:
		if (svc_srq_destroy(s, c, i + 1))
			fprintf(stderr, "ovrdmad: context %u: SRQ still busy\n",
				c->id);
		break;
	case SVC_OBJ_AH:
		svc_ah_destroy(c, i + 1);
		break;
	case SVC_OBJ_CQ:
		svc_cq_destroy(s, c, i + 1);
		break;
	case SVC_OBJ_MW:
		svc_mw_destroy(s, c, i + 1);
		break;
	case SVC_OBJ_MR:
		if (svc_mr_destroy(s, c, i + 1))
			fprintf(stderr, "ovrdmad: context %u: MR still busy\n",
				c->id);
		break;
	case SVC_OBJ_CHANNEL:
		svc_channel_destroy(c, i + 1);
		break;
	default:
		free(c->obj[i].p);
		svc_obj_free(c, i + 1);
		break;
	}
}

static void ctx_destroy(struct svc *s, struct svc_ctx *c)
{
	struct svc_ctx **pp;

	/* QPs first (they name SRQs, CQs, PDs), then SRQs, AHs, CQs, MWs
	 * (bound ones hold MRs), MRs, the rest */
	static const uint8_t order[] = { SVC_OBJ_QP,	  SVC_OBJ_SRQ,
					 SVC_OBJ_AH,	  SVC_OBJ_CQ,
					 SVC_OBJ_MW,	  SVC_OBJ_MR,
					 SVC_OBJ_CHANNEL, SVC_OBJ_PD };

	s->stw_wake = true; /* its QPs, and their cores */
	svc_proc_forget(s, c); /* (none queued between rounds) */
	if (c->cm_ev_fd >= 0) {
		svc_cm_ctx_gone(s, c);
		close(c->cm_ev_fd);
	}
	for (size_t k = 0; k < sizeof(order); k++)
		for (uint32_t i = 0; i < c->nobj; i++)
			if (c->obj[i].type == order[k])
				ctx_obj_destroy(s, c, i, order[k]);
	for (pp = &s->ctxs; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	if (c->dev >= 0 && s->devs[c->dev].contexts)
		s->devs[c->dev].contexts--;
	if (c->db)
		munmap(c->db, svc_page_up(sizeof(*c->db)));
	if (c->async_fd >= 0)
		close(c->async_fd);
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->memfd >= 0)
		close(c->memfd);
	close(c->fd);
	free(c->obj);
	for (uint32_t k = 0; k < SVC_MAX_CORES; k++) {
		free(c->pr[k].ra);
		for (uint32_t i = 0; i < SVC_PF_SPANS; i++)
			free(c->pr[k].pf[i].buf);
	}
	svc_core_unpick(c);
	free(c);
	s->nctx--;
	s->cnt.ctx_closed++;
}

void svc_ctl_close_all(struct svc *s)
{
	while (s->ctxs)
		ctx_destroy(s, s->ctxs);
}

/* ---- a context's first requests ------------------------------------------ */

static int do_hello(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_hello_req *q =
		SVC_BODY(c, r, struct ovr_ctl_hello_req);
	struct ovr_ctl_hello_rep rep = { .ring_abi = OVR_RING_ABI_VERSION };
	char path[64];
	int ro, rc;

	if (q->ring_abi != OVR_RING_ABI_VERSION)
		return svc_status(c, r->h, -EPROTO);
	memcpy(c->client, q->client, sizeof(c->client));
	c->client[sizeof(c->client) - 1] = 0;
	for (int i = 0; i < SVC_MAX_DEVS; i++)
		rep.ndevices += s->devs[i].used;
	rep.incarnation = s->page->incarnation;
	/* read-only: a client cannot write the service page */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", s->svc_fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	if (ro < 0)
		return svc_status(c, r->h, -errno);
	c->hello = true;
	rc = svc_reply(c, r->h, 0, &rep, sizeof(rep), &ro, 1);
	close(ro);
	return rc;
}

static int do_list(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	char buf[sizeof(struct ovr_ctl_list_rep) +
		 SVC_MAX_DEVS * sizeof(struct ovr_ctl_dev)];
	struct ovr_ctl_list_rep *rep = (void *)buf;
	struct ovr_ctl_dev *d = (void *)(rep + 1);

	memset(rep, 0, sizeof(*rep));
	for (int i = 0; i < SVC_MAX_DEVS; i++)
		if (s->devs[i].used)
			d[rep->n++] = s->devs[i].d;
	return svc_reply(c, r->h, 0, buf,
			 sizeof(*rep) + rep->n * sizeof(struct ovr_ctl_dev),
			 NULL, 0);
}

static int do_open(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_open_req *q =
		SVC_BODY(c, r, struct ovr_ctl_open_req);
	struct ovr_ctl_open_rep rep = { 0 };
	int dev = -1, dbfd, fds[1 + SVC_MAX_CORES], rc;

	if (c->dev >= 0 || c->cm_ev_fd >= 0)
		return svc_status(c, r->h, -EALREADY);
	for (int i = 0; i < SVC_MAX_DEVS; i++)
		if (s->devs[i].used &&
		    !strncmp(s->devs[i].d.name, q->name, OVR_CTL_NAME_LEN))
			dev = i;
	if (dev < 0)
		return svc_status(c, r->h, -ENODEV);
	c->db = svc_map_memfd("ovrdma-db", svc_page_up(sizeof(*c->db)), &dbfd);
	if (!c->db)
		return svc_status(c, r->h, -ENOMEM);
	if (r->nfds > 0) {
		c->async_fd = svc_take_fd(r, 0);
		fcntl(c->async_fd, F_SETFL,
		      fcntl(c->async_fd, F_GETFL) | O_NONBLOCK);
	}
	c->dev = dev;
	s->devs[dev].contexts++;
	rep.dev = s->devs[dev].d;
	/* the process route needs only the application's /proc/self/mem,
	 * which it passes with each REG_MR (one that may not open it, not
	 * dumpable, is told EPERM then) */
	rep.dev.caps = OVR_CTL_DEV_ODP | OVR_CTL_DEV_MW | OVR_CTL_DEV_CQ_TS |
		       OVR_CTL_DEV_MCAST;
	rep.ctx_id = c->id;
	rep.wake_mask = 1u << c->core->idx;
	fds[0] = dbfd;
	for (uint32_t i = 0; i < s->ncores; i++)
		fds[1 + i] = s->core[i].wake_fd;
	rc = svc_reply(c, r->h, 0, &rep, sizeof(rep), fds, 1 + (int)s->ncores);
	close(dbfd);
	return rc;
}

/* ---- dispatch ------------------------------------------------------------ */

static int dispatch(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	uint16_t op = r->h->op;

	if (r->h->version != OVR_CTL_VERSION)
		return svc_status(c, r->h, -EPROTO);
	/* the connection manager's requests touch no core's state (its
	 * timers: svc_stw_exit sees them); others may */
	if (op != OVR_CTL_CM && op != OVR_CTL_CM_OPEN)
		s->stw_wake = true;
	if (op >= OVR_CTL_ADM_TENANT_ADD)
		return svc_do_adm(s, c, r);
	if (op != OVR_CTL_HELLO && !c->hello)
		return svc_status(c, r->h, -EPROTO);
	/* an rdma_cm event channel: no device of its own */
	if (op == OVR_CTL_CM_OPEN)
		return c->dev >= 0 ? svc_status(c, r->h, -EALREADY) :
				     svc_do_cm_open(s, c, r);
	if (op == OVR_CTL_CM)
		return c->cm_ev_fd < 0 ? svc_status(c, r->h, -EBADF) :
					 svc_do_cm(s, c, r);
	if (op > OVR_CTL_OPEN && c->dev < 0)
		return svc_status(c, r->h, -EBADF);
	switch (op) {
	case OVR_CTL_HELLO:
		return do_hello(s, c, r);
	case OVR_CTL_LIST_DEVICES:
		return do_list(s, c, r);
	case OVR_CTL_OPEN:
		return do_open(s, c, r);
	case OVR_CTL_ALLOC_PD:
		return svc_do_alloc_pd(s, c, r);
	case OVR_CTL_DEALLOC_PD:
		return svc_do_dealloc_pd(s, c, r);
	case OVR_CTL_REG_MR:
		return svc_do_reg_mr(s, c, r);
	case OVR_CTL_DEREG_MR:
		return svc_do_dereg_mr(s, c, r);
	case OVR_CTL_REG_MR_GPU:
		return svc_do_reg_mr_gpu(s, c, r);
	case OVR_CTL_ALLOC_MW:
		return svc_do_alloc_mw(s, c, r);
	case OVR_CTL_DEALLOC_MW:
		return svc_do_dealloc_mw(s, c, r);
	case OVR_CTL_CREATE_CHANNEL:
		return svc_do_create_channel(s, c, r);
	case OVR_CTL_DESTROY_CHANNEL:
		return svc_do_destroy_channel(s, c, r);
	case OVR_CTL_CREATE_CQ:
		return svc_do_create_cq(s, c, r);
	case OVR_CTL_DESTROY_CQ:
		return svc_do_destroy_cq(s, c, r);
	case OVR_CTL_RESIZE_CQ:
		return svc_do_resize_cq(s, c, r);
	case OVR_CTL_REREG_MR:
		return svc_do_rereg_mr(s, c, r);
	case OVR_CTL_CREATE_QP:
		return svc_do_create_qp(s, c, r);
	case OVR_CTL_MODIFY_QP:
		return svc_do_modify_qp(s, c, r);
	case OVR_CTL_QUERY_QP:
		return svc_do_query_qp(s, c, r);
	case OVR_CTL_DESTROY_QP:
		return svc_do_destroy_qp(s, c, r);
	case OVR_CTL_QP_STATS:
		return svc_do_qp_stats(s, c, r);
	case OVR_CTL_CREATE_SRQ:
		return svc_do_create_srq(s, c, r);
	case OVR_CTL_MODIFY_SRQ:
		return svc_do_modify_srq(s, c, r);
	case OVR_CTL_QUERY_SRQ:
		return svc_do_query_srq(s, c, r);
	case OVR_CTL_DESTROY_SRQ:
		return svc_do_destroy_srq(s, c, r);
	case OVR_CTL_CREATE_AH:
		return svc_do_create_ah(s, c, r);
	case OVR_CTL_DESTROY_AH:
		return svc_do_destroy_ah(s, c, r);
	case OVR_CTL_ATTACH_MCAST:
	case OVR_CTL_DETACH_MCAST:
		return svc_do_mcast(s, c, r);
	default:
		return svc_status(c, r->h, -EOPNOTSUPP);
	}
}

/* Collects the descriptors that came with @m into @r (at most MAX_FDS). */
static void take_rights(struct msghdr *m, struct svc_req *r)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR(m, cm))
		if (cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SCM_RIGHTS) {
			int k = (int)((cm->cmsg_len - CMSG_LEN(0)) /
				      sizeof(int));

			for (int i = 0; i < k && r->nfds < MAX_FDS; i++)
				memcpy(&r->fds[r->nfds++],
				       CMSG_DATA(cm) + i * sizeof(int),
				       sizeof(int));
		}
}

void svc_ctl_input(struct svc *s, struct svc_ctx *c)
{
	for (int round = 0; round < 16; round++) {
		static union {
			struct ovr_ctl_hdr h;
			char b[OVR_CTL_MSG_MAX];
		} buf;
		union {
			char b[CMSG_SPACE(sizeof(int) * MAX_FDS)];
			struct cmsghdr align;
		} cbuf;
		struct iovec iov = { buf.b, sizeof(buf.b) };
		struct msghdr m = { .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cbuf.b,
				    .msg_controllen = sizeof(cbuf.b) };
		int fds[MAX_FDS];
		struct svc_req r = { .h = &buf.h, .fds = fds };
		ssize_t n = recvmsg(c->fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		int rc;

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) { /* hang-up: the application is gone */
			svc_dp_settle_ctx(s, c);
			ctx_destroy(s, c);
			return;
		}
		take_rights(&m, &r);
		if ((size_t)n < sizeof(buf.h) || buf.h.len != (uint32_t)n ||
		    (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
			/* not our protocol: drop the context */
			for (int i = 0; i < r.nfds; i++)
				close(fds[i]);
			ctx_destroy(s, c);
			return;
		}
		r.body = buf.b + sizeof(buf.h);
		r.blen = (size_t)n - sizeof(buf.h);
		rc = dispatch(s, c, &r);
		for (int i = 0; i < r.nfds; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		if (rc) {
			ctx_destroy(s, c);
			return;
		}
	}
}
