// SPDX-License-Identifier: MIT
/*
 * librdmacm's rdma_cm device, served by the interposer (docs/PROVIDER.md,
 * "rdma_cm"). librdmacm opens /dev/infiniband/rdma_cm, checks that it is
 * a character device (fstat) and speaks the kernel's ucma ABI to it:
 * each command is one write() of struct rdma_ucm_cmd_hdr and a command
 * body, answers are written to the user pointer the body names.
 *
 * Here the open gives one end of a SOCK_SEQPACKET pair and a control
 * connection to ovrdmad that passed the other end (OVR_CTL_CM_OPEN):
 * ovrdmad runs the connection manager and sends each event as one
 * struct ovr_ctl_cm_event on the pair, so poll / epoll on the fd say
 * readable when an event is pending, as on the kernel's device.
 * write() turns each ucma command into one OVR_CTL_CM request (the one
 * converter between the two); GET_EVENT reads the next event from the
 * pair (blocking unless the fd is O_NONBLOCK) and writes the kernel's
 * struct rdma_ucm_event_resp.
 *
 * What the kernel keeps per id and ovrdmad has no use for stays here:
 * the application's uid (its cma_id_private), and how many events were
 * reported (DESTROY_ID answers it; librdmacm waits until as many were
 * acknowledged). Events for an id destroyed meanwhile are dropped here,
 * as the kernel drops them.
 *
 * Locking: chans[] slots are set and cleared under chans_lock and read
 * with atomics; a channel's ids under its own lock, never held across a
 * blocking call; the control connection serialises its requests.
 */
/* fstat and fstat64 are both defined here, each under its own name */
#undef _FILE_OFFSET_BITS

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <rdma/rdma_user_cm.h>

#include <ovrdma/client.h>
#include <ovrdma/ctl.h>
#include <ovrdma/verbs.h>

#include "ovrdma_preload.h"

#define CM_DEV_PATH "/dev/infiniband/rdma_cm"
#define CM_MAX_FD 65536 /* channels on higher fds are refused (EMFILE) */
#define AF_IB_FAMILY 27 /* AF_IB: librdmacm probes it; refused */

struct cm_uid {
	uint32_t id;
	uint32_t events; /* reported by GET_EVENT */
	uint64_t uid; /* the application's (0 until known) */
	uint8_t qp_type;
	/* RDMA_OPTION_ID_ACK_TIMEOUT: what INIT_QP_ATTR gives for RTS in
	 * place of ovrdmad's default, as the kernel's rdma_init_qp_attr */
	bool timeout_set;
	uint8_t timeout;
	/* a multicast join (JOIN_MCAST): its id is this channel's own,
	 * mc_of the id that joined; events name it, LEAVE_MCAST ends it */
	bool mc;
	uint32_t mc_of;
};

struct cm_chan {
	struct ovr_cl *cl;
	pthread_mutex_t lock; /* ids, n, cap */
	struct cm_uid *ids;
	unsigned int n, cap;
	uint32_t mc_next; /* the last multicast join's id */
	bool closed; /* the application closed the fd */
};

static struct cm_chan *_Atomic chans[CM_MAX_FD];
static _Atomic unsigned int nchans; /* 0: write() and close() pass */
static pthread_mutex_t chans_lock = PTHREAD_MUTEX_INITIALIZER;

static void *next_write, *next_fstat, *next_fstat64;

void ovrdma_cm_resolve(void)
{
	NEXT(write);
	NEXT(fstat);
	NEXT(fstat64);
}

static struct cm_chan *chan_of(int fd)
{
	if (!atomic_load_explicit(&nchans, memory_order_acquire) || fd < 0 ||
	    fd >= CM_MAX_FD)
		return NULL;
	return atomic_load_explicit(&chans[fd], memory_order_acquire);
}

bool ovrdma_cm_is_dev(const char *path)
{
	return path && strcmp(path, CM_DEV_PATH) == 0;
}

/* The control socket: $OVRDMA_SOCKET, else what the tree's first device
 * names, else the default (NULL). */
static const char *socket_path(char *buf, size_t cap)
{
	struct ovrdma_nl_devs devs;
	char p[PATH_MAX + 64];
	FILE *f;

	if (getenv("OVRDMA_SOCKET"))
		return getenv("OVRDMA_SOCKET");
	ovrdma_tree_devs(&devs);
	for (unsigned int i = 0; i < devs.n; i++) {
		snprintf(p, sizeof(p), "%s/class/infiniband/%s/ovrdma_socket",
			 ovrdma_where.tree, devs.dev[i].name);
		f = fopen(p, "re");
		if (!f)
			continue;
		if (fgets(buf, (int)cap, f)) {
			buf[strcspn(buf, "\n")] = 0;
			fclose(f);
			return buf;
		}
		fclose(f);
	}
	return NULL;
}

