/* SPDX-License-Identifier: MIT */
/*
 * VPC overlay: encapsulation, tenant tables, isolation (docs/VPC.md).
 *
 * Three layers, from the bottom:
 *
 *  1. Pure byte-buffer functions, no state: ovr_vpc_encap() writes the 78
 *     bytes of docs/WIRE.md section 1 in front of a PDU; ovr_vpc_parse()
 *     checks them and finds the PDU. Plus the MTU, GID and flow-hash
 *     helpers. Callable from any thread.
 *
 *  2. Control plane (struct ovr_vpc): tenants (VNI), vIP bindings (which
 *     underlay host serves a vIP, the next-hop MAC towards it, the local
 *     device if it is served here) and security groups. Updated at run
 *     time from any thread, never stopping the readers; old versions are
 *     freed after an RCU grace period.
 *
 *  3. Fast path (struct ovr_vpc_thread): lock-free lookups, ovr_vpc_decap()
 *     (parse + tenant isolation + anti-spoofing + security group) and
 *     ovr_vpc_tx() (route lookup + encapsulation), with per-thread
 *     counters. Readers use liburcu's QSBR flavour: a reader thread
 *     registers once, calls ovr_vpc_quiescent() once per poll loop and
 *     holds no pointer returned by this API across that call.
 *
 * Addresses (underlay hosts and tenant vIPs) are IPv4 in host byte order
 * (10.0.0.1 is 0x0a000001) everywhere in this API; only the frame bytes
 * are big-endian.
 */
#ifndef OVRDMA_VPC_H
#define OVRDMA_VPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ovrdma/wire.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Constants ----------------------------------------------------------- */

#define OVR_VPC_VNI_MAX 0x00ffffffu /* VNIs are 24-bit */
#define OVR_VPC_TTL 64u /* outer and inner IPv4 TTL on transmit */
/* Outer (and inner) UDP source ports: the dynamic range, 2^14 values. */
#define OVR_VPC_SPORT_MIN 49152u
#define OVR_VPC_SPORT_MASK 0x3fffu
/* Bits of the outer source port that name the receiving node's
 * dataplane core (ovr_vpc_set_steer): bits 10..13, 16 cores. */
#define OVR_VPC_STEER_SHIFT 10u
#define OVR_VPC_STEER_MASK 0xfu

/* IP ECN codepoints (RFC 3168), the low two bits of the TOS byte. */
#define OVR_VPC_ECN_NOT_ECT 0u
#define OVR_VPC_ECN_ECT1 1u
#define OVR_VPC_ECN_ECT0 2u /* what ovrdma sends unless told otherwise */
#define OVR_VPC_ECN_CE 3u

/* struct ovr_vpc_vip.dev of a vIP that is not served on this host. */
#define OVR_VPC_DEV_NONE (-1)

/*
 * Bytes an ovrdma data packet spends around its payload: the largest
 * header a payload-carrying opcode has (OTH 36 + TTH 24 + IMMH 8 for
 * WRITE_IMM) and the CRC32C trailer. The verbs MTU is payload only.
 */
#define OVR_VPC_PDU_DATA_OVERHEAD                                    \
	(sizeof(struct ovr_wire_oth) + sizeof(struct ovr_wire_tth) + \
	 sizeof(struct ovr_wire_immh) + OVR_WIRE_CRC_LEN)

/*
 * Largest PDU that fits one outer IPv4 packet: the outer total length is a
 * 16-bit field and counts OVR_WIRE_ENCAP_MTU_OVERHEAD bytes that are not
 * the PDU (65471, a little less than OVR_WIRE_MAX_PDU).
 */
#define OVR_VPC_MAX_PDU (65535u - OVR_WIRE_ENCAP_MTU_OVERHEAD)

/* ---- Drop reasons ---------------------------------------------------------- */

/*
 * Why a frame was dropped (receive) or not sent (transmit). Returned
 * negated by ovr_vpc_parse(), ovr_vpc_decap() and ovr_vpc_tx(), and counted
 * per reason. Values are stable: they index counters. Names:
 * ovr_vpc_drop_name().
 */
