// SPDX-License-Identifier: MIT
/*
 * ovrdma-xfer: move data between two transport engines over an emulated
 * bad link and show what the transport did about it.
 *
 *   ovrdma-xfer [--loss P] [--burst N] [--reorder P] [--dup P]
 *               [--corrupt P] [--delay-us N] [--jitter-us N]
 *               [--gbps N] [--mb N] [--seed N] [--window PKTS]
 *               [--cwnd-kb N]
 *
 * Node 0 RDMA-WRITEs --mb megabytes (1 MB messages) to node 1, then reads
 * them back with RDMA READ, SENDs a checksum message, and checks every
 * byte. Time is simulated (tools/engpair), so the figures are those of
 * the modelled link, not of this machine. Exit status 0 when every byte
 * arrived intact and every completion was successful.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engpair.h"

struct want {
	int node;
	uint32_t cq;
	size_t n;
};

static bool have(struct ovr_pair *p, void *ctx)
{
	struct want *w = ctx;

	return ovr_pair_cq_len(p, w->node, w->cq) >= w->n;
}

static int post(struct ovr_pair *p, uint32_t qpn, uint32_t op, uint64_t id,
		size_t loff, uint32_t len, size_t roff)
{
	struct ovr_eng_sge sge = { ovr_pair_va(p, 0, loff), len, p->n[0].key };
	struct ovr_eng_send_wr wr = {
		.wr_id = id,
		.opcode = op,
		.send_flags = OVR_SEND_SIGNALED,
		.sg_list = &sge,
		.num_sge = 1,
		.rkey = p->n[1].key,
		.remote_addr = ovr_pair_va(p, 1, roff),
	};

	return ovr_eng_post_send(p->n[0].eng, qpn, &wr, p->now);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ovrdma-xfer [--loss P] [--burst N] [--reorder P] "
		"[--dup P] [--corrupt P]\n"
		"                   [--delay-us N] [--jitter-us N] [--gbps N] "
		"[--mb N] [--seed N]\n"
		"                   [--window PKTS] [--cwnd-kb N]\n");
	exit(2);
}

static bool drain(struct ovr_pair *p, int node, uint32_t cq, size_t n,
		  const char *what)
{
	struct want w = { node, cq, n };
	struct ovr_eng_wc wc;

	if (!ovr_pair_run(p, have, &w, p->now + 60000000000ull)) {
		fprintf(stderr, "%s: stalled\n", what);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		ovr_pair_poll(p, node, cq, &wc);
		if (wc.status != OVR_WC_SUCCESS) {
			fprintf(stderr, "%s: completion status %u\n", what,
				wc.status);
			return false;
		}
	}
	return true;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "loss", required_argument, NULL, 'l' },
		{ "burst", required_argument, NULL, 'b' },
		{ "reorder", required_argument, NULL, 'r' },
		{ "dup", required_argument, NULL, 'd' },
		{ "corrupt", required_argument, NULL, 'c' },
		{ "delay-us", required_argument, NULL, 'D' },
		{ "jitter-us", required_argument, NULL, 'j' },
		{ "gbps", required_argument, NULL, 'g' },
		{ "mb", required_argument, NULL, 'm' },
		{ "seed", required_argument, NULL, 's' },
		{ "window", required_argument, NULL, 'w' },
		{ "cwnd-kb", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	struct ovr_pair_cfg cfg;
	struct ovr_pair_qp_params qpp;
	struct ovr_eng_qp_stats st[2];
	struct ovr_link_stats ls[2];
	double loss = 0.01, reorder = 0.01, dup = 0.001, corrupt = 0.001;
	double burst = 0;
	uint64_t delay_us = 15, jitter_us = 2, gbps = 100, mb = 64, seed = 1;
	uint64_t window = 0, cwnd_kb = 0;
	uint32_t qpn[2];
	struct ovr_pair *p;
	uint64_t t0, t_write, t_read;
	size_t bytes, msgs;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			loss = atof(optarg);
			break;
		case 'b':
			burst = atof(optarg);
			break;
		case 'r':
			reorder = atof(optarg);
			break;
		case 'd':
			dup = atof(optarg);
			break;
		case 'c':
			corrupt = atof(optarg);
			break;
		case 'D':
			delay_us = strtoull(optarg, NULL, 0);
			break;
		case 'j':
			jitter_us = strtoull(optarg, NULL, 0);
			break;
		case 'g':
			gbps = strtoull(optarg, NULL, 0);
			break;
		case 'm':
			mb = strtoull(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'w':
			window = strtoull(optarg, NULL, 0);
			break;
		case 'k':
			cwnd_kb = strtoull(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !mb || mb > 512 || loss < 0 || loss >= 1)
		usage();
	ovr_pair_cfg_default(&cfg);
	cfg.mem_bytes = (size_t)mb << 21; /* data + readback on node 0 */
	if (window)
		cfg.eng.window_pkts = (uint32_t)window;
	cfg.eng.cc_init_cwnd = (uint32_t)(cwnd_kb << 10);
	for (int i = 0; i < 2; i++) {
		struct ovr_link_cfg *l = &cfg.link[i];

		l->rate_bps = gbps * 1000000000ull;
		l->delay_ns = delay_us * 1000;
		l->jitter_ns = jitter_us * 1000;
		if (burst >= 1) {
			/* Gilbert-Elliott with mean burst @burst, average
			 * loss @loss: r = 1/burst, p = loss r / (1 - loss) */
			l->ge_r = 1.0 / burst;
			l->ge_p = loss * l->ge_r / (1 - loss);
			l->ge_loss_bad = 1.0;
		} else {
			l->loss = loss;
		}
		l->reorder = reorder;
		l->reorder_ns = 3 * jitter_us * 1000 + 1000;
		l->dup = dup;
		l->corrupt = corrupt;
		l->seed = seed * 2 + (uint64_t)i;
	}
	ovr_pair_qp_params_default(&qpp);
	p = ovr_pair_create(&cfg);
	if (!p || ovr_pair_connect(p, &qpp, 0, qpn)) {
		perror("ovrdma-xfer: setup");
		return 1;
	}
	bytes = (size_t)mb << 20;
	msgs = (size_t)mb;
	for (size_t i = 0; i < bytes; i++)
		p->n[0].mem[i] = (uint8_t)(i * 2654435761u >> 13);

	printf("link: %llu Gbps, one-way delay %llu us + jitter %llu us, "
	       "loss %.2f%%%s, reorder %.2f%%, dup %.2f%%, corrupt %.2f%%\n",
	       (unsigned long long)gbps, (unsigned long long)delay_us,
	       (unsigned long long)jitter_us, loss * 100,
	       burst >= 1 ? " (bursty)" : "", reorder * 100, dup * 100,
	       corrupt * 100);

	t0 = p->now;
	for (size_t i = 0; i < msgs; i++)
		if (post(p, qpn[0], OVR_WR_RDMA_WRITE, i, i << 20, 1u << 20,
			 i << 20)) {
			fprintf(stderr, "post failed\n");
			return 1;
		}
	if (!drain(p, 0, 0, msgs, "write"))
		return 1;
	t_write = p->now - t0;
	if (memcmp(p->n[0].mem, p->n[1].mem, bytes)) {
		fprintf(stderr, "write: data differs at the target\n");
		return 1;
	}
	t0 = p->now;
	for (size_t i = 0; i < msgs; i++)
		if (post(p, qpn[0], OVR_WR_RDMA_READ, i, bytes + (i << 20),
			 1u << 20, i << 20)) {
			fprintf(stderr, "post failed\n");
			return 1;
		}
	if (!drain(p, 0, 0, msgs, "read"))
		return 1;
	t_read = p->now - t0;
	if (memcmp(p->n[0].mem, p->n[0].mem + bytes, bytes)) {
		fprintf(stderr, "read: data read back differs\n");
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		ovr_eng_qp_stats(p->n[i].eng, qpn[i], &st[i]);
		ovr_link_get_stats(p->n[i].out, &ls[i]);
	}
	printf("WRITE %llu MB: %.2f ms simulated, goodput %.1f Gbps\n",
	       (unsigned long long)mb, t_write / 1e6,
	       bytes * 8.0 / (double)t_write);
	printf("READ  %llu MB: %.2f ms simulated, goodput %.1f Gbps\n",
	       (unsigned long long)mb, t_read / 1e6,
	       bytes * 8.0 / (double)t_read);
	printf("%-28s %12s %12s\n", "", "node 0", "node 1");