int ovrdma_cm_open(int flags)
{
	char path[PATH_MAX];
	struct cm_chan *ch;
	int sv[2], rc, e;

	if (socketpair(AF_UNIX,
		       SOCK_SEQPACKET | (flags & O_CLOEXEC ? SOCK_CLOEXEC : 0) |
			       (flags & O_NONBLOCK ? SOCK_NONBLOCK : 0),
		       0, sv))
		return -1;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		goto err_pair;
	pthread_mutex_init(&ch->lock, NULL);
	ch->cl = ovr_cl_connect(socket_path(path, sizeof(path)), "rdma_cm");
	if (!ch->cl) {
		errno = ENODEV; /* no ovrdmad: no rdma_cm device */
		goto err_chan;
	}
	rc = ovr_cl_cm_open(ch->cl, sv[1]);
	if (rc) {
		errno = rc == -EOPNOTSUPP || rc == -EPROTO ? ENODEV : -rc;
		goto err_cl;
	}
	close(sv[1]);
	if (sv[0] >= CM_MAX_FD) {
		errno = EMFILE;
		sv[1] = -1;
		goto err_cl;
	}
	pthread_mutex_lock(&chans_lock);
	atomic_store_explicit(&chans[sv[0]], ch, memory_order_release);
	atomic_fetch_add(&nchans, 1);
	pthread_mutex_unlock(&chans_lock);
	return sv[0];

err_cl:
	ovr_cl_close(ch->cl);
err_chan:
	e = errno;
	free(ch);
	errno = e;
err_pair:
	e = errno;
	close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	errno = e;
	return -1;
}

void ovrdma_cm_close(int fd)
{
	struct cm_chan *ch = chan_of(fd);

	if (!ch)
		return;
	pthread_mutex_lock(&chans_lock);
	atomic_store_explicit(&chans[fd], NULL, memory_order_release);
	atomic_fetch_sub(&nchans, 1);
	pthread_mutex_unlock(&chans_lock);
	/* ovrdmad destroys the channel's ids. The channel itself stays
	 * (about 100 bytes): a thread of the application may still be in
	 * GET_EVENT on it, as on the kernel's device, where it blocks on
	 * until the process ends */
	pthread_mutex_lock(&ch->lock);
	ch->closed = true;
	ovr_cl_close(ch->cl);
	ch->cl = NULL;
	free(ch->ids);
	ch->ids = NULL;
	ch->n = ch->cap = 0;
	pthread_mutex_unlock(&ch->lock);
}

/* ---- ids ------------------------------------------------------------------ */

/* Must hold ch->lock: id @id, or (@mc) multicast join @id */
static struct cm_uid *find(struct cm_chan *ch, uint32_t id, bool mc)
{
	for (unsigned int i = 0; i < ch->n; i++)
		if (ch->ids[i].id == id && ch->ids[i].mc == mc)
			return &ch->ids[i];
	return NULL;
}

static struct cm_uid *uid_find(struct cm_chan *ch, uint32_t id)
{
	return find(ch, id, false);
}

/* Must hold ch->lock: entry @u out of the table */
static void uid_del(struct cm_chan *ch, struct cm_uid *u)
{
	ch->n--;
	memmove(u, u + 1, (size_t)(ch->ids + ch->n - u) * sizeof(*u));
}

/* Must hold ch->lock: the multicast joins of id @id go with it */
static void mc_del_of(struct cm_chan *ch, uint32_t id)
{
	for (unsigned int i = 0; i < ch->n;)
		if (ch->ids[i].mc && ch->ids[i].mc_of == id)
			uid_del(ch, &ch->ids[i]);
		else
			i++;
}

/* Must hold ch->lock */
static int uid_add(struct cm_chan *ch, uint32_t id, uint64_t uid,
		   uint8_t qp_type)
{
	if (ch->n == ch->cap) {
		unsigned int cap = ch->cap ? ch->cap * 2 : 16;
		struct cm_uid *p = realloc(ch->ids, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		ch->ids = p;
		ch->cap = cap;
	}
	ch->ids[ch->n++] =
		(struct cm_uid){ .id = id, .uid = uid, .qp_type = qp_type };
	return 0;
}

/* ---- addresses ------------------------------------------------------------ */

/* An IPv4 address out of a sockaddr the application gave: AF_INET, or
 * an IPv4-mapped (or unspecified) AF_INET6. */
static int addr_in(const void *sa, size_t len, struct ovr_ctl_cm_addr *a)
{
	sa_family_t fam;

	memset(a, 0, sizeof(*a));
	if (len < sizeof(fam))
		return -EINVAL;
	memcpy(&fam, sa, sizeof(fam));
	if (fam == AF_UNSPEC)
		return 0;
	if (fam == AF_INET) {
		struct sockaddr_in in;

		memcpy(&in, sa, sizeof(in));
		a->ip = ntohl(in.sin_addr.s_addr);
		a->port = ntohs(in.sin_port);
		a->set = 1;
		return 0;
	}
	if (fam == AF_INET6) {
		struct sockaddr_in6 in6;

		memcpy(&in6, sa, sizeof(in6));
		if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr))
			memcpy(&a->ip, &in6.sin6_addr.s6_addr[12], 4);
		else if (!IN6_IS_ADDR_UNSPECIFIED(&in6.sin6_addr))
			return -EAFNOSUPPORT; /* vIPs are IPv4 */
		a->ip = ntohl(a->ip);
		a->port = ntohs(in6.sin6_port);
		a->set = 1;
		return 0;
	}
	return -EAFNOSUPPORT;
}