enum ovr_vpc_drop {
	OVR_VPC_OK = 0,
	/* outer headers */
	OVR_VPC_DROP_TRUNC, /* shorter than the headers or than IPv4 says */
	OVR_VPC_DROP_NOT_IPV4, /* EtherType not IPv4, or IP version not 4 */
	OVR_VPC_DROP_IP_OPTIONS, /* outer IHL != 5 */
	OVR_VPC_DROP_IP_CSUM, /* outer IPv4 header checksum wrong */
	OVR_VPC_DROP_FRAGMENT, /* outer MF set or fragment offset != 0 */
	OVR_VPC_DROP_IP_LEN, /* outer total length < the frame (trailing) */
	OVR_VPC_DROP_NOT_UDP, /* outer protocol not UDP */
	OVR_VPC_DROP_UDP_PORT, /* outer UDP destination port not 4790 */
	OVR_VPC_DROP_UDP_LEN, /* outer UDP length != IPv4 payload length */
	OVR_VPC_DROP_GPE_FLAGS, /* VXLAN-GPE flags not exactly I|P (0x0c) */
	OVR_VPC_DROP_GPE_PROTO, /* VXLAN-GPE next protocol not IPv4 */
	OVR_VPC_DROP_GPE_RSVD, /* VXLAN-GPE reserved bytes not zero */
	/* inner headers */
	OVR_VPC_DROP_INNER_NOT_IPV4, /* inner IP version not 4 */
	OVR_VPC_DROP_INNER_IP_OPTIONS, /* inner IHL != 5 */
	OVR_VPC_DROP_INNER_IP_CSUM, /* inner IPv4 header checksum wrong */
	OVR_VPC_DROP_INNER_FRAGMENT, /* inner MF or fragment offset */
	OVR_VPC_DROP_INNER_IP_LEN, /* inner total length != outer payload */
	OVR_VPC_DROP_INNER_NOT_UDP, /* inner protocol not UDP */
	OVR_VPC_DROP_INNER_UDP_PORT, /* inner UDP dport not the ovrdma port */
	OVR_VPC_DROP_INNER_UDP_LEN, /* inner UDP length != inner payload */
	/* tables (ovr_vpc_decap only) */
	OVR_VPC_DROP_NOT_THIS_HOST, /* outer destination is not this host */
	OVR_VPC_DROP_UNKNOWN_VNI, /* no such tenant here */
	OVR_VPC_DROP_DST_NOT_LOCAL, /* inner destination not served here */
	OVR_VPC_DROP_SRC_UNKNOWN, /* inner source vIP not in the tenant */
	OVR_VPC_DROP_SPOOF, /* outer source is not the host of the vIP */
	OVR_VPC_DROP_SG_DENY, /* security group does not allow the source */
	/* transmit (ovr_vpc_tx, ovr_vpc_tx_via) */
	OVR_VPC_DROP_TX_NO_ROUTE, /* destination vIP (tx_via: tenant) unknown */
	OVR_VPC_DROP_TX_MTU, /* frame larger than the underlay MTU */
	OVR_VPC_NDROP
};

/* Stable lower-case name ("ip_csum"), or "?" for a value out of range. */
const char *ovr_vpc_drop_name(unsigned int reason);

/* ---- Layer 1: frames ------------------------------------------------------ */

/* Everything ovr_vpc_encap() writes; host byte order. */
struct ovr_vpc_hdr {
	uint32_t src_host; /* underlay IPv4 of this host */
	uint32_t dst_host; /* underlay IPv4 of the host serving dst_vip */
	uint32_t vni; /* tenant, <= OVR_VPC_VNI_MAX */
	uint32_t src_vip; /* inner source: the sending QP's vIP */
	uint32_t dst_vip; /* inner destination: the peer's vIP */
	uint16_t sport; /* outer and inner UDP source port */
	uint16_t dport; /* inner UDP destination (OVR_WIRE_UDP_PORT) */
	uint8_t dscp; /* 0..63, outer and inner */
	uint8_t ecn; /* OVR_VPC_ECN_*, outer and inner; ECT(0) normally */
	uint8_t src_mac[6]; /* the sending port */
	uint8_t dst_mac[6]; /* underlay next hop towards dst_host */
};

/*
 * Write the encapsulation in front of the @pdu_len-byte PDU at @pdu, which
 * has at least @headroom writable bytes before it. The frame is then the
 * OVR_WIRE_ENCAP_LEN + @pdu_len bytes starting at
 * pdu - OVR_WIRE_ENCAP_LEN. Both IPv4 checksums are computed; both UDP
 * checksums are zero (docs/WIRE.md 1.3, 1.5).
 * Returns 0, -ENOSPC (headroom < OVR_WIRE_ENCAP_LEN), -EMSGSIZE (pdu_len >
 * OVR_VPC_MAX_PDU) or -EINVAL (vni, dscp or ecn out of range).
 */