#define ROW(name, a, b)                                                \
	printf("%-28s %12llu %12llu\n", name, (unsigned long long)(a), \
	       (unsigned long long)(b))
	ROW("packets sent", st[0].tx_pkts, st[1].tx_pkts);
	ROW("lost on the wire", ls[0].lost, ls[1].lost);
	ROW("corrupted on the wire", ls[0].corrupted, ls[1].corrupted);
	ROW("duplicated on the wire", ls[0].duplicated, ls[1].duplicated);
	ROW("reordered on the wire", ls[0].reordered, ls[1].reordered);
	ROW("retransmitted", st[0].retx_pkts, st[1].retx_pkts);
	ROW("  found lost by RACK", st[0].rack_lost, st[1].rack_lost);
	ROW("  tail-loss probes", st[0].tlp_count, st[1].tlp_count);
	ROW("  timeouts (RTO)", st[0].rto_count, st[1].rto_count);
	ROW("duplicates received", st[0].rx_dup, st[1].rx_dup);
	ROW("out of order received", st[0].rx_ooo, st[1].rx_ooo);
	ROW("ACKs sent", st[0].acks_sent, st[1].acks_sent);
	printf("srtt %.1f us; every byte checked: OK\n", st[0].srtt_ns / 1e3);
	ovr_pair_destroy(p);
	return 0;
}
