// SPDX-License-Identifier: MIT
/*
 * Administration (root only, ovrdmactl): the devices that local vIPs
 * get, tenants, vIP bindings and security groups in the overlay, and the
 * text views of ADM_SHOW (docs/OPERATIONS.md).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "svc.h"

/* ---- devices ------------------------------------------------------------- */

/* A free "ovrdma<n>" in @buf. */
static void dev_auto_name(struct svc *s, char *buf, size_t len)
{
	for (unsigned int n = 0;; n++) {
		bool taken = false;

		snprintf(buf, len, "ovrdma%u", n % 1000u);
		for (int i = 0; i < SVC_MAX_DEVS; i++)
			if (s->devs[i].used && !strcmp(s->devs[i].d.name, buf))
				taken = true;
		if (!taken)
			break;
	}
}

/* The most entries a CQ of this service may be asked for: its ring must
 * fit both SVC_CQ_MAX_DEPTH and cq_mb_per_context. */
static uint32_t dev_max_cqe(const struct svc *s)
{
	uint32_t depth = SVC_CQ_MAX_DEPTH;

	while (depth > 2 && SVC_CQ_RING_LEN(depth) > s->conf.ctx_max_cq_bytes)
		depth >>= 1;
	return depth - 1; /* cqe + 1 is rounded up to the ring's depth */
}

/* What the device @d of the vIP @vip in tenant @vni reports. */
static void dev_describe(struct svc *s, struct ovr_ctl_dev *d, uint32_t vni,
			 uint32_t vip, const char *name)
{
	int mtu = ovr_vpc_active_mtu(s->conf.underlay_mtu);

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->vni = vni;
	d->vip = vip;
	d->guid = (0x02ull << 56) | ((uint64_t)(vni & 0xffffff) << 32) | vip;
	d->rate_bps = s->conf.rate_bps;
	d->active_mtu = mtu > 0 ? (uint32_t)mtu : 1;
	d->underlay_mtu = s->conf.underlay_mtu;
	/* a context's QPs: its limit, the doorbell bits, the node's */
	d->max_qp = s->conf.ctx_max_qp < OVR_RING_MAX_QP_PER_CTX ?
			    s->conf.ctx_max_qp :
			    OVR_RING_MAX_QP_PER_CTX;
	if (d->max_qp > s->conf.eng_max_qp)
		d->max_qp = s->conf.eng_max_qp;
	d->max_qp_wr = SVC_QP_MAX_WR;
	d->max_sge = OVR_RING_SQ_MAX_SGE;
	d->max_inline = OVR_RING_MAX_INLINE;
	d->max_cq = s->conf.ctx_max_cq;
	d->max_cqe = dev_max_cqe(s);
	d->max_mr = s->conf.ctx_max_mr;
	d->max_pd = s->conf.ctx_max_pd;
	d->max_mr_size = SVC_MR_MAX_SIZE;
	d->max_qp_rd_atom = 16;
	d->max_qp_init_rd_atom = 16;
	d->atomic_cap = 1; /* IBV_ATOMIC_HCA */
	d->max_srq = s->conf.ctx_max_srq;
	d->max_srq_wr = SVC_SRQ_MAX_WR;
	d->max_srq_sge = OVR_RING_SQ_MAX_SGE;
	d->max_ah = s->conf.ctx_max_ah;
	d->num_comp_vectors = 1;
}

int svc_dev_add(struct svc *s, uint32_t vni, uint32_t vip, const char *name)
{
	int slot = -1;
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
		dev_auto_name(s, auto_name, sizeof(auto_name));
		name = auto_name;
	}
	dev_describe(s, &s->devs[slot].d, vni, vip, name);
	s->devs[slot].used = true;
	s->devs[slot].contexts = 0;
	svc_sysfs_add(s, &s->devs[slot].d);
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

/* ---- administrative requests --------------------------------------------- */

static int adm_tenant(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_adm_tenant_req *q =
		SVC_BODY(c, r, struct ovr_ctl_adm_tenant_req);
	int rc = r->h->op == OVR_CTL_ADM_TENANT_ADD ?
			 ovr_vpc_tenant_add(s->vpc, q->vni) :
			 ovr_vpc_tenant_del(s->vpc, q->vni);

	return svc_status(c, r->h, rc);
}

