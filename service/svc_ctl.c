// SPDX-License-Identifier: MIT
/*
 * ovrdmad's control socket (docs/SERVICE.md section 2): contexts and the
 * objects they own, administration, and ovrdmactl's views. Runs on the
 * dataplane thread, between bursts, so it may call the engine directly.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "svc.h"

#include <ovrdma/util.h>

#define PAGE 4096ull
#define MAX_FDS ((int)OVR_CTL_MR_MAX_SEG)
#define CQ_MAX_DEPTH 65536u
#define SRQ_MAX_WR 16384u /* the engine's limit */

static uint64_t page_up(uint64_t n)
{
	return (n + PAGE - 1) & ~(PAGE - 1);
}

/* ---- devices ------------------------------------------------------------- */

int svc_dev_add(struct svc *s, uint32_t vni, uint32_t vip, const char *name)
{
	int slot = -1, mtu = ovr_vpc_active_mtu(s->conf.underlay_mtu);
	struct ovr_ctl_dev *d;
	char auto_name[OVR_CTL_NAME_LEN];

	for (int i = 0; i < SVC_MAX_DEVS; i++) {
		if (!s->devs[i].used) {
			if (slot < 0)
				slot = i;
			continue;
		}
		if (s->devs[i].d.vni == vni && s->devs[i].d.vip == vip)
			return -EEXIST;
		if (name && name[0] && !strcmp(s->devs[i].d.name, name))
			return -EEXIST;
	}
	if (slot < 0)
		return -ENOSPC;
	if (!name || !name[0]) {
		for (unsigned int n = 0;; n++) {
			bool taken = false;

			snprintf(auto_name, sizeof(auto_name), "ovrdma%u",
				 n % 1000u);
			for (int i = 0; i < SVC_MAX_DEVS; i++)
				if (s->devs[i].used &&
				    !strcmp(s->devs[i].d.name, auto_name))
					taken = true;
			if (!taken)
				break;
		}
		name = auto_name;
	}
	d = &s->devs[slot].d;
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->vni = vni;
	d->vip = vip;
	d->guid = (0x02ull << 56) | ((uint64_t)(vni & 0xffffff) << 32) | vip;
	d->rate_bps = s->conf.rate_bps;
	d->active_mtu = mtu > 0 ? (uint32_t)mtu : 1;
	d->underlay_mtu = s->conf.underlay_mtu;
	d->max_qp = s->conf.ctx_max_qp < OVR_RING_MAX_QP_PER_CTX ?
			    s->conf.ctx_max_qp :
			    OVR_RING_MAX_QP_PER_CTX;
	d->max_qp_wr = 16384;
	d->max_sge = OVR_RING_SQ_MAX_SGE;
	d->max_inline = OVR_RING_MAX_INLINE;
	d->max_cq = s->conf.ctx_max_cq;
	d->max_cqe = CQ_MAX_DEPTH - 1;
	d->max_mr = s->conf.ctx_max_mr;
	d->max_pd = s->conf.ctx_max_pd;
	d->max_mr_size = 1ull << 40;
	d->max_qp_rd_atom = 16;
	d->max_qp_init_rd_atom = 16;
	d->atomic_cap = 1; /* IBV_ATOMIC_HCA */
	d->max_srq = s->conf.ctx_max_srq;
	d->max_srq_wr = SRQ_MAX_WR;
	d->max_srq_sge = OVR_RING_SQ_MAX_SGE;
	d->max_ah = s->conf.ctx_max_ah;
	d->num_comp_vectors = 1;
	s->devs[slot].used = true;
	s->devs[slot].contexts = 0;
	svc_sysfs_add(s, d);
	return slot;
}

void svc_dev_del(struct svc *s, uint32_t vni, uint32_t vip)
{
	for (int i = 0; i < SVC_MAX_DEVS; i++)
		if (s->devs[i].used && s->devs[i].d.vni == vni &&
		    s->devs[i].d.vip == vip) {
			svc_sysfs_del(s, &s->devs[i].d);
			s->devs[i].used = false;
		}
}

static int dev_by_binding(struct svc *s, uint32_t vni, uint32_t vip)
{
	for (int i = 0; i < SVC_MAX_DEVS; i++)
		if (s->devs[i].used && s->devs[i].d.vni == vni &&
		    s->devs[i].d.vip == vip)
			return i;
	return -1;
}

/* ---- the socket ---------------------------------------------------------- */

int svc_ctl_listen(struct svc *s)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 };
	char dir[sizeof(a.sun_path)], *slash;
	int fd;

	if (strlen(s->conf.socket) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", s->conf.socket);
	snprintf(dir, sizeof(dir), "%s", s->conf.socket);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		mkdir(dir, 0755); /* /run/ovrdma; exists is fine */
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
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64)) {
		int e = errno;

		fprintf(stderr, "ovrdmad: %s: %s\n", s->conf.socket,
			strerror(e));
		close(fd);
		return -e;
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
		c->uid = cr.uid;
		c->gid = cr.gid;
		c->dev = -1;
		c->async_fd = -1;
		ev.data.u64 = (uint64_t)(uintptr_t)c;
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			free(c);
			continue;
		}
		c->next = s->ctxs;
		s->ctxs = c;
		s->nctx++;
		s->cnt.ctx_opened++;
	}
}

static int reply(struct svc_ctx *c, const struct ovr_ctl_hdr *req, int status,
		 const void *body, size_t blen, const int *fds, int nfds)
{
	struct ovr_ctl_hdr h = {
		.op = req->op,
		.version = OVR_CTL_VERSION,
		.len = (uint32_t)(sizeof(h) + (status ? 0 : blen)),
		.seq = req->seq,
		.status = status,
	};
	struct iovec iov[2] = { { &h, sizeof(h) },
				{ (void *)body, status ? 0 : blen } };
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };

	if (!status && nfds > 0) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	/* a client that does not read its replies loses its context */
	return sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 ? -errno : 0;
}

/* A reply with no body: 0 or -errno. */
static int status(struct svc_ctx *c, const struct ovr_ctl_hdr *req, int rc)
{
	return reply(c, req, rc, NULL, 0, NULL, 0);
}

/* Per-application limits ([limits] in the configuration): the request
 * fails with @err, and the operator reads once per context which limit
 * an application ran into. */
enum svc_limit {
	LIM_PD,
	LIM_MR,
	LIM_PINNED,
	LIM_CQ,
	LIM_QP,
	LIM_QP_NODE,
	LIM_SRQ,
	LIM_AH
};

static int limit(struct svc_ctx *c, const struct ovr_ctl_hdr *h,
		 enum svc_limit which, uint64_t value, int err)
{
	static const char *const names[] = {
		[LIM_PD] = "pd_per_context",
		[LIM_MR] = "mr_per_context",
		[LIM_PINNED] = "pinned_mb_per_context",
		[LIM_CQ] = "cq_per_context",
		[LIM_QP] = "qp_per_context",
		[LIM_QP_NODE] = "qps (of the node)",
		[LIM_SRQ] = "srq_per_context",
		[LIM_AH] = "ah_per_context",
	};

	if (!(c->limits_logged & (1u << which))) {
		c->limits_logged |= 1u << which;
		fprintf(stderr,
			"ovrdmad: context %u (pid %d, %s): limit %s = %llu "
			"reached, request refused (%s)\n",
			c->id, (int)c->pid, c->client[0] ? c->client : "-",
			names[which], (unsigned long long)value,
			strerror(-err));
	}
	return status(c, h, err);
}

/* ---- objects ------------------------------------------------------------- */

static int obj_new(struct svc_ctx *c, uint8_t type, void *p, uint32_t *handle)
{
	uint32_t i;

	for (i = 0; i < c->nobj; i++)
		if (c->obj[i].type == SVC_OBJ_FREE)
			break;
	if (i == c->nobj) {
		uint32_t n = c->nobj ? c->nobj * 2 : 16;
		struct svc_obj *t = realloc(c->obj, n * sizeof(*t));

		if (!t)
			return -ENOMEM;
		memset(t + c->nobj, 0, (n - c->nobj) * sizeof(*t));
		c->obj = t;
		c->nobj = n;
	}
	c->obj[i].type = type;
	c->obj[i].p = p;
	c->obj[i].gen++;
	*handle = i + 1;
	return 0;
}

static void *obj_get(struct svc_ctx *c, uint32_t handle, uint8_t type)
{
	if (!handle || handle > c->nobj || c->obj[handle - 1].type != type)
		return NULL;
	return c->obj[handle - 1].p;
}

static void obj_free(struct svc_ctx *c, uint32_t handle)
{
	c->obj[handle - 1].type = SVC_OBJ_FREE;
	c->obj[handle - 1].p = NULL;
}

static void *map_memfd(const char *name, size_t len, int *fd_out)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	void *p;

	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)len)) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	*fd_out = fd;
	return p;
}

/* A free doorbell index (QPs and SRQs share them), or -ENOSPC. */
static int db_alloc(struct svc_ctx *c)
{
	for (uint32_t i = 0; i < OVR_RING_MAX_QP_PER_CTX; i++)
		if (!c->db_qp[i] && !c->db_srq[i])
			return (int)i;
	return -ENOSPC;
}

