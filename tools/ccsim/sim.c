// SPDX-License-Identifier: MIT
/*
 * ccsim core: events, network and the transport model. See sim.h for the
 * model and docs/CONGESTION.md for how it compares with the engine.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* ---- random numbers: xoshiro256** seeded by splitmix64 ------------------ */

struct rng {
	uint64_t s[4];
};

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t res = rotl(r->s[1] * 5, 7) * 9, t = r->s[1] << 17;

	r->s[2] ^= r->s[0];
	r->s[3] ^= r->s[1];
	r->s[1] ^= r->s[2];
	r->s[0] ^= r->s[3];
	r->s[2] ^= t;
	r->s[3] = rotl(r->s[3], 45);
	return res;
}

static double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- structures ---------------------------------------------------------- */

enum { PKT_DATA, PKT_ACK };

struct pkt {
	struct pkt *next;
	uint64_t xmit_ps; /* DATA: when sent; ACK: echo of the DATA's */
	uint32_t flow;
	uint32_t seq; /* DATA: sequence; ACK: the sequence acknowledged */
	uint32_t cum; /* ACK: next expected sequence */
	uint32_t bytes; /* on the wire */
	uint32_t dst; /* host */
	uint32_t hash; /* ECMP; spray: a per-flow packet counter */
	uint8_t spray;
	uint8_t type;
	uint8_t ce; /* DATA: marked; ACK: echo */
	uint8_t dup; /* ACK: the DATA was a duplicate */
};

enum ev_type {
	EV_TX_DONE,
	EV_ARRIVE,
	EV_FLOW_START,
	EV_FLOW_TIMER,
	EV_WAKE,
	EV_CALL
};

struct event {
	uint64_t t;
	uint64_t seq;
	uint8_t type;
	int port;
	uint32_t node;
	void *p;
	void (*fn)(struct sim *, void *);
};

struct port {
	uint32_t peer, peer_port;
	double ps_per_byte;
	double gbps;
	uint64_t delay_ps;
	struct sim_impair imp;
	bool ge_bad;
	uint64_t bh_from, bh_to;
	struct pkt *qh, *qt; /* FIFO (switch: everything; host: ACKs) */
	uint64_t qbytes;
	uint64_t tx_bytes;
	bool busy;
};

struct node {
	bool is_switch;
	int nports, capports;
	struct port *ports;
	uint64_t buf_used;
	/* hosts: flows sourced here that still have work */
	struct sim_flow **flows;
	uint32_t nflows, cap_flows, rr;
	uint64_t wake_at;
};

#define MAX_ECMP 16
struct route {
	uint8_t n;
	uint16_t port[MAX_ECMP];
};

enum { F_SENT = 1, F_SACKED = 2, F_LOST = 4, F_RETX = 8 };

struct sim_flow {
	struct sim *sim;
	uint32_t id, src, dst;
	uint64_t size, start_ps;
	bool spray, started, snd_done, rcv_done, active;
	uint32_t npkts, last_len;
	uint32_t cap; /* packets of per-packet state allocated */
	uint32_t hash, spray_ctr;
	/* sender */
	uint64_t *xmit;
	uint8_t *st;
	uint32_t una, nxt, nlost, lost_cur;
	uint64_t pipe;
	struct ovr_cc_flow cc;
	uint64_t next_tx;
	double srtt, rttvar, min_rtt; /* ps */
	uint64_t rto, backoff;
	uint64_t rack_xmit, rack_rtt;
	uint32_t reo_mult, recov_no_dup;
	uint64_t reo_seen; /* largest lateness of a packet marked lost */
	bool in_recovery;
	uint64_t rto_at, pto_at, reo_at, timer_at;
	/* receiver */
	uint8_t *rcvd;
	uint32_t rcv_cum;
	uint64_t finish_ps;
	/* stats */
	uint64_t sent, retx, spurious, rtos, tlps;
	double ideal_ps;
};

struct sim {
	struct sim_cfg cfg;
	struct rng rng;
	uint64_t now, evseq;
	struct event *heap;
	size_t nheap, capheap;
	struct node *nodes;
	uint32_t nnodes, capnodes;
	uint32_t *host_ids; /* host index -> node */
	int32_t *host_of; /* node -> host index or -1 */
	uint32_t nhosts;
	struct route *routes; /* [node * nhosts + host] */
	struct sim_flow **flows;
	uint32_t nflows, capflows;
	struct pkt *free_pkts;
	struct sim_counters ctr;
	void (*on_complete)(void *, const struct sim_flow_stats *);
	void *on_complete_arg;
};

/* ---- events -------------------------------------------------------------- */

