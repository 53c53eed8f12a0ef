/* SPDX-License-Identifier: MIT */
/*
 * The core of ovrdma-fabric (docs/FABRIC.md): a switch between N ports
 * that forwards Ethernet frames by their IPv4 destination, with one
 * impaired link (include/ovrdma/linkemu.h) in front of every egress port.
 * No DPDK here: the program feeds frames in with ovr_fabric_rx() and takes
 * those whose time has come with ovr_fabric_recv()/ovr_fabric_drain(), so
 * the whole behaviour is testable in simulated time.
 *
 * Forwarding, per frame arriving on port P:
 *   - only IPv4 (0x0800) and ARP (0x0806) are handled; anything else is
 *     dropped ("unsupported"), as are frames too short for their headers
 *     ("malformed") or longer than max_frame ("too_big");
 *   - the sender is learned: the IPv4 source (or ARP sender) address is
 *     reachable through P at the Ethernet source MAC, unless a static route
 *     says otherwise (a static route only borrows the MAC when the frame
 *     came in on its port);
 *   - a frame to a broadcast or multicast MAC is flooded to every port but
 *     P (an ARP request, typically), and so is an ARP frame whose target
 *     address has no route (a unicast probe for a neighbour cached before
 *     the fabric started), unless ARP proxying is on and the target is
 *     known: then the fabric answers an ARP request itself, back through
 *     P's link;
 *   - any other frame goes to the port of its IPv4 destination (ARP: the
 *     target address); with no route it is dropped ("no_route"), when that
 *     port is P it is dropped ("same_port"). When the route knows the
 *     destination's MAC, the frame's destination MAC is set to it.
 * The egress link of a port models the switch's output queue (rate,
 * buffer, ECN threshold) and the wire to the node (delay, jitter, loss,
 * bursts, reordering, duplication, corruption, black-holing). A packet the
 * link marks CE gets CE in its IPv4 ECN field when it was ECT(0) or ECT(1)
 * (the header checksum is updated); a Not-ECT packet (or ARP) is delivered
 * unchanged and counted in ce_not_ect - the fabric never drops for ECN.
 *
 * Every port's link has its own PRNG stream derived from the fabric seed
 * and the port number: the same seed, configuration and input sequence
 * give the same output. Not thread-safe.
 */
#ifndef OVRDMA_FABRIC_H
#define OVRDMA_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <ovrdma/linkemu.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OVR_FABRIC_MAX_PORTS 64

struct ovr_fabric_port_stats {
	/* ingress: frames the node on this port sent into the fabric */
	uint64_t rx; /* frames */
	uint64_t rx_bytes;
	uint64_t arp; /* of rx: ARP */
	uint64_t flooded; /* of rx: copied to every other port */
	uint64_t arp_proxied; /* of rx: ARP requests answered by the fabric */
	uint64_t learned; /* routes learned or moved to this port */
	uint64_t no_route; /* dropped: destination unknown */
	uint64_t same_port; /* dropped: destination behind this port */
	uint64_t unsupported; /* dropped: neither IPv4 nor ARP */
	uint64_t malformed; /* dropped: truncated or bad IPv4/ARP header */
	uint64_t too_big; /* dropped: longer than max_frame */
	/* egress: the link from the fabric to the node on this port */
	uint64_t offered; /* frames offered to the link */
	uint64_t queue_drop; /* tail-dropped: buffer full */
	uint64_t loss; /* lost: Bernoulli */
	uint64_t ge_loss; /* lost: Gilbert-Elliott bad state */
	uint64_t blackhole; /* dropped: link black-holed */
	uint64_t dup; /* duplicated (the copies are in tx) */
	uint64_t corrupt; /* one bit flipped */
	uint64_t reordered; /* held back */
	uint64_t ce_marked; /* marked by the link above ecn bytes */
	uint64_t ce_not_ect; /* of ce_marked: not ECT, delivered unmarked */
	uint64_t nomem; /* dropped: no memory for the copy */
	uint64_t tx; /* frames handed to the port */
	uint64_t tx_bytes;
	uint64_t tx_drop; /* frames the port refused (ovr_fabric_tx_dropped) */
	uint64_t inflight; /* gauge: frames inside the link now */
};

