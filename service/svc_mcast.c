// SPDX-License-Identifier: MIT
/*
 * UD multicast (docs/SERVICE.md, "Multicast"): which QPs of this node
 * are attached to which group of which tenant. ATTACH_MCAST and
 * DETACH_MCAST change it; the dataplane (svc_dp.c) reads it to deliver a
 * datagram sent to a group to every local member, and sends one copy to
 * each other node of the tenant (head-end replication, vpc/): no
 * membership crosses the network, each node filters by its own table.
 * A handful of groups per node is the use (rdma_cm's multicast, MPI
 * collectives over UD): lookups are linear.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "svc.h"

/* The group a multicast GID names: ::ffff:<addr>, or the IB-style
 * ff0e::ffff:<addr> (rdma_cm's mapping on IB), addr in 224.0.0.0/4;
 * 0 when it names none. */
static uint32_t gid_group(const uint8_t gid[16])
{
	static const uint8_t ib[12] = { 0xff, 0x0e, 0, 0, 0,	0,
					0,    0,    0, 0, 0xff, 0xff };
	uint32_t g;

	if (ovr_vpc_gid_to_vip(gid, &g)) {
		if (memcmp(gid, ib, sizeof(ib)))
			return 0;
		g = (uint32_t)gid[12] << 24 | (uint32_t)gid[13] << 16 |
		    (uint32_t)gid[14] << 8 | gid[15];
	}
	return ovr_vpc_is_mcast(g) ? g : 0;
}

uint32_t svc_mcast_group(const uint8_t gid[16])
{
	return gid_group(gid);
}

struct svc_mcast_grp *svc_mcast_find(struct svc *s, uint32_t vni,
				     uint32_t group)
{
	for (uint32_t i = 0; i < s->nmcast; i++)
		if (s->mcast[i].group == group && s->mcast[i].vni == vni)
			return &s->mcast[i];
	return NULL;
}

/* Takes member @k out of group @g (the caller counts it off its QP);
 * the group goes with its last member. */
static void member_del(struct svc *s, struct svc_mcast_grp *g, uint32_t k)
{
	g->m[k] = g->m[--g->n];
	s->mcast_attached--;
	if (g->n)
		return;
	free(g->m);
	*g = s->mcast[--s->nmcast];
}

static int attach(struct svc *s, struct svc_qp *qp, uint32_t group,
		  uint32_t flags)
{
	struct svc_mcast_grp *g = svc_mcast_find(s, qp->vni, group);
	bool no_lb = flags & OVR_CTL_MCAST_NO_LOOPBACK;

	if (g)
		for (uint32_t k = 0; k < g->n; k++)
			if (g->m[k].qp == qp) {
				g->m[k].no_loopback = no_lb;
				return 0; /* once is enough */
			}
	if (s->mcast_attached >= OVR_CTL_MCAST_MAX_TOTAL ||
	    (g && g->n >= OVR_CTL_MCAST_MAX_QP_ATTACH) ||
	    (!g && s->nmcast >= OVR_CTL_MCAST_MAX_GRP))
		return -ENOSPC;
	if (!g) {
		if (s->nmcast == s->mcast_cap) {
			uint32_t cap = s->mcast_cap ? 2 * s->mcast_cap : 8;
			struct svc_mcast_grp *p =
				realloc(s->mcast, cap * sizeof(*p));

			if (!p)
				return -ENOMEM;
			s->mcast = p;
			s->mcast_cap = cap;
		}
		g = &s->mcast[s->nmcast];
		*g = (struct svc_mcast_grp){ .vni = qp->vni, .group = group };
	}
	if (g->n == g->cap) {
		uint32_t cap = g->cap ? 2 * g->cap : 4;
		struct svc_mcast_member *m = realloc(g->m, cap * sizeof(*m));

		if (!m) {
			if (!g->n)
				free(g->m);
			return -ENOMEM;
		}
		g->m = m;
		g->cap = cap;
	}
	if (g == &s->mcast[s->nmcast])
		s->nmcast++;
	g->m[g->n++] =
		(struct svc_mcast_member){ .qp = qp, .no_loopback = no_lb };
	qp->nmcast++;
	s->mcast_attached++;
	return 0;
}

static int detach(struct svc *s, struct svc_qp *qp, uint32_t group)
{
	struct svc_mcast_grp *g = svc_mcast_find(s, qp->vni, group);

	for (uint32_t k = 0; g && k < g->n; k++)
		if (g->m[k].qp == qp) {
			qp->nmcast--;
			member_del(s, g, k);
			return 0;
		}
	return -EINVAL;
}

int svc_do_mcast(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_mcast_req *q =
		SVC_BODY(c, r, struct ovr_ctl_mcast_req);
	struct svc_qp *qp = svc_obj_get(c, q->qp, SVC_OBJ_QP);
	uint32_t group = gid_group(q->gid);
	int rc;

	if (!qp)
		return svc_status(c, r->h, -ENOENT);
	if (qp->type != OVR_QPT_UD || !group ||
	    (q->flags & ~OVR_CTL_MCAST_NO_LOOPBACK))
		return svc_status(c, r->h, -EINVAL);
	if (r->h->op == OVR_CTL_ATTACH_MCAST)
		rc = attach(s, qp, group, q->flags);
	else
		rc = detach(s, qp, group);
	return svc_status(c, r->h, rc);
}

void svc_mcast_qp_gone(struct svc *s, struct svc_qp *qp)
{
	for (uint32_t i = 0; i < s->nmcast && qp->nmcast;) {
		struct svc_mcast_grp *g = &s->mcast[i];
		bool gone = false;

		for (uint32_t k = 0; k < g->n; k++)
			if (g->m[k].qp == qp) {
				qp->nmcast--;
				gone = g->n == 1;
				member_del(s, g, k);
				break;
			}
		if (!gone)
			i++; /* else another group moved into slot i */
	}
}

void svc_mcast_fini(struct svc *s)
{
	for (uint32_t i = 0; i < s->nmcast; i++)
		free(s->mcast[i].m);
	free(s->mcast);
	s->mcast = NULL;
	s->nmcast = s->mcast_cap = s->mcast_attached = 0;
}
