// SPDX-License-Identifier: MIT
/*
 * ccsim scenarios S1-S5. Settings follow ../shared/brief/TRANSPORT-AND-CC.md
 * and the public HPCC ns-3 simulator (100 Gbit/s hosts, 400 Gbit/s fabric,
 * 1 us links, 32 MB switch buffers, ECN Kmin 400 KB / Kmax 1600 KB /
 * Pmax 0.2 at 100 Gbit/s, WebSearch and FbHadoop flow sizes). Every case
 * takes the seed from the options: same seed, same packets, same result.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios.h"
#include "sim.h"

#define GBPS 100.0
#define MSS 4096

static const struct sim_ecn_cfg hpcc_ecn = {
	.enabled = true,
	.kmin = 400 * 1000,
	.kmax = 1600 * 1000,
	.pmax = 0.2,
};

/* ---- statistics ---------------------------------------------------------- */

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double ccsim_percentile(double *v, size_t n, double pct)
{
	size_t i;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_dbl);
	i = (size_t)ceil(pct / 100.0 * (double)n);
	if (i)
		i--;
	if (i >= n)
		i = n - 1;
	return v[i];
}

double ccsim_jain(const double *x, size_t n)
{
	double s = 0, s2 = 0;

	for (size_t i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	return s2 > 0 ? s * s / ((double)n * s2) : 1.0;
}

struct dvec {
	double *v;
	size_t n, cap;
};

static void dv_push(struct dvec *d, double x)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 1024;
		d->v = realloc(d->v, d->cap * sizeof(*d->v));
		if (!d->v)
			abort();
	}
	d->v[d->n++] = x;
}

static FILE *open_trace(const char *path)
{
	FILE *f;

	if (!path)
		return NULL;
	f = fopen(path, "w");
	if (!f)
		perror(path);
	return f;
}

/* ---- building blocks ----------------------------------------------------- */

/* @ecn_stripped: switches mark, the overlay clears CE before delivery */
static struct sim *new_sim(const struct ccsim_opts *o,
			   const struct ovr_cc_ops *cc, uint64_t buffer,
			   bool ecn, bool ecn_stripped)
{
	struct sim_cfg c = {
		.seed = o->seed,
		.mss = MSS,
		.switch_buffer = buffer,
		.cc = cc,
		.max_cwnd_pkts = 1024,
		.min_rto_ps = 200 * PS_PER_US,
		.ecn_stripped = ecn_stripped,
	};

	if (ecn)
		c.ecn = hpcc_ecn;
	return sim_create(&c);
}

static struct sim_link_cfg link_cfg(double gbps, double delay_us)
{
	return (struct sim_link_cfg){
		.gbps = gbps, .delay_ps = (uint64_t)(delay_us * PS_PER_US)
	};
}

/* Samples one or more ports' queues every @every until @until or *stop. */
struct qsampler {
	uint32_t node;
	int port[16];
	int nport;
	uint64_t every, until;
	const bool *stop;
	struct dvec q; /* bytes: the largest of the ports at each sample */
	FILE *trace;
};

static void qsample(struct sim *s, void *arg)
{
	struct qsampler *qs = arg;
	uint64_t m = 0;

	for (int i = 0; i < qs->nport; i++) {
		uint64_t q = sim_port_qlen(s, qs->node, qs->port[i]);

		if (q > m)
			m = q;
	}
	dv_push(&qs->q, (double)m);
	if (qs->trace)
		fprintf(qs->trace, "%.3f %.2f\n",
			(double)sim_now(s) / PS_PER_US, (double)m / 1000);
	if ((qs->stop && *qs->stop) || sim_now(s) + qs->every > qs->until)
		return;
	sim_at(s, sim_now(s) + qs->every, qsample, qs);
}

/* Completion times (us) of the finished flows with size in [lo, hi). */
static void flow_fcts_us(struct sim *s, struct dvec *d, uint64_t lo,
			 uint64_t hi)
{
	struct sim_flow_stats st;

	for (uint32_t i = 0; i < sim_nflows(s); i++) {
		const struct sim_flow *f = sim_flow_get(s, i);

		if (!sim_flow_done(f))
			continue;
		sim_flow_stats(f, &st);
		if (st.size < lo || st.size >= hi)
			continue;
		dv_push(d, (double)(st.finish_ps - st.start_ps) / PS_PER_US);
	}
}

/* ---- S1: lossy dumbbell --------------------------------------------------- */

struct s1_ctx {
	struct sim *s;
	uint32_t h0, h1;
	int left, done;
	struct dvec fct;
};

static void s1_next(void *arg, const struct sim_flow_stats *st)
{
	struct s1_ctx *c = arg;

	(void)st;
	c->done++;
	if (c->left-- > 0)
		sim_flow_add(c->s, c->h0, c->h1, 1 << 20, sim_now(c->s), false);
}