struct ovr_fabric;

/* Called by ovr_fabric_drain() for every frame due; non-zero: the port
 * did not take it (counted in tx_drop). */
typedef int (*ovr_fabric_tx_fn)(void *arg, uint16_t port, const void *frame,
				uint32_t len);

/* All links start clean (no impairment, infinitely fast). NULL and errno
 * EINVAL (nports 0 or above OVR_FABRIC_MAX_PORTS, max_frame below 64) or
 * ENOMEM. */
struct ovr_fabric *ovr_fabric_create(uint16_t nports, uint64_t seed,
				     uint32_t max_frame);
void ovr_fabric_destroy(struct ovr_fabric *f);
uint16_t ovr_fabric_nports(const struct ovr_fabric *f);
uint32_t ovr_fabric_max_frame(const struct ovr_fabric *f);

/* Set (at any time; frames in flight keep their fate) or read the egress
 * link of @port. cfg->seed is ignored: the port's stream continues.
 * -EINVAL for a bad port or configuration. */
int ovr_fabric_port_set(struct ovr_fabric *f, uint16_t port,
			const struct ovr_link_cfg *cfg);
int ovr_fabric_port_get(const struct ovr_fabric *f, uint16_t port,
			struct ovr_link_cfg *cfg);

/* Learning is on and ARP proxying off by default. */
void ovr_fabric_set_learning(struct ovr_fabric *f, bool on);
void ovr_fabric_set_arp_proxy(struct ovr_fabric *f, bool on);

/*
 * Several fabrics that switch for the same ports (ovrdma-fabric's
 * --workers: one per worker thread) share what they learn: @fn is called
 * with every route learning adds or moves in @f (not static routes, not
 * what ovr_fabric_learn() brings), and ovr_fabric_learn() applies such a
 * route to another fabric as if it had learned it itself (not counted in
 * `learned`; nothing while learning is off; a static route keeps its
 * port). -EINVAL for a bad port.
 */
typedef void (*ovr_fabric_learn_fn)(void *arg, uint32_t ip, uint16_t port,
				    const uint8_t mac[6]);
void ovr_fabric_set_learn_hook(struct ovr_fabric *f, ovr_fabric_learn_fn fn,
			       void *arg);
int ovr_fabric_learn(struct ovr_fabric *f, uint32_t ip, uint16_t port,
		     const uint8_t mac[6]);

/*
 * Static route: IPv4 address @ip (host byte order) is behind @port, at
 * @mac when not NULL (else learned later). Replaces whatever was there;
 * learning never changes a static route's port. -EINVAL (port, ip 0),
 * -ENOMEM.
 */
int ovr_fabric_route_add(struct ovr_fabric *f, uint32_t ip, uint16_t port,
			 const uint8_t *mac);
int ovr_fabric_route_del(struct ovr_fabric *f, uint32_t ip);

struct ovr_fabric_route {
	uint32_t ip; /* host byte order */
	uint16_t port;
	bool is_static;
	bool has_mac;
	uint8_t mac[6];
};

/* 0 and *r filled, or -ENOENT. */
int ovr_fabric_route_get(const struct ovr_fabric *f, uint32_t ip,
			 struct ovr_fabric_route *r);
/* Calls @fn for every route (in no particular order); returns the count. */
unsigned ovr_fabric_route_foreach(const struct ovr_fabric *f,
				  void (*fn)(void *arg,
					     const struct ovr_fabric_route *r),
				  void *arg);

/*
 * A frame of @len bytes arrived on @port at @now_ns (times never go
 * backwards). Returns how many egress links took a copy (0: dropped, see
 * the counters), -EINVAL for a bad port. The frame is copied; the caller
 * keeps its buffer.
 */
int ovr_fabric_rx(struct ovr_fabric *f, uint16_t port, const void *frame,
		  uint32_t len, uint64_t now_ns);

/*
 * Take the next frame due on @port by @now_ns into @buf (ECN applied):
 * 1 and *len set, 0 when none is due, -ENOSPC when @cap is too small (the
 * frame stays), -EINVAL for a bad port.
 */