/* VIP_ADD and VIP_MOVE: a local vIP gets a device (anew on a move), a
 * remote one loses the device it had here. */
static int adm_vip_bind(struct svc *s, struct svc_ctx *c, struct svc_req *r,
			const struct ovr_ctl_adm_vip_req *q, int old)
{
	const struct ovr_ctl_hdr *h = r->h;
	struct ovr_vpc_binding b = { .host = q->host, .dev = OVR_VPC_DEV_NONE };
	char name[OVR_CTL_NAME_LEN];
	int rc;

	memcpy(b.mac, q->mac, 6);
	if (q->local) {
		if (q->host && q->host != s->conf.host)
			return svc_status(c, h, -EINVAL);
		b.host = s->conf.host;
		memcpy(b.mac, s->mac, 6);
		memcpy(name, q->name, sizeof(name));
		name[sizeof(name) - 1] = 0;
		if (old >= 0)
			svc_dev_del(s, q->vni, q->vip);
		b.dev = svc_dev_add(s, q->vni, q->vip, name);
		if (b.dev < 0)
			return svc_status(c, h, b.dev);
	} else if (old >= 0) {
		svc_dev_del(s, q->vni, q->vip);
	}
	rc = h->op == OVR_CTL_ADM_VIP_ADD ?
		     ovr_vpc_vip_add(s->vpc, q->vni, q->vip, &b) :
		     ovr_vpc_vip_move(s->vpc, q->vni, q->vip, &b);
	if (rc && b.dev >= 0)
		svc_dev_del(s, q->vni, q->vip);
	return svc_status(c, h, rc);
}

static int adm_vip(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_hdr *h = r->h;
	const struct ovr_ctl_adm_vip_req *q =
		SVC_BODY(c, r, struct ovr_ctl_adm_vip_req);
	int old = dev_by_binding(s, q->vni, q->vip);
	int rc;

	if (old >= 0 && s->devs[old].contexts && h->op != OVR_CTL_ADM_VIP_ADD)
		return svc_status(c, h, -EBUSY);
	if (h->op == OVR_CTL_ADM_VIP_DEL) {
		rc = ovr_vpc_vip_del(s->vpc, q->vni, q->vip);
		if (!rc)
			svc_dev_del(s, q->vni, q->vip);
		return svc_status(c, h, rc);
	}
	if (h->op == OVR_CTL_ADM_VIP_ADD && old >= 0)
		return svc_status(c, h, -EEXIST);
	return adm_vip_bind(s, c, r, q, old);
}

static int adm_sg(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_adm_sg_req *q = r->body;
	struct ovr_vpc_sg_rule rules[OVR_CTL_SG_MAX];

	if (r->blen < 8 || q->n > OVR_CTL_SG_MAX ||
	    r->blen != 8 + q->n * sizeof(q->rule[0]))
		return svc_status(c, r->h, -EINVAL);
	for (uint32_t i = 0; i < q->n; i++) {
		if (q->rule[i].len > 32)
			return svc_status(c, r->h, -EINVAL);
		rules[i].prefix = q->rule[i].prefix;
		rules[i].len = (uint8_t)q->rule[i].len;
	}
	return svc_status(c, r->h, ovr_vpc_sg_set(s->vpc, q->vni, rules, q->n));
}

static int adm_show(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_adm_show_req *q =
		SVC_BODY(c, r, struct ovr_ctl_adm_show_req);
	static char text[OVR_CTL_MSG_MAX - sizeof(struct ovr_ctl_hdr)];
	char what[sizeof(q->what) + 1];
	int rc;

	memcpy(what, q->what, sizeof(q->what));
	what[sizeof(q->what)] = 0;
	rc = svc_show(s, what, text, sizeof(text));
	if (rc < 0)
		return svc_status(c, r->h, rc);
	return svc_reply(c, r->h, 0, text, (size_t)rc, NULL, 0);
}