static struct sim *s1_topo(const struct ccsim_opts *o,
			   const struct ovr_cc_ops *cc, double rtt_us,
			   double loss, double jitter_us, uint32_t *h0,
			   uint32_t *h1)
{
	struct sim *s = new_sim(o, cc, 1000 * 1000, true, false);
	struct sim_link_cfg l = link_cfg(GBPS, (rtt_us - 0.8) / 4);
	struct sim_impair imp = {
		.loss = loss < 0 ? SIM_LOSS_GE :
			loss > 0 ? SIM_LOSS_BERNOULLI :
				   SIM_LOSS_NONE,
		.p = fabs(loss),
		.burst = 4,
		.jitter_ps = (uint64_t)(jitter_us * PS_PER_US),
		.data_only = true,
	};
	uint32_t sw;
	int p;

	*h0 = sim_add_host(s);
	*h1 = sim_add_host(s);
	sw = sim_add_switch(s);
	sim_link(s, *h0, sw, &l, NULL);
	p = sim_link(s, sw, *h1, &l, NULL);
	sim_port_impair(s, sw, p, &imp);
	sim_routes(s);
	sim_set_base_rtt_hint(s, sim_base_rtt_ps(s, *h0, *h1) / PS_PER_NS);
	return s;
}

static void s1_run(const struct ccsim_opts *o, const struct ovr_cc_ops *cc,
		   double rtt_us, double loss, double jitter_us,
		   struct s1_result *r)
{
	uint64_t size = (o->quick ? 8ull : 32ull) << 20;
	struct sim_flow_stats st;
	struct sim_counters ctr;
	struct s1_ctx c = { 0 };
	struct sim_flow *f;
	struct sim *s;

	memset(r, 0, sizeof(*r));
	s = s1_topo(o, cc, rtt_us, loss, jitter_us, &c.h0, &c.h1);
	f = sim_flow_add(s, c.h0, c.h1, size, 0, false);
	sim_run(s, 5 * PS_PER_MS * 1000);
	sim_flow_stats(f, &st);
	sim_counters(s, &ctr);
	if (sim_flow_done(f))
		r->goodput_gbps = (double)size * 8 /
				  ((double)(st.finish_ps - st.start_ps) / 1000);
	r->spurious = st.pkts_sent ? (double)st.spurious / st.pkts_sent : 0;
	r->rtos = st.rtos;
	sim_destroy(s);

	/* back-to-back 1 MB messages */
	s = s1_topo(o, cc, rtt_us, loss, jitter_us, &c.h0, &c.h1);
	c.s = s;
	c.left = o->quick ? 30 : 200;
	sim_on_complete(s, s1_next, &c);
	sim_flow_add(s, c.h0, c.h1, 1 << 20, 0, false);
	c.left--;
	sim_run(s, 5 * PS_PER_MS * 1000);
	{
		struct dvec d = { 0 };

		flow_fcts_us(s, &d, 0, UINT64_MAX);
		r->p99_1mb_us = ccsim_percentile(d.v, d.n, 99);
		free(d.v);
	}
	sim_destroy(s);
}

void ccsim_s1_case(const struct ccsim_opts *o, const struct ovr_cc_ops *cc,
		   double rtt_us, double loss, double jitter_us,
		   struct s1_result *r)
{
	struct s1_result base;

	s1_run(o, cc, rtt_us, loss, jitter_us, r);
	if (loss == 0) {
		r->ratio = r->goodput_gbps > 0 ? 1 : 0;
		return;
	}
	s1_run(o, cc, rtt_us, 0, jitter_us, &base);
	r->ratio = base.goodput_gbps > 0 ? r->goodput_gbps / base.goodput_gbps :
					   0;
}

/* ---- S2: incast ------------------------------------------------------------ */

struct s2_ctx {
	struct sim *s;
	uint32_t victim, recv;
	int bursts_left;
	bool stop;
	uint64_t until;
	uint32_t first_victim;
};

static void s2_done(void *arg, const struct sim_flow_stats *st)
{
	struct s2_ctx *c = arg;

	if (st->src != c->victim && --c->bursts_left == 0)
		c->stop = true;
}

/* A 4 KB victim message every 20 us while the incast lasts. */
static void s2_victim(struct sim *s, void *arg)
{
	struct s2_ctx *c = arg;

	if (c->stop || sim_now(s) >= c->until)
		return;
	sim_flow_add(s, c->victim, c->recv, 4096, sim_now(s), false);
	sim_at(s, sim_now(s) + 20 * PS_PER_US, s2_victim, c);
}

/* Star of n senders, a victim sender and a receiver, RTT about 12 us. */
static struct sim *star(const struct ccsim_opts *o, const struct ovr_cc_ops *cc,
			int n, uint64_t buffer, bool ecn_stripped,
			uint32_t *senders, uint32_t *victim, uint32_t *recv,
			uint32_t *sw, int *bottleneck)
{
	struct sim *s = new_sim(o, cc, buffer, true, ecn_stripped);
	struct sim_link_cfg l = link_cfg(GBPS, 2.8);

	*sw = sim_add_switch(s);
	for (int i = 0; i < n; i++) {
		senders[i] = sim_add_host(s);
		sim_link(s, senders[i], *sw, &l, NULL);
	}
	*victim = sim_add_host(s);
	sim_link(s, *victim, *sw, &l, NULL);
	*recv = sim_add_host(s);
	*bottleneck = sim_link(s, *sw, *recv, &l, NULL);
	sim_routes(s);
	sim_set_base_rtt_hint(s, sim_base_rtt_ps(s, senders[0], *recv) /
					 PS_PER_NS);
	return s;
}