int ovr_vpc_encap(uint8_t *pdu, size_t headroom, size_t pdu_len,
		  const struct ovr_vpc_hdr *h);

/* What a received frame says; host byte order. */
struct ovr_vpc_rx {
	const uint8_t *pdu; /* the inner UDP payload, inside the frame */
	uint32_t pdu_len; /* exactly the inner UDP payload length */
	uint32_t vni;
	uint32_t src_vip;
	uint32_t dst_vip;
	uint32_t src_host; /* outer source */
	uint32_t dst_host; /* outer destination */
	int32_t dev; /* ovr_vpc_decap: local device of dst_vip */
	uint16_t sport; /* outer UDP source port (the sender's flow hash) */
	uint8_t dscp; /* outer DSCP */
	bool ce; /* outer ECN is CE: congestion on the underlay path */
};

/*
 * Check the outer and inner headers of the @len-byte Ethernet frame at
 * @frame (docs/WIRE.md section 1, docs/VPC.md "Drop reasons") with inner
 * UDP destination port @dport, and fill @rx (dev = OVR_VPC_DEV_NONE).
 * Reads nothing outside [frame, frame + len). No tables, no counters.
 * Returns 0 or a negative enum ovr_vpc_drop (@rx is then unspecified).
 */
int ovr_vpc_parse(const void *frame, size_t len, uint16_t dport,
		  struct ovr_vpc_rx *rx);

/*
 * Flow hash of a connection (docs/WIRE.md 1.3): computed once per QP from
 * its tenant, both vIPs and both QPNs; ovr_vpc_flow_sport() turns it and a
 * path index into the UDP source port.
 */
uint32_t ovr_vpc_flow_hash(uint32_t vni, uint32_t src_vip, uint32_t dst_vip,
			   uint32_t sqpn, uint32_t dqpn);

/*
 * Source port of path @path of a flow: in 49152..65535, and distinct for
 * every path of one flow (the path index is spread by an odd multiplier,
 * a bijection modulo 2^14), so that spraying really uses @path different
 * 5-tuples.
 */
static inline uint16_t ovr_vpc_flow_sport(uint32_t hash, uint8_t path)
{
	return (uint16_t)(OVR_VPC_SPORT_MIN |
			  ((hash + path * 0x9e3779b1u) & OVR_VPC_SPORT_MASK));
}

/*
 * Steering (docs/SERVICE.md section 5, "Port queues"): put @core (below
 * 16) in bits 10..13 of the outer UDP source port of the encapsulated
 * frame at @frame (what ovr_vpc_encap wrote; the UDP checksum is 0),
 * so that the receiving port - a NIC with a flow rule on those bits,
 * the fabric emulator with --queues - puts it on that core's queue. The
 * other ten bits keep the flow hash: ECMP and path spraying still see
 * 1024 values.
 */
static inline void ovr_vpc_set_steer(uint8_t *frame, uint32_t core)
{
	uint8_t *sp = frame + OVR_WIRE_ETH_HLEN + OVR_WIRE_IPV4_HLEN;
	uint16_t v = (uint16_t)(sp[0] << 8 | sp[1]);

	v = (uint16_t)((v & ~(OVR_VPC_STEER_MASK << OVR_VPC_STEER_SHIFT)) |
		       (core & OVR_VPC_STEER_MASK) << OVR_VPC_STEER_SHIFT);
	sp[0] = (uint8_t)(v >> 8);
	sp[1] = (uint8_t)v;
}

/*
 * PDU MTU for an underlay IP MTU (docs/WIRE.md 1: 1500 gives 1436): the
 * underlay MTU less OVR_WIRE_ENCAP_MTU_OVERHEAD, which already counts the
 * inner IPv4 and UDP headers. Capped at OVR_VPC_MAX_PDU. -EINVAL when not
 * even an empty data packet fits.
 */
int ovr_vpc_pdu_mtu(unsigned int underlay_mtu);

/*
 * The verbs active_mtu for an underlay IP MTU: the largest IB MTU (256,
 * 512, 1024, 2048, 4096 bytes of payload) such that payload +
 * OVR_VPC_PDU_DATA_OVERHEAD fits ovr_vpc_pdu_mtu(). Returned as the value
 * of enum ibv_mtu (IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5), or -EINVAL when
 * not even 256 fits (underlay MTU below 392).
 */
