// SPDX-License-Identifier: MIT
/*
 * ovrdma-fabric's switching core: learning and static IPv4 routes, ARP
 * flooding and proxying, one linkemu link per egress port, ECN marking of
 * the outer IPv4 header, counters, and the text configuration and control
 * language. The model is described in fabric.h and docs/FABRIC.md.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fabric.h"

#define ETH_HLEN 14
#define ETHTYPE_IPV4 0x0800
#define ETHTYPE_ARP 0x0806
#define ARP_LEN 28
#define MIN_FRAME 60 /* without FCS */

struct route_ent {
	uint32_t ip; /* 0: empty slot */
	uint16_t port;
	bool is_static;
	bool has_mac;
	bool mac_fixed; /* given with the static route: never learned over */
	uint8_t mac[6];
};

struct fport {
	struct ovr_link *link;
	struct ovr_link_cfg cfg;
	struct ovr_fabric_port_stats st; /* the fabric's own counters */
	uint64_t tx_drop_bytes;
};

struct ovr_fabric {
	uint16_t nports;
	uint32_t max_frame;
	bool learning;
	bool arp_proxy;
	ovr_fabric_learn_fn learn_fn; /* what learning adds or moves */
	void *learn_arg;
	struct route_ent *rt; /* open addressing, linear probing */
	uint32_t rt_cap; /* power of two */
	uint32_t rt_n;
	uint8_t *scratch; /* max_frame bytes: rewritten or built frames */
	struct fport port[];
};

const char *const ovr_fabric_stat_names[] = {
	"rx",	      "rx_bytes", "arp",	"flooded",     "arp_proxied",
	"learned",    "no_route", "same_port",	"unsupported", "malformed",
	"too_big",    "offered",  "queue_drop", "loss",	       "ge_loss",
	"blackhole",  "dup",	  "corrupt",	"reordered",   "ce_marked",
	"ce_not_ect", "nomem",	  "tx",		"tx_bytes",    "tx_drop",
	"inflight",
};

_Static_assert(sizeof(ovr_fabric_stat_names) /
			       sizeof(ovr_fabric_stat_names[0]) ==
		       OVR_FABRIC_NSTATS,
	       "one name per counter");

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- Routes ---------------------------------------------------------- */

static uint32_t rt_hash(uint32_t ip, uint32_t cap)
{
	return (uint32_t)(((uint64_t)ip * 0x9e3779b97f4a7c15ull) >> 32) &
	       (cap - 1);
}

static struct route_ent *rt_find(const struct ovr_fabric *f, uint32_t ip)
{
	uint32_t i = rt_hash(ip, f->rt_cap);

	for (;; i = (i + 1) & (f->rt_cap - 1)) {
		if (f->rt[i].ip == ip)
			return &f->rt[i];
		if (!f->rt[i].ip)
			return NULL;
	}
}

static int rt_grow(struct ovr_fabric *f)
{
	uint32_t ncap = f->rt_cap * 2, i, j;
	struct route_ent *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (i = 0; i < f->rt_cap; i++) {
		if (!f->rt[i].ip)
			continue;
		for (j = rt_hash(f->rt[i].ip, ncap); n[j].ip;
		     j = (j + 1) & (ncap - 1))
			;
		n[j] = f->rt[i];
	}
	free(f->rt);
	f->rt = n;
	f->rt_cap = ncap;
	return 0;
}

/* The entry for @ip, a fresh zeroed one (ip set) when there was none. */
static struct route_ent *rt_insert(struct ovr_fabric *f, uint32_t ip)
{
	struct route_ent *e = rt_find(f, ip);
	uint32_t i;

	if (e)
		return e;
	if ((f->rt_n + 1) * 2 > f->rt_cap && rt_grow(f))
		return NULL;
	for (i = rt_hash(ip, f->rt_cap); f->rt[i].ip;
	     i = (i + 1) & (f->rt_cap - 1))
		;
	memset(&f->rt[i], 0, sizeof(f->rt[i]));
	f->rt[i].ip = ip;
	f->rt_n++;
	return &f->rt[i];
}

int ovr_fabric_route_del(struct ovr_fabric *f, uint32_t ip)
{
	uint32_t mask = f->rt_cap - 1, i, j, h;
	struct route_ent *e = ip ? rt_find(f, ip) : NULL;

	if (!e)
		return -ENOENT;
	/* backward-shift deletion: no tombstones */
	i = (uint32_t)(e - f->rt);
	f->rt[i].ip = 0;
	for (j = (i + 1) & mask; f->rt[j].ip; j = (j + 1) & mask) {
		h = rt_hash(f->rt[j].ip, f->rt_cap);
		/* move j into the hole at i unless its home lies in (i, j] */
		if (((j - h) & mask) >= ((j - i) & mask)) {
			f->rt[i] = f->rt[j];
			f->rt[j].ip = 0;
			i = j;
		}
	}
	f->rt_n--;
	return 0;
}