void ccsim_s2_case(const struct ccsim_opts *o, const struct ovr_cc_ops *cc,
		   int n, uint64_t buffer, bool bursts, bool ecn_stripped,
		   const char *qtrace, struct s2_result *r)
{
	uint32_t *snd = calloc((size_t)n, sizeof(*snd)), sw;
	struct sim_flow **fl = calloc((size_t)n, sizeof(*fl));
	struct s2_ctx c = { 0 };
	struct qsampler qs = { 0 };
	struct sim_counters ctr;
	uint64_t t_end, burst = 64 * 1024, longrun;
	struct dvec v = { 0 };
	struct sim *s;
	int bn;

	memset(r, 0, sizeof(*r));
	s = star(o, cc, n, buffer, ecn_stripped, snd, &c.victim, &c.recv, &sw,
		 &bn);
	c.s = s;
	c.bursts_left = n;
	longrun = (o->quick ? 1 : 3) * PS_PER_MS;
	c.until = bursts ? 1000 * PS_PER_MS : longrun;
	sim_on_complete(s, s2_done, &c);
	for (int i = 0; i < n; i++)
		fl[i] = sim_flow_add(s, snd[i], c.recv,
				     bursts ? burst : (1ull << 40),
				     (uint64_t)(sim_rand(s) * PS_PER_US),
				     false);
	c.first_victim = sim_nflows(s);
	sim_at(s, 5 * PS_PER_US, s2_victim, &c);
	qs.node = sw;
	qs.port[0] = bn;
	qs.nport = 1;
	qs.every = PS_PER_US;
	qs.until = c.until;
	qs.stop = &c.stop;
	qs.trace = open_trace(qtrace);
	sim_at(s, 0, qsample, &qs);
	if (bursts) {
		sim_run(s, c.until);
		t_end = 0;
		for (int i = 0; i < n; i++) {
			struct sim_flow_stats st;

			sim_flow_stats(fl[i], &st);
			if (st.finish_ps > t_end)
				t_end = st.finish_ps;
		}
		{
			/* ideal: every byte through the bottleneck at line
			 * rate after one one-way trip */
			double wire = (double)n * (double)burst *
				      (MSS + SIM_HDR_BYTES) / MSS;
			double ideal =
				wire * 8 / GBPS * 1000 +
				(double)sim_base_rtt_ps(s, snd[0], c.recv) / 2;

			r->completion_ratio = (double)t_end / ideal;
			/* busy fraction: the bursts' bytes at line rate */
			r->util = (wire * 8 / GBPS * 1000) / (double)t_end;
		}
	} else {
		sim_run(s, longrun);
		t_end = longrun;
		c.stop = true;
	}
	if (!bursts)
		r->util = (double)sim_port_tx_bytes(s, sw, bn) * 8 / GBPS *
			  1000 / (double)t_end;
	if (qs.trace)
		fclose(qs.trace);
	r->q_max_kb = 0;
	for (size_t i = 0; i < qs.q.n; i++)
		if (qs.q.v[i] > r->q_max_kb)
			r->q_max_kb = qs.q.v[i];
	r->q_max_kb /= 1000;
	r->q_p50_kb = ccsim_percentile(qs.q.v, qs.q.n, 50) / 1000;
	r->q_p99_kb = ccsim_percentile(qs.q.v, qs.q.n, 99) / 1000;
	sim_counters(s, &ctr);
	r->drops = ctr.buf_drops;
	for (uint32_t i = c.first_victim; i < sim_nflows(s); i++) {
		struct sim_flow *f = sim_flow_get(s, i);
		struct sim_flow_stats st;

		if (!sim_flow_done(f))
			continue;
		sim_flow_stats(f, &st);
		if (st.src == c.victim)
			dv_push(&v, (double)(st.finish_ps - st.start_ps) /
					    PS_PER_US);
	}
	r->victim_p99_us = ccsim_percentile(v.v, v.n, 99);
	free(v.v);
	free(qs.q.v);
	free(snd);
	free(fl);
	sim_destroy(s);
}

/* ---- S3: convergence ------------------------------------------------------- */

struct s3_ctx {
	struct sim_flow **fl;
	int n;
	uint64_t every, until;
	struct dvec *deliv; /* per flow: delivered bytes at each sample */
	size_t ns;
};

static void s3_sample(struct sim *s, void *arg)
{
	struct s3_ctx *c = arg;

	for (int i = 0; i < c->n; i++)
		dv_push(&c->deliv[i], (double)sim_flow_delivered(c->fl[i]));
	c->ns++;
	if (sim_now(s) + c->every <= c->until)
		sim_at(s, sim_now(s) + c->every, s3_sample, c);
}

static void s3_leave(struct sim *s, void *arg)
{
	(void)s;
	sim_flow_stop(arg);
}