int svc_do_adm(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	if (c->uid != 0)
		return svc_status(c, r->h, -EPERM);
	switch (r->h->op) {
	case OVR_CTL_ADM_TENANT_ADD:
	case OVR_CTL_ADM_TENANT_DEL:
		return adm_tenant(s, c, r);
	case OVR_CTL_ADM_VIP_ADD:
	case OVR_CTL_ADM_VIP_MOVE:
	case OVR_CTL_ADM_VIP_DEL:
		return adm_vip(s, c, r);
	case OVR_CTL_ADM_SG_SET:
		return adm_sg(s, c, r);
	case OVR_CTL_ADM_SHOW:
		return adm_show(s, c, r);
	default:
		return svc_status(c, r->h, -EOPNOTSUPP);
	}
}

/* ---- views (ovrdmactl show) --------------------------------------------- */

/* A view's text: @len counts what snprintf wanted, past @cap when cut. */
struct show_buf {
	char *buf;
	size_t len, cap;
};

static void __attribute__((format(printf, 2, 3)))
out(struct show_buf *b, const char *fmt, ...)
{
	va_list ap;

	if (b->len >= b->cap)
		return;
	va_start(ap, fmt);
	b->len += (size_t)vsnprintf(b->buf + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
}

static void counter(struct show_buf *b, const char *name, uint64_t v)
{
	out(b, "%-22s %llu\n", name, (unsigned long long)v);
}

static void show_devices(struct svc *s, struct show_buf *b)
{
	out(b, "%-10s %-9s %-15s %-6s %-9s %s\n", "device", "vni", "vip", "mtu",
	    "contexts", "guid");
	for (int i = 0; i < SVC_MAX_DEVS; i++) {
		const struct ovr_ctl_dev *d = &s->devs[i].d;

		if (!s->devs[i].used)
			continue;
		out(b, "%-10s %-9u %u.%u.%u.%u %*s%-6u %-9u %016llx\n", d->name,
		    d->vni, d->vip >> 24, (d->vip >> 16) & 255,
		    (d->vip >> 8) & 255, d->vip & 255, 0, "",
		    128u << d->active_mtu, s->devs[i].contexts,
		    (unsigned long long)d->guid);
	}
}

static void show_contexts(struct svc *s, struct show_buf *b)
{
	out(b, "%-5s %-8s %-6s %-16s %-10s %4s %4s %4s %4s %4s %12s\n", "ctx",
	    "pid", "uid", "client", "device", "qps", "cqs", "mrs", "srqs",
	    "ahs", "pinned");
	for (struct svc_ctx *c = s->ctxs; c; c = c->next)
		out(b,
		    "%-5u %-8d %-6u %-16s %-10s %4u %4u %4u %4u %4u "
		    "%12llu\n",
		    c->id, (int)c->pid, (unsigned)c->uid,
		    c->client[0] ? c->client : "-",
		    c->dev >= 0 ? s->devs[c->dev].d.name : "-", c->nqp, c->ncq,
		    c->nmr, c->nsrq, c->nah, (unsigned long long)c->pinned);
}

static void show_qp(struct show_buf *b, struct svc_ctx *c, struct svc_qp *qp)
{
	struct ovr_eng_qp_stats st;
	struct ovr_eng_qp_attr qa;
	uint32_t v;

	if (ovr_eng_qp_stats(qp->core->eng, qp->qpn, &st) ||
	    ovr_eng_qp_query(qp->core->eng, qp->qpn, &qa))
		return;
	v = qp->connected ? qp->flow.dst_vip : 0;
	/* UD QPs have no peer; "+S": takes its receives from an SRQ
	 * (rq_new: 0) */
	out(b,
	    "%-5u %-8u %-2s%-4s %-5u %3u.%3u.%3u.%3u "
	    "%-8u %-8u %-8u %-8u %-9u %-8llu %-10llu "
	    "%-8llu %-6u%c %-7u %u\n",
	    c->id, qp->qpn,
	    qp->type == OVR_QPT_UD ? "UD" :
	    qp->type == OVR_QPT_UC ? "UC" :
				     "RC",
	    qp->srq ? "+S" : "", st.state, v >> 24, (v >> 16) & 255,
	    (v >> 8) & 255, v & 255, qa.dest_qp_num, st.snd_una, st.snd_nxt,
	    st.rcv_nxt, st.cwnd_bytes, (unsigned long long)(st.srtt_ns / 1000),
	    (unsigned long long)st.tx_pkts, (unsigned long long)st.retx_pkts,
	    atomic_load(&qp->ring->sq_prod) - qp->sq_cons,
	    qp->stalled ? 'S' : ' ',
	    atomic_load(&qp->ring->rq_prod) - qp->rq_cons, qp->core->idx);
}

static void show_qps(struct svc *s, struct show_buf *b)
{
	/* sq_new/rq_new: WQEs posted in the ring that the service has not
	 * taken yet (S: waiting for room in the engine); core: the
	 * dataplane core serving it */
	out(b,
	    "%-5s %-8s %-6s %-5s %-15s %-8s %-8s %-8s %-8s %-9s %-8s "
	    "%-10s %-8s %-7s %-7s %s\n",
	    "ctx", "qpn", "type", "state", "peer", "dqpn", "snd_una", "snd_nxt",
	    "rcv_nxt", "cwnd", "srtt_us", "tx_pkts", "retx", "sq_new", "rq_new",
	    "core");
	for (struct svc_ctx *c = s->ctxs; c; c = c->next)
		for (uint32_t i = 0; i < c->nobj; i++)
			if (c->obj[i].type == SVC_OBJ_QP)
				show_qp(b, c, c->obj[i].p);
}

static const char *mr_route_name(enum svc_mr_route r)
{
	switch (r) {
	case SVC_MR_OBJ:
		return "object";
	case SVC_MR_PROC:
		return "process";
	case SVC_MR_GPU:
		return "gpu";
	}
	return "?";
}

static void show_mr(struct show_buf *b, const struct svc_ctx *c, uint32_t h,
		    const struct svc_mr *mr)
{
	char acc[5], segs[12] = "-", trunc[24] = "-";
	int n = 0;

	/* L local write, W remote write, R remote read, A remote atomic */
	if (mr->access & OVR_ACCESS_LOCAL_WRITE)
		acc[n++] = 'L';
	if (mr->access & OVR_ACCESS_REMOTE_WRITE)
		acc[n++] = 'W';
	if (mr->access & OVR_ACCESS_REMOTE_READ)
		acc[n++] = 'R';
	if (mr->access & OVR_ACCESS_REMOTE_ATOMIC)
		acc[n++] = 'A';
	if (!n)
		acc[n++] = '-';
	acc[n] = 0;
	/* segments and truncated pages exist on the object route only */
	if (mr->route == SVC_MR_OBJ) {
		snprintf(segs, sizeof(segs), "%u", mr->nseg_obj);
		snprintf(trunc, sizeof(trunc), "%llu",
			 (unsigned long long)mr->truncated);
	}
	/* odp: explicit or implicit on-demand paging (an implicit region
	 * is 0 + 2^64 - 1) */
	out(b, "%-5u %-8d %-6u %-10u %-18llx %-20llu %-6s %-8s %-4s %-9s %s\n",
	    c->id, (int)c->pid, h, mr->key, (unsigned long long)mr->va,
	    (unsigned long long)mr->len, acc, mr_route_name(mr->route), segs,
	    trunc,
	    mr->implicit ? "implicit" :
	    mr->odp	 ? "explicit" :
			   "-");
}

/* every registered memory region, and how the service reaches it
 * (docs/SERVICE.md section 4); lkey and rkey are the same key */
static void show_mrs(struct svc *s, struct show_buf *b)
{
	out(b, "%-5s %-8s %-6s %-10s %-18s %-20s %-6s %-8s %-4s %-9s %s\n",
	    "ctx", "pid", "handle", "key", "va", "length", "access", "route",
	    "segs", "truncated", "odp");
	for (struct svc_ctx *c = s->ctxs; c; c = c->next)
		for (uint32_t i = 0; i < c->nobj; i++)
			if (c->obj[i].type == SVC_OBJ_MR)
				show_mr(b, c, i + 1, c->obj[i].p);
}

static void show_qp_transport(struct show_buf *b, struct svc_qp *qp)
{
	struct ovr_eng_qp_stats st;

	if (ovr_eng_qp_stats(qp->core->eng, qp->qpn, &st))
		return;
	out(b,
	    "%-8u %-8u %-6u %-9llu %-10llu %-10llu "
	    "%-8llu %-8llu %-8llu %-8llu %-8llu %-10llu %-8llu "
	    "%-8llu %-8llu %-10llu %-10llu\n",
	    qp->qpn, st.inflight_pkts, st.cwnd_bytes >> 10,
	    (unsigned long long)(st.rate_bps / 1000000),
	    (unsigned long long)st.tx_pkts, (unsigned long long)st.retx_pkts,
	    (unsigned long long)st.rack_lost, (unsigned long long)st.tlp_count,
	    (unsigned long long)st.rto_count,
	    (unsigned long long)st.rto_spurious,
	    (unsigned long long)(st.rto_ns / 1000),
	    (unsigned long long)st.rx_pkts, (unsigned long long)st.rx_dup,
	    (unsigned long long)st.rx_ooo, (unsigned long long)st.rx_outside,
	    (unsigned long long)st.acks_sent, (unsigned long long)st.acks_rcvd);
}

/* every RC/UD QP's loss recovery and acknowledgement counters
 * (docs/OPERATIONS.md section 8) */
static void show_transport(struct svc *s, struct show_buf *b)
{
	out(b,
	    "%-8s %-8s %-6s %-9s %-10s %-10s %-8s %-8s %-8s %-8s %-8s "
	    "%-10s %-8s %-8s %-8s %-10s %-10s\n",
	    "qpn", "inflight", "cwnd_kb", "rate_mbps", "tx_pkts", "retx",
	    "rack", "tlp", "rto", "rto_spur", "rto_us", "rx_pkts", "rx_dup",
	    "rx_ooo", "rx_out", "acks_sent", "acks_rcvd");
	for (struct svc_ctx *c = s->ctxs; c; c = c->next)
		for (uint32_t i = 0; i < c->nobj; i++)
			if (c->obj[i].type == SVC_OBJ_QP)
				show_qp_transport(b, c->obj[i].p);
}

/* the port's and the service's own counters */
static void show_counters_svc(struct svc *s, struct show_buf *b)
{
	struct svc_counters sum;
	const struct svc_counters *k = &sum;

	svc_counters_sum(s, &sum);
	counter(b, "port_link_up",
		s->port_ops->link_up ? s->port_ops->link_up(s->port) : 1);
	if (s->port_ops->stats) {
		struct svc_port_stats ps = { 0 };

		s->port_ops->stats(s->port, &ps);
		counter(b, "port_tx_dropped", ps.tx_dropped);
		counter(b, "port_rx_missed", ps.rx_missed);
	}
	counter(b, "rx_frames", k->rx_frames);
	counter(b, "rx_bytes", k->rx_bytes);
	counter(b, "tx_frames", k->tx_frames);
	counter(b, "tx_bytes", k->tx_bytes);
	counter(b, "rx_dropped_overlay", k->rx_dropped_vpc);
	counter(b, "rx_short_pdu", k->rx_short_pdu);
	counter(b, "rx_no_qp", k->rx_no_qp);
	counter(b, "rx_foreign", k->rx_foreign);
	counter(b, "rx_ud_foreign", k->rx_ud_foreign);
	counter(b, "tx_mcast", k->tx_mcast);
	counter(b, "tx_mcast_copies", k->tx_mcast_copies);
	counter(b, "tx_mcast_truncated", k->tx_mcast_truncated);
	counter(b, "rx_mcast", k->rx_mcast);
	counter(b, "rx_mcast_delivered", k->rx_mcast_delivered);
	counter(b, "rx_mcast_nomember", k->rx_mcast_nomember);
	counter(b, "cm_mcast_joins", k->cm_mcast_joins);
	counter(b, "rx_ud", k->rx_ud);
	counter(b, "tx_ud", k->tx_ud);
	counter(b, "tx_no_route", k->tx_no_route);
	counter(b, "tx_answers", k->tx_answers);
	counter(b, "tx_loopback", k->tx_loopback);
	counter(b, "tx_loopback_full", k->tx_loopback_full);
	counter(b, "tx_nobuf", k->tx_nobuf);
	counter(b, "wqe_bad", k->wqe_bad);
	counter(b, "cm_rx", k->cm_rx);
	counter(b, "cm_tx", k->cm_tx);
	counter(b, "cm_rx_bad", k->cm_rx_bad);
	counter(b, "cm_retx", k->cm_retx);
	counter(b, "cm_ev_dropped", k->cm_ev_dropped);
	counter(b, "cm_ev_queued", k->cm_ev_queued);
	counter(b, "cm_ids", k->cm_ids);
	counter(b, "cm_listening", svc_cm_listening(s));
	counter(b, "cq_overflows", k->cq_overflows);
	counter(b, "sleeps", k->sleeps);
	counter(b, "wakeups", k->wakeups);
	counter(b, "busy_rounds", k->busy_rounds);
	counter(b, "busy_ns", k->busy_ns);
	counter(b, "poll_ns", k->poll_ns);
	counter(b, "busy_smp_ns", k->busy_smp_ns);
	counter(b, "busy_smp_cpu_ns", k->busy_smp_cpu_ns);
	counter(b, "poll_smp_ns", k->poll_smp_ns);
	counter(b, "poll_smp_cpu_ns", k->poll_smp_cpu_ns);
	counter(b, "contexts", s->nctx);
	counter(b, "contexts_opened", k->ctx_opened);
	counter(b, "contexts_closed", k->ctx_closed);
	counter(b, "mr_route_obj", k->mr_route_obj);
	counter(b, "mr_route_proc", k->mr_route_proc);
	counter(b, "mr_odp", k->mr_odp);
	counter(b, "mr_odp_implicit", k->mr_odp_implicit);
	counter(b, "proc_copy_bytes", k->proc_copy_bytes);
	counter(b, "proc_copy_calls", k->proc_copy_calls);
	counter(b, "proc_copy_fault", k->proc_copy_fault);
	counter(b, "proc_copy_queued", k->proc_copy_queued);
	counter(b, "proc_ra_hits", k->proc_ra_hits);
	counter(b, "proc_pf_reads", k->proc_pf_reads);
	counter(b, "proc_pf_hits", k->proc_pf_hits);
	counter(b, "dataplane_cores", s->ncores);
	counter(b, "xcore_frames", k->xcore_frames);
	counter(b, "xcore_full", k->xcore_full);
	counter(b, "mr_obj_truncated_pages", svc_mem_truncated_pages());
}

static void show_counters_engine(struct svc *s, struct show_buf *b)
{
	struct ovr_eng_stats es;

	svc_eng_stats(s, &es);
	counter(b, "engine_qps", es.qps);
	counter(b, "engine_mrs", es.mrs);
	counter(b, "engine_tx_pkts", es.tx_pkts);
	counter(b, "engine_rx_pkts", es.rx_pkts);
	counter(b, "engine_rx_bad", es.rx_bad);
	counter(b, "engine_retx_pkts", es.retx_pkts);
	counter(b, "engine_rack_lost", es.rack_lost);
	counter(b, "engine_tlp", es.tlp_count);
	counter(b, "engine_rto", es.rto_count);
	counter(b, "engine_rto_spurious", es.rto_spurious);
	counter(b, "engine_rx_dup", es.rx_dup);
	counter(b, "engine_rx_no_qp", es.rx_no_qp);
	counter(b, "engine_tx_nobuf", es.tx_nobuf);
	counter(b, "engine_tx_term", es.tx_term);
	counter(b, "engine_rx_term", es.rx_term);
	counter(b, "engine_rx_term_bad", es.rx_term_bad);
	counter(b, "engine_rx_ud_qkey", es.rx_ud_qkey);
	counter(b, "engine_rx_ud_norecv", es.rx_ud_norecv);
	counter(b, "engine_tx_ud_too_long", es.tx_ud_too_long);
	counter(b, "engine_uc_msg_dropped", es.uc_msg_dropped);
	counter(b, "engine_uc_gap", es.uc_gap);
	counter(b, "engine_uc_stale", es.uc_stale);
	counter(b, "engine_uc_norecv", es.uc_norecv);
	counter(b, "engine_uc_len", es.uc_len);
	counter(b, "engine_uc_access", es.uc_access);
	counter(b, "engine_uc_bad", es.uc_bad);
	counter(b, "engine_uc_pkts_dropped", es.uc_pkts_dropped);
	counter(b, "engine_uc_tx_unsent", es.uc_tx_unsent);
	counter(b, "engine_mr_revoked", es.mr_revoked);
	counter(b, "engine_rsp_probes", es.rsp_probes);
	counter(b, "engine_resp_resend_revoked", es.resp_resend_revoked);
	counter(b, "engine_mw_binds", es.mw_binds);
	counter(b, "engine_mw_bind_err", es.mw_bind_err);
	counter(b, "engine_mw_inv", es.mw_inv);
	counter(b, "engine_mw_inv_err", es.mw_inv_err);
	counter(b, "engine_dev_copies", es.dev_copies);
	counter(b, "engine_dev_copy_bytes", es.dev_copy_bytes);
	counter(b, "engine_host_copy_bytes", es.host_copy_bytes);
	counter(b, "engine_dev_copy_err", es.dev_copy_err);
	counter(b, "engine_dev_atomic_refused", es.dev_atomic_refused);
	counter(b, "engine_dev_copy_fault", es.dev_copy_fault);
	counter(b, "engine_dev_atomics", es.dev_atomics);
	counter(b, "engine_dev_async", es.dev_async);
	counter(b, "engine_dev_fences", es.dev_fences);
	counter(b, "engine_dev_fence_err", es.dev_fence_err);
	counter(b, "engine_dev_held", es.dev_held);
	counter(b, "engine_dev_batches", es.dev_batches);
	counter(b, "engine_dev_batch_max_inflight", es.dev_batch_max_inflight);
	counter(b, "engine_dev_batch_waits", es.dev_batch_waits);
	counter(b, "engine_dev_batch_not_ready", es.dev_batch_not_ready);
	{
		struct svc_counters k;

		svc_counters_sum(s, &k);
		counter(b, "dev_parked", k.dev_parked);
		counter(b, "dev_naps", k.dev_naps);
	}
}

static void show_counters_gdr(struct svc *s, struct show_buf *b)
{
	struct ovr_gdr_stats gs = { 0 };

	if (s->gdr)
		ovr_gdr_get_stats(s->gdr, &gs);
	counter(b, "gdr_imports", s->gdr ? ovr_gdr_nimports(s->gdr) : 0);
	counter(b, "gdr_refs", s->gdr ? ovr_gdr_nrefs(s->gdr) : 0);
	counter(b, "gdr_async_copies", gs.async_copies);
	counter(b, "gdr_async_bytes", gs.async_bytes);
	counter(b, "gdr_sync_copies", gs.sync_copies);
	counter(b, "gdr_fences", gs.fences);
	counter(b, "gdr_fence_errors", gs.fence_errors);
	counter(b, "gdr_stream_waits", gs.waits);
	counter(b, "gdr_batches", gs.batches);
	counter(b, "gdr_batch_events", gs.batch_events);
	counter(b, "gdr_batch_not_ready", gs.batch_not_ready);
	counter(b, "gdr_batch_waits", gs.batch_waits);
	counter(b, "gdr_batch_errors", gs.batch_errors);
	counter(b, "gdr_pinned_bytes", gs.pinned_bytes);
	counter(b, "gdr_bar", gs.bar);
	counter(b, "gdr_bar_copies", gs.bar_copies);
	counter(b, "gdr_bar_bytes", gs.bar_bytes);
	counter(b, "gdr_bar_reads", gs.bar_reads);
	counter(b, "gdr_bar_busy", gs.bar_busy);
	counter(b, "gdr_bar_pins", gs.bar_pins);
	counter(b, "gdr_bar_pin_failures", gs.bar_pin_failures);
	counter(b, "gdr_bar_mapped", gs.bar_mapped);
}

static void show_counters(struct svc *s, struct show_buf *b)
{
	uint64_t drops[OVR_VPC_NDROP], srqs = 0;

	ovr_vpc_drop_stats(s->vpc, drops);
	show_counters_svc(s, b);
	show_counters_engine(s, b);
	show_counters_gdr(s, b);
	for (struct svc_ctx *c = s->ctxs; c; c = c->next)
		srqs += c->nsrq;
	counter(b, "srqs", srqs);
	/* the overlay's drops, per reason, those that happened */
	for (unsigned int i = 1; i < OVR_VPC_NDROP; i++)
		if (drops[i]) {
			char n[48];

			snprintf(n, sizeof(n), "drop_%s", ovr_vpc_drop_name(i));
			counter(b, n, drops[i]);
		}
}

/* multicast groups with members here: one line per member QP */
static void show_mcast(struct svc *s, struct show_buf *b)
{
	out(b, "%-8s %-15s %-5s %-8s %s\n", "vni", "group", "ctx", "qpn",
	    "loopback");
	for (uint32_t i = 0; i < s->nmcast; i++) {
		const struct svc_mcast_grp *g = &s->mcast[i];
		char grp[16];

		snprintf(grp, sizeof(grp), "%u.%u.%u.%u", g->group >> 24,
			 (g->group >> 16) & 255, (g->group >> 8) & 255,
			 g->group & 255);
		for (uint32_t k = 0; k < g->n; k++)
			out(b, "%-8u %-15s %-5u %-8u %s\n", g->vni, grp,
			    g->m[k].qp->ctx->id, g->m[k].qp->qpn,
			    g->m[k].no_loopback ? "no" : "yes");
	}
}

/* the dataplane cores: one line each (busy: its rounds that did work) */
static void show_cores(struct svc *s, struct show_buf *b)
{
	out(b, "%-5s %-9s %-10s %-14s %-12s %-12s %-12s %-10s %-10s %s\n",
	    "core", "contexts", "qps", "busy_ns", "rx_frames", "tx_frames",
	    "handed", "sleeps", "dev_copies", "cpus");
	for (uint32_t i = 0; i < s->ncores; i++) {
		const struct svc_core *k = &s->core[i];
		struct ovr_eng_stats es;
		char cpus[128] = "-";
		cpu_set_t set;

		/* where its thread may run now (svc_cpu.c) */
		if (atomic_load(&s->threads_up) &&
		    !pthread_getaffinity_np(k->thread, sizeof(set), &set))
			svc_cpu_list(&set, cpus, sizeof(cpus));
		ovr_eng_get_stats(k->eng, &es);
		out(b,
		    "%-5u %-9u %-10u %-14llu %-12llu %-12llu %-12llu %-10llu "
		    "%-10llu %s\n",
		    i, k->nctx, es.qps, (unsigned long long)k->cnt.busy_ns,
		    (unsigned long long)k->cnt.rx_frames,
		    (unsigned long long)k->cnt.tx_frames,
		    (unsigned long long)k->cnt.xcore_frames,
		    (unsigned long long)k->cnt.sleeps,
		    (unsigned long long)es.dev_copies, cpus);
	}
}

int svc_show(struct svc *s, const char *what, char *buf, size_t cap)
{
	static const struct {
		const char *what;
		void (*fn)(struct svc *s, struct show_buf *b);
	} views[] = {
		{ "devices", show_devices },
		{ "contexts", show_contexts },
		{ "qps", show_qps },
		{ "mrs", show_mrs },
		{ "transport", show_transport },
		{ "counters", show_counters },
		{ "mcast", show_mcast },
		{ "cores", show_cores },
	};
	struct show_buf b = { .buf = buf, .cap = cap };

	for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++)
		if (!strcmp(what, views[i].what)) {
			views[i].fn(s, &b);
			return (int)(b.len < cap ? b.len : cap - 1);
		}
	return -EINVAL;
}