int ovr_fabric_route_add(struct ovr_fabric *f, uint32_t ip, uint16_t port,
			 const uint8_t *mac)
{
	struct route_ent *e;

	if (!ip || port >= f->nports)
		return -EINVAL;
	e = rt_insert(f, ip);
	if (!e)
		return -ENOMEM;
	e->port = port;
	e->is_static = true;
	e->mac_fixed = mac != NULL;
	e->has_mac = mac != NULL;
	if (mac)
		memcpy(e->mac, mac, 6);
	return 0;
}

static void fill_route(const struct route_ent *e, struct ovr_fabric_route *r)
{
	r->ip = e->ip;
	r->port = e->port;
	r->is_static = e->is_static;
	r->has_mac = e->has_mac;
	memcpy(r->mac, e->mac, 6);
}

int ovr_fabric_route_get(const struct ovr_fabric *f, uint32_t ip,
			 struct ovr_fabric_route *r)
{
	const struct route_ent *e = ip ? rt_find(f, ip) : NULL;

	if (!e)
		return -ENOENT;
	fill_route(e, r);
	return 0;
}

unsigned ovr_fabric_route_foreach(const struct ovr_fabric *f,
				  void (*fn)(void *arg,
					     const struct ovr_fabric_route *r),
				  void *arg)
{
	struct ovr_fabric_route r;
	unsigned n = 0;
	uint32_t i;

	for (i = 0; i < f->rt_cap; i++) {
		if (!f->rt[i].ip)
			continue;
		fill_route(&f->rt[i], &r);
		fn(arg, &r);
		n++;
	}
	return n;
}

static bool unicast_ip(uint32_t ip)
{
	return ip && ip != 0xffffffffu && (ip >> 28) != 0xe;
}

/* @ip (host order) sends from @port with source MAC @mac; @told: another
 * fabric learned it (ovr_fabric_learn: not counted, not told on) */
static void learn_as(struct ovr_fabric *f, uint32_t ip, uint16_t port,
		     const uint8_t *mac, bool told)
{
	struct route_ent *e;

	if (!f->learning || !unicast_ip(ip) || (mac[0] & 1))
		return;
	e = rt_find(f, ip);
	if (e && e->is_static) {
		if (e->port == port && !e->mac_fixed &&
		    (!e->has_mac || memcmp(e->mac, mac, 6))) {
			memcpy(e->mac, mac, 6);
			e->has_mac = true;
		}
		return;
	}
	if (e && e->port == port && !memcmp(e->mac, mac, 6))
		return;
	if (!e) {
		e = rt_insert(f, ip);
		if (!e)
			return; /* no memory: the frame still goes on */
	}
	e->port = port;
	memcpy(e->mac, mac, 6);
	e->has_mac = true;
	if (told)
		return;
	f->port[port].st.learned++;
	if (f->learn_fn)
		f->learn_fn(f->learn_arg, ip, port, mac);
}

static void learn(struct ovr_fabric *f, uint32_t ip, uint16_t port,
		  const uint8_t *mac)
{
	learn_as(f, ip, port, mac, false);
}

void ovr_fabric_set_learn_hook(struct ovr_fabric *f, ovr_fabric_learn_fn fn,
			       void *arg)
{
	f->learn_fn = fn;
	f->learn_arg = arg;
}

int ovr_fabric_learn(struct ovr_fabric *f, uint32_t ip, uint16_t port,
		     const uint8_t mac[6])
{
	if (port >= f->nports || !mac)
		return -EINVAL;
	learn_as(f, ip, port, mac, true);
	return 0;
}

/* ---- Fabric ---------------------------------------------------------- */

struct ovr_fabric *ovr_fabric_create(uint16_t nports, uint64_t seed,
				     uint32_t max_frame)
{
	struct ovr_fabric *f;
	uint16_t i;

	if (!nports || nports > OVR_FABRIC_MAX_PORTS || max_frame < 64) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f) + nports * sizeof(f->port[0]));
	if (!f)
		return NULL;
	f->nports = nports;
	f->max_frame = max_frame;
	f->learning = true;
	f->rt_cap = 64;
	f->rt = calloc(f->rt_cap, sizeof(*f->rt));
	f->scratch = malloc(max_frame > MIN_FRAME ? max_frame : MIN_FRAME);
	if (!f->rt || !f->scratch)
		goto fail;
	for (i = 0; i < nports; i++) {
		/* one independent stream per port */
		uint64_t x = seed ^ ((uint64_t)i << 48);

		f->port[i].cfg.seed = splitmix64(&x);
		f->port[i].link = ovr_link_create(&f->port[i].cfg, max_frame);
		if (!f->port[i].link)
			goto fail;
	}
	return f;
fail:
	ovr_fabric_destroy(f);
	errno = ENOMEM;
	return NULL;
}