void ccsim_s3_case(const struct ccsim_opts *o, const struct ovr_cc_ops *cc,
		   int nflows, const char *rtrace, struct s3_result *r)
{
	uint32_t *snd = calloc((size_t)nflows, sizeof(*snd)), victim, recv, sw;
	uint64_t join = (o->quick ? 2 : 5) * PS_PER_MS, every = 10 * PS_PER_US;
	struct s3_ctx c = { 0 };
	struct dvec j1 = { 0 }, j100 = { 0 }, conv = { 0 };
	double base_rtt, tot_bytes = 0;
	struct sim *s;
	FILE *tr;
	int bn;

	memset(r, 0, sizeof(*r));
	s = star(o, cc, nflows, 32ull << 20, false, snd, &victim, &recv, &sw,
		 &bn);
	base_rtt = (double)sim_base_rtt_ps(s, snd[0], recv);
	c.n = nflows;
	c.fl = calloc((size_t)nflows, sizeof(*c.fl));
	c.deliv = calloc((size_t)nflows, sizeof(*c.deliv));
	c.every = every;
	c.until = (uint64_t)(2 * nflows) * join;
	for (int i = 0; i < nflows; i++) {
		c.fl[i] = sim_flow_add(s, snd[i], recv, 1ull << 40,
				       (uint64_t)i * join, false);
		sim_at(s, (uint64_t)(2 * nflows - 1 - i) * join, s3_leave,
		       c.fl[i]);
	}
	sim_at(s, 0, s3_sample, &c);
	sim_run(s, c.until);

	/* rate of flow i over samples (a, b], Gbit/s */
#define RATE(i, a, b)                                \
	(((c.deliv[i].v[b] - c.deliv[i].v[a]) * 8) / \
	 ((double)((b) - (a)) * (double)every / 1000))
	/* which flows are active at sample k */
#define ACTIVE(i, k)                                  \
	((uint64_t)(k)*every >= (uint64_t)(i)*join && \
	 (uint64_t)(k)*every < (uint64_t)(2 * nflows - 1 - (i)) * join)
	tr = open_trace(rtrace);
	for (size_t k = 10; tr && k < c.ns; k += 10) {
		fprintf(tr, "%.3f", (double)(k * every) / PS_PER_MS);
		for (int i = 0; i < nflows; i++)
			fprintf(tr, " %.2f", RATE(i, k - 10, k));
		fprintf(tr, "\n");
	}
	if (tr)
		fclose(tr);
	/* convergence of each joining flow: its 50 us rate within 10 % of
	 * the active flows' mean for 10 samples in a row */
	for (int i = 1; i < nflows; i++) {
		size_t k0 = (size_t)((uint64_t)i * join / every) + 5,
		       kend = (size_t)((uint64_t)(i + 1) * join / every);
		size_t run = 0, k;

		for (k = k0; k < kend && k < c.ns; k++) {
			double mine = RATE(i, k - 5, k), sum = 0;
			int act = 0;

			for (int j = 0; j <= i; j++) {
				sum += RATE(j, k - 5, k);
				act++;
			}
			if (fabs(mine - sum / act) <= 0.1 * sum / act) {
				if (++run == 10)
					break;
			} else {
				run = 0;
			}
		}
		if (run == 10) {
			double t = (double)((k - 9 - 5) * every) -
				   (double)i * (double)join;

			dv_push(&conv, t / base_rtt);
		} else {
			r->not_converged++;
		}
	}
	if (conv.n) {
		double sum = 0, mx = 0;

		for (size_t i = 0; i < conv.n; i++) {
			sum += conv.v[i];
			if (conv.v[i] > mx)
				mx = conv.v[i];
		}
		r->conv_rtts_mean = sum / conv.n;
		r->conv_rtts_max = mx;
	}
	/* Jain over 1 ms and 100 us windows, skipping the first fifth of
	 * each period (transients) and periods with one flow */
	for (int per = 0; per < 2 * nflows; per++) {
		size_t a = (size_t)((uint64_t)per * join / every),
		       b = (size_t)((uint64_t)(per + 1) * join / every);
		int nact = per < nflows ? per + 1 : 2 * nflows - per - 1;

		if (nact < 2)
			continue;
		a += (b - a) / 5;
		for (int w = 0; w < 2; w++) {
			size_t len = w ? 10 : 100;

			for (size_t k = a; k + len <= b && k + len < c.ns;
			     k += len) {
				double x[64];
				int m = 0;

				for (int i = 0; i < nflows && m < 64; i++)
					if (ACTIVE(i, k) && ACTIVE(i, k + len))
						x[m++] = RATE(i, k, k + len);
				if (m >= 2)
					dv_push(w ? &j100 : &j1,
						ccsim_jain(x, (size_t)m));
			}
		}
	}
	r->jain_1ms_p50 = ccsim_percentile(j1.v, j1.n, 50);
	r->jain_1ms_min = j1.n ? j1.v[0] : 0; /* sorted by the percentile */
	r->jain_100us_p50 = ccsim_percentile(j100.v, j100.n, 50);
	for (int i = 0; i < nflows; i++)
		tot_bytes += c.deliv[i].v[c.ns - 1];
	/* the last period has no flow left */
	r->util = tot_bytes * 8 / GBPS * 1000 / (double)(c.until - join);
#undef RATE
#undef ACTIVE
	for (int i = 0; i < nflows; i++)
		free(c.deliv[i].v);
	free(c.deliv);
	free(c.fl);
	free(j1.v);
	free(j100.v);
	free(conv.v);
	free(snd);
	sim_destroy(s);
}