static void addr_out(const struct ovr_ctl_cm_addr *a, void *sa)
{
	struct sockaddr_in in = { .sin_family = AF_INET };

	in.sin_addr.s_addr = htonl(a->ip);
	in.sin_port = htons(a->port);
	memcpy(sa, &in, sizeof(in));
}

static void gid_of(uint32_t vip, uint8_t gid[16])
{
	uint32_t be = htonl(vip);

	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, &be, 4);
}

/* ---- commands ------------------------------------------------------------- */

static int cm_call(struct cm_chan *ch, struct ovr_ctl_cm_req *q,
		   struct ovr_ctl_cm_rep *rep)
{
	int rc;

	memset(rep, 0, sizeof(*rep));
	rc = ovr_cl_request(ch->cl, OVR_CTL_CM, q, sizeof(*q), rep,
			    sizeof(*rep));
	return rc < 0 ? rc : 0;
}

static void conn_in(const struct rdma_ucm_conn_param *p,
		    struct ovr_ctl_cm_conn *c)
{
	c->qp_num = p->qp_num;
	c->qkey = p->qkey;
	c->private_data_len = p->private_data_len;
	memcpy(c->private_data, p->private_data, sizeof(p->private_data));
	c->srq = p->srq;
	c->responder_resources = p->responder_resources;
	c->initiator_depth = p->initiator_depth;
	c->retry_count = p->retry_count;
	c->rnr_retry_count = p->rnr_retry_count;
}

static int put(uint64_t response, const void *src, size_t len, size_t out)
{
	if (!response)
		return -EFAULT;
	memcpy((void *)(uintptr_t)response, src, len < out ? len : out);
	return 0;
}

/* The path every resolved id has (a RoCE v2 path over the vIPs): what
 * QUERY_ROUTE's ib_route and QUERY PATH's packed record both say. */
#define PATH_MTU OVR_MTU_1024
#define PATH_HOP_LIMIT 64
#define PATH_RATE 3 /* IB_RATE_10_GBPS, "exactly" */
#define PATH_LIFETIME 14
#define PATH_SEL_EXACTLY 2

/* librdmacm's sockaddr_ib (infiniband/ib.h): QUERY GID's addresses */
struct cm_sockaddr_ib {
	uint16_t sib_family; /* AF_IB */
	uint16_t sib_pkey; /* big-endian */
	uint32_t sib_flowinfo;
	uint8_t sib_addr[16]; /* the GID */
	uint64_t sib_sid; /* big-endian service ID */
	uint64_t sib_sid_mask;
	uint64_t sib_scope_id;
};
_Static_assert(sizeof(struct cm_sockaddr_ib) == 48, "sockaddr_ib");

#ifndef AF_IB
#define AF_IB 27
#endif
/* The service ID of port @port in port space @ps (the kernel's
 * rdma_get_service_id for an IP address), big-endian. */
static uint64_t service_id(uint16_t ps, uint16_t port)
{
	return htobe64(((uint64_t)ps << 16) + port);
}

static void route_of(const struct ovr_ctl_cm_rep *rep,
		     struct rdma_ucm_query_route_resp *r)
{
	memset(r, 0, sizeof(*r));
	r->node_guid = htobe64(rep->guid);
	r->port_num = rep->guid ? 1 : 0;
	r->ibdev_index = UINT32_MAX; /* match by GUID (librdmacm) */
	addr_out(&rep->src, &r->src_addr);
	if (rep->dst.set)
		addr_out(&rep->dst, &r->dst_addr);
	gid_of(rep->src.ip, r->ib_route[0].sgid);
	if (rep->dst.set)
		gid_of(rep->dst.ip, r->ib_route[0].dgid);
	r->num_paths = rep->routed ? 1 : 0;
	r->ib_route[0].pkey = htobe16(0xffff);
	r->ib_route[0].mtu = PATH_MTU;
	r->ib_route[0].hop_limit = PATH_HOP_LIMIT;
	r->ib_route[0].numb_path = 1;
	r->ib_route[0].mtu_selector = PATH_SEL_EXACTLY;
	r->ib_route[0].rate_selector = PATH_SEL_EXACTLY;
	r->ib_route[0].rate = PATH_RATE;
	r->ib_route[0].packet_life_time_selector = PATH_SEL_EXACTLY;
	r->ib_route[0].packet_life_time = PATH_LIFETIME;
	r->ib_route[0].reversible = 1;
}

/*
 * @rep's path as an SA PathRecord (IBA 15.2.5.16, 64 bytes, big-endian;
 * the kernel's ib_sa_pack_path): service ID, DGID, SGID, LIDs 0 (RoCE),
 * hop limit, reversible with one path, P_Key, MTU, rate and packet
 * lifetime with their selectors.
 */