int ovr_vpc_active_mtu(unsigned int underlay_mtu);

/* Payload bytes of an enum ibv_mtu value (1..5). */
static inline unsigned int ovr_vpc_ib_mtu_bytes(int ib_mtu)
{
	return 128u << ib_mtu;
}

/*
 * IPv4 multicast (224.0.0.0/4, host byte order): such an address is never a
 * vIP (ovr_vpc_vip_add refuses it) but may be the inner destination of a
 * tenant datagram to a group (docs/VPC.md "Multicast").
 */
static inline bool ovr_vpc_is_mcast(uint32_t ip)
{
	return (ip >> 28) == 0xe;
}

/* GIDs handed to verbs applications are tenant vIPs as ::ffff:a.b.c.d. */
void ovr_vpc_vip_to_gid(uint32_t vip, uint8_t gid[16]);
/* 0 and *vip, or -EINVAL when @gid is not IPv4-mapped (::ffff:0:0/96). */
int ovr_vpc_gid_to_vip(const uint8_t gid[16], uint32_t *vip);

/* ---- Layer 2: control plane ---------------------------------------------- */

struct ovr_vpc;

struct ovr_vpc_config {
	uint32_t local_host; /* this host's underlay IPv4 */
	uint8_t local_mac[6]; /* this host's underlay port */
	uint16_t dport; /* inner UDP port; 0: OVR_WIRE_UDP_PORT */
	uint32_t underlay_mtu; /* IP MTU of the underlay; 0: 1500 */
	uint32_t max_threads; /* reader threads at once; 0: 64 */
	uint32_t size_hint; /* expected vIPs (initial table size); 0: 1024 */
};

/* A vIP binding as readers see it (read-only for callers). */
struct ovr_vpc_vip {
	uint32_t vip;
	uint32_t vni;
	uint32_t host; /* underlay IPv4 of the host serving the vIP */
	int32_t dev; /* local device index, or OVR_VPC_DEV_NONE */
	uint8_t mac[6]; /* underlay next hop towards host */
};

/* A binding to install: ovr_vpc_vip_add() and ovr_vpc_vip_move(). */
struct ovr_vpc_binding {
	uint32_t host; /* underlay IPv4 of the serving host */
	int32_t dev; /* >= 0 iff host is this host; else OVR_VPC_DEV_NONE */
	uint8_t mac[6]; /* underlay next hop towards host */
};

/* A security-group rule: peers in prefix/len may talk RDMA to the tenant. */
struct ovr_vpc_sg_rule {
	uint32_t prefix; /* no bits set beyond len */
	uint8_t len; /* 0..32 */
};
#define OVR_VPC_SG_MAX_RULES 4096u

/*
 * Creates a VPC context (tables empty, no tenant). Returns NULL and sets
 * errno (EINVAL, ENOMEM). Any thread.
 */
struct ovr_vpc *ovr_vpc_create(const struct ovr_vpc_config *cfg);

/*
 * Destroys @vpc: every reader thread must have unregistered from it. Waits
 * for all deferred frees. Must not be called from a registered and online
 * reader thread (it waits for grace periods).
 */
void ovr_vpc_destroy(struct ovr_vpc *vpc);

/*
 * Control-plane updates. Any thread, serialised among themselves by a
 * mutex that readers never take; a calling thread that is not a
 * registered reader is registered for the duration of the call. Return 0
 * or -errno:
 *   -EINVAL  argument out of range (VNI > 24 bits, vIP 0 or multicast,
 *            dev inconsistent with host, bad prefix)
 *   -EEXIST  tenant or vIP already there (add)
 *   -ENOENT  tenant or vIP not there
 *   -EBUSY   tenant still has vIPs (tenant_del)
 *   -ENOMEM
 */
int ovr_vpc_tenant_add(struct ovr_vpc *vpc, uint32_t vni);
int ovr_vpc_tenant_del(struct ovr_vpc *vpc, uint32_t vni);
int ovr_vpc_vip_add(struct ovr_vpc *vpc, uint32_t vni, uint32_t vip,
		    const struct ovr_vpc_binding *b);
/* Atomically replaces a vIP's binding (another host, or here). */
int ovr_vpc_vip_move(struct ovr_vpc *vpc, uint32_t vni, uint32_t vip,
		     const struct ovr_vpc_binding *b);