/* ---- S4: flow completion times under load --------------------------------- */

/* Flow-size CDFs as published with the HPCC simulator (traffic_gen/):
 * WebSearch from the DCTCP paper (Alizadeh et al., SIGCOMM 2010),
 * FbHadoop from Roy et al., "Inside the Social Network's (Datacenter)
 * Network", SIGCOMM 2015. {bytes, cumulative percent}. */
struct cdf_pt {
	double size, pct;
};
static const struct cdf_pt websearch[] = {
	{ 0, 0 },	 { 10000, 15 },	  { 20000, 20 },    { 30000, 30 },
	{ 50000, 40 },	 { 80000, 53 },	  { 200000, 60 },   { 1000000, 70 },
	{ 2000000, 80 }, { 5000000, 90 }, { 10000000, 97 }, { 30000000, 100 },
};
static const struct cdf_pt fbhadoop[] = {
	{ 0, 0 },	{ 100, 1 },	   { 200, 2 },	    { 300, 5 },
	{ 350, 15 },	{ 400, 20 },	   { 500, 30 },	    { 600, 40 },
	{ 700, 50 },	{ 1000, 60 },	   { 2000, 67 },    { 7000, 70 },
	{ 30000, 72 },	{ 50000, 82 },	   { 80000, 87 },   { 120000, 90 },
	{ 300000, 95 }, { 1000000, 97.5 }, { 2000000, 99 }, { 10000000, 100 },
};

const char *const s4_bin_names[S4_BINS] = { "<10KB", "10KB-100KB", "100KB-1MB",
					    ">=1MB" };

static int s4_bin(uint64_t size)
{
	return size < 10000 ? 0 : size < 100000 ? 1 : size < 1000000 ? 2 : 3;
}

static double cdf_mean(const struct cdf_pt *c, size_t n)
{
	double m = 0;

	for (size_t i = 1; i < n; i++)
		m += (c[i].pct - c[i - 1].pct) / 100 *
		     (c[i].size + c[i - 1].size) / 2;
	return m;
}

static uint64_t cdf_draw(struct sim *s, const struct cdf_pt *c, size_t n)
{
	double u = sim_rand(s) * 100;
	size_t i = 1;

	while (i < n - 1 && c[i].pct < u)
		i++;
	{
		double span = c[i].pct - c[i - 1].pct;
		double x = span > 0 ? (u - c[i - 1].pct) / span : 1;
		double sz = c[i - 1].size + x * (c[i].size - c[i - 1].size);

		return sz < 1 ? 1 : (uint64_t)sz;
	}
}

void ccsim_s4_case(const struct ccsim_opts *o, const struct ovr_cc_ops *cc,
		   enum s4_workload wl, double load, const char *fcttrace,
		   struct s4_result *r)
{
	const int leaves = 4, per_leaf = 16, spines = 4;
	const struct cdf_pt *cdf = wl == S4_WEBSEARCH ? websearch : fbhadoop;
	size_t ncdf = wl == S4_WEBSEARCH ? sizeof(websearch) / sizeof(*cdf) :
					   sizeof(fbhadoop) / sizeof(*cdf);
	uint64_t dur = (o->quick ? 2 : 10) * PS_PER_MS;
	uint32_t hosts[64], leaf[4], spine[4];
	struct sim_link_cfg down = link_cfg(GBPS, 1), up = link_cfg(400, 1);
	struct dvec bins[S4_BINS] = { 0 }, all = { 0 }, shortf = { 0 };
	struct sim_counters ctr;
	double lambda; /* flows per ps per host */
	struct sim *s;
	FILE *tr;

	memset(r, 0, sizeof(*r));
	s = new_sim(o, cc, 32ull << 20, true, false);
	for (int l = 0; l < leaves; l++)
		leaf[l] = sim_add_switch(s);
	for (int p = 0; p < spines; p++)
		spine[p] = sim_add_switch(s);
	for (int l = 0; l < leaves; l++) {
		for (int h = 0; h < per_leaf; h++) {
			hosts[l * per_leaf + h] = sim_add_host(s);
			sim_link(s, hosts[l * per_leaf + h], leaf[l], &down,
				 NULL);
		}
		for (int p = 0; p < spines; p++)
			sim_link(s, leaf[l], spine[p], &up, NULL);
	}
	sim_routes(s);
	sim_set_base_rtt_hint(s, sim_base_rtt_ps(s, hosts[0], hosts[63]) /
					 PS_PER_NS);
	lambda = load * GBPS * 1e9 / 8 / cdf_mean(cdf, ncdf) / 1e12;
	for (int h = 0; h < leaves * per_leaf; h++) {
		double t = 0;

		for (;;) {
			uint32_t d;

			t += -log(1 - sim_rand(s)) / lambda;
			if (t >= (double)dur)
				break;
			do
				d = (uint32_t)(sim_rand(s) * leaves * per_leaf);
			while ((int)d == h);
			sim_flow_add(s, hosts[h], hosts[d],
				     cdf_draw(s, cdf, ncdf), (uint64_t)t,
				     false);
		}
	}
	sim_run(s, dur + 100 * PS_PER_MS);
	for (uint32_t i = 0; i < sim_nflows(s); i++) {
		struct sim_flow *f = sim_flow_get(s, i);
		struct sim_flow_stats st;
		double sd;

		if (!sim_flow_done(f)) {
			r->incomplete++;
			continue;
		}
		sim_flow_stats(f, &st);
		sd = (double)(st.finish_ps - st.start_ps) / st.ideal_ps;
		if (sd < 1)
			sd = 1;
		dv_push(&bins[s4_bin(st.size)], sd);
		dv_push(&all, sd);
		if (st.size < 100000)
			dv_push(&shortf, sd);
	}
	for (int b = 0; b < S4_BINS; b++) {
		r->n[b] = (uint32_t)bins[b].n;
		r->p50[b] = ccsim_percentile(bins[b].v, bins[b].n, 50);
		r->p95[b] = ccsim_percentile(bins[b].v, bins[b].n, 95);
		r->p99[b] = ccsim_percentile(bins[b].v, bins[b].n, 99);
		free(bins[b].v);
	}
	r->short_p99 = ccsim_percentile(shortf.v, shortf.n, 99);
	/* CDF of the short flows' slowdown */
	tr = open_trace(fcttrace);
	for (size_t i = 0; tr && i < shortf.n; i++)
		fprintf(tr, "%.4f %.5f\n", shortf.v[i],
			(double)(i + 1) / shortf.n);
	if (tr)
		fclose(tr);
	sim_counters(s, &ctr);
	r->drops = ctr.buf_drops;
	free(all.v);
	free(shortf.v);
	sim_destroy(s);
}

