/* SPDX-License-Identifier: MIT */
/*
 * ccsim scenarios S1-S5 (../shared/brief/TRANSPORT-AND-CC.md): each one
 * builds its topology, runs every algorithm with the same seed and fills
 * a result per (case, algorithm). The runners print Markdown tables and,
 * with an output directory, write gnuplot data and scripts.
 */
#ifndef OVR_CCSIM_SCENARIOS_H
#define OVR_CCSIM_SCENARIOS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <ovrdma/cc.h>

#define CCSIM_MAX_ALGS 8

struct ccsim_opts {
	uint64_t seed;
	bool quick; /* smaller runs (tests, smoke) */
	const char *outdir; /* NULL: tables only */
	const struct ovr_cc_ops *algs[CCSIM_MAX_ALGS];
	int nalg;
	FILE *out; /* tables */
};

/* S1: one flow over a lossy, jittery dumbbell. */
struct s1_result {
	double goodput_gbps; /* long transfer */
	double ratio; /* goodput / loss-free goodput of the same algorithm */
	double spurious; /* spurious resends / packets sent */
	double p99_1mb_us; /* p99 completion of back-to-back 1 MB messages */
	uint64_t rtos;
};
/* One S1 case; loss < 0 selects Gilbert-Elliott with mean loss -loss. */
void ccsim_s1_case(const struct ccsim_opts *o, const struct ovr_cc_ops *cc,
		   double rtt_us, double loss, double jitter_us,
		   struct s1_result *r);

/* S2: N:1 incast on one switch. */
struct s2_result {
	double util; /* bottleneck busy fraction until the last byte */
	double q_p50_kb, q_p99_kb, q_max_kb;
	uint64_t drops;
	double completion_ratio; /* bursts: completion / ideal */
	double victim_p99_us; /* 4 KB victim messages */
};
void ccsim_s2_case(const struct ccsim_opts *o, const struct ovr_cc_ops *cc,
		   int n, uint64_t buffer, bool bursts, bool ecn_stripped,
		   const char *qtrace, struct s2_result *r);

/* S3: flows joining and leaving a bottleneck. */
struct s3_result {
	double conv_rtts_mean, conv_rtts_max; /* joining flow to +-10 % */
	int not_converged; /* joins that never got there */
	double jain_1ms_p50, jain_1ms_min, jain_100us_p50;
	double util;
};
void ccsim_s3_case(const struct ccsim_opts *o, const struct ovr_cc_ops *cc,
		   int nflows, const char *rtrace, struct s3_result *r);

/* S4: flow completion times on a leaf-spine fabric. */
#define S4_BINS 4
struct s4_result {
	double p50[S4_BINS], p95[S4_BINS], p99[S4_BINS];
	uint32_t n[S4_BINS];
	uint32_t incomplete;
	uint64_t drops;
	double short_p99; /* flows < 100 KB */
};
enum s4_workload { S4_WEBSEARCH, S4_FBHADOOP };
void ccsim_s4_case(const struct ccsim_opts *o, const struct ovr_cc_ops *cc,
		   enum s4_workload wl, double load, const char *fcttrace,
		   struct s4_result *r);
extern const char *const s4_bin_names[S4_BINS];

/* S5: overlay pathologies. */
struct s5_result {
	double goodput_gbps;
	double spurious;
	double q_p99_kb;
	uint64_t drops, rtos;
	double util;
};
enum s5_kind { S5_SPRAY, S5_BLACKHOLE, S5_ECN_STRIPPED };
void ccsim_s5_case(const struct ccsim_opts *o, const struct ovr_cc_ops *cc,
		   enum s5_kind kind, int paths, struct s5_result *r);

/* Full scenario runners: tables on o->out, plots under o->outdir. */
void ccsim_run_s1(const struct ccsim_opts *o);
void ccsim_run_s2(const struct ccsim_opts *o);
void ccsim_run_s3(const struct ccsim_opts *o);
void ccsim_run_s4(const struct ccsim_opts *o);
void ccsim_run_s5(const struct ccsim_opts *o);

/* Helpers shared with the tests. */
double ccsim_percentile(double *v, size_t n, double pct); /* sorts v */
double ccsim_jain(const double *x, size_t n);

#endif /* OVR_CCSIM_SCENARIOS_H */
