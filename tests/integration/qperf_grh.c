// SPDX-License-Identifier: MIT
/*
 * libqperf_grh.so: a test interposer (LD_PRELOAD, qperf.sh) that gives
 * qperf's address vectors the GRH that RoCE needs. qperf connects RC and
 * UD QPs by LID alone (is_global 0), which RoCE refuses; over RoCE its RC
 * tests take the address from rdma_cm (-cm1), which ovrdma does not offer
 * yet, and its UD tests cannot run at all. With this, an address vector
 * without GRH given to ibv_modify_qp (IBV_QP_AV) or ibv_create_ah is
 * completed with what rdma_cm would resolve - is_global 1, the peer's
 * GID ::ffff:<$QPERF_GRH_PEER>, SGID index 0, hop limit 64 - and
 * everything else qperf asks goes to the device as asked. Not part of
 * ovrdma: a way to run qperf's traffic on RoCE before rdma_cm.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

/* The peer's GID from $QPERF_GRH_PEER (its IPv4 vIP); 0 without it. */
static int peer_gid(union ibv_gid *gid)
{
	const char *s = getenv("QPERF_GRH_PEER");
	struct in_addr a;

	if (!s || inet_pton(AF_INET, s, &a) != 1)
		return 0;
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], &a, 4);
	return 1;
}

static void add_grh(struct ibv_ah_attr *ah)
{
	union ibv_gid gid;

	if (ah->is_global || !peer_gid(&gid))
		return;
	ah->is_global = 1;
	ah->grh.dgid = gid;
	ah->grh.sgid_index = 0;
	ah->grh.hop_limit = 64;
	ah->grh.flow_label = 0;
	ah->grh.traffic_class = 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	static int (*real)(struct ibv_qp *, struct ibv_qp_attr *, int);

	if (!real)
		real = (int (*)(struct ibv_qp *, struct ibv_qp_attr *,
				int))dlvsym(RTLD_NEXT, "ibv_modify_qp",
					    "IBVERBS_1.1");
	if (!real)
		return ENOSYS;
	if (mask & IBV_QP_AV)
		add_grh(&attr->ah_attr);
	return real(qp, attr, mask);
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	static struct ibv_ah *(*real)(struct ibv_pd *, struct ibv_ah_attr *);

	if (!real)
		real = (struct ibv_ah *
			(*)(struct ibv_pd *, struct ibv_ah_attr *))
			dlvsym(RTLD_NEXT, "ibv_create_ah", "IBVERBS_1.1");
	if (!real)
		return NULL;
	add_grh(attr);
	return real(pd, attr);
}
