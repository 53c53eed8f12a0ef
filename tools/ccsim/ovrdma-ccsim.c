// SPDX-License-Identifier: MIT
/*
 * ovrdma-ccsim: compare congestion-control algorithms in the packet-level
 * simulator on scenarios S1-S5 (docs/CONGESTION.md).
 *
 *   ovrdma-ccsim [--scenario s1,s2,...|all] [--alg ovr,dcqcn,...]
 *                [--seed N] [--quick] [--out DIR]
 *
 * Tables (Markdown) go to stdout. With --out, gnuplot data, a gnuplot
 * script and (when gnuplot is installed) PNG plots are written to DIR.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scenarios.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ovrdma-ccsim [--scenario LIST|all] [--alg LIST] [--seed N]\n"
		"                    [--quick] [--out DIR]\n"
		"  --scenario  comma-separated among s1 s2 s3 s4 s5 (default all)\n"
		"  --alg       comma-separated algorithm names (default: every\n"
		"              registered one except \"fixed\")\n"
		"  --seed      simulator seed (default 1); same seed, same result\n"
		"  --quick     shorter runs\n"
		"  --out DIR   write plot data, DIR/plots.gp and PNGs\n");
}

static void write_plots(const struct ccsim_opts *o, const char *scen)
{
	char path[1024];
	FILE *g;

	snprintf(path, sizeof(path), "%s/plots.gp", o->outdir);
	g = fopen(path, "w");
	if (!g) {
		perror(path);
		return;
	}
	fprintf(g, "set terminal pngcairo size 1000,600 noenhanced\n"
		   "set key outside right\nset grid\n");
	if (strstr(scen, "s2")) {
		fprintf(g,
			"set output 's2_queue.png'\n"
			"set title 'S2: 64:1 long-lived incast, 4 MB buffer: bottleneck queue'\n"
			"set xlabel 'time (us)'\nset ylabel 'queue (KB)'\n"
			"set logscale y\nplot");
		for (int a = 0; a < o->nalg; a++)
			fprintf(g,
				"%s 's2_queue_%s.dat' using 1:($2+0.01) with lines title '%s'",
				a ? "," : "", o->algs[a]->name,
				o->algs[a]->name);
		fprintf(g, "\nunset logscale y\n");
	}
	if (strstr(scen, "s3")) {
		for (int a = 0; a < o->nalg; a++) {
			fprintf(g,
				"set output 's3_rates_%s.png'\n"
				"set title 'S3: per-flow rate, 4 flows joining and leaving (%s)'\n"
				"set xlabel 'time (ms)'\nset ylabel 'Gbit/s (100 us windows)'\n"
				"plot for [i=2:5] 's3_rates_%s.dat' using 1:i with lines title sprintf('flow %%d', i-2)\n",
				o->algs[a]->name, o->algs[a]->name,
				o->algs[a]->name);
		}
	}
	if (strstr(scen, "s4")) {
		static const char *const wl[] = { "WebSearch_70",
						  "FbHadoop_70" };

		for (int w = 0; w < 2; w++) {
			fprintf(g,
				"set output 's4_fct_%s.png'\n"
				"set title 'S4: FCT slowdown CDF of flows < 100 KB, %s %% load'\n"
				"set xlabel 'slowdown'\nset ylabel 'CDF'\nset logscale x\nplot",
				wl[w], wl[w]);
			for (int a = 0; a < o->nalg; a++)
				fprintf(g,
					"%s 's4_fct_%s_%s.dat' using 1:2 with lines title '%s'",
					a ? "," : "", wl[w], o->algs[a]->name,
					o->algs[a]->name);
			fprintf(g, "\nunset logscale x\n");
		}
	}
	fclose(g);
	snprintf(path, sizeof(path),
		 "command -v gnuplot >/dev/null && cd '%s' && gnuplot plots.gp",
		 o->outdir);
	if (system(path) != 0)
		fprintf(stderr,
			"ovrdma-ccsim: gnuplot not run (is it installed?); "
			"data and %s/plots.gp are there\n",
			o->outdir);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "scenario", required_argument, NULL, 's' },
		{ "alg", required_argument, NULL, 'a' },
		{ "seed", required_argument, NULL, 'S' },
		{ "quick", no_argument, NULL, 'q' },
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ccsim_opts o = { .seed = 1, .out = stdout };
	const char *scen = "s1,s2,s3,s4,s5", *algs = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "s:a:S:qo:h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			scen = strcmp(optarg, "all") ? optarg :
						       "s1,s2,s3,s4,s5";
			break;
		case 'a':
			algs = optarg;
			break;
		case 'S':
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 'q':
			o.quick = true;
			break;
		case 'o':
			o.outdir = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (algs) {
		char *dup = strdup(algs), *save = NULL;

		for (char *t = strtok_r(dup, ",", &save); t;
		     t = strtok_r(NULL, ",", &save)) {
			const struct ovr_cc_ops *ops = ovr_cc_find(t);

			if (!ops) {
				fprintf(stderr,
					"ovrdma-ccsim: unknown algorithm '%s'\n",
					t);
				return 2;
			}
			if (o.nalg == CCSIM_MAX_ALGS)
				break;
			o.algs[o.nalg++] = ops;
		}
		free(dup);
	} else {
		const struct ovr_cc_ops *all[OVR_CC_MAX_ALGS];
		size_t n = ovr_cc_list(all, OVR_CC_MAX_ALGS);

		/* baselines first, ours last */
		for (size_t i = 0; i < n && o.nalg < CCSIM_MAX_ALGS; i++)
			if (strcmp(all[i]->name, "fixed") &&
			    strcmp(all[i]->name, "ovr"))
				o.algs[o.nalg++] = all[i];
		o.algs[o.nalg++] = ovr_cc_default();
	}
	if (o.outdir)
		mkdir(o.outdir, 0755);
	printf("ovrdma-ccsim seed %llu%s\n", (unsigned long long)o.seed,
	       o.quick ? " (quick)" : "");
	if (strstr(scen, "s1"))
		ccsim_run_s1(&o);
	if (strstr(scen, "s2"))
		ccsim_run_s2(&o);
	if (strstr(scen, "s3"))
		ccsim_run_s3(&o);
	if (strstr(scen, "s4"))
		ccsim_run_s4(&o);
	if (strstr(scen, "s5"))
		ccsim_run_s5(&o);
	if (o.outdir)
		write_plots(&o, scen);
	return 0;
}