int ovr_vpc_vip_del(struct ovr_vpc *vpc, uint32_t vni, uint32_t vip);
/*
 * Replaces the tenant's whole security group with @rules (@n may be 0:
 * deny all, the state of a new tenant). Readers see the old set or the new
 * one, never a mix.
 */
int ovr_vpc_sg_set(struct ovr_vpc *vpc, uint32_t vni,
		   const struct ovr_vpc_sg_rule *rules, unsigned int n);

/*
 * Connection setup check: may a QP of tenant @vni on local vIP @local_vip
 * connect to @peer_vip? 0, or
 *   -ENOENT         no such tenant
 *   -EADDRNOTAVAIL  local_vip is not a vIP of the tenant served here
 *   -EHOSTUNREACH   peer_vip is not a vIP of the tenant (other tenants'
 *                   vIPs are never reachable)
 *   -EACCES         the tenant's security group does not allow peer_vip
 * Any thread (as the control-plane calls).
 */
int ovr_vpc_may_connect(struct ovr_vpc *vpc, uint32_t vni, uint32_t local_vip,
			uint32_t peer_vip);

/* Per-tenant counters, summed over reader threads. Bytes: whole frames. */
struct ovr_vpc_tenant_stats {
	uint64_t rx_pkts;
	uint64_t rx_bytes;
	uint64_t tx_pkts;
	uint64_t tx_bytes;
	uint64_t drops; /* received frames of this tenant that were dropped */
};
int ovr_vpc_tenant_stats(struct ovr_vpc *vpc, uint32_t vni,
			 struct ovr_vpc_tenant_stats *st);

/* Drop counters by enum ovr_vpc_drop, summed over reader threads. */
void ovr_vpc_drop_stats(struct ovr_vpc *vpc, uint64_t drops[OVR_VPC_NDROP]);

/* Table sizes and deferred-free accounting. */
struct ovr_vpc_info {
	uint64_t tenants;
	uint64_t vips;
	uint64_t retired; /* objects handed to call_rcu so far */
	uint64_t freed; /* of those, freed after their grace period */
};
void ovr_vpc_info(struct ovr_vpc *vpc, struct ovr_vpc_info *info);

/*
 * Waits until every object retired so far has been freed (rcu_barrier).
 * Same restriction as ovr_vpc_destroy().
 */
void ovr_vpc_barrier(struct ovr_vpc *vpc);

/* ---- Layer 3: fast path ---------------------------------------------------- */

struct ovr_vpc_thread;

/*
 * Registers the calling thread as a reader of @vpc: registers it with
 * liburcu-qsbr (once per thread, however many contexts it reads) and
 * gives it a counter slot. The thread is then online: it must call
 * ovr_vpc_quiescent() regularly (every poll loop), or go offline around
 * anything that blocks, or every update's memory reclamation stalls.
 * Returns NULL and sets errno (ENOSPC: max_threads readers already).
 */
struct ovr_vpc_thread *ovr_vpc_thread_register(struct ovr_vpc *vpc);
/* The calling thread must be the one that registered @t. */
void ovr_vpc_thread_unregister(struct ovr_vpc_thread *t);

/*
 * Quiescent state: the calling reader holds no pointer obtained from any
 * ovr_vpc lookup. Call once per poll loop (about 5 ns).
 */
void ovr_vpc_quiescent(void);
/* Around a blocking wait (epoll, sleep): an offline reader delays no one. */
void ovr_vpc_thread_offline(void);
void ovr_vpc_thread_online(void);

/*
 * The binding of @vip in tenant @vni, or NULL. The pointer stays valid, and
 * its contents unchanged, until the caller's next ovr_vpc_quiescent() or
 * ovr_vpc_thread_offline(); a move installs a new binding, it never
 * modifies this one. Registered, online threads only.
 */
const struct ovr_vpc_vip *ovr_vpc_lookup(struct ovr_vpc_thread *t, uint32_t vni,
					 uint32_t vip);

/* An underlay host serving vIPs of a tenant: ovr_vpc_tenant_hosts(). */
struct ovr_vpc_host {
	uint32_t host; /* underlay IPv4 */
	uint8_t mac[6]; /* next hop towards it; local_mac for this host */
	uint8_t rsvd[2]; /* zero */
};

