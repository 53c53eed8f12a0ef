// SPDX-License-Identifier: MIT
/*
 * In-memory impaired link. The model is described in
 * include/ovrdma/linkemu.h; this file keeps the packets in flight in a
 * binary min-heap ordered by (arrival time, sequence number), so packets
 * due at the same nanosecond leave in the order they were sent.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/linkemu.h>

struct lpkt {
	uint64_t arrive_ns;
	uint64_t seq; /* tie-break: FIFO among equal arrival times */
	uint64_t sent_ns;
	uint32_t len;
	bool ce;
	uint8_t data[];
};

struct ovr_link {
	struct ovr_link_cfg cfg;
	uint64_t rng[4]; /* xoshiro256** state */
	uint64_t tx_free_ns; /* serializer busy until */
	uint64_t last_arrive_ns; /* for jitter_fifo */
	uint64_t seq;
	bool ge_bad; /* Gilbert-Elliott state */
	uint32_t max_pkt;
	struct lpkt **heap;
	uint32_t n, cap;
	struct ovr_link_stats st;
};

/* ---- PRNG: xoshiro256** seeded through splitmix64 (Vigna, public domain
 * algorithms; written here so that each link has its own stream) ------- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t ovr_link_rand(struct ovr_link *l)
{
	uint64_t *s = l->rng;
	uint64_t r = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

double ovr_link_rand01(struct ovr_link *l)
{
	return (double)(ovr_link_rand(l) >> 11) * 0x1.0p-53;
}

/* true with probability @p; draws nothing when p is 0 so that turning an
 * impairment off does not shift the stream of the others */
static bool chance(struct ovr_link *l, double p)
{
	return p > 0 && ovr_link_rand01(l) < p;
}

static uint64_t uniform(struct ovr_link *l, uint64_t max)
{
	if (!max)
		return 0;
	if (max == UINT64_MAX)
		return ovr_link_rand(l);
	return ovr_link_rand(l) % (max + 1); /* bias < max/2^64: negligible */
}

/* ---- Heap ------------------------------------------------------------ */

static bool before(const struct lpkt *a, const struct lpkt *b)
{
	return a->arrive_ns < b->arrive_ns ||
	       (a->arrive_ns == b->arrive_ns && a->seq < b->seq);
}

static int heap_push(struct ovr_link *l, struct lpkt *p)
{
	uint32_t i;

	if (l->n == l->cap) {
		uint32_t ncap = l->cap ? l->cap * 2 : 64;
		struct lpkt **nh = realloc(l->heap, ncap * sizeof(*nh));

		if (!nh)
			return -ENOMEM;
		l->heap = nh;
		l->cap = ncap;
	}
	i = l->n++;
	while (i > 0) {
		uint32_t up = (i - 1) / 2;

		if (!before(p, l->heap[up]))
			break;
		l->heap[i] = l->heap[up];
		i = up;
	}
	l->heap[i] = p;
	return 0;
}

static struct lpkt *heap_pop(struct ovr_link *l)
{
	struct lpkt *top = l->heap[0], *last = l->heap[--l->n];
	uint32_t i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= l->n)
			break;
		if (c + 1 < l->n && before(l->heap[c + 1], l->heap[c]))
			c++;
		if (!before(l->heap[c], last))
			break;
		l->heap[i] = l->heap[c];
		i = c;
	}
	if (l->n)
		l->heap[i] = last;
	return top;
}

/* ---- Link ------------------------------------------------------------ */

static bool prob_ok(double p)
{
	return p >= 0.0 && p <= 1.0; /* false for NaN too */
}

static int check_cfg(const struct ovr_link_cfg *c)
{
	if (!prob_ok(c->loss) || !prob_ok(c->ge_p) || !prob_ok(c->ge_r) ||
	    !prob_ok(c->ge_loss_bad) || !prob_ok(c->reorder) ||
	    !prob_ok(c->dup) || !prob_ok(c->corrupt))
		return -EINVAL;
	/* a chain that enters the bad state must be able to leave it */
	if (c->ge_p > 0 && c->ge_r <= 0)
		return -EINVAL;
	return 0;
}