/* ---- S5: overlay pathologies ---------------------------------------------- */

struct s5_ctx {
	struct sim_flow *f;
	uint64_t at_from, at_to;
};

static void s5_mark_from(struct sim *s, void *arg)
{
	struct s5_ctx *c = arg;

	(void)s;
	c->at_from = sim_flow_delivered(c->f);
}

static void s5_mark_to(struct sim *s, void *arg)
{
	struct s5_ctx *c = arg;

	(void)s;
	c->at_to = sim_flow_delivered(c->f);
	sim_flow_stop(c->f);
}

void ccsim_s5_case(const struct ccsim_opts *o, const struct ovr_cc_ops *cc,
		   enum s5_kind kind, int paths, struct s5_result *r)
{
	struct sim_link_cfg edge = link_cfg(GBPS, 1);
	struct qsampler qs = { 0 };
	struct sim_counters ctr;
	struct sim_flow_stats st;
	struct s5_ctx c = { 0 };
	uint32_t h0, h1, a, b;
	struct sim *s;

	memset(r, 0, sizeof(*r));
	if (kind == S5_ECN_STRIPPED) {
		struct s2_result r2;

		ccsim_s2_case(o, cc, 16, 32ull << 20, false, true, NULL, &r2);
		r->q_p99_kb = r2.q_p99_kb;
		r->drops = r2.drops;
		r->util = r2.util;
		r->goodput_gbps = r2.util * GBPS;
		return;
	}
	if (paths > 16)
		paths = 16;
	s = new_sim(o, cc, 32ull << 20, true, false);
	h0 = sim_add_host(s);
	h1 = sim_add_host(s);
	a = sim_add_switch(s);
	b = sim_add_switch(s);
	sim_link(s, h0, a, &edge, NULL);
	sim_link(s, b, h1, &edge, NULL);
	for (int i = 0; i < paths; i++) {
		/* unequal paths: 1 us to 9 us one way */
		struct sim_link_cfg l =
			link_cfg(GBPS / paths,
				 1 + 8.0 * i / (paths > 1 ? paths - 1 : 1));

		qs.port[qs.nport++] = sim_link(s, a, b, &l, NULL);
	}
	sim_routes(s);
	sim_set_base_rtt_hint(s, sim_base_rtt_ps(s, h0, h1) / PS_PER_NS);
	qs.node = a;
	qs.every = PS_PER_US;
	if (kind == S5_SPRAY) {
		uint64_t size = (o->quick ? 8ull : 32ull) << 20;

		c.f = sim_flow_add(s, h0, h1, size, 0, true);
		qs.until = 1000 * PS_PER_MS;
		qs.stop = NULL;
		sim_at(s, 0, qsample, &qs);
		/* the sampler stops with the flow: poll for completion */
		while (!sim_flow_done(c.f) && sim_now(s) < 1000 * PS_PER_MS)
			sim_run(s, sim_now(s) + PS_PER_MS);
		sim_flow_stats(c.f, &st);
		if (sim_flow_done(c.f))
			r->goodput_gbps =
				(double)size * 8 /
				((double)(st.finish_ps - st.start_ps) / 1000);
		r->util = r->goodput_gbps / GBPS;
	} else {
		uint64_t from = (o->quick ? 2 : 5) * PS_PER_MS,
			 to = from + 10 * PS_PER_MS;

		c.f = sim_flow_add(s, h0, h1, 1ull << 40, 0, true);
		sim_port_blackhole(s, a, qs.port[0], from, to);
		sim_at(s, from, s5_mark_from, &c);
		sim_at(s, to, s5_mark_to, &c);
		qs.until = to;
		sim_at(s, 0, qsample, &qs);
		sim_run(s, to + 50 * PS_PER_MS);
		sim_flow_stats(c.f, &st);
		r->goodput_gbps = (double)(c.at_to - c.at_from) * 8 /
				  ((double)(to - from) / 1000);
		/* what the surviving paths could carry */
		r->util = r->goodput_gbps / (GBPS * (paths - 1) / paths);
	}
	r->spurious = st.pkts_sent ? (double)st.spurious / st.pkts_sent : 0;
	r->rtos = st.rtos;
	r->q_p99_kb = ccsim_percentile(qs.q.v, qs.q.n, 99) / 1000;
	sim_counters(s, &ctr);
	r->drops = ctr.buf_drops;
	free(qs.q.v);
	sim_destroy(s);
}