static void pack_path(const struct ovr_ctl_cm_rep *rep, uint8_t rec[64])
{
	uint64_t sid = service_id(rep->ps, rep->dst.port);

	memset(rec, 0, 64);
	memcpy(rec, &sid, 8);
	gid_of(rep->dst.ip, rec + 8);
	gid_of(rep->src.ip, rec + 24);
	/* 40: DLID, 42: SLID, 44: raw traffic, flow label */
	rec[47] = PATH_HOP_LIMIT;
	/* 48: traffic class 0 */
	rec[49] = 0x80 | 1; /* reversible, NumbPath 1 */
	rec[50] = rec[51] = 0xff; /* P_Key */
	/* 52: QoS class, SL 0 */
	rec[54] = (uint8_t)(PATH_SEL_EXACTLY << 6 | PATH_MTU);
	rec[55] = (uint8_t)(PATH_SEL_EXACTLY << 6 | PATH_RATE);
	rec[56] = (uint8_t)(PATH_SEL_EXACTLY << 6 | PATH_LIFETIME);
	/* 57: preference 0 */
}

/* QUERY GID's address: the GID of @a's vIP, its port's service ID. */
static void gid_addr_out(const struct ovr_ctl_cm_addr *a, uint16_t ps, void *sa)
{
	struct cm_sockaddr_ib ib = { .sib_family = AF_IB,
				     .sib_pkey = htobe16(0xffff) };

	if (a->set) {
		gid_of(a->ip, ib.sib_addr);
		ib.sib_sid = service_id(ps, a->port);
	}
	memcpy(sa, &ib, sizeof(ib));
}

/*
 * QUERY_ROUTE, and QUERY's ADDR, PATH and GID, answered as the kernel's
 * ucma does: ENOSPC where the response cannot hold the fixed part,
 * ENOSYS for another option.
 */
static int cmd_query(struct cm_chan *ch, const struct rdma_ucm_query *c,
		     bool route, size_t out)
{
	struct ovr_ctl_cm_req q = { .cmd = OVR_CM_QUERY, .id = c->id };
	struct ovr_ctl_cm_rep rep;
	int rc;

	if (!route && c->option != RDMA_USER_CM_QUERY_ADDR &&
	    c->option != RDMA_USER_CM_QUERY_PATH &&
	    c->option != RDMA_USER_CM_QUERY_GID)
		return -ENOSYS;
	if ((route &&
	     out < offsetof(struct rdma_ucm_query_route_resp, ibdev_index)) ||
	    (!route && c->option != RDMA_USER_CM_QUERY_PATH &&
	     out < offsetof(struct rdma_ucm_query_addr_resp, ibdev_index)) ||
	    (!route && c->option == RDMA_USER_CM_QUERY_PATH &&
	     out < sizeof(struct rdma_ucm_query_path_resp)))
		return -ENOSPC;
	rc = cm_call(ch, &q, &rep);
	if (rc)
		return rc;
	if (route) {
		struct rdma_ucm_query_route_resp r;

		route_of(&rep, &r);
		return put(c->response, &r, sizeof(r), out);
	}
	if (c->option == RDMA_USER_CM_QUERY_PATH) {
		/* the response and one record */
		uint8_t r[sizeof(struct rdma_ucm_query_path_resp) +
			  sizeof(struct ib_path_rec_data)] = { 0 };
		struct rdma_ucm_query_path_resp h = { 0 };
		struct ib_path_rec_data p = { 0 };
		size_t len = sizeof(h);

		h.num_paths = rep.routed ? 1 : 0;
		/* the kernel's loop fits a record only where more than one
		 * record's room is left after the header */
		if (rep.routed && out - sizeof(h) > sizeof(p)) {
			p.flags = IB_PATH_GMP | IB_PATH_PRIMARY |
				  IB_PATH_BIDIRECTIONAL;
			pack_path(&rep, (uint8_t *)p.path_rec);
			memcpy(r + sizeof(h), &p, sizeof(p));
			len = sizeof(r);
		}
		memcpy(r, &h, sizeof(h));
		return put(c->response, &r, len, out);
	}
	struct rdma_ucm_query_addr_resp r = { 0 };

	r.node_guid = htobe64(rep.guid);
	r.port_num = rep.guid ? 1 : 0;
	r.pkey = htobe16(0xffff);
	r.ibdev_index = UINT32_MAX;
	if (c->option == RDMA_USER_CM_QUERY_GID) {
		r.src_size = sizeof(struct cm_sockaddr_ib);
		r.dst_size = sizeof(struct cm_sockaddr_ib);
		gid_addr_out(&rep.src, rep.ps, &r.src_addr);
		gid_addr_out(&rep.dst, rep.ps, &r.dst_addr);
	} else {
		r.src_size = sizeof(struct sockaddr_in);
		addr_out(&rep.src, &r.src_addr);
		if (rep.dst.set) {
			r.dst_size = sizeof(struct sockaddr_in);
			addr_out(&rep.dst, &r.dst_addr);
		}
	}
	return put(c->response, &r, sizeof(r), out);
}