/*
 * The distinct underlay hosts serving at least one vIP of tenant @vni,
 * this host included when it serves one (its mac: the context's
 * local_mac), in ascending order of host address: the destinations of a
 * multicast datagram's copies (head-end replication, ovr_vpc_tx_via).
 * Writes the first min(n, @cap) entries to @out and returns n: 0 for an
 * unknown tenant or one without vIPs. A host's mac is that of the binding
 * to it added or moved most recently (bindings to one host normally
 * agree: the next hop is a property of the host). O(hosts of the tenant),
 * whatever its number of vIPs: the list is kept per tenant by the control
 * plane. The answer is as of the caller's last quiescent state, as for
 * ovr_vpc_lookup(). Registered, online threads only.
 */
unsigned int ovr_vpc_tenant_hosts(struct ovr_vpc_thread *t, uint32_t vni,
				  struct ovr_vpc_host *out, unsigned int cap);

/* Does tenant @vni's security group allow peer @vip? (O(log rules)) */
bool ovr_vpc_sg_allows(struct ovr_vpc_thread *t, uint32_t vni, uint32_t vip);

/*
 * Receive: ovr_vpc_parse(), then the table checks in this order: outer
 * destination is this host, tenant exists, inner destination is served
 * here, inner source is a vIP of the tenant, the outer source is the host
 * serving it, the tenant's security group allows it. Returns 0 with @rx
 * filled (rx->dev: the local device), or a negative enum ovr_vpc_drop;
 * either way the outcome is counted. @frame is not modified.
 * An inner destination that is a multicast group (ovr_vpc_is_mcast) needs
 * no binding: the other checks apply unchanged, and an accepted frame has
 * rx->dev = OVR_VPC_DEV_NONE (delivery to the group's local members is
 * the caller's).
 */
int ovr_vpc_decap(struct ovr_vpc_thread *t, const void *frame, size_t len,
		  struct ovr_vpc_rx *rx);

/* Per-QP transmit state: computed at connection setup. */
struct ovr_vpc_flow {
	uint32_t vni;
	uint32_t src_vip;
	uint32_t dst_vip;
	uint32_t hash; /* ovr_vpc_flow_hash() */
	uint8_t dscp; /* from the QP's traffic class */
	uint8_t ecn; /* OVR_VPC_ECN_ECT0 */
};
/* Fills @f for a QP (ECN ECT(0)); @dscp is masked to 6 bits. */
void ovr_vpc_flow_init(struct ovr_vpc_flow *f, uint32_t vni, uint32_t src_vip,
		       uint32_t dst_vip, uint32_t sqpn, uint32_t dqpn,
		       uint8_t dscp);

/*
 * Transmit: looks up the current binding of f->dst_vip (so a move takes
 * effect on the next packet) and encapsulates the PDU as ovr_vpc_encap()
 * does, with the source port of path @path. Returns 0 (frame at
 * pdu - OVR_WIRE_ENCAP_LEN, OVR_WIRE_ENCAP_LEN + pdu_len bytes) or -errno:
 *   -EHOSTUNREACH  f->dst_vip unknown in the tenant (counted: tx_no_route)
 *   -EMSGSIZE      the frame exceeds the underlay MTU (counted: tx_mtu)
 *   -ENOSPC, -EINVAL  caller bug, as ovr_vpc_encap() (not counted)
 */
int ovr_vpc_tx(struct ovr_vpc_thread *t, const struct ovr_vpc_flow *f,
	       uint8_t path, uint8_t *pdu, size_t headroom, size_t pdu_len);

/*
 * Transmit one copy of a multicast datagram: as ovr_vpc_tx(), but
 * f->dst_vip must be a group (ovr_vpc_is_mcast) and the outer destination
 * is @h (host and next-hop mac, from ovr_vpc_tenant_hosts) instead of a
 * binding; the inner destination is the group. Counted as ovr_vpc_tx()
 * counts (the tenant's tx_pkts and tx_bytes per copy). Returns 0 or
 * -errno:
 *   -ENOENT        tenant f->vni unknown (counted: tx_no_route)
 *   -EMSGSIZE      the frame exceeds the underlay MTU (counted: tx_mtu)
 *   -EINVAL        f->dst_vip is not multicast, @h NULL or its host 0, or
 *                  as ovr_vpc_encap() (not counted)
 *   -ENOSPC        as ovr_vpc_encap() (not counted)
 */
int ovr_vpc_tx_via(struct ovr_vpc_thread *t, const struct ovr_vpc_flow *f,
		   uint8_t path, uint8_t *pdu, size_t headroom, size_t pdu_len,
		   const struct ovr_vpc_host *h);

#ifdef __cplusplus
}
#endif
#endif /* OVRDMA_VPC_H */