int ovr_fabric_recv(struct ovr_fabric *f, uint16_t port, uint64_t now_ns,
		    void *buf, uint32_t cap, uint32_t *len);

/* The port refused frames that ovr_fabric_recv() gave out. */
void ovr_fabric_tx_dropped(struct ovr_fabric *f, uint16_t port, uint64_t frames,
			   uint64_t bytes);

/* ovr_fabric_recv() on every port until nothing is due, handing each frame
 * to @fn; returns the number of frames handed out. */
unsigned ovr_fabric_drain(struct ovr_fabric *f, uint64_t now_ns,
			  ovr_fabric_tx_fn fn, void *arg);

/* Earliest time a frame becomes due on @port / on any port; UINT64_MAX
 * when nothing is in flight. */
uint64_t ovr_fabric_port_next_ns(const struct ovr_fabric *f, uint16_t port);
uint64_t ovr_fabric_next_ns(const struct ovr_fabric *f);

/* -EINVAL for a bad port. */
int ovr_fabric_port_stats(const struct ovr_fabric *f, uint16_t port,
			  struct ovr_fabric_port_stats *s);

/* Names and values of the counters, in struct order, for printing. */
#define OVR_FABRIC_NSTATS \
	(sizeof(struct ovr_fabric_port_stats) / sizeof(uint64_t))
extern const char *const ovr_fabric_stat_names[];

/* ---- Text configuration and control (the --link option, the control
 * socket); docs/FABRIC.md lists the syntax. -------------------------- */

/*
 * Apply "key=val[,key=val...]" (commas or spaces) to @cfg, e.g.
 * "rate=10g,delay=5us,loss=0.01,ge=0.001/0.3/1,reorder=0.01/20us".
 * 0, or -EINVAL with a message in @err. @cfg is only partly updated on
 * error.
 */
int ovr_fabric_parse_link(struct ovr_link_cfg *cfg, const char *spec, char *err,
			  size_t errlen);

/* "0", "12", "all" (-> OVR_FABRIC_ALL); -EINVAL otherwise. */
#define OVR_FABRIC_ALL 0xffff
int ovr_fabric_parse_port(const struct ovr_fabric *f, const char *s,
			  uint16_t *port);

/* Dotted quad -> host byte order; -EINVAL. */
int ovr_fabric_parse_ip(const char *s, uint32_t *ip);

/*
 * One control command (a line, without or with its newline):
 *   set PORT|all key=val ...     change the egress link(s)
 *   show [PORT]                  the links' configuration
 *   stats [PORT]                 counters, "key value" lines
 *   route IP PORT [MAC]          add a static route
 *   route del IP                 remove a route
 *   routes                       list routes
 *   quit                         ask the program to stop
 * Writes the answer to @out followed by "ok" or "error: why" on a line of
 * its own. Returns 0, 1 for quit, or a negative errno.
 */
int ovr_fabric_ctl(struct ovr_fabric *f, const char *line, FILE *out);

/* "stats": for one port, "key value" lines; for OVR_FABRIC_ALL, the sums
 * as "key value" then every port as "pN.key value". */
void ovr_fabric_print_stats(const struct ovr_fabric *f, uint16_t port,
			    FILE *out);
/* The same summed over @n fabrics of as many ports (--workers). */
void ovr_fabric_print_stats_n(struct ovr_fabric *const *f, unsigned n,
			      uint16_t port, FILE *out);
/*
 * ovr_fabric_ctl() for @n fabrics of the same ports: "set" and "route"
 * change every one alike (the first answers), "stats" prints the sums
 * over all, anything else is the first's ("show": every fabric has the
 * same links; "routes": the first's table, which learning shares).
 */
int ovr_fabric_ctl_n(struct ovr_fabric *const *f, unsigned n, const char *line,
		     FILE *out);
/* A link configuration as the key=val text the parser reads. */
void ovr_fabric_print_cfg(const struct ovr_link_cfg *cfg, FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* OVRDMA_FABRIC_H */