struct ovr_link *ovr_link_create(const struct ovr_link_cfg *cfg,
				 uint32_t max_pkt)
{
	struct ovr_link *l;
	uint64_t x;
	int i;

	if (!max_pkt || check_cfg(cfg)) {
		errno = EINVAL;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->cfg = *cfg;
	l->max_pkt = max_pkt;
	x = cfg->seed;
	for (i = 0; i < 4; i++)
		l->rng[i] = splitmix64(&x);
	return l;
}

void ovr_link_destroy(struct ovr_link *l)
{
	if (!l)
		return;
	while (l->n)
		free(heap_pop(l));
	free(l->heap);
	free(l);
}

int ovr_link_set_cfg(struct ovr_link *l, const struct ovr_link_cfg *cfg)
{
	int rc = check_cfg(cfg);

	if (rc)
		return rc;
	l->cfg = *cfg; /* the PRNG stream continues; cfg->seed is ignored */
	return 0;
}

/* Backlog in bytes that a packet offered at @now finds in the serializer */
static uint64_t backlog_bytes(const struct ovr_link *l, uint64_t now)
{
	uint64_t ns = l->tx_free_ns > now ? l->tx_free_ns - now : 0;

	if (!l->cfg.rate_bps)
		return 0;
	return (uint64_t)((double)ns * (double)l->cfg.rate_bps / 8e9);
}

static bool wire_loses(struct ovr_link *l)
{
	const struct ovr_link_cfg *c = &l->cfg;

	if (c->ge_p > 0) {
		if (!l->ge_bad && chance(l, c->ge_p))
			l->ge_bad = true;
		else if (l->ge_bad && chance(l, c->ge_r))
			l->ge_bad = false;
		if (l->ge_bad) {
			if (!chance(l, c->ge_loss_bad))
				return false;
			l->st.lost_ge++;
			return true;
		}
	}
	return chance(l, c->loss);
}

/* Queue @p (ownership passes to the link, also on error) to arrive after
 * @depart plus delay, jitter and reordering. */
static int enqueue(struct ovr_link *l, struct lpkt *p, uint64_t depart)
{
	const struct ovr_link_cfg *c = &l->cfg;
	uint64_t arrive;
	int rc;

	arrive = depart + c->delay_ns + uniform(l, c->jitter_ns);
	if (c->jitter_fifo) {
		if (arrive < l->last_arrive_ns)
			arrive = l->last_arrive_ns;
		l->last_arrive_ns = arrive;
	}
	if (chance(l, c->reorder)) {
		arrive += c->reorder_ns;
		l->st.reordered++;
	}
	p->arrive_ns = arrive;
	p->seq = l->seq++;
	rc = heap_push(l, p);
	if (rc)
		free(p);
	return rc;
}

int ovr_link_send(struct ovr_link *l, uint64_t now_ns, const void *pkt,
		  uint32_t len)
{
	const struct ovr_link_cfg *c = &l->cfg;
	uint64_t backlog, depart;
	struct lpkt *p, *dup;
	bool ce;
	int rc;

	if (len > l->max_pkt)
		return -EMSGSIZE;
	l->st.sent++;
	if (c->blackhole) {
		l->st.blackholed++;
		return 0;
	}

	backlog = backlog_bytes(l, now_ns);
	if (c->queue_bytes && backlog + len > c->queue_bytes) {
		l->st.tail_drops++;
		return -ENOBUFS;
	}
	ce = c->ecn_bytes && backlog > c->ecn_bytes;
	depart = l->tx_free_ns > now_ns ? l->tx_free_ns : now_ns;
	if (c->rate_bps)
		depart +=
			((uint64_t)len * 8 * 1000000000ull + c->rate_bps - 1) /
			c->rate_bps;
	l->tx_free_ns = depart;

	if (wire_loses(l)) {
		l->st.lost++;
		return 0;
	}
	p = malloc(sizeof(*p) + len);
	if (!p)
		return -ENOMEM;
	p->sent_ns = now_ns;
	p->len = len;
	p->ce = ce;
	if (len)
		memcpy(p->data, pkt, len);
	if (ce)
		l->st.ce_marked++;
	if (len && chance(l, c->corrupt)) {
		uint64_t bit = uniform(l, (uint64_t)len * 8 - 1);

		p->data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		l->st.corrupted++;
	}
	/* one allocation per packet; a duplicate copies the queued original,
	 * which only ovr_link_recv() (not running now) can take away */
	rc = enqueue(l, p, depart);
	if (!rc && chance(l, c->dup)) {
		l->st.duplicated++;
		dup = malloc(sizeof(*dup) + len);
		if (!dup)
			return -ENOMEM;
		memcpy(dup, p, sizeof(*dup) + len);
		rc = enqueue(l, dup, depart);
	}
	return rc;
}

int ovr_link_recv(struct ovr_link *l, uint64_t now_ns, void *buf, uint32_t cap,
		  uint32_t *len, struct ovr_link_meta *meta)
{
	struct lpkt *p;

	if (!l->n || l->heap[0]->arrive_ns > now_ns)
		return 0;
	if (l->heap[0]->len > cap)
		return -ENOSPC;
	p = heap_pop(l);
	memcpy(buf, p->data, p->len);
	if (meta) {
		meta->sent_ns = p->sent_ns;
		meta->arrive_ns = p->arrive_ns;
		meta->ce = p->ce;
	}
	l->st.delivered++;
	l->st.bytes_delivered += p->len;
	*len = p->len;
	free(p);
	return 1;
}

uint64_t ovr_link_next_ns(const struct ovr_link *l)
{
	return l->n ? l->heap[0]->arrive_ns : UINT64_MAX;
}

uint32_t ovr_link_inflight(const struct ovr_link *l)
{
	return l->n;
}

void ovr_link_get_stats(const struct ovr_link *l, struct ovr_link_stats *s)
{
	*s = l->st;
}