static void qp_attr_of(const struct ovr_ctl_cm_qp_attr *a,
		       struct ib_uverbs_qp_attr *k)
{
	memset(k, 0, sizeof(*k));
	k->qp_attr_mask = a->mask;
	k->qp_state = a->state;
	k->path_mtu = a->path_mtu;
	k->qkey = a->qkey;
	k->rq_psn = a->rq_psn;
	k->sq_psn = a->sq_psn;
	k->dest_qp_num = a->dest_qpn;
	k->qp_access_flags = a->access;
	if (a->mask & OVR_QP_AV) {
		gid_of(a->dgid_vip, k->ah_attr.grh.dgid);
		k->ah_attr.grh.hop_limit = a->hop_limit;
		k->ah_attr.is_global = 1;
		k->ah_attr.port_num = a->port_num;
	}
	k->pkey_index = a->pkey_index;
	k->max_rd_atomic = a->max_rd_atomic;
	k->max_dest_rd_atomic = a->max_dest_rd_atomic;
	k->min_rnr_timer = a->min_rnr_timer;
	k->port_num = a->port_num;
	k->timeout = a->timeout;
	k->retry_cnt = a->retry_cnt;
	k->rnr_retry = a->rnr_retry;
}

/* GET_EVENT: the next event of a live id, as the kernel writes it. */
static int cmd_get_event(int fd, struct cm_chan *ch,
			 const struct rdma_ucm_get_event *c, size_t out)
{
	struct rdma_ucm_event_resp r;
	struct ovr_ctl_cm_event e;
	struct cm_uid *u, *l;
	uint8_t qp_type;
	ssize_t n;

	for (;;) {
		n = recv(fd, &e, sizeof(e), 0);
		if (n < 0)
			return -errno;
		if (n != sizeof(e) && ch->closed) {
			/* closed under a reader: the kernel's reader waits
			 * until the process ends (librdmacm's programs
			 * destroy the channel while their event thread is
			 * in rdma_get_cm_event) */
			for (;;)
				pause();
		}
		if (n != sizeof(e))
			return -EIO; /* ovrdmad went away */
		memset(&r, 0, sizeof(r));
		r.id = e.id;
		r.event = e.event;
		r.status = (uint32_t)e.status;
		pthread_mutex_lock(&ch->lock);
		if (e.event == OVR_CM_EV_CONNECT_REQUEST) {
			l = uid_find(ch, e.listen_id);
			if (!l) {
				/* the listener is gone: so goes its new id,
				 * as the kernel destroys it (a REJ to the
				 * peer) */
				struct ovr_ctl_cm_req q = {
					.cmd = OVR_CM_DESTROY_ID, .id = e.id
				};
				struct ovr_ctl_cm_rep rep;

				bool closed = ch->closed;

				pthread_mutex_unlock(&ch->lock);
				if (!closed)
					cm_call(ch, &q, &rep);
				continue;
			}
			l->events++;
			r.uid = l->uid;
			qp_type = l->qp_type;
			if (uid_add(ch, e.id, 0, qp_type)) {
				pthread_mutex_unlock(&ch->lock);
				return -ENOMEM;
			}
		} else {
			bool mc = e.event == OVR_CM_EV_MULTICAST_JOIN ||
				  e.event == OVR_CM_EV_MULTICAST_ERROR;

			u = find(ch, e.id, mc);
			if (!u) {
				pthread_mutex_unlock(&ch->lock);
				continue; /* destroyed (left) meanwhile */
			}
			u->events++;
			r.uid = u->uid;
			qp_type = u->qp_type;
			/* the id that joined counts it too: librdmacm's
			 * acknowledgement does, and DESTROY_ID answers
			 * with its count */
			if (mc && (l = uid_find(ch, u->mc_of)))
				l->events++;
		}
		if (qp_type == OVR_QPT_UD) {
			struct rdma_ucm_ud_param *p = &r.param.ud;

			p->qp_num = e.conn.qp_num;
			p->qkey = e.conn.qkey;
			if (e.ud_vip) {
				gid_of(e.ud_vip, p->ah_attr.grh.dgid);
				p->ah_attr.grh.hop_limit = 64;
				p->ah_attr.is_global = 1;
				p->ah_attr.port_num = 1;
			}
			p->private_data_len = e.conn.private_data_len;
			memcpy(p->private_data, e.conn.private_data,
			       sizeof(p->private_data));
		} else {
			struct rdma_ucm_conn_param *p = &r.param.conn;

			p->qp_num = e.conn.qp_num;
			p->private_data_len = e.conn.private_data_len;
			memcpy(p->private_data, e.conn.private_data,
			       sizeof(p->private_data));
			p->responder_resources = e.conn.responder_resources;
			p->initiator_depth = e.conn.initiator_depth;
			p->retry_count = e.conn.retry_count;
			p->rnr_retry_count = e.conn.rnr_retry_count;
			p->valid = 1;
		}
		pthread_mutex_unlock(&ch->lock);
		return put(c->response, &r, sizeof(r), out);
	}
}

/*
 * JOIN_IP_MCAST / JOIN_MCAST: id @id joins the group at @sa. The join is
 * an id of this channel (answered in @response), which the
 * MULTICAST_JOIN event names and LEAVE_MCAST ends; ovrdmad checks the id
 * and the group and sends the event (svc_cm.c, do_join).
 */
