// SPDX-License-Identifier: MIT
/*
 * ovrdmactl: operate a running ovrdmad (docs/SERVICE.md section 9).
 *
 *   ovrdmactl [-s SOCKET] show devices|contexts|qps|mrs|transport|counters|mcast|cores
 *   ovrdmactl [-s SOCKET] tenant add|del VNI
 *   ovrdmactl [-s SOCKET] vip add|move VNI VIP local [NAME]
 *   ovrdmactl [-s SOCKET] vip add|move VNI VIP host HOST mac MAC
 *   ovrdmactl [-s SOCKET] vip del VNI VIP
 *   ovrdmactl [-s SOCKET] sg set VNI [PREFIX/LEN...]
 *
 * SOCKET defaults to $OVRDMA_SOCKET, then /run/ovrdma/ovrdmad.sock.
 * Changes need root. Exit status: 0, 1 (the service refused: the reason
 * is printed), 2 (usage).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/client.h>

static int usage(void)
{
	fprintf(stderr,
		"usage: ovrdmactl [-s SOCKET] show "
		"devices|contexts|qps|mrs|transport|counters|mcast|cores\n"
		"       ovrdmactl [-s SOCKET] tenant add|del VNI\n"
		"       ovrdmactl [-s SOCKET] vip add|move VNI VIP local [NAME]\n"
		"       ovrdmactl [-s SOCKET] vip add|move VNI VIP host HOST mac MAC\n"
		"       ovrdmactl [-s SOCKET] vip del VNI VIP\n"
		"       ovrdmactl [-s SOCKET] sg set VNI [PREFIX/LEN...]\n");
	return 2;
}

static int ip4(const char *s, uint32_t *out)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return -1;
	*out = ntohl(a.s_addr);
	return 0;
}

static int u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || v > 0xffffffffu)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int done(int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, "ovrdmactl: %s: %s\n", what, strerror(-rc));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *sock = NULL;
	struct ovr_cl *cl;
	int i = 1, rc;

	if (argc > 2 && !strcmp(argv[1], "-s")) {
		sock = argv[2];
		i = 3;
	}
	if (argc - i < 2)
		return usage();
	cl = ovr_cl_connect(sock, "ovrdmactl");
	if (!cl) {
		fprintf(stderr, "ovrdmactl: cannot reach ovrdmad at %s: %s\n",
			sock ? sock : "the default socket", strerror(errno));
		return 1;
	}
	if (!strcmp(argv[i], "show") && argc - i == 2) {
		struct ovr_ctl_adm_show_req q = { 0 };
		static char text[OVR_CTL_MSG_MAX];

		snprintf(q.what, sizeof(q.what), "%s", argv[i + 1]);
		rc = ovr_cl_request(cl, OVR_CTL_ADM_SHOW, &q, sizeof(q), text,
				    sizeof(text) - 1);
		if (rc >= 0) {
			text[rc] = 0;
			fputs(text, stdout);
		}
		ovr_cl_close(cl);
		return done(rc, "show");
	}
	if (!strcmp(argv[i], "tenant") && argc - i == 3) {
		struct ovr_ctl_adm_tenant_req q = { 0 };
		uint16_t op =
			!strcmp(argv[i + 1], "add") ? OVR_CTL_ADM_TENANT_ADD :
			!strcmp(argv[i + 1], "del") ? OVR_CTL_ADM_TENANT_DEL :
						      0;

		if (!op || u32(argv[i + 2], &q.vni))
			return usage();
		rc = ovr_cl_request(cl, op, &q, sizeof(q), NULL, 0);
		ovr_cl_close(cl);
		return done(rc, "tenant");
	}
	if (!strcmp(argv[i], "vip") && argc - i >= 4) {
		struct ovr_ctl_adm_vip_req q = { 0 };
		const char *verb = argv[i + 1];
		uint16_t op = !strcmp(verb, "add")  ? OVR_CTL_ADM_VIP_ADD :
			      !strcmp(verb, "move") ? OVR_CTL_ADM_VIP_MOVE :
			      !strcmp(verb, "del")  ? OVR_CTL_ADM_VIP_DEL :
						      0;
		int n = argc - i - 4; /* words after VNI VIP */
		char **w = argv + i + 4;

		if (!op || u32(argv[i + 2], &q.vni) || ip4(argv[i + 3], &q.vip))
			return usage();
		if (op == OVR_CTL_ADM_VIP_DEL) {
			if (n)
				return usage();
		} else if (n >= 1 && n <= 2 && !strcmp(w[0], "local")) {
			q.local = 1;
			if (n == 2)
				snprintf(q.name, sizeof(q.name), "%s", w[1]);
		} else if (n == 4 && !strcmp(w[0], "host") &&
			   !strcmp(w[2], "mac")) {
			unsigned int m[6];

			if (ip4(w[1], &q.host) ||
			    sscanf(w[3], "%x:%x:%x:%x:%x:%x", &m[0], &m[1],
				   &m[2], &m[3], &m[4], &m[5]) != 6)
				return usage();
			for (int k = 0; k < 6; k++)
				q.mac[k] = (uint8_t)m[k];
		} else {
			return usage();
		}
		rc = ovr_cl_request(cl, op, &q, sizeof(q), NULL, 0);
		ovr_cl_close(cl);
		return done(rc, "vip");
	}
	if (!strcmp(argv[i], "sg") && argc - i >= 3 &&
	    !strcmp(argv[i + 1], "set")) {
		static struct ovr_ctl_adm_sg_req q;

		if (u32(argv[i + 2], &q.vni))
			return usage();
		for (int k = i + 3; k < argc; k++) {
			char buf[32], *slash;
			uint32_t len = 32;

			if (q.n == OVR_CTL_SG_MAX)
				return usage();
			snprintf(buf, sizeof(buf), "%s", argv[k]);
			slash = strchr(buf, '/');
			if (slash) {
				*slash = 0;
				if (u32(slash + 1, &len) || len > 32)
					return usage();
			}
			if (ip4(buf, &q.rule[q.n].prefix))
				return usage();
			q.rule[q.n++].len = len;
		}
		rc = ovr_cl_request(cl, OVR_CTL_ADM_SG_SET, &q,
				    8 + q.n * sizeof(q.rule[0]), NULL, 0);
		ovr_cl_close(cl);
		return done(rc, "sg");
	}
	ovr_cl_close(cl);
	return usage();
}