void ovr_fabric_destroy(struct ovr_fabric *f)
{
	uint16_t i;

	if (!f)
		return;
	for (i = 0; i < f->nports; i++)
		ovr_link_destroy(f->port[i].link);
	free(f->rt);
	free(f->scratch);
	free(f);
}

uint16_t ovr_fabric_nports(const struct ovr_fabric *f)
{
	return f->nports;
}

uint32_t ovr_fabric_max_frame(const struct ovr_fabric *f)
{
	return f->max_frame;
}

int ovr_fabric_port_set(struct ovr_fabric *f, uint16_t port,
			const struct ovr_link_cfg *cfg)
{
	struct ovr_link_cfg c;
	int rc;

	if (port >= f->nports)
		return -EINVAL;
	c = *cfg;
	c.seed = f->port[port].cfg.seed;
	rc = ovr_link_set_cfg(f->port[port].link, &c);
	if (!rc)
		f->port[port].cfg = c;
	return rc;
}

int ovr_fabric_port_get(const struct ovr_fabric *f, uint16_t port,
			struct ovr_link_cfg *cfg)
{
	if (port >= f->nports)
		return -EINVAL;
	*cfg = f->port[port].cfg;
	return 0;
}

void ovr_fabric_set_learning(struct ovr_fabric *f, bool on)
{
	f->learning = on;
}

void ovr_fabric_set_arp_proxy(struct ovr_fabric *f, bool on)
{
	f->arp_proxy = on;
}

/* Offer @len bytes to the egress link of @out, with destination MAC @mac
 * when not NULL; 1 when the link took it. */
static int offer(struct ovr_fabric *f, uint16_t out, const uint8_t *p,
		 uint32_t len, uint64_t now, const uint8_t *mac)
{
	int rc;

	if (mac && memcmp(p, mac, 6)) {
		if (p != f->scratch)
			memcpy(f->scratch, p, len);
		memcpy(f->scratch, mac, 6);
		p = f->scratch;
	}
	rc = ovr_link_send(f->port[out].link, now, p, len);
	if (rc == -ENOMEM)
		f->port[out].st.nomem++;
	return rc == 0;
}

static int flood(struct ovr_fabric *f, uint16_t in, const uint8_t *p,
		 uint32_t len, uint64_t now)
{
	uint16_t q;
	int n = 0;

	f->port[in].st.flooded++;
	for (q = 0; q < f->nports; q++)
		if (q != in)
			n += offer(f, q, p, len, now, NULL);
	return n;
}

static int unicast(struct ovr_fabric *f, uint16_t in, uint32_t dst,
		   const uint8_t *p, uint32_t len, uint64_t now)
{
	const struct route_ent *e = rt_find(f, dst);

	if (!e) {
		f->port[in].st.no_route++;
		return 0;
	}
	if (e->port == in) {
		f->port[in].st.same_port++;
		return 0;
	}
	return offer(f, e->port, p, len, now, e->has_mac ? e->mac : NULL);
}

/* Answer an ARP request for @e's address on behalf of its owner. */
static int arp_reply(struct ovr_fabric *f, uint16_t in, const uint8_t *req,
		     const struct route_ent *e, uint64_t now)
{
	const uint8_t *ra = req + ETH_HLEN;
	uint8_t *r = f->scratch, *a = r + ETH_HLEN;

	memset(r, 0, MIN_FRAME);
	memcpy(r, ra + 8, 6); /* to the requester's hardware address */
	memcpy(r + 6, e->mac, 6);
	wr16(r + 12, ETHTYPE_ARP);
	wr16(a, 1);
	wr16(a + 2, ETHTYPE_IPV4);
	a[4] = 6;
	a[5] = 4;
	wr16(a + 6, 2); /* reply */
	memcpy(a + 8, e->mac, 6);
	wr32(a + 14, e->ip);
	memcpy(a + 18, ra + 8, 10); /* requester's MAC and IP */
	f->port[in].st.arp_proxied++;
	return offer(f, in, r, MIN_FRAME, now, NULL);
}

static int rx_arp(struct ovr_fabric *f, uint16_t in, const uint8_t *p,
		  uint32_t len, uint64_t now)
{
	const uint8_t *a = p + ETH_HLEN;
	uint32_t spa, tpa;
	uint16_t op;

	if (len < ETH_HLEN + ARP_LEN || rd16(a) != 1 ||
	    rd16(a + 2) != ETHTYPE_IPV4 || a[4] != 6 || a[5] != 4) {
		f->port[in].st.malformed++;
		return 0;
	}
	op = rd16(a + 6);
	if (op != 1 && op != 2) {
		f->port[in].st.malformed++;
		return 0;
	}
	f->port[in].st.arp++;
	spa = rd32(a + 14);
	tpa = rd32(a + 24);
	learn(f, spa, in, a + 8);
	if (op == 1 && f->arp_proxy) {
		const struct route_ent *e = rt_find(f, tpa);

		if (e && e->has_mac && e->port != in)
			return arp_reply(f, in, p, e, now);
	}
	/* broadcast, or unicast to an address not known (yet): a kernel
	 * re-validating a neighbour it cached before the fabric (re)started
	 * sends unicast probes, which must reach the owner to teach us */
	if ((p[0] & 1) || !rt_find(f, tpa))
		return flood(f, in, p, len, now);
	return unicast(f, in, tpa, p, len, now);
}