static int cmd_join(struct cm_chan *ch, uint64_t response, uint64_t uid,
		    uint32_t id, const void *sa, size_t len, uint32_t flags,
		    size_t out)
{
	struct ovr_ctl_cm_req q = { .cmd = OVR_CM_JOIN_MCAST,
				    .id = id,
				    .arg = flags };
	struct rdma_ucm_create_id_resp r = { 0 };
	struct ovr_ctl_cm_rep rep;
	struct cm_uid *u;
	int rc = addr_in(sa, len, &q.dst);

	if (rc)
		return rc;
	pthread_mutex_lock(&ch->lock);
	if (!uid_find(ch, id)) {
		pthread_mutex_unlock(&ch->lock);
		return -ENOENT;
	}
	do
		r.id = ++ch->mc_next;
	while (!r.id || find(ch, r.id, true));
	rc = uid_add(ch, r.id, uid, OVR_QPT_UD);
	if (!rc) {
		ch->ids[ch->n - 1].mc = true;
		ch->ids[ch->n - 1].mc_of = id;
	}
	pthread_mutex_unlock(&ch->lock);
	if (rc)
		return rc;
	q.arg2 = r.id;
	rc = cm_call(ch, &q, &rep);
	if (!rc)
		rc = put(response, &r, sizeof(r), out);
	if (rc) {
		pthread_mutex_lock(&ch->lock);
		u = find(ch, r.id, true);
		if (u)
			uid_del(ch, u);
		pthread_mutex_unlock(&ch->lock);
	}
	return rc;
}

/* LEAVE_MCAST: the join ends here (the application detached its QP
 * first); the answer is how many events it reported. */
static int cmd_leave(struct cm_chan *ch, const struct rdma_ucm_destroy_id *c,
		     size_t out)
{
	struct rdma_ucm_destroy_id_resp r = { 0 };
	struct cm_uid *u;

	pthread_mutex_lock(&ch->lock);
	u = find(ch, c->id, true);
	if (!u) {
		pthread_mutex_unlock(&ch->lock);
		return -ENOENT;
	}
	r.events_reported = u->events;
	uid_del(ch, u);
	pthread_mutex_unlock(&ch->lock);
	return put(c->response, &r, sizeof(r), out);
}

/*
 * MIGRATE_ID, written to the channel @ch the id moves to; c->fd is the
 * one it leaves (librdmacm's rdma_migrate_id, and rdma_get_request on a
 * synchronous listener). ovrdmad sends the id's events to @ch from now
 * on; its uid and the count of events reported move along, and that
 * count is the answer (librdmacm waits until as many were acked).
 */
static int cmd_migrate(struct cm_chan *ch, const struct rdma_ucm_migrate_id *c,
		       size_t out)
{
	struct rdma_ucm_migrate_resp r = { 0 };
	struct ovr_ctl_cm_req q = { .cmd = OVR_CM_MIGRATE, .id = c->id };
	struct cm_chan *old = chan_of((int)c->fd);
	struct ovr_ctl_cm_rep rep;
	struct cm_uid *u, moved;
	int rc;

	if (!old)
		return -EINVAL; /* not an rdma_cm channel (the kernel's) */
	pthread_mutex_lock(&old->lock);
	u = uid_find(old, c->id);
	if (u)
		moved = *u;
	pthread_mutex_unlock(&old->lock);
	if (!u)
		return -ENOENT;
	if (old == ch) {
		r.events_reported = moved.events;
		return put(c->response, &r, sizeof(r), out);
	}
	rc = cm_call(ch, &q, &rep);
	if (rc)
		return rc;
	pthread_mutex_lock(&old->lock);
	u = uid_find(old, c->id);
	if (u) {
		moved = *u;
		old->n--;
		memmove(u, u + 1, (size_t)(old->ids + old->n - u) * sizeof(*u));
	}
	pthread_mutex_unlock(&old->lock);
	pthread_mutex_lock(&ch->lock);
	rc = uid_add(ch, moved.id, moved.uid, moved.qp_type);
	if (!rc)
		ch->ids[ch->n - 1] = moved; /* events, options */
	pthread_mutex_unlock(&ch->lock);
	if (rc)
		return rc;
	r.events_reported = moved.events;
	return put(c->response, &r, sizeof(r), out);
}

/* The body of the command as a const @type *, or -EINVAL. */
#define BODY(type)                      \
	({                              \
		if (in < sizeof(type))  \
			return -EINVAL; \
		(const type *)body;     \
	})