static void qp_destroy(struct svc *s, struct svc_ctx *c, uint32_t h)
{
	struct svc_qp *qp = c->obj[h - 1].p;
	struct svc_pd *pd;

	ovr_eng_qp_destroy(s->eng, qp->qpn);
	svc_qp_unindex(s, qp);
	c->db_qp[qp->db_index] = NULL;
	if (qp->srq)
		qp->srq->users--;
	qp->scq->users--;
	qp->rcq->users--;
	pd = obj_get(c, qp->pd_handle, SVC_OBJ_PD);
	if (pd)
		pd->users--;
	munmap(qp->ring, qp->map_len);
	obj_free(c, h);
	c->nqp--;
	free(qp);
}

static int srq_destroy(struct svc *s, struct svc_ctx *c, uint32_t h)
{
	struct svc_srq *srq = c->obj[h - 1].p;
	struct svc_pd *pd;
	int rc;

	if (srq->users)
		return -EBUSY;
	rc = ovr_eng_srq_destroy(s->eng, srq->srqn);
	if (rc)
		return rc;
	c->db_srq[srq->db_index] = NULL;
	pd = obj_get(c, srq->pd_handle, SVC_OBJ_PD);
	if (pd)
		pd->users--;
	munmap(srq->ring, srq->map_len);
	obj_free(c, h);
	c->nsrq--;
	free(srq);
	return 0;
}

static void ah_destroy(struct svc_ctx *c, uint32_t h)
{
	struct svc_ah *ah = c->obj[h - 1].p;
	struct svc_pd *pd = obj_get(c, ah->pd_handle, SVC_OBJ_PD);

	if (pd)
		pd->users--;
	obj_free(c, h);
	c->nah--;
	free(ah);
}

static void cq_destroy(struct svc *s, struct svc_ctx *c, uint32_t h)
{
	struct svc_cq *cq = c->obj[h - 1].p;
	struct svc_channel *ch;

	svc_cq_slot_put(s, cq);
	ch = cq->chan_handle ? obj_get(c, cq->chan_handle, SVC_OBJ_CHANNEL) :
			       NULL;
	if (ch)
		ch->users--;
	munmap(cq->ring, cq->map_len);
	obj_free(c, h);
	c->ncq--;
	free(cq);
}

static int mr_destroy(struct svc *s, struct svc_ctx *c, uint32_t h)
{
	struct svc_mr *mr = c->obj[h - 1].p;
	struct svc_pd *pd;
	int rc = ovr_eng_dereg_mr(s->eng, mr->key);

	if (rc)
		return rc;
	pd = obj_get(c, mr->pd_handle, SVC_OBJ_PD);
	if (pd)
		pd->users--;
	if (mr->gpu)
		ovr_gdr_release(mr->gpu);
	else
		munmap(mr->map, mr->map_len);
	c->pinned -= mr->map_len;
	obj_free(c, h);
	c->nmr--;
	free(mr);
	return 0;
}