int ovr_fabric_rx(struct ovr_fabric *f, uint16_t port, const void *frame,
		  uint32_t len, uint64_t now_ns)
{
	const uint8_t *p = frame;
	struct ovr_fabric_port_stats *st;
	uint16_t etype;
	uint8_t ihl;

	if (port >= f->nports)
		return -EINVAL;
	st = &f->port[port].st;
	st->rx++;
	st->rx_bytes += len;
	if (len > f->max_frame) {
		st->too_big++;
		return 0;
	}
	if (len < ETH_HLEN) {
		st->malformed++;
		return 0;
	}
	etype = rd16(p + 12);
	if (etype == ETHTYPE_ARP)
		return rx_arp(f, port, p, len, now_ns);
	if (etype != ETHTYPE_IPV4) {
		st->unsupported++;
		return 0;
	}
	ihl = p[ETH_HLEN] & 0xf;
	if (len < ETH_HLEN + 20 || p[ETH_HLEN] >> 4 != 4 || ihl < 5 ||
	    len < ETH_HLEN + 4u * ihl) {
		st->malformed++;
		return 0;
	}
	learn(f, rd32(p + ETH_HLEN + 12), port, p + 6);
	if (p[0] & 1)
		return flood(f, port, p, len, now_ns);
	return unicast(f, port, rd32(p + ETH_HLEN + 16), p, len, now_ns);
}

/* The link marked this frame: CE in the outer IPv4 header if it is ECT. */
static void ecn_mark(struct fport *fp, uint8_t *b, uint32_t len)
{
	uint8_t *ip = b + ETH_HLEN;
	uint16_t oldw, neww;
	uint32_t sum;

	if (len < ETH_HLEN + 20 || rd16(b + 12) != ETHTYPE_IPV4 ||
	    ip[0] >> 4 != 4 || !(ip[1] & 3)) {
		fp->st.ce_not_ect++;
		return;
	}
	if ((ip[1] & 3) == 3)
		return; /* already CE */
	oldw = rd16(ip);
	ip[1] |= 3;
	neww = rd16(ip);
	/* RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m') */
	sum = (uint16_t)~rd16(ip + 10) + (uint32_t)(uint16_t)~oldw + neww;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	wr16(ip + 10, (uint16_t)~sum);
}

int ovr_fabric_recv(struct ovr_fabric *f, uint16_t port, uint64_t now_ns,
		    void *buf, uint32_t cap, uint32_t *len)
{
	struct ovr_link_meta m;
	int rc;

	if (port >= f->nports)
		return -EINVAL;
	rc = ovr_link_recv(f->port[port].link, now_ns, buf, cap, len, &m);
	if (rc == 1 && m.ce)
		ecn_mark(&f->port[port], buf, *len);
	return rc;
}

void ovr_fabric_tx_dropped(struct ovr_fabric *f, uint16_t port, uint64_t frames,
			   uint64_t bytes)
{
	if (port >= f->nports)
		return;
	f->port[port].st.tx_drop += frames;
	f->port[port].tx_drop_bytes += bytes;
}

unsigned ovr_fabric_drain(struct ovr_fabric *f, uint64_t now_ns,
			  ovr_fabric_tx_fn fn, void *arg)
{
	/* frames are handed over from a buffer of their own: fn may call
	 * ovr_fabric_rx(), which uses f->scratch */
	uint8_t *buf = malloc(f->max_frame);
	unsigned n = 0;
	uint32_t len;
	uint16_t q;

	if (!buf)
		return 0;
	for (q = 0; q < f->nports; q++) {
		while (ovr_fabric_recv(f, q, now_ns, buf, f->max_frame, &len) ==
		       1) {
			n++;
			if (fn(arg, q, buf, len))
				ovr_fabric_tx_dropped(f, q, 1, len);
		}
	}
	free(buf);
	return n;
}

uint64_t ovr_fabric_port_next_ns(const struct ovr_fabric *f, uint16_t port)
{
	return port < f->nports ? ovr_link_next_ns(f->port[port].link) :
				  UINT64_MAX;
}

uint64_t ovr_fabric_next_ns(const struct ovr_fabric *f)
{
	uint64_t t = UINT64_MAX, x;
	uint16_t q;

	for (q = 0; q < f->nports; q++) {
		x = ovr_link_next_ns(f->port[q].link);
		if (x < t)
			t = x;
	}
	return t;
}