static int cm_command(int fd, struct cm_chan *ch, uint32_t cmd,
		      const void *body, size_t in, size_t out)
{
	struct ovr_ctl_cm_req q = { 0 };
	struct ovr_ctl_cm_rep rep;
	int rc;

	switch (cmd) {
	case RDMA_USER_CM_CMD_CREATE_ID: {
		const struct rdma_ucm_create_id *c =
			BODY(struct rdma_ucm_create_id);
		struct rdma_ucm_create_id_resp r;

		if (c->ps == RDMA_PS_IPOIB)
			return -EINVAL;
		q.cmd = OVR_CM_CREATE_ID;
		q.arg = c->ps;
		q.arg2 = c->qp_type;
		rc = cm_call(ch, &q, &rep);
		if (rc)
			return rc;
		pthread_mutex_lock(&ch->lock);
		rc = uid_add(ch, rep.id, c->uid, c->qp_type);
		pthread_mutex_unlock(&ch->lock);
		if (rc)
			return rc;
		r.id = rep.id;
		return put(c->response, &r, sizeof(r), out);
	}
	case RDMA_USER_CM_CMD_DESTROY_ID: {
		const struct rdma_ucm_destroy_id *c =
			BODY(struct rdma_ucm_destroy_id);
		struct rdma_ucm_destroy_id_resp r = { 0 };
		struct cm_uid *u;

		q.cmd = OVR_CM_DESTROY_ID;
		q.id = c->id;
		rc = cm_call(ch, &q, &rep);
		if (rc)
			return rc;
		pthread_mutex_lock(&ch->lock);
		u = uid_find(ch, c->id);
		if (u) {
			r.events_reported = u->events;
			uid_del(ch, u);
			mc_del_of(ch, c->id);
		}
		pthread_mutex_unlock(&ch->lock);
		return put(c->response, &r, sizeof(r), out);
	}
	case RDMA_USER_CM_CMD_BIND_IP: {
		const struct rdma_ucm_bind_ip *c =
			BODY(struct rdma_ucm_bind_ip);

		rc = addr_in(&c->addr, sizeof(c->addr), &q.src);
		q.cmd = OVR_CM_BIND;
		q.id = c->id;
		return rc ? rc : cm_call(ch, &q, &rep);
	}
	case RDMA_USER_CM_CMD_BIND: {
		const struct rdma_ucm_bind *c = BODY(struct rdma_ucm_bind);

		rc = addr_in(&c->addr, c->addr_size, &q.src);
		q.cmd = OVR_CM_BIND;
		q.id = c->id;
		return rc ? rc : cm_call(ch, &q, &rep);
	}
	case RDMA_USER_CM_CMD_RESOLVE_IP: {
		const struct rdma_ucm_resolve_ip *c =
			BODY(struct rdma_ucm_resolve_ip);

		rc = addr_in(&c->src_addr, sizeof(c->src_addr), &q.src);
		rc = rc ? rc :
			  addr_in(&c->dst_addr, sizeof(c->dst_addr), &q.dst);
		q.cmd = OVR_CM_RESOLVE_ADDR;
		q.id = c->id;
		q.arg = c->timeout_ms;
		return rc ? rc : cm_call(ch, &q, &rep);
	}
	case RDMA_USER_CM_CMD_RESOLVE_ADDR: {
		const struct rdma_ucm_resolve_addr *c =
			BODY(struct rdma_ucm_resolve_addr);

		rc = c->src_size ? addr_in(&c->src_addr, c->src_size, &q.src) :
				   0;
		rc = rc ? rc : addr_in(&c->dst_addr, c->dst_size, &q.dst);
		q.cmd = OVR_CM_RESOLVE_ADDR;
		q.id = c->id;
		q.arg = c->timeout_ms;
		return rc ? rc : cm_call(ch, &q, &rep);
	}
	case RDMA_USER_CM_CMD_RESOLVE_ROUTE: {
		const struct rdma_ucm_resolve_route *c =
			BODY(struct rdma_ucm_resolve_route);

		q.cmd = OVR_CM_RESOLVE_ROUTE;
		q.id = c->id;
		q.arg = c->timeout_ms;
		return cm_call(ch, &q, &rep);
	}
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
		return cmd_query(ch, BODY(struct rdma_ucm_query), true, out);
	case RDMA_USER_CM_CMD_QUERY:
		return cmd_query(ch, BODY(struct rdma_ucm_query), false, out);
	case RDMA_USER_CM_CMD_LISTEN: {
		const struct rdma_ucm_listen *c = BODY(struct rdma_ucm_listen);

		q.cmd = OVR_CM_LISTEN;
		q.id = c->id;
		q.arg = c->backlog;
		return cm_call(ch, &q, &rep);
	}
	case RDMA_USER_CM_CMD_CONNECT: {
		const struct rdma_ucm_connect *c =
			BODY(struct rdma_ucm_connect);

		q.cmd = OVR_CM_CONNECT;
		q.id = c->id;
		conn_in(&c->conn_param, &q.conn);
		return cm_call(ch, &q, &rep);
	}
	case RDMA_USER_CM_CMD_ACCEPT: {
		const struct rdma_ucm_accept *c = BODY(struct rdma_ucm_accept);
		struct cm_uid *u;

		q.cmd = OVR_CM_ACCEPT;
		q.id = c->id;
		conn_in(&c->conn_param, &q.conn);
		rc = cm_call(ch, &q, &rep);
		if (rc || !c->uid)
			return rc;
		pthread_mutex_lock(&ch->lock);
		u = uid_find(ch, c->id);
		if (u)
			u->uid = c->uid;
		pthread_mutex_unlock(&ch->lock);
		return 0;
	}
	case RDMA_USER_CM_CMD_REJECT: {
		const struct rdma_ucm_reject *c = BODY(struct rdma_ucm_reject);

		q.cmd = OVR_CM_REJECT;
		q.id = c->id;
		q.arg = c->reason;
		q.conn.private_data_len = c->private_data_len;
		memcpy(q.conn.private_data, c->private_data,
		       sizeof(c->private_data));
		return cm_call(ch, &q, &rep);
	}
	case RDMA_USER_CM_CMD_DISCONNECT: {
		const struct rdma_ucm_disconnect *c =
			BODY(struct rdma_ucm_disconnect);

		q.cmd = OVR_CM_DISCONNECT;
		q.id = c->id;
		return cm_call(ch, &q, &rep);
	}
	case RDMA_USER_CM_CMD_INIT_QP_ATTR: {
		const struct rdma_ucm_init_qp_attr *c =
			BODY(struct rdma_ucm_init_qp_attr);
		struct ib_uverbs_qp_attr r;

		struct cm_uid *u;

		q.cmd = OVR_CM_INIT_QP_ATTR;
		q.id = c->id;
		q.arg = c->qp_state;
		rc = cm_call(ch, &q, &rep);
		if (rc)
			return rc;
		pthread_mutex_lock(&ch->lock);
		u = uid_find(ch, c->id);
		if (u && u->timeout_set && (rep.qp.mask & OVR_QP_TIMEOUT))
			rep.qp.timeout = u->timeout;
		pthread_mutex_unlock(&ch->lock);
		qp_attr_of(&rep.qp, &r);
		return put(c->response, &r, sizeof(r), out);
	}
	case RDMA_USER_CM_CMD_GET_EVENT:
		return cmd_get_event(fd, ch, BODY(struct rdma_ucm_get_event),
				     out);
	case RDMA_USER_CM_CMD_SET_OPTION: {
		const struct rdma_ucm_set_option *c =
			BODY(struct rdma_ucm_set_option);

		struct cm_uid *u;

		/* an IB path record has no meaning here */
		if (c->level != RDMA_OPTION_ID)
			return -EINVAL;
		/* TOS, REUSEADDR, AFONLY: taken, without effect */
		if (c->optname != RDMA_OPTION_ID_ACK_TIMEOUT)
			return 0;
		/* the kernel's checks: one byte, RC ids only */
		if (c->optlen != 1 || !c->optval)
			return -EINVAL;
		rc = -ENOENT;
		pthread_mutex_lock(&ch->lock);
		u = uid_find(ch, c->id);
		if (u && u->qp_type != OVR_QPT_RC) {
			rc = -EINVAL;
		} else if (u) {
			u->timeout = *(const uint8_t *)(uintptr_t)c->optval;
			u->timeout_set = true;
			rc = 0;
		}
		pthread_mutex_unlock(&ch->lock);
		return rc;
	}
	case RDMA_USER_CM_CMD_NOTIFY: {
		const struct rdma_ucm_notify *c = BODY(struct rdma_ucm_notify);

		q.cmd = OVR_CM_NOTIFY;
		q.id = c->id;
		q.arg = c->event;
		return cm_call(ch, &q, &rep);
	}
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		return cmd_migrate(ch, BODY(struct rdma_ucm_migrate_id), out);
	case RDMA_USER_CM_CMD_JOIN_IP_MCAST: {
		const struct rdma_ucm_join_ip_mcast *c =
			BODY(struct rdma_ucm_join_ip_mcast);

		return cmd_join(ch, c->response, c->uid, c->id, &c->addr,
				sizeof(c->addr), 0, out);
	}
	case RDMA_USER_CM_CMD_JOIN_MCAST: {
		const struct rdma_ucm_join_mcast *c =
			BODY(struct rdma_ucm_join_mcast);

		if (c->addr_size > sizeof(c->addr))
			return -EINVAL;
		return cmd_join(ch, c->response, c->uid, c->id, &c->addr,
				c->addr_size, c->join_flags, out);
	}
	case RDMA_USER_CM_CMD_LEAVE_MCAST:
		return cmd_leave(ch, BODY(struct rdma_ucm_destroy_id), out);
	case RDMA_USER_CM_CMD_GET_OPTION:
		return -ENOSYS; /* not supported (docs/PROVIDER.md) */
	default:
		return -EINVAL;
	}
}