/* ---- runners: tables and plots --------------------------------------------- */

static void header(const struct ccsim_opts *o, const char *first)
{
	fprintf(o->out, "| %s |", first);
	for (int a = 0; a < o->nalg; a++)
		fprintf(o->out, " %s |", o->algs[a]->name);
	fprintf(o->out, "\n|---|");
	for (int a = 0; a < o->nalg; a++)
		fprintf(o->out, "---|");
	fprintf(o->out, "\n");
}

/* DIR/PREFIX_A_B.dat (B may be empty) */
static char *trace_path(const struct ccsim_opts *o, const char *prefix,
			const char *a, const char *b)
{
	static char buf[1024];

	if (!o->outdir)
		return NULL;
	snprintf(buf, sizeof(buf), "%s/%s_%s%s%s.dat", o->outdir, prefix, a,
		 b[0] ? "_" : "", b);
	return buf;
}

void ccsim_run_s1(const struct ccsim_opts *o)
{
	static const double losses[] = { 0, 1e-4, 1e-3, 1e-2, 5e-2, -1e-2 };
	static const double rtts[] = { 10, 30 };
	const size_t nl = sizeof(losses) / sizeof(losses[0]);

	fprintf(o->out,
		"\n### S1 lossy dumbbell (1 flow, 100 Gbit/s, jitter U[0,20] us, 1 MB buffer)\n"
		"Cell: goodput / loss-free goodput of the same algorithm, "
		"spurious resends %% of packets, p99 completion of a 1 MB "
		"message (us).\n\n");
	header(o, "RTT, loss");
	for (size_t t = 0; t < 2; t++) {
		struct s1_result base[CCSIM_MAX_ALGS];

		for (size_t l = 0; l < nl; l++) {
			fprintf(o->out, "| %g us, %s%g %% |", rtts[t],
				losses[l] < 0 ? "GE burst 4, " : "",
				fabs(losses[l]) * 100);
			for (int a = 0; a < o->nalg; a++) {
				struct s1_result r;

				s1_run(o, o->algs[a], rtts[t], losses[l], 20,
				       &r);
				if (l == 0)
					base[a] = r;
				r.ratio = base[a].goodput_gbps > 0 ?
						  r.goodput_gbps /
							  base[a].goodput_gbps :
						  0;
				if (l == 0)
					fprintf(o->out,
						" %.1f Gb/s, %.2f %%, %.0f |",
						r.goodput_gbps,
						r.spurious * 100, r.p99_1mb_us);
				else
					fprintf(o->out,
						" %.3f, %.2f %%, %.0f |",
						r.ratio, r.spurious * 100,
						r.p99_1mb_us);
				fflush(o->out);
			}
			fprintf(o->out, "\n");
		}
	}
}

void ccsim_run_s2(const struct ccsim_opts *o)
{
	static const int ns[] = { 16, 64, 256 };
	static const uint64_t bufs[] = { 32ull << 20, 4ull << 20 };

	fprintf(o->out,
		"\n### S2 incast N:1 (RTT 12 us, 100 Gbit/s, ECN 400 KB-1.6 MB)\n"
		"Cell: utilisation, p99 / max queue (KB), buffer drops, "
		"completion / ideal (64 KB bursts), p99 of a 4 KB victim (us).\n\n");
	header(o, "case");
	for (int w = 0; w < 2; w++) {
		for (size_t b = 0; b < 2; b++) {
			for (size_t n = 0; n < 3; n++) {
				fprintf(o->out, "| %d:1, %llu MB, %s |", ns[n],
					(unsigned long long)(bufs[b] >> 20),
					w ? "long-lived" : "64 KB bursts");
				for (int a = 0; a < o->nalg; a++) {
					struct s2_result r;
					const char *tr = NULL;

					if (w && ns[n] == 64 && b == 1)
						tr = trace_path(
							o, "s2_queue",
							o->algs[a]->name, "");
					ccsim_s2_case(o, o->algs[a], ns[n],
						      bufs[b], !w, false, tr,
						      &r);
					fprintf(o->out,
						" %.2f, %.0f/%.0f, %llu, ",
						r.util, r.q_p99_kb, r.q_max_kb,
						(unsigned long long)r.drops);
					if (w)
						fprintf(o->out, "-, ");
					else
						fprintf(o->out, "%.2fx, ",
							r.completion_ratio);
					fprintf(o->out, "%.0f |",
						r.victim_p99_us);
					fflush(o->out);
				}
				fprintf(o->out, "\n");
			}
		}
	}
}