static void ctx_destroy(struct svc *s, struct svc_ctx *c)
{
	struct svc_ctx **pp;

	/* QPs first (they name SRQs, CQs, PDs), then SRQs, AHs, CQs, MRs,
	 * the rest */
	static const uint8_t order[] = { SVC_OBJ_QP, SVC_OBJ_SRQ,
					 SVC_OBJ_AH, SVC_OBJ_CQ,
					 SVC_OBJ_MR, SVC_OBJ_CHANNEL,
					 SVC_OBJ_PD };

	for (size_t k = 0; k < sizeof(order); k++)
		for (uint32_t i = 0; i < c->nobj; i++) {
			uint8_t type = order[k];

			if (c->obj[i].type != type)
				continue;
			switch (type) {
			case SVC_OBJ_QP:
				qp_destroy(s, c, i + 1);
				break;
			case SVC_OBJ_SRQ:
				if (srq_destroy(s, c, i + 1))
					fprintf(stderr,
						"ovrdmad: context %u: SRQ "
						"still busy\n",
						c->id);
				break;
			case SVC_OBJ_AH:
				ah_destroy(c, i + 1);
				break;
			case SVC_OBJ_CQ:
				cq_destroy(s, c, i + 1);
				break;
			case SVC_OBJ_MR:
				if (mr_destroy(s, c, i + 1))
					fprintf(stderr,
						"ovrdmad: context %u: MR "
						"still busy\n",
						c->id);
				break;
			case SVC_OBJ_CHANNEL: {
				struct svc_channel *ch = c->obj[i].p;

				close(ch->fd);
				free(ch);
				obj_free(c, i + 1);
				break;
			}
			default:
				free(c->obj[i].p);
				obj_free(c, i + 1);
				break;
			}
		}
	for (pp = &s->ctxs; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	if (c->dev >= 0 && s->devs[c->dev].contexts)
		s->devs[c->dev].contexts--;
	if (c->db)
		munmap(c->db, page_up(sizeof(*c->db)));
	if (c->async_fd >= 0)
		close(c->async_fd);
	close(c->fd);
	free(c->obj);
	free(c);
	s->nctx--;
	s->cnt.ctx_closed++;
}

void svc_ctl_close_all(struct svc *s)
{
	while (s->ctxs)
		ctx_destroy(s, s->ctxs);
}

/* ---- requests ------------------------------------------------------------ */

struct req {
	const struct ovr_ctl_hdr *h;
	const void *body;
	size_t blen;
	int *fds;
	int nfds;
};

static int take_fd(struct req *r, int i)
{
	int fd = r->fds[i];

	r->fds[i] = -1;
	return fd;
}

#define BODY(r, type)                                      \
	({                                                 \
		if ((r)->blen != sizeof(type))             \
			return status(c, (r)->h, -EINVAL); \
		(const type *)(r)->body;                   \
	})

static int do_hello(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_hello_req *q = BODY(r, struct ovr_ctl_hello_req);
	struct ovr_ctl_hello_rep rep = { .ring_abi = OVR_RING_ABI_VERSION };
	char path[64];
	int ro, rc;

	if (q->ring_abi != OVR_RING_ABI_VERSION)
		return status(c, r->h, -EPROTO);
	memcpy(c->client, q->client, sizeof(c->client));
	c->client[sizeof(c->client) - 1] = 0;
	for (int i = 0; i < SVC_MAX_DEVS; i++)
		rep.ndevices += s->devs[i].used;
	rep.incarnation = s->page->incarnation;
	/* read-only: a client cannot write the service page */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", s->svc_fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	if (ro < 0)
		return status(c, r->h, -errno);
	c->hello = true;
	rc = reply(c, r->h, 0, &rep, sizeof(rep), &ro, 1);
	close(ro);
	return rc;
}

static int do_list(struct svc *s, struct svc_ctx *c, struct req *r)
{
	char buf[sizeof(struct ovr_ctl_list_rep) +
		 SVC_MAX_DEVS * sizeof(struct ovr_ctl_dev)];
	struct ovr_ctl_list_rep *rep = (void *)buf;
	struct ovr_ctl_dev *d = (void *)(rep + 1);

	memset(rep, 0, sizeof(*rep));
	for (int i = 0; i < SVC_MAX_DEVS; i++)
		if (s->devs[i].used)
			d[rep->n++] = s->devs[i].d;
	return reply(c, r->h, 0, buf,
		     sizeof(*rep) + rep->n * sizeof(struct ovr_ctl_dev), NULL,
		     0);
}

static int do_open(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_open_req *q = BODY(r, struct ovr_ctl_open_req);
	struct ovr_ctl_open_rep rep = { 0 };
	int dev = -1, dbfd, fds[2], rc;

	if (c->dev >= 0)
		return status(c, r->h, -EALREADY);
	for (int i = 0; i < SVC_MAX_DEVS; i++)
		if (s->devs[i].used &&
		    !strncmp(s->devs[i].d.name, q->name, OVR_CTL_NAME_LEN))
			dev = i;
	if (dev < 0)
		return status(c, r->h, -ENODEV);
	c->db = map_memfd("ovrdma-db", page_up(sizeof(*c->db)), &dbfd);
	if (!c->db)
		return status(c, r->h, -ENOMEM);
	if (r->nfds > 0) {
		c->async_fd = take_fd(r, 0);
		fcntl(c->async_fd, F_SETFL,
		      fcntl(c->async_fd, F_GETFL) | O_NONBLOCK);
	}
	c->dev = dev;
	s->devs[dev].contexts++;
	rep.dev = s->devs[dev].d;
	rep.ctx_id = c->id;
	fds[0] = dbfd;
	fds[1] = s->wake_fd;
	rc = reply(c, r->h, 0, &rep, sizeof(rep), fds, 2);
	close(dbfd);
	return rc;
}

static int do_alloc_pd(struct svc *s, struct svc_ctx *c, struct req *r)
{
	struct ovr_ctl_pd_rep rep = { 0 };
	struct svc_pd *pd;
	int rc;

	if (r->blen)
		return status(c, r->h, -EINVAL);
	if (c->npd >= s->conf.ctx_max_pd)
		return limit(c, r->h, LIM_PD, s->conf.ctx_max_pd, -ENOSPC);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return status(c, r->h, -ENOMEM);
	pd->id = s->next_pd++;
	rc = obj_new(c, SVC_OBJ_PD, pd, &rep.pd);
	if (rc) {
		free(pd);
		return status(c, r->h, rc);
	}
	c->npd++;
	return reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

static int do_dealloc_pd(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_handle_req *q = BODY(r, struct ovr_ctl_handle_req);
	struct svc_pd *pd = obj_get(c, q->handle, SVC_OBJ_PD);

	(void)s;
	if (!pd)
		return status(c, r->h, -ENOENT);
	if (pd->users)
		return status(c, r->h, -EBUSY);
	free(pd);
	obj_free(c, q->handle);
	c->npd--;
	return status(c, r->h, 0);
}

#define ACCESS_KNOWN 0xfu /* LOCAL_WRITE, REMOTE_WRITE/READ/ATOMIC */
#define ACCESS_IGNORED ((1u << 7) | (1u << 20)) /* HUGETLB, RELAXED_ORDERING */

static int do_reg_mr(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_reg_mr_req *q = r->body;
	struct ovr_ctl_reg_mr_rep rep = { 0 };
	struct svc_pd *pd;
	struct svc_mr *mr;
	uint64_t total = 0;
	uint8_t *base;
	int rc;

	if (r->blen < offsetof(struct ovr_ctl_reg_mr_req, seg) ||
	    q->nseg == 0 || q->nseg > OVR_CTL_MR_MAX_SEG ||
	    r->blen != offsetof(struct ovr_ctl_reg_mr_req, seg) +
			       q->nseg * sizeof(q->seg[0]) ||
	    r->nfds != (int)q->nseg)
		return status(c, r->h, -EINVAL);
	pd = obj_get(c, q->pd, SVC_OBJ_PD);
	if (!pd)
		return status(c, r->h, -ENOENT);
	if (q->access & ~(ACCESS_KNOWN | ACCESS_IGNORED))
		return status(c, r->h, -EOPNOTSUPP);
	if (c->nmr >= s->conf.ctx_max_mr)
		return limit(c, r->h, LIM_MR, s->conf.ctx_max_mr, -ENOSPC);
	for (uint32_t i = 0; i < q->nseg; i++) {
		struct stat st;
		int seals = fcntl(r->fds[i], F_GET_SEALS);

		/* a segment that could shrink under us would fault the
		 * service: only sealed memfds are accepted */
		if (q->seg[i].len == 0 || q->seg[i].len % PAGE ||
		    q->seg[i].off % PAGE || seals < 0 ||
		    !(seals & F_SEAL_SHRINK) || fstat(r->fds[i], &st) ||
		    q->seg[i].off + q->seg[i].len > (uint64_t)st.st_size)
			return status(c, r->h, -EINVAL);
		total += q->seg[i].len;
	}
	if (q->span % PAGE || q->len == 0 || q->va < q->span ||
	    q->va - q->span + q->len > total)
		return status(c, r->h, -EINVAL);
	if (s->conf.ctx_max_pinned &&
	    c->pinned + total > s->conf.ctx_max_pinned)
		return limit(c, r->h, LIM_PINNED, s->conf.ctx_max_pinned >> 20,
			     -ENOMEM);
	base = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return status(c, r->h, -ENOMEM);
	for (uint64_t i = 0, at = 0; i < q->nseg; at += q->seg[i].len, i++)
		if (mmap(base + at, q->seg[i].len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, r->fds[i],
			 (off_t)q->seg[i].off) == MAP_FAILED) {
			rc = -errno;
			munmap(base, total);
			return status(c, r->h, rc);
		}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		munmap(base, total);
		return status(c, r->h, -ENOMEM);
	}
	rc = ovr_eng_reg_mr(s->eng, pd->id, q->va, q->len,
			    q->access & ACCESS_KNOWN, base + (q->va - q->span),
			    &mr->key);
	if (!rc)
		rc = obj_new(c, SVC_OBJ_MR, mr, &rep.handle);
	if (rc) {
		if (mr->key)
			ovr_eng_dereg_mr(s->eng, mr->key);
		munmap(base, total);
		free(mr);
		return status(c, r->h, rc);
	}
	mr->pd_handle = q->pd;
	mr->map = base;
	mr->map_len = total;
	pd->users++;
	c->nmr++;
	c->pinned += total;
	rep.lkey = rep.rkey = mr->key;
	return reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

static int gdr_pin(void *arg, void *addr, size_t len)
{
	return ovr_gdr_host_register(arg, addr, len);
}

/*
 * The copy engine's frame buffers: pinned, so that copies between them
 * and GPU memory are queued (docs/GPU.md). Without it (a driver without
 * the async calls, a port that does not say where its buffers live, or
 * a refusal), copies stay synchronous: logged, not fatal.
 */
static void gdr_pin_bufs(struct svc *s)
{
	struct ovr_gdr_stats st;
	int rc = -EOPNOTSUPP;

	if (s->port_ops->buf_mem)
		rc = s->port_ops->buf_mem(s->port, gdr_pin, s->gdr);
	ovr_gdr_get_stats(s->gdr, &st);
	if (rc == 0 && st.pinned_ranges)
		fprintf(stderr,
			"ovrdmad: GPU copy engine: %llu bytes of frame buffers "
			"pinned (%u ranges), asynchronous copies\n",
			(unsigned long long)st.pinned_bytes, st.pinned_ranges);
	else
		fprintf(stderr,
			"ovrdmad: GPU copy engine: synchronous copies (frame "
			"buffers not pinned: %s%s%s)\n",
			strerror(rc ? -rc : EOPNOTSUPP), rc ? ": " : "",
			rc ? ovr_gdr_last_error(s->gdr) : "");
}

static void gdr_note(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "ovrdmad: %s\n", msg);
}

/*
 * BAR copies of small messages through GDRCopy ([gpu] gdrcopy = auto,
 * docs/GPU.md §1.2), where libgdrapi and the gdrdrv module are: on or
 * off, logged once with the reason. Off is not an error: every copy
 * then takes the copy streams.
 */
static void gdr_bar(struct svc *s)
{
	struct ovr_gdr_bar_cfg cfg = {
		.h2d_max = s->conf.gdrcopy_h2d_max,
		.d2h_max = s->conf.gdrcopy_d2h_max,
		.note = gdr_note,
	};
	char why[200];

	if (!s->conf.gdrcopy) {
		fprintf(stderr, "ovrdmad: GDRCopy: off (gdrcopy = off)\n");
		return;
	}
	if (ovr_gdr_bar_open(s->gdr, &cfg, why, sizeof(why)))
		fprintf(stderr, "ovrdmad: GDRCopy: off (%s)\n", why);
	else
		fprintf(stderr,
			"ovrdmad: GDRCopy: on, BAR copies of messages up to "
			"%u bytes host to GPU, %u bytes GPU to host\n",
			cfg.h2d_max, cfg.d2h_max);
}

/* The CUDA driver, loaded at the first GPU registration (not at start:
 * a node without GPUs never pays for it), then GDRCopy. 0 or
 * -EOPNOTSUPP / -ENODEV, logged once. */
static int gdr_ready(struct svc *s)
{
	if (s->gdr)
		return 0;
	if (s->gdr_err)
		return s->gdr_err;
	s->gdr_err = ovr_gdr_open(0, &s->gdr, s->gdr_why, sizeof(s->gdr_why));
	if (s->gdr_err)
		fprintf(stderr,
			"ovrdmad: GPU memory registration unavailable: %s\n",
			s->gdr_why);
	else
		fprintf(stderr,
			"ovrdmad: GPU memory registration: CUDA driver loaded\n");
	if (!s->gdr_err) {
		gdr_pin_bufs(s);
		gdr_bar(s);
	}
	return s->gdr_err;
}

/*
 * What a GPU registration counts against pinned_mb_per_context: the GPU
 * pages covering it (64 KiB, what nvidia_p2p_get_pages pins for a NIC),
 * within its allocation. An IPC import shared by several registrations
 * counts for each, as host registrations of the same pages do.
 */
#define GPU_PAGE (64ull << 10)
static uint64_t gpu_pinned(const struct ovr_ctl_reg_mr_gpu_req *q)
{
	uint64_t lo = q->offset & ~(GPU_PAGE - 1);
	uint64_t hi = (q->offset + q->len + GPU_PAGE - 1) & ~(GPU_PAGE - 1);

	return (hi < q->alloc_size ? hi : q->alloc_size) - lo;
}

static int do_reg_mr_gpu(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_reg_mr_gpu_req *q = r->body;
	struct ovr_ctl_reg_mr_rep rep = { 0 };
	struct ovr_gdr_export ex = { 0 };
	struct svc_pd *pd;
	struct svc_mr *mr;
	uint64_t pinned;
	int rc;

	if (r->blen != sizeof(*q) ||
	    (q->kind != OVR_GDR_KIND_IPC && q->kind != OVR_GDR_KIND_FD) ||
	    r->nfds != (q->kind == OVR_GDR_KIND_FD ? 1 : 0))
		return status(c, r->h, -EINVAL);
	pd = obj_get(c, q->pd, SVC_OBJ_PD);
	if (!pd)
		return status(c, r->h, -ENOENT);
	if (q->access & ~(ACCESS_KNOWN | ACCESS_IGNORED))
		return status(c, r->h, -EOPNOTSUPP);
	if (!q->len || !q->alloc_size || q->offset > q->alloc_size ||
	    q->len > q->alloc_size - q->offset)
		return status(c, r->h, -EINVAL);
	if (c->nmr >= s->conf.ctx_max_mr)
		return limit(c, r->h, LIM_MR, s->conf.ctx_max_mr, -ENOSPC);
	pinned = gpu_pinned(q);
	if (s->conf.ctx_max_pinned &&
	    c->pinned + pinned > s->conf.ctx_max_pinned)
		return limit(c, r->h, LIM_PINNED, s->conf.ctx_max_pinned >> 20,
			     -ENOMEM);
	rc = gdr_ready(s);
	if (rc)
		return status(c, r->h, rc);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return status(c, r->h, -ENOMEM);
	ex.base = q->alloc_base;
	ex.size = q->alloc_size;
	ex.device = q->device;
	ex.kind = q->kind;
	ex.fd = q->kind == OVR_GDR_KIND_FD ? r->fds[0] : -1;
	memcpy(ex.ipc, q->ipc, sizeof(ex.ipc));
	memcpy(ex.uuid, q->uuid, sizeof(ex.uuid));
	rc = ovr_gdr_import(s->gdr, &ex, &mr->gpu);
	if (rc) {
		fprintf(stderr,
			"ovrdmad: context %u (pid %d): GPU memory import refused: %s\n",
			c->id, (int)c->pid, ovr_gdr_last_error(s->gdr));
		free(mr);
		return status(c, r->h, rc);
	}
	rc = ovr_eng_reg_mr_dev(s->eng, pd->id, q->va, q->len,
				q->access & ACCESS_KNOWN, mr->gpu, q->offset,
				&mr->key);
	if (!rc)
		rc = obj_new(c, SVC_OBJ_MR, mr, &rep.handle);
	if (rc) {
		if (mr->key)
			ovr_eng_dereg_mr(s->eng, mr->key);
		ovr_gdr_release(mr->gpu);
		free(mr);
		return status(c, r->h, rc);
	}
	mr->pd_handle = q->pd;
	mr->map_len = pinned; /* counted, not mapped: mr_destroy */
	pd->users++;
	c->nmr++;
	c->pinned += pinned;
	rep.lkey = rep.rkey = mr->key;
	return reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

static int do_dereg_mr(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_handle_req *q = BODY(r, struct ovr_ctl_handle_req);

	if (!obj_get(c, q->handle, SVC_OBJ_MR))
		return status(c, r->h, -ENOENT);
	/*
	 * WRs the application posted before this request may still sit in
	 * its rings: hand them to the engine first, so that the answer does
	 * not depend on how far the loop got. A region that work still uses
	 * is then EBUSY (the engine holds its SGEs' pages), whenever the WRs
	 * were posted. O(QP slots of the context), on a control path.
	 */
	for (uint32_t i = 0; i < OVR_RING_MAX_QP_PER_CTX; i++) {
		if (c->db_qp[i])
			svc_qp_kick(s, c->db_qp[i]);
		else if (c->db_srq[i])
			svc_srq_kick(s, c->db_srq[i]);
	}
	return status(c, r->h, mr_destroy(s, c, q->handle));
}

static int do_create_channel(struct svc *s, struct svc_ctx *c, struct req *r)
{
	struct ovr_ctl_channel_rep rep = { 0 };
	struct svc_channel *ch;
	int rc;

	(void)s;
	if (r->blen || r->nfds != 1)
		return status(c, r->h, -EINVAL);
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return status(c, r->h, -ENOMEM);
	rc = obj_new(c, SVC_OBJ_CHANNEL, ch, &rep.channel);
	if (rc) {
		free(ch);
		return status(c, r->h, rc);
	}
	ch->fd = take_fd(r, 0);
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	return reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

static int do_destroy_channel(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_handle_req *q = BODY(r, struct ovr_ctl_handle_req);
	struct svc_channel *ch = obj_get(c, q->handle, SVC_OBJ_CHANNEL);

	(void)s;
	if (!ch)
		return status(c, r->h, -ENOENT);
	if (ch->users)
		return status(c, r->h, -EBUSY);
	close(ch->fd);
	free(ch);
	obj_free(c, q->handle);
	return status(c, r->h, 0);
}

static int do_create_cq(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_create_cq_req *q =
		BODY(r, struct ovr_ctl_create_cq_req);
	struct ovr_ctl_create_cq_rep rep = { 0 };
	struct svc_channel *ch = NULL;
	struct svc_cq *cq;
	int fd, rc;

	if (q->cqe == 0 || q->cqe >= CQ_MAX_DEPTH)
		return status(c, r->h, -EINVAL);
	if (c->ncq >= s->conf.ctx_max_cq)
		return limit(c, r->h, LIM_CQ, s->conf.ctx_max_cq, -ENOSPC);
	if (q->channel != OVR_CTL_NO_CHANNEL) {
		ch = obj_get(c, q->channel, SVC_OBJ_CHANNEL);
		if (!ch)
			return status(c, r->h, -ENOENT);
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return status(c, r->h, -ENOMEM);
	cq->ctx = c;
	cq->depth = (uint32_t)ovr_pow2_at_least(q->cqe + 1);
	cq->map_len =
		page_up(OVR_RING_CQ_ENTRIES_OFF +
			(uint64_t)cq->depth * sizeof(struct ovr_ring_cqe));
	cq->ring = map_memfd("ovrdma-cq", cq->map_len, &fd);
	if (!cq->ring) {
		free(cq);
		return status(c, r->h, -ENOMEM);
	}
	cq->cqe = (void *)((uint8_t *)cq->ring + OVR_RING_CQ_ENTRIES_OFF);
	cq->user_handle = q->user_handle;
	cq->chan_fd = ch ? ch->fd : -1;
	cq->chan_handle = ch ? q->channel : 0;
	rc = svc_cq_slot_get(s, cq);
	if (!rc)
		rc = obj_new(c, SVC_OBJ_CQ, cq, &cq->handle);
	if (rc) {
		svc_cq_slot_put(s, cq);
		munmap(cq->ring, cq->map_len);
		close(fd);
		free(cq);
		return status(c, r->h, rc);
	}
	if (ch)
		ch->users++;
	c->ncq++;
	rep.cq = cq->handle;
	rep.depth = cq->depth;
	rep.map_len = cq->map_len;
	rc = reply(c, r->h, 0, &rep, sizeof(rep), &fd, 1);
	close(fd);
	return rc;
}

static int do_destroy_cq(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_handle_req *q = BODY(r, struct ovr_ctl_handle_req);
	struct svc_cq *cq = obj_get(c, q->handle, SVC_OBJ_CQ);

	if (!cq)
		return status(c, r->h, -ENOENT);
	if (cq->users)
		return status(c, r->h, -EBUSY);
	cq_destroy(s, c, q->handle);
	return status(c, r->h, 0);
}

static int do_create_qp(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_create_qp_req *q =
		BODY(r, struct ovr_ctl_create_qp_req);
	struct ovr_ctl_create_qp_rep rep = { 0 };
	struct svc_pd *pd = obj_get(c, q->pd, SVC_OBJ_PD);
	struct svc_cq *scq = obj_get(c, q->send_cq, SVC_OBJ_CQ);
	struct svc_cq *rcq = obj_get(c, q->recv_cq, SVC_OBJ_CQ);
	struct svc_srq *srq = NULL;
	struct ovr_eng_qp_init init;
	struct ovr_eng_qp_attr qa;
	struct svc_qp *qp;
	uint32_t db, per_sq, per_rq;
	int fd, rc;

	if (c->dev < 0)
		return status(c, r->h, -EBADF);
	if (!pd || !scq || !rcq)
		return status(c, r->h, -ENOENT);
	if (q->qp_type != OVR_QPT_RC && q->qp_type != OVR_QPT_UD)
		return status(c, r->h, -EOPNOTSUPP);
	if (q->srq) {
		srq = obj_get(c, q->srq, SVC_OBJ_SRQ);
		if (!srq)
			return status(c, r->h, -ENOENT);
		if (srq->pd_handle != q->pd)
			return status(c, r->h, -EINVAL);
	}
	if (!q->cap.max_send_wr || q->cap.max_send_wr > 16384 ||
	    q->cap.max_recv_wr > 16384 ||
	    q->cap.max_send_sge > OVR_RING_SQ_MAX_SGE ||
	    q->cap.max_recv_sge > OVR_RING_SQ_MAX_SGE ||
	    q->cap.max_inline_data > OVR_RING_MAX_INLINE)
		return status(c, r->h, -EINVAL);
	if (c->nqp >= s->conf.ctx_max_qp)
		return limit(c, r->h, LIM_QP, s->conf.ctx_max_qp, -ENOSPC);
	rc = db_alloc(c);
	if (rc < 0)
		return status(c, r->h, rc);
	db = (uint32_t)rc;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return status(c, r->h, -ENOMEM);
	init = (struct ovr_eng_qp_init){
		.pd = pd->id,
		.send_cq = scq->slot,
		.recv_cq = rcq->slot,
		.sq_sig_all = q->sq_sig_all != 0,
		.user = (uint64_t)(uintptr_t)qp,
		.cap = {
			.max_send_wr = q->cap.max_send_wr,
			.max_recv_wr = q->cap.max_recv_wr ?
					       q->cap.max_recv_wr : 1,
			.max_send_sge = q->cap.max_send_sge ?
						q->cap.max_send_sge : 1,
			.max_recv_sge = q->cap.max_recv_sge ?
						q->cap.max_recv_sge : 1,
			.max_inline_data = q->cap.max_inline_data,
		},
		.srq = srq ? srq->srqn : 0,
		.qp_type = q->qp_type == OVR_QPT_UD ? OVR_QPT_UD :
							  OVR_QPT_RC,
	};
	rc = ovr_eng_qp_create(s->eng, &init, &qp->qpn);
	if (rc) {
		free(qp);
		if (rc == -ENOSPC)
			return limit(c, r->h, LIM_QP_NODE, s->conf.eng_max_qp,
				     rc);
		return status(c, r->h, rc);
	}
	ovr_eng_qp_query(s->eng, qp->qpn, &qa);
	qp->cap = (struct ovr_ctl_qp_cap){
		.max_send_wr = qa.cap.max_send_wr,
		.max_recv_wr = qa.cap.max_recv_wr,
		.max_send_sge = qa.cap.max_send_sge,
		.max_recv_sge = qa.cap.max_recv_sge,
		.max_inline_data = qa.cap.max_inline_data,
	};
	qp->ctx = c;
	qp->type = q->qp_type;
	qp->srq = srq;
	qp->vni = s->devs[c->dev].d.vni;
	qp->vip = s->devs[c->dev].d.vip;
	qp->db_index = db;
	qp->pd_handle = q->pd;
	qp->scq = scq;
	qp->rcq = rcq;
	qp->user_handle = q->user_handle;
	qp->sq_depth = (uint32_t)ovr_pow2_at_least(qp->cap.max_send_wr);
	qp->rq_depth = (uint32_t)ovr_pow2_at_least(qp->cap.max_recv_wr);
	per_sq = qp->cap.max_send_sge * (uint32_t)sizeof(struct ovr_ring_sge);
	if (qp->cap.max_inline_data > per_sq)
		per_sq = qp->cap.max_inline_data;
	qp->sq_stride = (uint32_t)ovr_pow2_at_least(
		(uint32_t)sizeof(struct ovr_ring_swqe) + per_sq);
	per_rq = qp->cap.max_recv_sge * (uint32_t)sizeof(struct ovr_ring_sge);
	qp->rq_stride = (uint32_t)ovr_pow2_at_least(
		(uint32_t)sizeof(struct ovr_ring_rwqe) + per_rq);
	rep.sq_off = PAGE;
	rep.rq_off =
		page_up(rep.sq_off + (uint64_t)qp->sq_depth * qp->sq_stride);
	qp->map_len =
		page_up(rep.rq_off + (uint64_t)qp->rq_depth * qp->rq_stride);
	qp->ring = map_memfd("ovrdma-qp", qp->map_len, &fd);
	if (!qp->ring) {
		ovr_eng_qp_destroy(s->eng, qp->qpn);
		free(qp);
		return status(c, r->h, -ENOMEM);
	}
	qp->sq_slots = (uint8_t *)qp->ring + rep.sq_off;
	qp->rq_slots = (uint8_t *)qp->ring + rep.rq_off;
	rc = svc_qp_index(s, qp);
	if (!rc)
		rc = obj_new(c, SVC_OBJ_QP, qp, &qp->handle);
	if (rc) {
		svc_qp_unindex(s, qp);
		ovr_eng_qp_destroy(s->eng, qp->qpn);
		munmap(qp->ring, qp->map_len);
		close(fd);
		free(qp);
		return status(c, r->h, rc);
	}
	c->db_qp[db] = qp;
	if (srq)
		srq->users++;
	scq->users++;
	rcq->users++;
	pd->users++;
	c->nqp++;
	rep.qp = qp->handle;
	rep.qpn = qp->qpn;
	rep.cap = qp->cap;
	rep.sq_depth = qp->sq_depth;
	rep.rq_depth = qp->rq_depth;
	rep.sq_stride = qp->sq_stride;
	rep.rq_stride = qp->rq_stride;
	rep.map_len = qp->map_len;
	rep.db_index = db;
	rc = reply(c, r->h, 0, &rep, sizeof(rep), &fd, 1);
	close(fd);
	return rc;
}

static int do_modify_qp(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_modify_qp_req *q =
		BODY(r, struct ovr_ctl_modify_qp_req);
	struct svc_qp *qp = obj_get(c, q->qp, SVC_OBJ_QP);
	const struct ovr_ctl_qp_attr *a = &q->attr;
	struct ovr_eng_qp_attr ea = { 0 };
	struct ovr_vpc_flow flow = { 0 };
	bool av = q->mask & OVR_QP_AV;
	int rc;

	if (!qp)
		return status(c, r->h, -ENOENT);
	/* a UD QP has no peer: each send names an AH */
	if (av && qp->type == OVR_QPT_UD)
		return status(c, r->h, -EINVAL);
	if (av) {
		const struct ovr_ctl_dev *d = &s->devs[c->dev].d;
		uint32_t peer;

		if (!(q->mask & OVR_QP_DEST_QPN) ||
		    ovr_vpc_gid_to_vip(a->dgid, &peer))
			return status(c, r->h, -EINVAL);
		rc = ovr_vpc_may_connect(s->vpc, d->vni, d->vip, peer);
		if (rc)
			return status(c, r->h, rc);
		ovr_vpc_flow_init(&flow, d->vni, d->vip, peer, qp->qpn,
				  a->dest_qp_num, a->traffic_class >> 2);
	}
	ea.qp_state = a->qp_state;
	ea.cur_qp_state = a->cur_qp_state;
	ea.path_mtu = a->path_mtu;
	ea.qp_access_flags = a->qp_access_flags;
	ea.dest_qp_num = a->dest_qp_num;
	ea.rq_psn = a->rq_psn;
	ea.sq_psn = a->sq_psn;
	ea.qkey = a->qkey;
	ea.timeout = a->timeout;
	ea.retry_cnt = a->retry_cnt;
	ea.rnr_retry = a->rnr_retry;
	ea.min_rnr_timer = a->min_rnr_timer;
	ea.max_rd_atomic = a->max_rd_atomic;
	ea.max_dest_rd_atomic = a->max_dest_rd_atomic;
	rc = ovr_eng_qp_modify(s->eng, qp->qpn, &ea, q->mask, svc_now());
	if (rc)
		return status(c, r->h, rc);
	if (av) {
		qp->flow = flow;
		qp->connected = true;
	}
	if (q->mask & OVR_QP_STATE) {
		atomic_store_explicit(&qp->ring->state, a->qp_state,
				      memory_order_release);
		if (a->qp_state == OVR_QPS_RESET) {
			/* RESET drops all work, without completions */
			qp->connected = false;
			qp->sq_cons = atomic_load(&qp->ring->sq_prod);
			qp->rq_cons = atomic_load(&qp->ring->rq_prod);
			atomic_store(&qp->ring->sq_cons, qp->sq_cons);
			atomic_store(&qp->ring->rq_cons, qp->rq_cons);
		}
	}
	svc_qp_kick(s, qp);
	return status(c, r->h, 0);
}

static int do_query_qp(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_handle_req *q = BODY(r, struct ovr_ctl_handle_req);
	struct svc_qp *qp = obj_get(c, q->handle, SVC_OBJ_QP);
	struct ovr_ctl_query_qp_rep rep = { 0 };
	struct ovr_ctl_qp_attr *a = &rep.attr;
	struct ovr_eng_qp_attr ea;
	int rc;

	if (!qp)
		return status(c, r->h, -ENOENT);
	rc = ovr_eng_qp_query(s->eng, qp->qpn, &ea);
	if (rc)
		return status(c, r->h, rc);
	a->qp_state = ea.qp_state;
	a->cur_qp_state = ea.qp_state;
	a->path_mtu = ea.path_mtu;
	a->qp_access_flags = ea.qp_access_flags;
	a->dest_qp_num = ea.dest_qp_num;
	a->rq_psn = ea.rq_psn;
	a->sq_psn = ea.sq_psn;
	a->qkey = ea.qkey;
	a->timeout = ea.timeout;
	a->retry_cnt = ea.retry_cnt;
	a->rnr_retry = ea.rnr_retry;
	a->min_rnr_timer = ea.min_rnr_timer;
	a->max_rd_atomic = ea.max_rd_atomic;
	a->max_dest_rd_atomic = ea.max_dest_rd_atomic;
	a->sq_draining = ea.sq_draining;
	a->port_num = 1;
	a->hop_limit = 64;
	a->is_global = qp->type != OVR_QPT_UD;
	a->traffic_class = (uint8_t)(qp->flow.dscp << 2);
	if (qp->connected)
		ovr_vpc_vip_to_gid(qp->flow.dst_vip, a->dgid);
	a->cap = qp->cap;
	return reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

static int do_destroy_qp(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_handle_req *q = BODY(r, struct ovr_ctl_handle_req);

	if (!obj_get(c, q->handle, SVC_OBJ_QP))
		return status(c, r->h, -ENOENT);
	qp_destroy(s, c, q->handle);
	return status(c, r->h, 0);
}

static int do_qp_stats(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_handle_req *q = BODY(r, struct ovr_ctl_handle_req);
	struct svc_qp *qp = obj_get(c, q->handle, SVC_OBJ_QP);
	struct ovr_ctl_qp_stats_rep rep;
	struct ovr_eng_qp_stats st;

	if (!qp || ovr_eng_qp_stats(s->eng, qp->qpn, &st))
		return status(c, r->h, -ENOENT);
	rep = (struct ovr_ctl_qp_stats_rep){
		.state = st.state,
		.snd_una = st.snd_una,
		.snd_nxt = st.snd_nxt,
		.rcv_nxt = st.rcv_nxt,
		.inflight_pkts = st.inflight_pkts,
		.cwnd_bytes = st.cwnd_bytes,
		.srtt_ns = st.srtt_ns,
		.rto_ns = st.rto_ns,
		.tx_pkts = st.tx_pkts,
		.tx_bytes = st.tx_bytes,
		.rx_pkts = st.rx_pkts,
		.rx_bytes = st.rx_bytes,
		.retx_pkts = st.retx_pkts,
		.rto_count = st.rto_count,
		.tlp_count = st.tlp_count,
		.rack_lost = st.rack_lost,
		.rx_dup = st.rx_dup,
		.rx_ooo = st.rx_ooo,
	};
	return reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

/* ---- shared receive queues ------------------------------------------------ */

static int do_create_srq(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_create_srq_req *q =
		BODY(r, struct ovr_ctl_create_srq_req);
	struct ovr_ctl_create_srq_rep rep = { 0 };
	struct svc_pd *pd = obj_get(c, q->pd, SVC_OBJ_PD);
	struct ovr_eng_srq_init init;
	struct ovr_eng_srq_attr ea;
	struct svc_srq *srq;
	uint32_t db;
	int fd, rc;

	if (!pd)
		return status(c, r->h, -ENOENT);
	if (!q->attr.max_wr || q->attr.max_wr > SRQ_MAX_WR ||
	    !q->attr.max_sge || q->attr.max_sge > OVR_RING_SQ_MAX_SGE)
		return status(c, r->h, -EINVAL);
	if (c->nsrq >= s->conf.ctx_max_srq)
		return limit(c, r->h, LIM_SRQ, s->conf.ctx_max_srq, -ENOSPC);
	rc = db_alloc(c);
	if (rc < 0)
		return status(c, r->h, rc);
	db = (uint32_t)rc;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return status(c, r->h, -ENOMEM);
	init = (struct ovr_eng_srq_init){
		.pd = pd->id,
		.user = (uint64_t)(uintptr_t)srq,
		.attr = { .max_wr = q->attr.max_wr,
			  .max_sge = q->attr.max_sge },
	};
	rc = ovr_eng_srq_create(s->eng, &init, &srq->srqn);
	if (rc) {
		free(srq);
		return status(c, r->h, rc);
	}
	ovr_eng_srq_query(s->eng, srq->srqn, &ea);
	srq->ctx = c;
	srq->db_index = db;
	srq->pd_handle = q->pd;
	srq->user_handle = q->user_handle;
	srq->max_sge = ea.max_sge;
	/* room to grow max_wr (MODIFY_SRQ) without a new ring: up to 4x,
	 * within the engine's limit */
	srq->depth = (uint32_t)ovr_pow2_at_least(ea.max_wr);
	if (srq->depth * 4 <= SRQ_MAX_WR)
		srq->depth *= 4;
	else
		srq->depth = SRQ_MAX_WR > srq->depth ? SRQ_MAX_WR : srq->depth;
	srq->stride = (uint32_t)ovr_pow2_at_least(
		(uint32_t)(sizeof(struct ovr_ring_rwqe) +
			   ea.max_sge * sizeof(struct ovr_ring_sge)));
	rep.slots_off = PAGE;
	srq->map_len =
		page_up(rep.slots_off + (uint64_t)srq->depth * srq->stride);
	srq->ring = map_memfd("ovrdma-srq", srq->map_len, &fd);
	if (!srq->ring) {
		ovr_eng_srq_destroy(s->eng, srq->srqn);
		free(srq);
		return status(c, r->h, -ENOMEM);
	}
	srq->slots = (uint8_t *)srq->ring + rep.slots_off;
	rc = obj_new(c, SVC_OBJ_SRQ, srq, &srq->handle);
	if (rc) {
		ovr_eng_srq_destroy(s->eng, srq->srqn);
		munmap(srq->ring, srq->map_len);
		close(fd);
		free(srq);
		return status(c, r->h, rc);
	}
	c->db_srq[db] = srq;
	pd->users++;
	c->nsrq++;
	rep.srq = srq->handle;
	rep.srqn = srq->srqn;
	rep.attr.max_wr = ea.max_wr;
	rep.attr.max_sge = ea.max_sge;
	rep.depth = srq->depth;
	rep.stride = srq->stride;
	rep.map_len = srq->map_len;
	rep.db_index = db;
	rc = reply(c, r->h, 0, &rep, sizeof(rep), &fd, 1);
	close(fd);
	return rc;
}

static int do_modify_srq(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_modify_srq_req *q =
		BODY(r, struct ovr_ctl_modify_srq_req);
	struct svc_srq *srq = obj_get(c, q->srq, SVC_OBJ_SRQ);
	struct ovr_eng_srq_attr ea = { .max_wr = q->attr.max_wr,
				       .max_sge = q->attr.max_sge,
				       .srq_limit = q->attr.srq_limit };

	if (!srq)
		return status(c, r->h, -ENOENT);
	if (q->mask & ~(OVR_SRQ_MAX_WR | OVR_SRQ_LIMIT))
		return status(c, r->h, -EINVAL);
	/* the ring was sized at creation: max_wr grows up to its depth */
	if ((q->mask & OVR_SRQ_MAX_WR) && q->attr.max_wr > srq->depth)
		return status(c, r->h, -EINVAL);
	/* receives the ring holds may be posted against the old size:
	 * hand them to the engine first */
	svc_srq_kick(s, srq);
	return status(c, r->h,
		      ovr_eng_srq_modify(s->eng, srq->srqn, &ea, q->mask));
}

static int do_query_srq(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_handle_req *q = BODY(r, struct ovr_ctl_handle_req);
	struct svc_srq *srq = obj_get(c, q->handle, SVC_OBJ_SRQ);
	struct ovr_ctl_query_srq_rep rep = { 0 };
	struct ovr_eng_srq_attr ea;
	int rc;

	if (!srq)
		return status(c, r->h, -ENOENT);
	rc = ovr_eng_srq_query(s->eng, srq->srqn, &ea);
	if (rc)
		return status(c, r->h, rc);
	rep.attr.max_wr = ea.max_wr;
	rep.attr.max_sge = ea.max_sge;
	rep.attr.srq_limit = ea.srq_limit;
	return reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

static int do_destroy_srq(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_handle_req *q = BODY(r, struct ovr_ctl_handle_req);

	if (!obj_get(c, q->handle, SVC_OBJ_SRQ))
		return status(c, r->h, -ENOENT);
	return status(c, r->h, srq_destroy(s, c, q->handle));
}

/* ---- address handles ------------------------------------------------------ */

static int do_create_ah(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_create_ah_req *q =
		BODY(r, struct ovr_ctl_create_ah_req);
	const struct ovr_ctl_dev *d = &s->devs[c->dev].d;
	struct ovr_ctl_create_ah_rep rep = { 0 };
	struct svc_pd *pd = obj_get(c, q->pd, SVC_OBJ_PD);
	struct svc_ah *ah;
	uint32_t peer;
	int rc;

	if (!pd)
		return status(c, r->h, -ENOENT);
	/* RoCE: the destination is named by its GID, ::ffff:<vIP> */
	if (!q->is_global || q->sgid_index != 0 ||
	    (q->port_num && q->port_num != 1) ||
	    ovr_vpc_gid_to_vip(q->dgid, &peer))
		return status(c, r->h, -EINVAL);
	rc = ovr_vpc_may_connect(s->vpc, d->vni, d->vip, peer);
	if (rc)
		return status(c, r->h, rc);
	if (c->nah >= s->conf.ctx_max_ah)
		return limit(c, r->h, LIM_AH, s->conf.ctx_max_ah, -ENOSPC);
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return status(c, r->h, -ENOMEM);
	ah->pd_handle = q->pd;
	ah->dst_vip = peer;
	ah->dscp = (uint8_t)(q->traffic_class >> 2);
	rc = obj_new(c, SVC_OBJ_AH, ah, &rep.ah);
	if (rc) {
		free(ah);
		return status(c, r->h, rc);
	}
	pd->users++;
	c->nah++;
	return reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

static int do_destroy_ah(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_handle_req *q = BODY(r, struct ovr_ctl_handle_req);

	(void)s;
	/* UD WQEs already handed to the engine carry the address itself:
	 * an AH may go while sends that named it are in flight */
	if (!obj_get(c, q->handle, SVC_OBJ_AH))
		return status(c, r->h, -ENOENT);
	ah_destroy(c, q->handle);
	return status(c, r->h, 0);
}

/* ---- administration ------------------------------------------------------ */

static int do_adm(struct svc *s, struct svc_ctx *c, struct req *r)
{
	const struct ovr_ctl_hdr *h = r->h;
	int rc;

	if (c->uid != 0)
		return status(c, h, -EPERM);
	switch (h->op) {
	case OVR_CTL_ADM_TENANT_ADD:
	case OVR_CTL_ADM_TENANT_DEL: {
		const struct ovr_ctl_adm_tenant_req *q =
			BODY(r, struct ovr_ctl_adm_tenant_req);

		rc = h->op == OVR_CTL_ADM_TENANT_ADD ?
			     ovr_vpc_tenant_add(s->vpc, q->vni) :
			     ovr_vpc_tenant_del(s->vpc, q->vni);
		return status(c, h, rc);
	}
	case OVR_CTL_ADM_VIP_ADD:
	case OVR_CTL_ADM_VIP_MOVE:
	case OVR_CTL_ADM_VIP_DEL: {
		const struct ovr_ctl_adm_vip_req *q =
			BODY(r, struct ovr_ctl_adm_vip_req);
		struct ovr_vpc_binding b = { .host = q->host,
					     .dev = OVR_VPC_DEV_NONE };
		int old = dev_by_binding(s, q->vni, q->vip);
		char name[OVR_CTL_NAME_LEN];

		if (old >= 0 && s->devs[old].contexts &&
		    h->op != OVR_CTL_ADM_VIP_ADD)
			return status(c, h, -EBUSY);
		if (h->op == OVR_CTL_ADM_VIP_DEL) {
			rc = ovr_vpc_vip_del(s->vpc, q->vni, q->vip);
			if (!rc)
				svc_dev_del(s, q->vni, q->vip);
			return status(c, h, rc);
		}
		if (h->op == OVR_CTL_ADM_VIP_ADD && old >= 0)
			return status(c, h, -EEXIST);
		memcpy(b.mac, q->mac, 6);
		if (q->local) {
			if (q->host && q->host != s->conf.host)
				return status(c, h, -EINVAL);
			b.host = s->conf.host;
			memcpy(b.mac, s->mac, 6);
			memcpy(name, q->name, sizeof(name));
			name[sizeof(name) - 1] = 0;
			if (old >= 0)
				svc_dev_del(s, q->vni, q->vip);
			b.dev = svc_dev_add(s, q->vni, q->vip, name);
			if (b.dev < 0)
				return status(c, h, b.dev);
		} else if (old >= 0) {
			svc_dev_del(s, q->vni, q->vip);
		}
		rc = h->op == OVR_CTL_ADM_VIP_ADD ?
			     ovr_vpc_vip_add(s->vpc, q->vni, q->vip, &b) :
			     ovr_vpc_vip_move(s->vpc, q->vni, q->vip, &b);
		if (rc && b.dev >= 0)
			svc_dev_del(s, q->vni, q->vip);
		return status(c, h, rc);
	}
	case OVR_CTL_ADM_SG_SET: {
		const struct ovr_ctl_adm_sg_req *q = r->body;
		struct ovr_vpc_sg_rule rules[OVR_CTL_SG_MAX];

		if (r->blen < 8 || q->n > OVR_CTL_SG_MAX ||
		    r->blen != 8 + q->n * sizeof(q->rule[0]))
			return status(c, h, -EINVAL);
		for (uint32_t i = 0; i < q->n; i++) {
			if (q->rule[i].len > 32)
				return status(c, h, -EINVAL);
			rules[i].prefix = q->rule[i].prefix;
			rules[i].len = (uint8_t)q->rule[i].len;
		}
		rc = ovr_vpc_sg_set(s->vpc, q->vni, rules, q->n);
		return status(c, h, rc);
	}
	case OVR_CTL_ADM_SHOW: {
		const struct ovr_ctl_adm_show_req *q =
			BODY(r, struct ovr_ctl_adm_show_req);
		static char text[OVR_CTL_MSG_MAX - sizeof(struct ovr_ctl_hdr)];
		char what[sizeof(q->what) + 1];

		memcpy(what, q->what, sizeof(q->what));
		what[sizeof(q->what)] = 0;
		rc = svc_show(s, what, text, sizeof(text));
		if (rc < 0)
			return status(c, h, rc);
		return reply(c, h, 0, text, (size_t)rc, NULL, 0);
	}
	default:
		return status(c, h, -EOPNOTSUPP);
	}
}

/* ---- dispatch ------------------------------------------------------------ */

static int dispatch(struct svc *s, struct svc_ctx *c, struct req *r)
{
	uint16_t op = r->h->op;

	if (r->h->version != OVR_CTL_VERSION)
		return status(c, r->h, -EPROTO);
	if (op >= OVR_CTL_ADM_TENANT_ADD)
		return do_adm(s, c, r);
	if (op != OVR_CTL_HELLO && !c->hello)
		return status(c, r->h, -EPROTO);
	if (op > OVR_CTL_OPEN && c->dev < 0)
		return status(c, r->h, -EBADF);
	switch (op) {
	case OVR_CTL_HELLO:
		return do_hello(s, c, r);
	case OVR_CTL_LIST_DEVICES:
		return do_list(s, c, r);
	case OVR_CTL_OPEN:
		return do_open(s, c, r);
	case OVR_CTL_ALLOC_PD:
		return do_alloc_pd(s, c, r);
	case OVR_CTL_DEALLOC_PD:
		return do_dealloc_pd(s, c, r);
	case OVR_CTL_REG_MR:
		return do_reg_mr(s, c, r);
	case OVR_CTL_DEREG_MR:
		return do_dereg_mr(s, c, r);
	case OVR_CTL_REG_MR_GPU:
		return do_reg_mr_gpu(s, c, r);
	case OVR_CTL_CREATE_CHANNEL:
		return do_create_channel(s, c, r);
	case OVR_CTL_DESTROY_CHANNEL:
		return do_destroy_channel(s, c, r);
	case OVR_CTL_CREATE_CQ:
		return do_create_cq(s, c, r);
	case OVR_CTL_DESTROY_CQ:
		return do_destroy_cq(s, c, r);
	case OVR_CTL_CREATE_QP:
		return do_create_qp(s, c, r);
	case OVR_CTL_MODIFY_QP:
		return do_modify_qp(s, c, r);
	case OVR_CTL_QUERY_QP:
		return do_query_qp(s, c, r);
	case OVR_CTL_DESTROY_QP:
		return do_destroy_qp(s, c, r);
	case OVR_CTL_QP_STATS:
		return do_qp_stats(s, c, r);
	case OVR_CTL_CREATE_SRQ:
		return do_create_srq(s, c, r);
	case OVR_CTL_MODIFY_SRQ:
		return do_modify_srq(s, c, r);
	case OVR_CTL_QUERY_SRQ:
		return do_query_srq(s, c, r);
	case OVR_CTL_DESTROY_SRQ:
		return do_destroy_srq(s, c, r);
	case OVR_CTL_CREATE_AH:
		return do_create_ah(s, c, r);
	case OVR_CTL_DESTROY_AH:
		return do_destroy_ah(s, c, r);
	default:
		return status(c, r->h, -EOPNOTSUPP);
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
		struct req r = { .h = &buf.h, .fds = fds };
		ssize_t n = recvmsg(c->fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		int rc;

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) { /* hang-up: the application is gone */
			ctx_destroy(s, c);
			return;
		}
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm;
		     cm = CMSG_NXTHDR(&m, cm))
			if (cm->cmsg_level == SOL_SOCKET &&
			    cm->cmsg_type == SCM_RIGHTS) {
				int k = (int)((cm->cmsg_len - CMSG_LEN(0)) /
					      sizeof(int));

				for (int i = 0; i < k && r.nfds < MAX_FDS; i++)
					memcpy(&fds[r.nfds++],
					       CMSG_DATA(cm) + i * sizeof(int),
					       sizeof(int));
			}
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

/* ---- views (ovrdmactl show) --------------------------------------------- */

#define OUT(...)                                                      \
	do {                                                          \
		if (len < cap)                                        \
			len += (size_t)snprintf(buf + len, cap - len, \
						__VA_ARGS__);         \
	} while (0)

static uint64_t es_srqs(struct svc *s)
{
	uint64_t n = 0;

	for (struct svc_ctx *c = s->ctxs; c; c = c->next)
		n += c->nsrq;
	return n;
}

int svc_show(struct svc *s, const char *what, char *buf, size_t cap)
{
	size_t len = 0;

	if (!strcmp(what, "devices")) {
		OUT("%-10s %-9s %-15s %-6s %-9s %s\n", "device", "vni", "vip",
		    "mtu", "contexts", "guid");
		for (int i = 0; i < SVC_MAX_DEVS; i++) {
			const struct ovr_ctl_dev *d = &s->devs[i].d;

			if (!s->devs[i].used)
				continue;
			OUT("%-10s %-9u %u.%u.%u.%u %*s%-6u %-9u %016llx\n",
			    d->name, d->vni, d->vip >> 24, (d->vip >> 16) & 255,
			    (d->vip >> 8) & 255, d->vip & 255, 0, "",
			    128u << d->active_mtu, s->devs[i].contexts,
			    (unsigned long long)d->guid);
		}
	} else if (!strcmp(what, "contexts")) {
		OUT("%-5s %-8s %-6s %-16s %-10s %4s %4s %4s %4s %4s %12s\n",
		    "ctx", "pid", "uid", "client", "device", "qps", "cqs",
		    "mrs", "srqs", "ahs", "pinned");
		for (struct svc_ctx *c = s->ctxs; c; c = c->next)
			OUT("%-5u %-8d %-6u %-16s %-10s %4u %4u %4u %4u %4u "
			    "%12llu\n",
			    c->id, (int)c->pid, (unsigned)c->uid,
			    c->client[0] ? c->client : "-",
			    c->dev >= 0 ? s->devs[c->dev].d.name : "-", c->nqp,
			    c->ncq, c->nmr, c->nsrq, c->nah,
			    (unsigned long long)c->pinned);
	} else if (!strcmp(what, "qps")) {
		/* sq_new/rq_new: WQEs posted in the ring that the service
		 * has not taken yet (S: waiting for room in the engine) */
		OUT("%-5s %-8s %-6s %-5s %-15s %-8s %-8s %-8s %-8s %-9s %-8s "
		    "%-10s %-8s %-7s %-7s\n",
		    "ctx", "qpn", "type", "state", "peer", "dqpn", "snd_una",
		    "snd_nxt", "rcv_nxt", "cwnd", "srtt_us", "tx_pkts", "retx",
		    "sq_new", "rq_new");
		for (struct svc_ctx *c = s->ctxs; c; c = c->next)
			for (uint32_t i = 0; i < c->nobj; i++) {
				struct svc_qp *qp = c->obj[i].p;
				struct ovr_eng_qp_stats st;
				struct ovr_eng_qp_attr qa;
				uint32_t v;

				if (c->obj[i].type != SVC_OBJ_QP ||
				    ovr_eng_qp_stats(s->eng, qp->qpn, &st) ||
				    ovr_eng_qp_query(s->eng, qp->qpn, &qa))
					continue;
				v = qp->connected ? qp->flow.dst_vip : 0;
				/* UD QPs have no peer; "+S": takes its
				 * receives from an SRQ (rq_new: 0) */
				OUT("%-5u %-8u %-2s%-4s %-5u %3u.%3u.%3u.%3u "
				    "%-8u %-8u %-8u %-8u %-9u %-8llu %-10llu "
				    "%-8llu %-6u%c %-7u\n",
				    c->id, qp->qpn,
				    qp->type == OVR_QPT_UD ? "UD" : "RC",
				    qp->srq ? "+S" : "", st.state, v >> 24,
				    (v >> 16) & 255, (v >> 8) & 255, v & 255,
				    qa.dest_qp_num, st.snd_una, st.snd_nxt,
				    st.rcv_nxt, st.cwnd_bytes,
				    (unsigned long long)(st.srtt_ns / 1000),
				    (unsigned long long)st.tx_pkts,
				    (unsigned long long)st.retx_pkts,
				    atomic_load(&qp->ring->sq_prod) -
					    qp->sq_cons,
				    qp->stalled ? 'S' : ' ',
				    atomic_load(&qp->ring->rq_prod) -
					    qp->rq_cons);
			}
	} else if (!strcmp(what, "transport")) {
		/* every RC/UD QP's loss recovery and acknowledgement
		 * counters (docs/OPERATIONS.md section 8) */
		OUT("%-8s %-8s %-6s %-9s %-10s %-10s %-8s %-8s %-8s %-8s %-8s "
		    "%-10s %-8s %-8s %-8s %-10s %-10s\n",
		    "qpn", "inflight", "cwnd_kb", "rate_mbps", "tx_pkts",
		    "retx", "rack", "tlp", "rto", "rto_spur", "rto_us",
		    "rx_pkts", "rx_dup", "rx_ooo", "rx_out", "acks_sent",
		    "acks_rcvd");
		for (struct svc_ctx *c = s->ctxs; c; c = c->next)
			for (uint32_t i = 0; i < c->nobj; i++) {
				struct svc_qp *qp = c->obj[i].p;
				struct ovr_eng_qp_stats st;

				if (c->obj[i].type != SVC_OBJ_QP ||
				    ovr_eng_qp_stats(s->eng, qp->qpn, &st))
					continue;
				OUT("%-8u %-8u %-6u %-9llu %-10llu %-10llu "
				    "%-8llu %-8llu %-8llu %-8llu %-8llu %-10llu %-8llu "
				    "%-8llu %-8llu %-10llu %-10llu\n",
				    qp->qpn, st.inflight_pkts,
				    st.cwnd_bytes >> 10,
				    (unsigned long long)(st.rate_bps / 1000000),
				    (unsigned long long)st.tx_pkts,
				    (unsigned long long)st.retx_pkts,
				    (unsigned long long)st.rack_lost,
				    (unsigned long long)st.tlp_count,
				    (unsigned long long)st.rto_count,
				    (unsigned long long)st.rto_spurious,
				    (unsigned long long)(st.rto_ns / 1000),
				    (unsigned long long)st.rx_pkts,
				    (unsigned long long)st.rx_dup,
				    (unsigned long long)st.rx_ooo,
				    (unsigned long long)st.rx_outside,
				    (unsigned long long)st.acks_sent,
				    (unsigned long long)st.acks_rcvd);
			}
	} else if (!strcmp(what, "counters")) {
		const struct svc_counters *k = &s->cnt;
		struct ovr_eng_stats es;
		struct ovr_gdr_stats gs = { 0 };
		uint64_t drops[OVR_VPC_NDROP];

		ovr_eng_get_stats(s->eng, &es);
		if (s->gdr)
			ovr_gdr_get_stats(s->gdr, &gs);
		ovr_vpc_drop_stats(s->vpc, drops);
#define C(name, v) OUT("%-22s %llu\n", name, (unsigned long long)(v))
		C("port_link_up",
		  s->port_ops->link_up ? s->port_ops->link_up(s->port) : 1);
		if (s->port_ops->stats) {
			struct svc_port_stats ps = { 0 };

			s->port_ops->stats(s->port, &ps);
			C("port_tx_dropped", ps.tx_dropped);
			C("port_rx_missed", ps.rx_missed);
		}
		C("rx_frames", k->rx_frames);
		C("rx_bytes", k->rx_bytes);
		C("tx_frames", k->tx_frames);
		C("tx_bytes", k->tx_bytes);
		C("rx_dropped_overlay", k->rx_dropped_vpc);
		C("rx_short_pdu", k->rx_short_pdu);
		C("rx_no_qp", k->rx_no_qp);
		C("rx_foreign", k->rx_foreign);
		C("rx_ud_foreign", k->rx_ud_foreign);
		C("rx_ud", k->rx_ud);
		C("tx_ud", k->tx_ud);
		C("tx_no_route", k->tx_no_route);
		C("tx_answers", k->tx_answers);
		C("tx_loopback", k->tx_loopback);
		C("tx_loopback_full", k->tx_loopback_full);
		C("tx_nobuf", k->tx_nobuf);
		C("wqe_bad", k->wqe_bad);
		C("cq_overflows", k->cq_overflows);
		C("sleeps", k->sleeps);
		C("wakeups", k->wakeups);
		C("contexts", s->nctx);
		C("contexts_opened", k->ctx_opened);
		C("contexts_closed", k->ctx_closed);
		C("engine_qps", es.qps);
		C("engine_mrs", es.mrs);
		C("engine_tx_pkts", es.tx_pkts);
		C("engine_rx_pkts", es.rx_pkts);
		C("engine_rx_bad", es.rx_bad);
		C("engine_retx_pkts", es.retx_pkts);
		C("engine_rack_lost", es.rack_lost);
		C("engine_tlp", es.tlp_count);
		C("engine_rto", es.rto_count);
		C("engine_rto_spurious", es.rto_spurious);
		C("engine_rx_dup", es.rx_dup);
		C("engine_rx_no_qp", es.rx_no_qp);
		C("engine_tx_nobuf", es.tx_nobuf);
		C("engine_tx_term", es.tx_term);
		C("engine_rx_term", es.rx_term);
		C("engine_rx_term_bad", es.rx_term_bad);
		C("engine_rx_ud_qkey", es.rx_ud_qkey);
		C("engine_rx_ud_norecv", es.rx_ud_norecv);
		C("engine_tx_ud_too_long", es.tx_ud_too_long);
		C("engine_mr_revoked", es.mr_revoked);
		C("engine_rsp_probes", es.rsp_probes);
		C("engine_dev_copies", es.dev_copies);
		C("engine_dev_copy_bytes", es.dev_copy_bytes);
		C("engine_dev_copy_err", es.dev_copy_err);
		C("engine_dev_atomic_refused", es.dev_atomic_refused);
		C("engine_dev_async", es.dev_async);
		C("engine_dev_fences", es.dev_fences);
		C("engine_dev_fence_err", es.dev_fence_err);
		C("engine_dev_held", es.dev_held);
		C("engine_dev_batches", es.dev_batches);
		C("engine_dev_batch_max_inflight", es.dev_batch_max_inflight);
		C("engine_dev_batch_waits", es.dev_batch_waits);
		C("engine_dev_batch_not_ready", es.dev_batch_not_ready);
		C("dev_parked", k->dev_parked);
		C("dev_naps", k->dev_naps);
		C("gdr_imports", s->gdr ? ovr_gdr_nimports(s->gdr) : 0);
		C("gdr_refs", s->gdr ? ovr_gdr_nrefs(s->gdr) : 0);
		C("gdr_async_copies", gs.async_copies);
		C("gdr_async_bytes", gs.async_bytes);
		C("gdr_sync_copies", gs.sync_copies);
		C("gdr_fences", gs.fences);
		C("gdr_fence_errors", gs.fence_errors);
		C("gdr_stream_waits", gs.waits);
		C("gdr_batches", gs.batches);
		C("gdr_batch_events", gs.batch_events);
		C("gdr_batch_not_ready", gs.batch_not_ready);
		C("gdr_batch_waits", gs.batch_waits);
		C("gdr_batch_errors", gs.batch_errors);
		C("gdr_pinned_bytes", gs.pinned_bytes);
		C("gdr_bar", gs.bar);
		C("gdr_bar_copies", gs.bar_copies);
		C("gdr_bar_bytes", gs.bar_bytes);
		C("gdr_bar_reads", gs.bar_reads);
		C("gdr_bar_busy", gs.bar_busy);
		C("gdr_bar_pins", gs.bar_pins);
		C("gdr_bar_pin_failures", gs.bar_pin_failures);
		C("gdr_bar_mapped", gs.bar_mapped);
		C("srqs", es_srqs(s));
		for (unsigned int i = 1; i < OVR_VPC_NDROP; i++)
			if (drops[i]) {
				char n[48];

				snprintf(n, sizeof(n), "drop_%s",
					 ovr_vpc_drop_name(i));
				C(n, drops[i]);
			}
#undef C
	} else {
		return -EINVAL;
	}
	return (int)(len < cap ? len : cap - 1);
}