static bool ev_less(const struct event *a, const struct event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void ev_push(struct sim *s, struct event ev)
{
	size_t i;

	if (s->nheap == s->capheap) {
		s->capheap = s->capheap ? s->capheap * 2 : 4096;
		s->heap = realloc(s->heap, s->capheap * sizeof(*s->heap));
		if (!s->heap)
			abort();
	}
	ev.seq = s->evseq++;
	i = s->nheap++;
	while (i) {
		size_t up = (i - 1) / 2;

		if (!ev_less(&ev, &s->heap[up]))
			break;
		s->heap[i] = s->heap[up];
		i = up;
	}
	s->heap[i] = ev;
}

static struct event ev_pop(struct sim *s)
{
	struct event top = s->heap[0], last = s->heap[--s->nheap];
	size_t i = 0, n = s->nheap;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && ev_less(&s->heap[c + 1], &s->heap[c]))
			c++;
		if (!ev_less(&s->heap[c], &last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (n)
		s->heap[i] = last;
	return top;
}

void sim_at(struct sim *s, uint64_t t_ps, void (*fn)(struct sim *, void *),
	    void *arg)
{
	ev_push(s, (struct event){
			   .t = t_ps, .type = EV_CALL, .fn = fn, .p = arg });
}

/* ---- packets ------------------------------------------------------------- */

static struct pkt *pkt_new(struct sim *s)
{
	struct pkt *p = s->free_pkts;

	if (p)
		s->free_pkts = p->next;
	else if (!(p = malloc(sizeof(*p))))
		abort();
	memset(p, 0, sizeof(*p));
	return p;
}

static void pkt_free(struct sim *s, struct pkt *p)
{
	p->next = s->free_pkts;
	s->free_pkts = p;
}

/* ---- creation and topology ----------------------------------------------- */

struct sim *sim_create(const struct sim_cfg *cfg)
{
	struct sim *s = calloc(1, sizeof(*s));
	uint64_t x;

	if (!s)
		return NULL;
	s->cfg = *cfg;
	if (!s->cfg.mss)
		s->cfg.mss = 4096;
	if (!s->cfg.max_cwnd_pkts)
		s->cfg.max_cwnd_pkts = 1024;
	if (!s->cfg.min_rto_ps)
		s->cfg.min_rto_ps = 200 * PS_PER_US;
	if (!s->cfg.cc)
		s->cfg.cc = ovr_cc_default();
	x = cfg->seed;
	for (int i = 0; i < 4; i++)
		s->rng.s[i] = splitmix(&x);
	return s;
}

void sim_destroy(struct sim *s)
{
	struct pkt *p;

	if (!s)
		return;
	for (uint32_t i = 0; i < s->nflows; i++) {
		struct sim_flow *f = s->flows[i];

		if (f->started && s->cfg.cc->release)
			s->cfg.cc->release(&f->cc);
		free(f->xmit);
		free(f->st);
		free(f->rcvd);
		free(f);
	}
	for (uint32_t i = 0; i < s->nnodes; i++) {
		for (int j = 0; j < s->nodes[i].nports; j++) {
			struct port *pt = &s->nodes[i].ports[j];

			while ((p = pt->qh)) {
				pt->qh = p->next;
				free(p);
			}
		}
		free(s->nodes[i].flows);
		free(s->nodes[i].ports);
	}
	for (size_t i = 0; i < s->nheap; i++)
		if (s->heap[i].type == EV_ARRIVE ||
		    s->heap[i].type == EV_TX_DONE)
			free(s->heap[i].p);
	while ((p = s->free_pkts)) {
		s->free_pkts = p->next;
		free(p);
	}
	free(s->heap);
	free(s->nodes);
	free(s->host_ids);
	free(s->host_of);
	free(s->routes);
	free(s->flows);
	free(s);
}

static uint32_t add_node(struct sim *s, bool sw)
{
	if (s->nnodes == s->capnodes) {
		s->capnodes = s->capnodes ? 2 * s->capnodes : 64;
		s->nodes = realloc(s->nodes, s->capnodes * sizeof(*s->nodes));
		if (!s->nodes)
			abort();
	}
	memset(&s->nodes[s->nnodes], 0, sizeof(s->nodes[0]));
	s->nodes[s->nnodes].is_switch = sw;
	return s->nnodes++;
}

uint32_t sim_add_host(struct sim *s)
{
	return add_node(s, false);
}

uint32_t sim_add_switch(struct sim *s)
{
	return add_node(s, true);
}

int sim_link(struct sim *s, uint32_t a, uint32_t b,
	     const struct sim_link_cfg *l, int *b_port)
{
	struct node *na = &s->nodes[a], *nb = &s->nodes[b];
	int pa, pb;

	for (int k = 0; k < 2; k++) {
		struct node *n = k ? nb : na;

		if (n->nports == n->capports) {
			n->capports = n->capports ? 2 * n->capports : 4;
			n->ports = realloc(n->ports,
					   n->capports * sizeof(*n->ports));
			if (!n->ports)
				abort();
		}
	}
	pa = na->nports++;
	pb = nb->nports++;
	for (int k = 0; k < 2; k++) {
		struct port *p = k ? &nb->ports[pb] : &na->ports[pa];

		memset(p, 0, sizeof(*p));
		p->peer = k ? a : b;
		p->peer_port = (uint32_t)(k ? pa : pb);
		p->gbps = l->gbps;
		p->ps_per_byte = 8000.0 / l->gbps;
		p->delay_ps = l->delay_ps;
		p->imp = l->imp;
	}
	if (b_port)
		*b_port = pb;
	return pa;
}

void sim_port_impair(struct sim *s, uint32_t node, int port,
		     const struct sim_impair *imp)
{
	s->nodes[node].ports[port].imp = *imp;
}

void sim_port_blackhole(struct sim *s, uint32_t node, int port, uint64_t from,
			uint64_t to)
{
	s->nodes[node].ports[port].bh_from = from;
	s->nodes[node].ports[port].bh_to = to;
}

/* Shortest paths by breadth-first search from every host; every port
 * toward a neighbour one hop closer is an equal-cost choice. */
void sim_routes(struct sim *s)
{
	uint32_t n = s->nnodes, *dist = malloc(n * sizeof(*dist)),
		 *q = malloc(n * sizeof(*q));

	free(s->host_ids);
	free(s->host_of);
	s->host_of = malloc(n * sizeof(*s->host_of));
	s->host_ids = malloc(n * sizeof(*s->host_ids));
	s->nhosts = 0;
	for (uint32_t i = 0; i < n; i++) {
		s->host_of[i] = -1;
		if (!s->nodes[i].is_switch) {
			s->host_of[i] = (int32_t)s->nhosts;
			s->host_ids[s->nhosts++] = i;
		}
	}
	free(s->routes);
	s->routes = calloc((size_t)n * s->nhosts, sizeof(*s->routes));
	if (!dist || !q || !s->routes)
		abort();
	for (uint32_t h = 0; h < s->nhosts; h++) {
		uint32_t qh = 0, qt = 0, dst = s->host_ids[h];

		for (uint32_t i = 0; i < n; i++)
			dist[i] = UINT32_MAX;
		dist[dst] = 0;
		q[qt++] = dst;
		while (qh < qt) {
			uint32_t u = q[qh++];
			struct node *nu = &s->nodes[u];

			/* hosts do not forward */
			if (u != dst && !nu->is_switch)
				continue;
			for (int p = 0; p < nu->nports; p++) {
				uint32_t v = nu->ports[p].peer;

				if (dist[v] == UINT32_MAX) {
					dist[v] = dist[u] + 1;
					q[qt++] = v;
				}
			}
		}
		for (uint32_t u = 0; u < n; u++) {
			struct route *r = &s->routes[(size_t)u * s->nhosts + h];
			struct node *nu = &s->nodes[u];

			if (u == dst || dist[u] == UINT32_MAX)
				continue;
			for (int p = 0; p < nu->nports && r->n < MAX_ECMP; p++)
				if (dist[nu->ports[p].peer] + 1 == dist[u])
					r->port[r->n++] = (uint16_t)p;
		}
	}
	free(dist);
	free(q);
}

static int route_port(struct sim *s, uint32_t node, const struct pkt *p)
{
	const struct route *r = &s->routes[(size_t)node * s->nhosts +
					   (uint32_t)s->host_of[p->dst]];
	uint32_t h;

	if (!r->n)
		return -1;
	if (p->spray) /* round robin over the equal-hop paths */
		return r->port[p->hash % r->n];
	h = p->hash ^ (node * 0x9e3779b1u);
	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return r->port[h % r->n];
}

uint64_t sim_base_rtt_ps(const struct sim *s, uint32_t a, uint32_t b)
{
	struct pkt d = { .dst = b }, k = { .dst = a };
	uint64_t t = 0, wire = s->cfg.mss + SIM_HDR_BYTES;
	uint32_t u = a;

	while (u != b) {
		int p = route_port((struct sim *)s, u, &d);
		const struct port *pt = &s->nodes[u].ports[p];

		t += pt->delay_ps + (uint64_t)(wire * pt->ps_per_byte);
		u = pt->peer;
	}
	while (u != a) {
		int p = route_port((struct sim *)s, u, &k);
		const struct port *pt = &s->nodes[u].ports[p];

		t += pt->delay_ps + (uint64_t)(SIM_ACK_BYTES * pt->ps_per_byte);
		u = pt->peer;
	}
	return t;
}

/* Unloaded time until the last byte of @f reaches its receiver. */
static double ideal_fct(const struct sim *s, const struct sim_flow *f)
{
	struct pkt d = { .dst = f->dst };
	double t = 0, first = f->npkts > 1 ? s->cfg.mss : f->last_len, host_pb;
	uint32_t u = f->src;

	host_pb = s->nodes[f->src].ports[0].ps_per_byte;
	while (u != f->dst) {
		int p = route_port((struct sim *)s, u, &d);
		const struct port *pt = &s->nodes[u].ports[p];

		t += (double)pt->delay_ps +
		     (first + SIM_HDR_BYTES) * pt->ps_per_byte;
		u = pt->peer;
	}
	t += (double)(f->size - (uint64_t)first +
		      (uint64_t)(f->npkts - 1) * SIM_HDR_BYTES) *
	     host_pb;
	return t;
}

/* ---- flows --------------------------------------------------------------- */

struct sim_flow *sim_flow_add(struct sim *s, uint32_t src, uint32_t dst,
			      uint64_t size, uint64_t start_ps, bool spray)
{
	struct sim_flow *f = calloc(1, sizeof(*f));

	if (!f || !size)
		abort();
	f->sim = s;
	f->id = s->nflows;
	f->src = src;
	f->dst = dst;
	f->size = size;
	f->start_ps = start_ps;
	f->spray = spray;
	f->npkts = (uint32_t)((size + s->cfg.mss - 1) / s->cfg.mss);
	f->last_len = (uint32_t)(size - (uint64_t)(f->npkts - 1) * s->cfg.mss);
	f->hash = (uint32_t)rng_next(&s->rng);
	if (s->nflows == s->capflows) {
		s->capflows = s->capflows ? 2 * s->capflows : 256;
		s->flows = realloc(s->flows, s->capflows * sizeof(*s->flows));
		if (!s->flows)
			abort();
	}
	s->flows[s->nflows++] = f;
	ev_push(s,
		(struct event){ .t = start_ps, .type = EV_FLOW_START, .p = f });
	return f;
}

uint32_t sim_flow_id(const struct sim_flow *f)
{
	return f->id;
}

uint32_t sim_nflows(const struct sim *s)
{
	return s->nflows;
}

struct sim_flow *sim_flow_get(struct sim *s, uint32_t id)
{
	return id < s->nflows ? s->flows[id] : NULL;
}

uint64_t sim_flow_delivered(const struct sim_flow *f)
{
	if (f->rcv_done)
		return f->size;
	return (uint64_t)f->rcv_cum * f->sim->cfg.mss;
}

void sim_flow_stop(struct sim_flow *f)
{
	if (!f->started || f->snd_done || f->nxt >= f->npkts)
		return;
	if (!f->nxt) {
		/* nothing sent yet: one packet, so that the flow still ends */
		f->nxt = 0;
		f->npkts = 1;
		f->last_len = f->sim->cfg.mss;
	} else {
		f->npkts = f->nxt;
		f->last_len = f->sim->cfg.mss;
	}
	f->size = (uint64_t)f->npkts * f->sim->cfg.mss;
}

bool sim_flow_done(const struct sim_flow *f)
{
	return f->rcv_done;
}

const struct ovr_cc_flow *sim_flow_cc(const struct sim_flow *f)
{
	return &f->cc;
}

void sim_flow_stats(const struct sim_flow *f, struct sim_flow_stats *st)
{
	*st = (struct sim_flow_stats){
		.id = f->id,
		.src = f->src,
		.dst = f->dst,
		.size = f->size,
		.start_ps = f->start_ps,
		.finish_ps = f->finish_ps,
		.pkts_sent = f->sent,
		.retx = f->retx,
		.spurious = f->spurious,
		.rtos = f->rtos,
		.tlps = f->tlps,
		.ideal_ps = f->ideal_ps,
	};
}

void sim_on_complete(struct sim *s,
		     void (*cb)(void *arg, const struct sim_flow_stats *st),
		     void *arg)
{
	s->on_complete = cb;
	s->on_complete_arg = arg;
}

static uint32_t seg_len(const struct sim_flow *f, uint32_t seq)
{
	return seq + 1 == f->npkts ? f->last_len : f->sim->cfg.mss;
}

static void port_kick(struct sim *s, uint32_t node, int port);

static void flow_timer_arm(struct sim *s, struct sim_flow *f)
{
	uint64_t t = UINT64_MAX;

	if (f->rto_at)
		t = f->rto_at;
	if (f->pto_at && f->pto_at < t)
		t = f->pto_at;
	if (f->reo_at && f->reo_at < t)
		t = f->reo_at;
	if (t == UINT64_MAX ||
	    (f->timer_at && f->timer_at <= t && f->timer_at > s->now))
		return;
	f->timer_at = t;
	ev_push(s, (struct event){ .t = t, .type = EV_FLOW_TIMER, .p = f });
}

static uint64_t pto_of(const struct sim_flow *f)
{
	return (uint64_t)(2 * f->srtt) + 10 * PS_PER_US;
}

/* Per-packet state grows with what has been sent, so that a long-lived
 * flow (a size far beyond the run) costs only what it uses. */
static void flow_grow(struct sim_flow *f)
{
	uint32_t cap = f->cap ? f->cap * 2 : 256;

	if (cap > f->npkts)
		cap = f->npkts;
	f->xmit = realloc(f->xmit, cap * sizeof(*f->xmit));
	f->st = realloc(f->st, cap);
	f->rcvd = realloc(f->rcvd, cap);
	if (!f->xmit || !f->st || !f->rcvd)
		abort();
	memset(f->xmit + f->cap, 0, (cap - f->cap) * sizeof(*f->xmit));
	memset(f->st + f->cap, 0, cap - f->cap);
	memset(f->rcvd + f->cap, 0, cap - f->cap);
	f->cap = cap;
}

static void host_add_flow(struct node *h, struct sim_flow *f)
{
	if (h->nflows == h->cap_flows) {
		h->cap_flows = h->cap_flows ? 2 * h->cap_flows : 16;
		h->flows = realloc(h->flows, h->cap_flows * sizeof(*h->flows));
		if (!h->flows)
			abort();
	}
	h->flows[h->nflows++] = f;
	f->active = true;
}

static void flow_start(struct sim *s, struct sim_flow *f)
{
	struct ovr_cc_params p = {
		.mss = s->cfg.mss,
		.init_cwnd_bytes = 0,
		.max_cwnd_bytes = s->cfg.max_cwnd_pkts * s->cfg.mss,
		.line_rate_bps =
			(uint64_t)(s->nodes[f->src].ports[0].gbps * 1e9),
		.base_rtt_ns = s->cfg.cc_base_rtt_ns,
		.now_ns = s->now / PS_PER_NS,
	};
	struct pkt d = { .dst = f->dst };
	uint32_t u = f->src;

	while (u != f->dst) {
		const struct port *pt =
			&s->nodes[u].ports[route_port(s, u, &d)];

		if (s->nodes[u].is_switch)
			p.hops++;
		u = pt->peer;
	}
	flow_grow(f);
	f->started = true;
	f->rto = 1000 * PS_PER_US; /* before the first sample, as the engine */
	f->reo_mult = 1;
	f->ideal_ps = ideal_fct(s, f);
	if (s->cfg.cc->init(&f->cc, &p))
		abort();
	host_add_flow(&s->nodes[f->src], f);
	port_kick(s, f->src, 0);
}

/* A packet the flow may send now: a lost one first, then new data. */
static int flow_pick(struct sim *s, struct sim_flow *f, uint32_t *seq,
		     uint64_t *wake)
{
	uint32_t q, len;

	if (f->snd_done)
		return 0;
	if (f->nlost) {
		if (f->lost_cur < f->una)
			f->lost_cur = f->una;
		for (q = f->lost_cur; q < f->nxt; q++)
			if (f->st[q] & F_LOST)
				break;
		f->lost_cur = q;
		if (q == f->nxt) /* cannot happen; keep the count honest */
			f->nlost = 0;
	} else {
		q = f->nxt;
	}
	if (q >= f->npkts)
		return 0;
	len = seg_len(f, q);
	if (f->pipe && f->pipe + len > f->cc.cwnd_bytes)
		return 0;
	if (f->cc.rate_bps && f->next_tx > s->now) {
		if (!*wake || f->next_tx < *wake)
			*wake = f->next_tx;
		return 0;
	}
	*seq = q;
	return 1;
}

static struct pkt *flow_send(struct sim *s, struct sim_flow *f, uint32_t q)
{
	struct pkt *p = pkt_new(s);
	uint32_t len = seg_len(f, q);

	if (f->st[q] & F_LOST) {
		f->st[q] &= (uint8_t)~F_LOST;
		f->st[q] |= F_RETX;
		f->nlost--;
		f->retx++;
		s->ctr.retx++;
	} else if (q == f->nxt) {
		f->nxt++;
		if (f->nxt == f->cap && f->cap < f->npkts)
			flow_grow(f);
	}
	f->st[q] |= F_SENT;
	f->xmit[q] = s->now;
	f->pipe += len;
	f->sent++;
	s->ctr.data_pkts++;
	if (f->cc.rate_bps) {
		if (f->next_tx < s->now)
			f->next_tx = s->now;
		f->next_tx += (uint64_t)((double)(len + SIM_HDR_BYTES) * 8e12 /
					 (double)f->cc.rate_bps);
	}
	if (!f->rto_at)
		f->rto_at = s->now + f->rto;
	if (!f->pto_at && f->srtt > 0)
		f->pto_at = s->now + pto_of(f);
	flow_timer_arm(s, f);
	p->type = PKT_DATA;
	p->flow = f->id;
	p->seq = q;
	p->bytes = len + SIM_HDR_BYTES;
	p->xmit_ps = s->now;
	p->dst = f->dst;
	p->spray = f->spray;
	p->hash = f->spray ? f->spray_ctr++ : f->hash;
	return p;
}

/* ---- ports --------------------------------------------------------------- */

static void port_start(struct sim *s, uint32_t node, int port, struct pkt *p)
{
	struct port *pt = &s->nodes[node].ports[port];

	pt->busy = true;
	pt->tx_bytes += p->bytes;
	ev_push(s, (struct event){
			   .t = s->now + (uint64_t)(p->bytes * pt->ps_per_byte),
			   .type = EV_TX_DONE,
			   .node = node,
			   .port = port,
			   .p = p,
		   });
}

static struct pkt *host_next(struct sim *s, uint32_t node)
{
	struct node *h = &s->nodes[node];
	struct port *pt = &h->ports[0];
	struct pkt *p = pt->qh;
	uint64_t wake = 0;
	uint32_t seq;

	if (p) {
		pt->qh = p->next;
		if (!pt->qh)
			pt->qt = NULL;
		pt->qbytes -= p->bytes;
		return p;
	}
	for (uint32_t i = 0; i < h->nflows; i++) {
		uint32_t k = (h->rr + i) % h->nflows;
		struct sim_flow *f = h->flows[k];

		if (flow_pick(s, f, &seq, &wake)) {
			h->rr = (k + 1) % h->nflows;
			return flow_send(s, f, seq);
		}
	}
	if (wake &&
	    (!h->wake_at || wake < h->wake_at || h->wake_at <= s->now)) {
		h->wake_at = wake;
		ev_push(s, (struct event){
				   .t = wake, .type = EV_WAKE, .node = node });
	}
	return NULL;
}

static void port_kick(struct sim *s, uint32_t node, int port)
{
	struct node *n = &s->nodes[node];
	struct port *pt = &n->ports[port];
	struct pkt *p;

	if (pt->busy)
		return;
	if (n->is_switch) {
		p = pt->qh;
		if (!p)
			return;
		pt->qh = p->next;
		if (!pt->qh)
			pt->qt = NULL;
	} else {
		p = host_next(s, node);
		if (!p)
			return;
	}
	port_start(s, node, port, p);
}

static bool impaired(struct sim *s, struct port *pt, const struct pkt *p)
{
	const struct sim_impair *im = &pt->imp;

	if (pt->bh_to && s->now >= pt->bh_from && s->now < pt->bh_to)
		return true;
	if (im->data_only && p->type != PKT_DATA)
		return false;
	switch (im->loss) {
	case SIM_LOSS_BERNOULLI:
		return rng_unit(&s->rng) < im->p;
	case SIM_LOSS_GE: {
		/* two states: Bad loses everything, mean burst im->burst,
		 * stationary P(Bad) = im->p */
		double p_bg = 1.0 / im->burst;
		double p_gb = im->p * p_bg / (1.0 - im->p);

		if (pt->ge_bad) {
			if (rng_unit(&s->rng) < p_bg)
				pt->ge_bad = false;
		} else if (rng_unit(&s->rng) < p_gb) {
			pt->ge_bad = true;
		}
		return pt->ge_bad;
	}
	case SIM_LOSS_NONE:
	default:
		return false;
	}
}

static void tx_done(struct sim *s, uint32_t node, int port, struct pkt *p)
{
	struct node *n = &s->nodes[node];
	struct port *pt = &n->ports[port];
	uint64_t d = pt->delay_ps;

	pt->busy = false;
	if (n->is_switch) {
		pt->qbytes -= p->bytes;
		n->buf_used -= p->bytes;
	}
	if (impaired(s, pt, p)) {
		s->ctr.link_drops++;
		pkt_free(s, p);
	} else {
		if (pt->imp.jitter_ps)
			d += (uint64_t)(rng_unit(&s->rng) *
					(double)pt->imp.jitter_ps);
		ev_push(s, (struct event){ .t = s->now + d,
					   .type = EV_ARRIVE,
					   .node = pt->peer,
					   .p = p });
	}
	port_kick(s, node, port);
}

static void enqueue(struct sim *s, uint32_t node, int port, struct pkt *p)
{
	struct port *pt = &s->nodes[node].ports[port];

	p->next = NULL;
	if (pt->qt)
		pt->qt->next = p;
	else
		pt->qh = p;
	pt->qt = p;
	pt->qbytes += p->bytes;
	port_kick(s, node, port);
}

static void switch_rx(struct sim *s, uint32_t node, struct pkt *p)
{
	struct node *n = &s->nodes[node];
	int port = route_port(s, node, p);
	struct port *pt;

	if (port < 0) {
		pkt_free(s, p);
		return;
	}
	pt = &n->ports[port];
	if (n->buf_used + p->bytes > s->cfg.switch_buffer) {
		s->ctr.buf_drops++;
		pkt_free(s, p);
		return;
	}
	if (s->cfg.ecn.enabled && p->type == PKT_DATA && !p->ce) {
		const struct sim_ecn_cfg *e = &s->cfg.ecn;
		double prob = 0;

		if (pt->qbytes > e->kmax)
			prob = 1;
		else if (pt->qbytes > e->kmin)
			prob = e->pmax * (double)(pt->qbytes - e->kmin) /
			       (double)(e->kmax - e->kmin);
		if (prob > 0 && rng_unit(&s->rng) < prob) {
			p->ce = 1;
			s->ctr.ecn_marks++;
		}
	}
	n->buf_used += p->bytes;
	enqueue(s, node, port, p);
}

/* ---- transport: receiver ------------------------------------------------- */

static void data_rx(struct sim *s, uint32_t node, struct pkt *p)
{
	struct sim_flow *f = s->flows[p->flow];
	bool dup = f->rcvd[p->seq] != 0;

	if (!dup) {
		f->rcvd[p->seq] = 1;
		while (f->rcv_cum < f->nxt && f->rcvd[f->rcv_cum])
			f->rcv_cum++;
		if (f->rcv_cum == f->npkts && !f->rcv_done) {
			f->rcv_done = true;
			f->finish_ps = s->now;
		}
	}
	/* the packet becomes its ACK */
	p->type = PKT_ACK;
	p->spray = 0;
	p->hash = f->hash;
	p->cum = f->rcv_cum;
	p->dup = dup;
	if (s->cfg.ecn_stripped)
		p->ce = 0;
	p->bytes = SIM_ACK_BYTES;
	p->dst = f->src;
	enqueue(s, node, 0, p);
}

/* ---- transport: sender --------------------------------------------------- */

static void flow_finish_send(struct sim *s, struct sim_flow *f)
{
	struct node *h = &s->nodes[f->src];
	struct sim_flow_stats st;

	f->snd_done = true;
	f->rto_at = f->pto_at = f->reo_at = 0;
	for (uint32_t i = 0; i < h->nflows; i++) {
		if (h->flows[i] == f) {
			h->flows[i] = h->flows[--h->nflows];
			break;
		}
	}
	if (h->rr >= h->nflows)
		h->rr = 0;
	f->active = false;
	if (s->on_complete) {
		sim_flow_stats(f, &st);
		s->on_complete(s->on_complete_arg, &st);
	}
}

/* RFC 8985's window (min_rtt / 4, times a multiplier that grows with
 * each spurious resend, at most srtt), or the lateness actually seen on
 * a packet that was declared lost but arrived, whichever is larger. */
static uint64_t reo_wnd(const struct sim_flow *f)
{
	uint64_t w = (uint64_t)(f->reo_mult * f->min_rtt / 4);

	if (f->srtt > 0 && w > f->srtt)
		w = (uint64_t)f->srtt;
	return w > f->reo_seen ? w : f->reo_seen;
}

static void mark_lost(struct sim_flow *f, uint32_t q)
{
	f->st[q] |= F_LOST;
	f->nlost++;
	f->pipe -= seg_len(f, q);
	if (q < f->lost_cur)
		f->lost_cur = q;
}

/* RACK: a packet sent before the most recently delivered one, and older
 * than its RTT plus the reordering window, is lost. */
static void rack_detect(struct sim *s, struct sim_flow *f)
{
	uint64_t reo = reo_wnd(f), lost = 0, next = 0;

	for (uint32_t q = f->una; q < f->nxt; q++) {
		uint64_t when;

		if (f->st[q] & (F_SACKED | F_LOST))
			continue;
		if (f->xmit[q] >= f->rack_xmit)
			continue;
		when = f->xmit[q] + f->rack_rtt + reo;
		if (when <= s->now) {
			mark_lost(f, q);
			lost += seg_len(f, q);
		} else if (!next || when < next) {
			next = when;
		}
	}
	f->reo_at = next;
	if (lost) {
		if (!f->in_recovery) {
			f->in_recovery = true;
			if (++f->recov_no_dup >= 16) {
				f->reo_mult = 1;
				f->reo_seen /= 2;
				f->recov_no_dup = 0;
			}
		}
		s->cfg.cc->on_loss(&f->cc, s->now / PS_PER_NS, (uint32_t)lost);
	}
}

static void ack_rx(struct sim *s, struct pkt *p)
{
	struct sim_flow *f = s->flows[p->flow];
	struct ovr_cc_ack a = { .now_ns = s->now / PS_PER_NS };
	uint64_t delivered = 0;
	double rtt;
	bool progress = false;

	if (f->snd_done)
		goto out;
	rtt = (double)(s->now - p->xmit_ps);
	if (f->srtt == 0) {
		f->srtt = rtt;
		f->rttvar = rtt / 2;
		f->min_rtt = rtt;
	} else {
		f->rttvar = 0.75 * f->rttvar + 0.25 * fabs(f->srtt - rtt);
		f->srtt = 0.875 * f->srtt + 0.125 * rtt;
		if (rtt < f->min_rtt)
			f->min_rtt = rtt;
	}
	f->rto = (uint64_t)(f->srtt + 4 * f->rttvar);
	if (f->rto < s->cfg.min_rto_ps)
		f->rto = s->cfg.min_rto_ps;
	if (p->dup) {
		/* a resend that was not needed: widen the reordering window */
		f->spurious++;
		s->ctr.spurious++;
		if (f->reo_mult < 64)
			f->reo_mult++;
		f->recov_no_dup = 0;
	}
	if (p->seq >= f->una && p->seq < f->nxt &&
	    !(f->st[p->seq] & F_SACKED) &&
	    ((f->st[p->seq] & F_LOST) ||
	     ((f->st[p->seq] & F_RETX) && p->xmit_ps < f->xmit[p->seq]))) {
		/* declared lost, yet here it is: that much reordering */
		uint64_t late = (uint64_t)(rtt - f->min_rtt);

		late += late / 8;
		if (late > f->reo_seen)
			f->reo_seen = late;
		f->recov_no_dup = 0;
	}
	while (f->una < p->cum) {
		uint32_t q = f->una++;

		if (!(f->st[q] & F_SACKED)) {
			if (f->st[q] & F_LOST)
				f->nlost--;
			else
				f->pipe -= seg_len(f, q);
			delivered += seg_len(f, q);
		}
		f->st[q] |= F_SACKED;
		progress = true;
	}
	if (p->seq >= f->una && p->seq < f->nxt &&
	    !(f->st[p->seq] & F_SACKED)) {
		uint32_t q = p->seq;

		f->st[q] |= F_SACKED;
		if (f->st[q] & F_LOST) {
			f->st[q] &= (uint8_t)~F_LOST;
			f->nlost--;
		} else {
			f->pipe -= seg_len(f, q);
		}
		delivered += seg_len(f, q);
	}
	if (p->xmit_ps > f->rack_xmit) {
		f->rack_xmit = p->xmit_ps;
		f->rack_rtt = (uint64_t)rtt;
	}
	if (p->ce) {
		a.ce_count = 1;
		s->cfg.cc->on_ecn(&f->cc, a.now_ns, 1);
	}
	a.rtt_ns = (uint64_t)rtt / PS_PER_NS;
	if (!a.rtt_ns)
		a.rtt_ns = 1;
	a.min_rtt_ns = (uint64_t)f->min_rtt / PS_PER_NS;
	a.acked_bytes = (uint32_t)delivered;
	a.inflight_bytes = (uint32_t)f->pipe;
	if (delivered || p->ce)
		s->cfg.cc->on_ack(&f->cc, &a);
	if (f->una == f->npkts) {
		flow_finish_send(s, f);
		goto out;
	}
	if (progress) {
		f->backoff = 0;
		f->rto_at = s->now + f->rto;
		f->pto_at = s->now + pto_of(f);
		if (!f->nlost)
			f->in_recovery = false;
	}
	rack_detect(s, f);
	flow_timer_arm(s, f);
	port_kick(s, f->src, 0);
out:
	pkt_free(s, p);
}

static void flow_timer(struct sim *s, struct sim_flow *f, uint64_t t)
{
	if (t != f->timer_at || f->snd_done)
		return;
	f->timer_at = 0;
	if (f->reo_at && f->reo_at <= s->now)
		rack_detect(s, f);
	if (f->rto_at && f->rto_at <= s->now) {
		/* everything outstanding is presumed lost */
		for (uint32_t q = f->una; q < f->nxt; q++)
			if ((f->st[q] & (F_SENT | F_SACKED | F_LOST)) == F_SENT)
				mark_lost(f, q);
		f->rtos++;
		s->ctr.rtos++;
		if (f->backoff < 10)
			f->backoff++;
		f->rto_at = s->now + (f->rto << f->backoff);
		f->pto_at = 0;
		s->cfg.cc->on_timeout(&f->cc, s->now / PS_PER_NS);
	} else if (f->pto_at && f->pto_at <= s->now) {
		/* tail-loss probe: resend the last packet still out */
		f->pto_at = 0;
		for (uint32_t q = f->nxt; q-- > f->una;) {
			if ((f->st[q] & (F_SACKED | F_LOST)) == 0) {
				mark_lost(f, q);
				f->tlps++;
				s->ctr.tlps++;
				break;
			}
		}
	}
	flow_timer_arm(s, f);
	port_kick(s, f->src, 0);
}

/* ---- the loop ------------------------------------------------------------ */

uint64_t sim_run(struct sim *s, uint64_t until_ps)
{
	while (s->nheap && s->heap[0].t <= until_ps) {
		struct event ev = ev_pop(s);

		s->now = ev.t;
		s->ctr.events++;
		switch (ev.type) {
		case EV_TX_DONE:
			tx_done(s, ev.node, ev.port, ev.p);
			break;
		case EV_ARRIVE: {
			struct pkt *p = ev.p;

			if (s->nodes[ev.node].is_switch)
				switch_rx(s, ev.node, p);
			else if (p->type == PKT_DATA)
				data_rx(s, ev.node, p);
			else
				ack_rx(s, p);
			break;
		}
		case EV_FLOW_START:
			flow_start(s, ev.p);
			break;
		case EV_FLOW_TIMER:
			flow_timer(s, ev.p, ev.t);
			break;
		case EV_WAKE:
			if (s->nodes[ev.node].wake_at == ev.t)
				s->nodes[ev.node].wake_at = 0;
			port_kick(s, ev.node, 0);
			break;
		case EV_CALL:
			ev.fn(s, ev.p);
			break;
		default:
			abort();
		}
	}
	if (s->nheap && until_ps != UINT64_MAX)
		s->now = until_ps;
	return s->now;
}

void sim_set_base_rtt_hint(struct sim *s, uint64_t ns)
{
	s->cfg.cc_base_rtt_ns = ns;
}

uint64_t sim_now(const struct sim *s)
{
	return s->now;
}

uint64_t sim_port_qlen(const struct sim *s, uint32_t node, int port)
{
	return s->nodes[node].ports[port].qbytes;
}

uint64_t sim_port_tx_bytes(const struct sim *s, uint32_t node, int port)
{
	return s->nodes[node].ports[port].tx_bytes;
}

double sim_port_gbps(const struct sim *s, uint32_t node, int port)
{
	return s->nodes[node].ports[port].gbps;
}

uint64_t sim_switch_used(const struct sim *s, uint32_t node)
{
	return s->nodes[node].buf_used;
}

void sim_counters(const struct sim *s, struct sim_counters *c)
{
	*c = s->ctr;
}

double sim_rand(struct sim *s)
{
	return rng_unit(&s->rng);
}