#define EXPORT __attribute__((visibility("default")))

EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	struct cm_chan *ch = chan_of(fd);
	struct rdma_ucm_cmd_hdr h;
	int rc;

	if (!ch)
		return NEXT(write)(fd, buf, len);
	/* as the kernel's ucma_write() */
	if (len < sizeof(h)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.in + sizeof(h) > len) {
		errno = EINVAL;
		return -1;
	}
	rc = cm_command(fd, ch, h.cmd, (const char *)buf + sizeof(h), h.in,
			h.out);
	if (rc) {
		errno = -rc;
		return -1;
	}
	return (ssize_t)len;
}

/* librdmacm checks that its device is a character device. */
static void as_chardev(struct stat *st)
{
	st->st_mode = (st->st_mode & 07777) | S_IFCHR;
	st->st_rdev = makedev(10, 58); /* the kernel's misc rdma_cm */
}

EXPORT int fstat(int fd, struct stat *st)
{
	int rc = NEXT(fstat)(fd, st);

	if (!rc && chan_of(fd))
		as_chardev(st);
	return rc;
}

EXPORT int fstat64(int fd, struct stat64 *st)
{
	int rc = NEXT(fstat64)(fd, st);

	if (!rc && chan_of(fd)) {
		st->st_mode = (st->st_mode & 07777) | S_IFCHR;
		st->st_rdev = makedev(10, 58);
	}
	return rc;
}
