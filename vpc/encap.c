// SPDX-License-Identifier: MIT
/*
 * VPC overlay, layer 1: stateless frame functions (include/ovrdma/vpc.h).
 * The header code itself is inline in vpc_frame.h, shared with the fast
 * path in table.c.
 */
#include <errno.h>
#include <string.h>

#include <rte_jhash.h>

#include "vpc_frame.h"

static const char *const drop_names[OVR_VPC_NDROP] = {
	[OVR_VPC_OK] = "ok",
	[OVR_VPC_DROP_TRUNC] = "truncated",
	[OVR_VPC_DROP_NOT_IPV4] = "not_ipv4",
	[OVR_VPC_DROP_IP_OPTIONS] = "ip_options",
	[OVR_VPC_DROP_IP_CSUM] = "ip_csum",
	[OVR_VPC_DROP_FRAGMENT] = "fragment",
	[OVR_VPC_DROP_IP_LEN] = "ip_len",
	[OVR_VPC_DROP_NOT_UDP] = "not_udp",
	[OVR_VPC_DROP_UDP_PORT] = "udp_port",
	[OVR_VPC_DROP_UDP_LEN] = "udp_len",
	[OVR_VPC_DROP_GPE_FLAGS] = "gpe_flags",
	[OVR_VPC_DROP_GPE_PROTO] = "gpe_proto",
	[OVR_VPC_DROP_GPE_RSVD] = "gpe_rsvd",
	[OVR_VPC_DROP_INNER_NOT_IPV4] = "inner_not_ipv4",
	[OVR_VPC_DROP_INNER_IP_OPTIONS] = "inner_ip_options",
	[OVR_VPC_DROP_INNER_IP_CSUM] = "inner_ip_csum",
	[OVR_VPC_DROP_INNER_FRAGMENT] = "inner_fragment",
	[OVR_VPC_DROP_INNER_IP_LEN] = "inner_ip_len",
	[OVR_VPC_DROP_INNER_NOT_UDP] = "inner_not_udp",
	[OVR_VPC_DROP_INNER_UDP_PORT] = "inner_udp_port",
	[OVR_VPC_DROP_INNER_UDP_LEN] = "inner_udp_len",
	[OVR_VPC_DROP_NOT_THIS_HOST] = "not_this_host",
	[OVR_VPC_DROP_UNKNOWN_VNI] = "unknown_vni",
	[OVR_VPC_DROP_DST_NOT_LOCAL] = "dst_not_local",
	[OVR_VPC_DROP_SRC_UNKNOWN] = "src_unknown",
	[OVR_VPC_DROP_SPOOF] = "spoof",
	[OVR_VPC_DROP_SG_DENY] = "sg_deny",
	[OVR_VPC_DROP_TX_NO_ROUTE] = "tx_no_route",
	[OVR_VPC_DROP_TX_MTU] = "tx_mtu",
};

const char *ovr_vpc_drop_name(unsigned int reason)
{
	if (reason >= OVR_VPC_NDROP || !drop_names[reason])
		return "?";
	return drop_names[reason];
}

int ovr_vpc_encap(uint8_t *pdu, size_t headroom, size_t pdu_len,
		  const struct ovr_vpc_hdr *h)
{
	return vpc_encap(pdu, headroom, pdu_len, h);
}

int ovr_vpc_parse(const void *frame, size_t len, uint16_t dport,
		  struct ovr_vpc_rx *rx)
{
	return vpc_parse(frame, len, dport, rx);
}

/*
 * Fixed seed: both ends and every run must agree on nothing here (the
 * port only has to spread flows), but a fixed value keeps captures and
 * tests reproducible.
 */
#define VPC_FLOW_SEED 0x6f767264u /* "ovrd" */

uint32_t ovr_vpc_flow_hash(uint32_t vni, uint32_t src_vip, uint32_t dst_vip,
			   uint32_t sqpn, uint32_t dqpn)
{
	const uint32_t k[5] = { vni, src_vip, dst_vip, sqpn, dqpn };

	return rte_jhash_32b(k, 5, VPC_FLOW_SEED);
}

void ovr_vpc_flow_init(struct ovr_vpc_flow *f, uint32_t vni, uint32_t src_vip,
		       uint32_t dst_vip, uint32_t sqpn, uint32_t dqpn,
		       uint8_t dscp)
{
	memset(f, 0, sizeof(*f));
	f->vni = vni;
	f->src_vip = src_vip;
	f->dst_vip = dst_vip;
	f->hash = ovr_vpc_flow_hash(vni, src_vip, dst_vip, sqpn, dqpn);
	f->dscp = dscp & 63;
	f->ecn = OVR_VPC_ECN_ECT0;
}

int ovr_vpc_pdu_mtu(unsigned int underlay_mtu)
{
	if (underlay_mtu <
	    OVR_WIRE_ENCAP_MTU_OVERHEAD + OVR_VPC_PDU_DATA_OVERHEAD)
		return -EINVAL;
	if (underlay_mtu > 65535u)
		underlay_mtu = 65535u;
	return (int)(underlay_mtu - OVR_WIRE_ENCAP_MTU_OVERHEAD);
}

int ovr_vpc_active_mtu(unsigned int underlay_mtu)
{
	int pdu = ovr_vpc_pdu_mtu(underlay_mtu);
	int m;

	if (pdu < 0)
		return pdu;
	/* IBV_MTU_4096 (5) down to IBV_MTU_256 (1) */
	for (m = 5; m >= 1; m--)
		if (ovr_vpc_ib_mtu_bytes(m) + OVR_VPC_PDU_DATA_OVERHEAD <=
		    (unsigned int)pdu)
			return m;
	return -EINVAL;
}

/* ::ffff:0:0/96, RFC 4291 2.5.5.2 */
static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

void ovr_vpc_vip_to_gid(uint32_t vip, uint8_t gid[16])
{
	uint32_t be = rte_cpu_to_be_32(vip);

	memcpy(gid, v4mapped, sizeof(v4mapped));
	memcpy(gid + 12, &be, sizeof(be));
}

int ovr_vpc_gid_to_vip(const uint8_t gid[16], uint32_t *vip)
{
	uint32_t be;

	if (memcmp(gid, v4mapped, sizeof(v4mapped)) != 0)
		return -EINVAL;
	memcpy(&be, gid + 12, sizeof(be));
	*vip = rte_be_to_cpu_32(be);
	return 0;
}