void ccsim_run_s3(const struct ccsim_opts *o)
{
	static const int ns[] = { 4, 8 };

	fprintf(o->out,
		"\n### S3 convergence (flows join every %d ms, then leave; 100 Gbit/s, RTT 12 us)\n"
		"Cell: joining flow to +-10 %% of fair share, mean / max (RTTs; "
		"n.c. = joins that never got there), Jain p50 / min over 1 ms "
		"windows, Jain p50 over 100 us, utilisation.\n\n",
		o->quick ? 2 : 5);
	header(o, "flows");
	for (size_t n = 0; n < 2; n++) {
		fprintf(o->out, "| %d |", ns[n]);
		for (int a = 0; a < o->nalg; a++) {
			struct s3_result r;
			const char *tr =
				ns[n] == 4 ? trace_path(o, "s3_rates",
							o->algs[a]->name, "") :
					     NULL;

			ccsim_s3_case(o, o->algs[a], ns[n], tr, &r);
			fprintf(o->out, " %.0f / %.0f", r.conv_rtts_mean,
				r.conv_rtts_max);
			if (r.not_converged)
				fprintf(o->out, " (%d n.c.)", r.not_converged);
			fprintf(o->out, ", %.3f / %.3f, %.3f, %.2f |",
				r.jain_1ms_p50, r.jain_1ms_min,
				r.jain_100us_p50, r.util);
			fflush(o->out);
		}
		fprintf(o->out, "\n");
	}
}

void ccsim_run_s4(const struct ccsim_opts *o)
{
	static const double loads[] = { 0.3, 0.5, 0.7 };
	static const char *const wl_names[] = { "WebSearch", "FbHadoop" };

	fprintf(o->out,
		"\n### S4 FCT slowdown (64 hosts, 4 leaves x 16, 4 spines; 100G hosts, 400G fabric, 32 MB buffers)\n"
		"Cell: p50 / p95 / p99 slowdown per size bin; last line of each "
		"case: p99 of all flows < 100 KB, drops, unfinished flows.\n\n");
	header(o, "workload, load, bin");
	for (int w = 0; w < 2; w++) {
		for (size_t l = 0; l < 3; l++) {
			struct s4_result r[CCSIM_MAX_ALGS];

			for (int a = 0; a < o->nalg; a++) {
				char ld[32];
				const char *tr = NULL;

				snprintf(ld, sizeof(ld), "%s_%.0f", wl_names[w],
					 loads[l] * 100);
				if (l == 2)
					tr = trace_path(o, "s4_fct", ld,
							o->algs[a]->name);
				ccsim_s4_case(o, o->algs[a],
					      (enum s4_workload)w, loads[l], tr,
					      &r[a]);
			}
			for (int b = 0; b < S4_BINS; b++) {
				fprintf(o->out, "| %s %.0f %%, %s |",
					wl_names[w], loads[l] * 100,
					s4_bin_names[b]);
				for (int a = 0; a < o->nalg; a++)
					fprintf(o->out,
						" %.1f / %.1f / %.1f (n=%u) |",
						r[a].p50[b], r[a].p95[b],
						r[a].p99[b], r[a].n[b]);
				fprintf(o->out, "\n");
			}
			fprintf(o->out, "| %s %.0f %%, **short p99** |",
				wl_names[w], loads[l] * 100);
			for (int a = 0; a < o->nalg; a++)
				fprintf(o->out,
					" **%.1f**, %llu drops, %u unfinished |",
					r[a].short_p99,
					(unsigned long long)r[a].drops,
					r[a].incomplete);
			fprintf(o->out, "\n");
			fflush(o->out);
		}
	}
}

void ccsim_run_s5(const struct ccsim_opts *o)
{
	fprintf(o->out,
		"\n### S5 overlay pathologies\n"
		"Spray: one flow sprayed round-robin over k paths (100/k Gbit/s each, 1-9 us one way). "
		"Black hole: path 0 of 4 drops everything for 10 ms. "
		"ECN stripped: 16:1 long-lived incast, the overlay clears CE.\n"
		"Cell: goodput Gbit/s (black hole: during the hole), utilisation of what is left, "
		"p99 queue KB, drops, spurious %%, RTOs.\n\n");
	header(o, "case");
	for (int k = 0; k < 4; k++) {
		static const char *const names[] = { "spray 4 paths",
						     "spray 8 paths",
						     "black hole 1 of 4",
						     "ECN stripped" };
		enum s5_kind kind = k < 2  ? S5_SPRAY :
				    k == 2 ? S5_BLACKHOLE :
					     S5_ECN_STRIPPED;

		fprintf(o->out, "| %s |", names[k]);
		for (int a = 0; a < o->nalg; a++) {
			struct s5_result r;

			ccsim_s5_case(o, o->algs[a], kind, k == 1 ? 8 : 4, &r);
			fprintf(o->out,
				" %.1f, %.2f, %.0f, %llu, %.2f %%, %llu |",
				r.goodput_gbps, r.util, r.q_p99_kb,
				(unsigned long long)r.drops, r.spurious * 100,
				(unsigned long long)r.rtos);
			fflush(o->out);
		}
		fprintf(o->out, "\n");
	}
}