int ovr_fabric_port_stats(const struct ovr_fabric *f, uint16_t port,
			  struct ovr_fabric_port_stats *s)
{
	const struct fport *fp;
	struct ovr_link_stats ls;

	if (port >= f->nports)
		return -EINVAL;
	fp = &f->port[port];
	*s = fp->st;
	ovr_link_get_stats(fp->link, &ls);
	s->offered = ls.sent;
	s->queue_drop = ls.tail_drops;
	s->loss = ls.lost - ls.lost_ge;
	s->ge_loss = ls.lost_ge;
	s->blackhole = ls.blackholed;
	s->dup = ls.duplicated;
	s->corrupt = ls.corrupted;
	s->reordered = ls.reordered;
	s->ce_marked = ls.ce_marked;
	s->tx = ls.delivered - fp->st.tx_drop;
	s->tx_bytes = ls.bytes_delivered - fp->tx_drop_bytes;
	s->inflight = ovr_link_inflight(fp->link);
	return 0;
}

/* ---- Text configuration ---------------------------------------------- */

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A non-negative finite number followed by a suffix of @sufs; the
 * multiplier of the suffix found (1 for none). */
struct suffix {
	const char *s;
	double mul;
};

static int parse_num(const char *s, const struct suffix *sufs, double dflt,
		     double *v)
{
	char *end;
	double x;

	if (!*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	x = strtod(s, &end);
	if (end == s || errno || !isfinite(x) || x < 0)
		return -EINVAL;
	if (!*end) {
		*v = x * dflt;
		return 0;
	}
	for (; sufs && sufs->s; sufs++) {
		if (!strcasecmp(end, sufs->s)) {
			*v = x * sufs->mul;
			return 0;
		}
	}
	return -EINVAL;
}

static const struct suffix rate_sufs[] = {
	{ "k", 1e3 },	 { "m", 1e6 },	  { "g", 1e9 },	   { "t", 1e12 },
	{ "bps", 1 },	 { "kbps", 1e3 }, { "mbps", 1e6 }, { "gbps", 1e9 },
	{ "kbit", 1e3 }, { "mbit", 1e6 }, { "gbit", 1e9 }, { NULL, 0 },
};

static const struct suffix time_sufs[] = {
	{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { NULL, 0 },
};

static const struct suffix byte_sufs[] = {
	{ "b", 1 },	   { "k", 1024 },     { "kb", 1024 },
	{ "m", 1 << 20 },  { "mb", 1 << 20 }, { "g", 1 << 30 },
	{ "gb", 1 << 30 }, { NULL, 0 },
};

static const struct suffix prob_sufs[] = {
	{ "%", 0.01 },
	{ NULL, 0 },
};

static int parse_u64(const char *s, const struct suffix *sufs, double dflt,
		     double max, uint64_t *out)
{
	double v;

	if (parse_num(s, sufs, dflt, &v) || v > max)
		return -EINVAL;
	*out = (uint64_t)llround(v);
	return 0;
}

static int parse_prob(const char *s, double *p)
{
	return parse_num(s, prob_sufs, 1, p) || *p > 1.0 ? -EINVAL : 0;
}

static int parse_bool(const char *s, bool *b)
{
	static const char *const yes[] = { "1", "on", "yes", "true" };
	static const char *const no[] = { "0", "off", "no", "false" };
	unsigned i;

	for (i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*b = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*b = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* Split "a/b/c" into at most @max parts (modifies @s). */
static unsigned split(char *s, char sep, char **parts, unsigned max)
{
	unsigned n = 0;

	while (n < max) {
		char *q = strchr(s, sep);

		parts[n++] = s;
		if (!q)
			return n;
		*q = '\0';
		s = q + 1;
	}
	return n + 1; /* too many */
}

static int parse_kv(struct ovr_link_cfg *c, char *key, char *val, char *err,
		    size_t errlen)
{
	char *parts[4];
	unsigned n;
	uint64_t u;

	if (!val) {
		if (!strcasecmp(key, "reset") || !strcasecmp(key, "clean")) {
			uint64_t seed = c->seed;

			memset(c, 0, sizeof(*c));
			c->seed = seed;
			return 0;
		}
		return fail(err, errlen, "'%s': expected key=value", key);
	}
	if (!strcasecmp(key, "rate")) {
		if (parse_u64(val, rate_sufs, 1, 1e15, &c->rate_bps))
			return fail(err, errlen,
				    "rate '%s': bits/s with k/m/g/t", val);
	} else if (!strcasecmp(key, "delay")) {
		if (parse_u64(val, time_sufs, 1e3, 1e12, &c->delay_ns))
			return fail(err, errlen,
				    "delay '%s': time with ns/us/ms/s", val);
	} else if (!strcasecmp(key, "jitter")) {
		if (parse_u64(val, time_sufs, 1e3, 1e12, &c->jitter_ns))
			return fail(err, errlen,
				    "jitter '%s': time with ns/us/ms/s", val);
	} else if (!strcasecmp(key, "fifo") ||
		   !strcasecmp(key, "jitter_fifo")) {
		if (parse_bool(val, &c->jitter_fifo))
			return fail(err, errlen, "%s '%s': 0 or 1", key, val);
	} else if (!strcasecmp(key, "queue") || !strcasecmp(key, "ecn")) {
		if (parse_u64(val, byte_sufs, 1, UINT32_MAX, &u))
			return fail(err, errlen, "%s '%s': bytes with k/m/g",
				    key, val);
		if (!strcasecmp(key, "queue"))
			c->queue_bytes = (uint32_t)u;
		else
			c->ecn_bytes = (uint32_t)u;
	} else if (!strcasecmp(key, "loss")) {
		if (parse_prob(val, &c->loss))
			return fail(err, errlen, "loss '%s': in [0, 1]", val);
	} else if (!strcasecmp(key, "dup")) {
		if (parse_prob(val, &c->dup))
			return fail(err, errlen, "dup '%s': in [0, 1]", val);
	} else if (!strcasecmp(key, "corrupt")) {
		if (parse_prob(val, &c->corrupt))
			return fail(err, errlen, "corrupt '%s': in [0, 1]",
				    val);
	} else if (!strcasecmp(key, "ge")) {
		double p, r = 0, bad = 1.0;

		n = split(val, '/', parts, 3);
		if (n > 3 || parse_prob(parts[0], &p) ||
		    (n > 1 && parse_prob(parts[1], &r)) ||
		    (n > 2 && parse_prob(parts[2], &bad)) || (p > 0 && r <= 0))
			return fail(err, errlen,
				    "ge: P/R[/LOSS_BAD] with R > 0, or 0");
		c->ge_p = p;
		c->ge_r = r;
		c->ge_loss_bad = bad;
	} else if (!strcasecmp(key, "reorder")) {
		double p;
		uint64_t t = 0;

		n = split(val, '/', parts, 2);
		if (n > 2 || parse_prob(parts[0], &p) ||
		    (n > 1 && parse_u64(parts[1], time_sufs, 1e3, 1e12, &t)) ||
		    (p > 0 && n < 2))
			return fail(err, errlen,
				    "reorder: P/TIME (e.g. 0.01/20us), or 0");
		c->reorder = p;
		c->reorder_ns = t;
	} else if (!strcasecmp(key, "blackhole")) {
		if (parse_bool(val, &c->blackhole))
			return fail(err, errlen, "blackhole '%s': 0 or 1", val);
	} else {
		return fail(err, errlen, "unknown key '%s'", key);
	}
	return 0;
}

int ovr_fabric_parse_link(struct ovr_link_cfg *cfg, const char *spec, char *err,
			  size_t errlen)
{
	char *copy = strdup(spec), *save = NULL, *tok;
	int rc = 0;

	if (!copy)
		return fail(err, errlen, "out of memory");
	for (tok = strtok_r(copy, ", \t\r\n", &save); tok && !rc;
	     tok = strtok_r(NULL, ", \t\r\n", &save)) {
		char *eq = strchr(tok, '=');

		if (eq)
			*eq++ = '\0';
		rc = parse_kv(cfg, tok, eq, err, errlen);
	}
	free(copy);
	return rc;
}

int ovr_fabric_parse_port(const struct ovr_fabric *f, const char *s,
			  uint16_t *port)
{
	char *end;
	unsigned long v;

	if (!strcasecmp(s, "all")) {
		*port = OVR_FABRIC_ALL;
		return 0;
	}
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v >= f->nports)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int ovr_fabric_parse_ip(const char *s, uint32_t *ip)
{
	unsigned a, b, c, d;
	char tail;

	if (sscanf(s, "%3u.%3u.%3u.%3u%c", &a, &b, &c, &d, &tail) != 4 ||
	    a > 255 || b > 255 || c > 255 || d > 255)
		return -EINVAL;
	*ip = a << 24 | b << 16 | c << 8 | d;
	return 0;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned m[6], i;
	char tail;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &m[0], &m[1], &m[2], &m[3],
		   &m[4], &m[5], &tail) != 6)
		return -EINVAL;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)m[i];
	return 0;
}

void ovr_fabric_print_cfg(const struct ovr_link_cfg *c, FILE *out)
{
	fprintf(out,
		"rate=%" PRIu64 " delay=%" PRIu64 "ns jitter=%" PRIu64
		"ns fifo=%d queue=%u ecn=%u loss=%.9g ge=%.9g/%.9g/%.9g "
		"reorder=%.9g/%" PRIu64 "ns dup=%.9g corrupt=%.9g "
		"blackhole=%d\n",
		c->rate_bps, c->delay_ns, c->jitter_ns, c->jitter_fifo,
		c->queue_bytes, c->ecn_bytes, c->loss, c->ge_p, c->ge_r,
		c->ge_loss_bad, c->reorder, c->reorder_ns, c->dup, c->corrupt,
		c->blackhole);
}

/* @port's counters summed over the @n fabrics @f */
static void stats_sum(struct ovr_fabric *const *f, unsigned n, uint16_t port,
		      uint64_t v[OVR_FABRIC_NSTATS])
{
	struct ovr_fabric_port_stats s;
	uint64_t w[OVR_FABRIC_NSTATS];

	memset(v, 0, OVR_FABRIC_NSTATS * sizeof(v[0]));
	for (unsigned i = 0; i < n; i++) {
		if (ovr_fabric_port_stats(f[i], port, &s))
			continue;
		memcpy(w, &s, sizeof(w));
		for (unsigned k = 0; k < OVR_FABRIC_NSTATS; k++)
			v[k] += w[k];
	}
}

void ovr_fabric_print_stats_n(struct ovr_fabric *const *f, unsigned n,
			      uint16_t port, FILE *out)
{
	uint64_t sum[OVR_FABRIC_NSTATS] = { 0 }, v[OVR_FABRIC_NSTATS];
	unsigned k;
	uint16_t q;

	if (!n)
		return;
	if (port != OVR_FABRIC_ALL) {
		if (port >= f[0]->nports)
			return;
		stats_sum(f, n, port, v);
		for (k = 0; k < OVR_FABRIC_NSTATS; k++)
			fprintf(out, "%s %" PRIu64 "\n",
				ovr_fabric_stat_names[k], v[k]);
		return;
	}
	for (q = 0; q < f[0]->nports; q++) {
		stats_sum(f, n, q, v);
		for (k = 0; k < OVR_FABRIC_NSTATS; k++)
			sum[k] += v[k];
	}
	for (k = 0; k < OVR_FABRIC_NSTATS; k++)
		fprintf(out, "%s %" PRIu64 "\n", ovr_fabric_stat_names[k],
			sum[k]);
	for (q = 0; q < f[0]->nports; q++) {
		stats_sum(f, n, q, v);
		for (k = 0; k < OVR_FABRIC_NSTATS; k++)
			fprintf(out, "p%u.%s %" PRIu64 "\n", q,
				ovr_fabric_stat_names[k], v[k]);
	}
}

void ovr_fabric_print_stats(const struct ovr_fabric *f, uint16_t port,
			    FILE *out)
{
	struct ovr_fabric *one = (struct ovr_fabric *)f;

	ovr_fabric_print_stats_n(&one, 1, port, out);
}

static void print_route(void *arg, const struct ovr_fabric_route *r)
{
	FILE *out = arg;

	fprintf(out, "%u.%u.%u.%u port %u", r->ip >> 24, (r->ip >> 16) & 0xff,
		(r->ip >> 8) & 0xff, r->ip & 0xff, r->port);
	if (r->has_mac)
		fprintf(out, " mac %02x:%02x:%02x:%02x:%02x:%02x", r->mac[0],
			r->mac[1], r->mac[2], r->mac[3], r->mac[4], r->mac[5]);
	fprintf(out, " %s\n", r->is_static ? "static" : "learned");
}

static int ctl_err(FILE *out, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int ctl_err(FILE *out, int rc, const char *fmt, ...)
{
	va_list ap;

	fputs("error: ", out);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	return rc;
}

static int ctl_set(struct ovr_fabric *f, char **tok, int n, FILE *out)
{
	struct ovr_link_cfg c;
	char err[160], spec[1024] = "";
	uint16_t port, q, first, last;
	size_t used = 0;
	int i, rc;

	if (n < 3 || ovr_fabric_parse_port(f, tok[1], &port))
		return ctl_err(out, -EINVAL,
			       "usage: set PORT|all key=val ... (ports 0-%u)",
			       f->nports - 1);
	for (i = 2; i < n; i++) {
		rc = snprintf(spec + used, sizeof(spec) - used, "%s ", tok[i]);
		if (rc < 0 || (size_t)rc >= sizeof(spec) - used)
			return ctl_err(out, -EINVAL, "too long");
		used += (size_t)rc;
	}
	first = port == OVR_FABRIC_ALL ? 0 : port;
	last = port == OVR_FABRIC_ALL ? f->nports - 1 : port;
	/* check on one copy first: all ports change, or none */
	ovr_fabric_port_get(f, first, &c);
	if (ovr_fabric_parse_link(&c, spec, err, sizeof(err)))
		return ctl_err(out, -EINVAL, "%s", err);
	for (q = first; q <= last; q++) {
		ovr_fabric_port_get(f, q, &c);
		if (ovr_fabric_parse_link(&c, spec, err, sizeof(err)) ||
		    ovr_fabric_port_set(f, q, &c))
			return ctl_err(out, -EINVAL, "port %u: invalid", q);
	}
	return 0;
}

static int ctl_route(struct ovr_fabric *f, char **tok, int n, FILE *out)
{
	uint8_t mac[6];
	uint32_t ip;
	uint16_t port;

	if (n == 3 && !strcmp(tok[1], "del")) {
		if (ovr_fabric_parse_ip(tok[2], &ip))
			return ctl_err(out, -EINVAL, "bad address '%s'",
				       tok[2]);
		if (ovr_fabric_route_del(f, ip))
			return ctl_err(out, -ENOENT, "no route to %s", tok[2]);
		return 0;
	}
	if (n < 3 || n > 4 || ovr_fabric_parse_ip(tok[1], &ip) || !ip ||
	    ovr_fabric_parse_port(f, tok[2], &port) || port == OVR_FABRIC_ALL ||
	    (n == 4 && parse_mac(tok[3], mac)))
		return ctl_err(out, -EINVAL,
			       "usage: route IP PORT [MAC] | route del IP");
	if (ovr_fabric_route_add(f, ip, port, n == 4 ? mac : NULL))
		return ctl_err(out, -ENOMEM, "out of memory");
	return 0;
}

int ovr_fabric_ctl_n(struct ovr_fabric *const *f, unsigned n, const char *line,
		     FILE *out)
{
	char word[8] = "";
	uint16_t port = OVR_FABRIC_ALL;
	char extra[2];
	int rc;

	if (n <= 1)
		return n ? ovr_fabric_ctl(f[0], line, out) : -EINVAL;
	sscanf(line, " %7s", word);
	if (!strcmp(word, "set") || !strcmp(word, "route")) {
		/* the first one answers; what it took, every other takes
		 * alike (the same command, the same configuration) */
		FILE *null = fopen("/dev/null", "w");

		if (!null)
			return ctl_err(out, -errno, "/dev/null: %s",
				       strerror(errno));
		rc = ovr_fabric_ctl(f[0], line, out);
		for (unsigned i = 1; rc >= 0 && i < n; i++)
			ovr_fabric_ctl(f[i], line, null);
		fclose(null);
		return rc;
	}
	if (!strcmp(word, "stats")) {
		char arg[16] = "";
		int k = sscanf(line, " %*s %15s %1s", arg, extra);

		if (k == 2 ||
		    (k == 1 && ovr_fabric_parse_port(f[0], arg, &port))) {
			ctl_err(out, -EINVAL, "usage: stats [PORT|all]");
			return -EINVAL;
		}
		ovr_fabric_print_stats_n(f, n, port, out);
		fputs("ok\n", out);
		return 0;
	}
	return ovr_fabric_ctl(f[0], line, out);
}

int ovr_fabric_ctl(struct ovr_fabric *f, const char *line, FILE *out)
{
	char *copy = strdup(line), *save = NULL, *tok[64], *t;
	struct ovr_link_cfg c;
	uint16_t port = OVR_FABRIC_ALL, q;
	int n = 0, rc = 0;

	if (!copy)
		return ctl_err(out, -ENOMEM, "out of memory");
	for (t = strtok_r(copy, " \t\r\n", &save); t && n < 64;
	     t = strtok_r(NULL, " \t\r\n", &save))
		tok[n++] = t;
	if (!n) {
		rc = ctl_err(out, -EINVAL, "empty command; try help");
		goto out;
	}
	if (!strcmp(tok[0], "set")) {
		rc = ctl_set(f, tok, n, out);
	} else if (!strcmp(tok[0], "stats") || !strcmp(tok[0], "show")) {
		if (n > 2 ||
		    (n == 2 && ovr_fabric_parse_port(f, tok[1], &port))) {
			rc = ctl_err(out, -EINVAL, "usage: %s [PORT|all]",
				     tok[0]);
			goto out;
		}
		if (tok[0][1] == 't') {
			ovr_fabric_print_stats(f, port, out);
		} else {
			for (q = 0; q < f->nports; q++) {
				if (port != OVR_FABRIC_ALL && q != port)
					continue;
				ovr_fabric_port_get(f, q, &c);
				fprintf(out, "port %u ", q);
				ovr_fabric_print_cfg(&c, out);
			}
		}
	} else if (!strcmp(tok[0], "route")) {
		rc = ctl_route(f, tok, n, out);
	} else if (!strcmp(tok[0], "routes")) {
		ovr_fabric_route_foreach(f, print_route, out);
	} else if (!strcmp(tok[0], "quit")) {
		rc = 1;
	} else if (!strcmp(tok[0], "help")) {
		fputs("set PORT|all key=val ...   (rate delay jitter fifo queue "
		      "ecn loss ge reorder dup corrupt blackhole reset)\n"
		      "show [PORT]\nstats [PORT]\nroute IP PORT [MAC]\n"
		      "route del IP\nroutes\nquit\n",
		      out);
	} else {
		rc = ctl_err(out, -EINVAL, "unknown command '%s'; try help",
			     tok[0]);
	}
out:
	if (rc >= 0)
		fputs("ok\n", out);
	free(copy);
	return rc;
}
