// SPDX-License-Identifier: MIT
/*
 * VPC overlay, layers 2 and 3: tenant tables, security groups, and the
 * per-packet fast path over them (include/ovrdma/vpc.h, docs/VPC.md).
 *
 * Concurrency model (liburcu, QSBR flavour):
 *  - Readers (dataplane threads) never lock or write shared memory except
 *    their own counter slot. They find vIP bindings and tenants in two
 *    cds_lfht lock-free hash tables, and a tenant's security group through
 *    an RCU pointer. QSBR read-side sections cost nothing; instead each
 *    reader announces a quiescent state once per poll loop.
 *  - Writers (control plane, any thread) serialise on vpc->lock, which
 *    readers never take, and publish new objects with cds_lfht_add_unique
 *    / cds_lfht_replace / rcu_xchg_pointer. What they unlink is retired
 *    with call_rcu(): the default call_rcu worker thread waits for a
 *    grace period (every registered reader went quiescent at least once)
 *    and then poisons and frees it. call_rcu rather than synchronize_rcu:
 *    a grace period lasts until the slowest reader's next poll loop, and
 *    a writer paying it per update could not sustain thousands of moves
 *    a second; call_rcu batches the waits in the worker and the writer
 *    never blocks. rcu_barrier() (ovr_vpc_barrier) waits for them all.
 *  - A vIP binding is immutable once published: a move installs a copy
 *    (cds_lfht_replace), so a reader sees the old binding or the new one,
 *    each whole.
 *  - Each tenant also publishes the list of underlay hosts serving its
 *    vIPs (struct vpc_hosts, for multicast head-end replication), rebuilt
 *    by the writer from per-host reference counts whenever a vip_add,
 *    vip_move or vip_del changes it, and replaced whole like a security
 *    group.
 *
 * liburcu is used through its function-call API plus the small inline
 * functions it licenses for any code (URCU_INLINE_SMALL_FUNCTIONS); not
 * _LGPL_SOURCE, which would inline LGPL code into this MIT library.
 */
#define URCU_INLINE_SMALL_FUNCTIONS
#include <urcu-qsbr.h>
#include <urcu/rculfhash.h>

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "vpc_frame.h"

#include <ovrdma/util.h>

#define VPC_DEFAULT_MAX_THREADS 64u
#define VPC_MAX_THREADS 4096u
#define VPC_DEFAULT_SIZE_HINT 1024u
#define VPC_DEFAULT_MTU 1500u
#define VPC_MIN_MTU 68u /* RFC 791: every IPv4 link carries 68 bytes */
#define VPC_POISON 0x6b /* freed objects are filled with this first */

/* One reader thread's drop counters, written by that thread only. */
struct vpc_slot {
	uint64_t drops[OVR_VPC_NDROP];
} __attribute__((aligned(64)));

/* One reader thread's counters of one tenant: a cache line of its own. */
struct vpc_tcnt {
	uint64_t rx_pkts;
	uint64_t rx_bytes;
	uint64_t tx_pkts;
	uint64_t tx_bytes;
	uint64_t drops;
} __attribute__((aligned(64)));

/* Security group, flattened: sorted, disjoint, non-adjacent ranges. */
struct vpc_range {
	uint32_t lo;
	uint32_t hi; /* inclusive */
};

struct vpc_sg {
	uint32_t n;
	/* cold: reclamation */
	struct ovr_vpc *vpc;
	struct rcu_head rcu;
	struct vpc_range r[];
};

/* The hosts serving a tenant's vIPs, sorted by host; immutable once
 * published (ovr_vpc_tenant_hosts). */
struct vpc_hosts {
	uint32_t n; /* >= 1: a tenant without vIPs publishes NULL */
	/* cold: reclamation */
	struct ovr_vpc *vpc;
	struct rcu_head rcu;
	struct ovr_vpc_host h[];
};

/* Control plane: how many of a tenant's vIPs a host serves. */
struct vpc_hostref {
	uint32_t host;
	uint32_t refs;
	uint8_t mac[6]; /* of the binding added or moved there last */
};

struct vpc_tenant {
	struct cds_lfht_node node;
	uint32_t vni;
	struct vpc_sg *sg; /* RCU pointer; NULL denies everything */
	struct vpc_hosts *hosts; /* RCU pointer; NULL: no vIP */
	struct vpc_tcnt *cnt; /* [vpc->max_threads] */
	/* cold: control plane (under vpc->lock) and reclamation */
	uint64_t nvips;
	struct vpc_hostref *href; /* [nhref] sorted by host, cap caphref */
	uint32_t nhref, caphref;
	struct ovr_vpc *vpc;
	struct rcu_head rcu;
};

struct vpc_vip_node {
	struct cds_lfht_node node;
	uint64_t key; /* vni << 32 | vip */
	struct ovr_vpc_vip pub; /* what ovr_vpc_lookup() hands out */
	struct vpc_tenant *tenant; /* outlives the node: tenant_del -EBUSY */
	/* cold: reclamation */
	struct ovr_vpc *vpc;
	struct rcu_head rcu;
};

struct ovr_vpc {
	/* read-mostly, every packet */
	struct cds_lfht *vips; /* (vni, vip) -> struct vpc_vip_node */
	struct cds_lfht *tenants; /* vni -> struct vpc_tenant */
	uint64_t seed; /* table hash seed */
	uint32_t local_host;
	uint32_t underlay_mtu;
	uint16_t dport;
	uint8_t local_mac[6];
	uint32_t max_threads;
	struct vpc_slot *slots; /* [max_threads] */
	/* control plane */
	pthread_mutex_t lock; /* serialises writers; readers never take it */
	uint8_t *slot_used; /* [max_threads], under lock */
	uint64_t ntenants; /* under lock */
	uint64_t nvips; /* under lock */
	uint64_t retired; /* atomic */
	uint64_t freed; /* atomic: incremented by the call_rcu worker */
};

/*
 * A reader's last verdicts, one for receiving and one for sending: the
 * frames of a burst nearly always belong to one flow, so the lookups of
 * the first serve the others. A verdict holds pointers into the tables,
 * valid only until the thread's next quiescent state: it carries the
 * thread's quiescent generation (tls_qgen) and is stale once that moves
 * (ovr_vpc_quiescent, going offline, a control-plane call of the thread
 * itself). So the cache sees updates exactly as an RCU reader does.
 */
struct vpc_rx_cache {
	uint64_t gen; /* tls_qgen when filled; 0: empty */
	uint32_t vni, dst_vip, src_vip, src_host;
	struct vpc_tenant *tn;
	int32_t dev;
};

struct vpc_tx_cache {
	uint64_t gen;
	uint32_t vni, dst_vip;
	struct vpc_vip_node *dst;
};

/* The tenant of the last ovr_vpc_tx_via / ovr_vpc_tenant_hosts: a
 * multicast datagram is sent as one copy per host, back to back. */
struct vpc_tn_cache {
	uint64_t gen;
	uint32_t vni;
	struct vpc_tenant *tn;
};

struct ovr_vpc_thread {
	struct ovr_vpc *vpc;
	struct vpc_slot *slot;
	uint32_t idx;
	struct vpc_rx_cache rxc;
	struct vpc_tx_cache txc;
	struct vpc_tn_cache tnc;
};

/*
 * liburcu's registration is per thread, ours per (thread, context): count
 * how many contexts (and control-plane calls in progress) this thread has
 * registered for, and whether it went offline.
 */
static __thread unsigned int tls_refs;
static __thread bool tls_offline;
/* moves at each quiescent state of the thread: struct vpc_rx_cache */
static __thread uint64_t tls_qgen = 1;

/* ---- small helpers ------------------------------------------------------- */

/* Single-writer counter: relaxed atomics so that a concurrent reader of the
 * sums is not a data race; on x86 this is a plain load, add and store. */
static inline void cnt_add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v,
			 __ATOMIC_RELAXED);
}

static inline uint64_t cnt_read(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* 64-bit mixer (MurmurHash3's finaliser): about 1 ns, every output bit
 * depends on every key bit, which the split-ordered table needs. */
static inline unsigned long vpc_hash(uint64_t k, uint64_t seed)
{
	k ^= seed;
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return (unsigned long)k;
}

static inline uint64_t vip_key(uint32_t vni, uint32_t vip)
{
	return (uint64_t)vni << 32 | vip;
}

static int vip_match(struct cds_lfht_node *node, const void *key)
{
	const struct vpc_vip_node *n =
		caa_container_of(node, struct vpc_vip_node, node);

	return n->key == *(const uint64_t *)key;
}

static int tenant_match(struct cds_lfht_node *node, const void *key)
{
	const struct vpc_tenant *t =
		caa_container_of(node, struct vpc_tenant, node);

	return t->vni == *(const uint32_t *)key;
}

/* Read side (or writer under lock): RCU read-side section held. */
static inline struct vpc_vip_node *vip_find(struct ovr_vpc *vpc, uint32_t vni,
					    uint32_t vip,
					    struct cds_lfht_iter *it)
{
	uint64_t key = vip_key(vni, vip);
	struct cds_lfht_node *node;

	cds_lfht_lookup(vpc->vips, vpc_hash(key, vpc->seed), vip_match, &key,
			it);
	node = cds_lfht_iter_get_node(it);
	if (!node)
		return NULL;
	return caa_container_of(node, struct vpc_vip_node, node);
}

static inline struct vpc_tenant *tenant_find(struct ovr_vpc *vpc, uint32_t vni,
					     struct cds_lfht_iter *it)
{
	struct cds_lfht_node *node;

	cds_lfht_lookup(vpc->tenants, vpc_hash(vni, vpc->seed), tenant_match,
			&vni, it);
	node = cds_lfht_iter_get_node(it);
	if (!node)
		return NULL;
	return caa_container_of(node, struct vpc_tenant, node);
}

/* O(log n) over the flattened ranges; n is small in practice. */
static inline bool sg_allows(const struct vpc_sg *sg, uint32_t ip)
{
	uint32_t lo = 0, hi, mid;

	if (!sg)
		return false;
	hi = sg->n;
	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (sg->r[mid].lo <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo ranges start at or below ip; only the last one can hold it */
	return lo && ip <= sg->r[lo - 1].hi;
}

/* ---- reclamation --------------------------------------------------------- */

static void retired_one(struct ovr_vpc *vpc)
{
	__atomic_fetch_add(&vpc->retired, 1, __ATOMIC_RELAXED);
}

/* The poison makes a reader that kept a pointer past its quiescent state
 * see garbage (vni 0x6b6b6b6b) even without a sanitizer. */
static void freed_one(struct ovr_vpc *vpc, void *obj, size_t size)
{
	memset(obj, VPC_POISON, size);
	/* without this the compiler drops the memset as a dead store */
	__asm__ volatile("" : : "r"(obj) : "memory");
	free(obj);
	__atomic_fetch_add(&vpc->freed, 1, __ATOMIC_RELEASE);
}

static void vip_free_cb(struct rcu_head *head)
{
	struct vpc_vip_node *n =
		caa_container_of(head, struct vpc_vip_node, rcu);

	freed_one(n->vpc, n, sizeof(*n));
}

static void sg_free_cb(struct rcu_head *head)
{
	struct vpc_sg *sg = caa_container_of(head, struct vpc_sg, rcu);

	freed_one(sg->vpc, sg, sizeof(*sg) + sg->n * sizeof(sg->r[0]));
}

static size_t hosts_size(uint32_t n)
{
	return sizeof(struct vpc_hosts) + n * sizeof(struct ovr_vpc_host);
}

static void hosts_free_cb(struct rcu_head *head)
{
	struct vpc_hosts *hs = caa_container_of(head, struct vpc_hosts, rcu);

	freed_one(hs->vpc, hs, hosts_size(hs->n));
}

static void tenant_free_cb(struct rcu_head *head)
{
	struct vpc_tenant *t = caa_container_of(head, struct vpc_tenant, rcu);

	/* its last security group and host list were unlinked with it: no
	 * reader left */
	if (t->sg)
		freed_one(t->vpc, t->sg,
			  sizeof(*t->sg) + t->sg->n * sizeof(t->sg->r[0]));
	if (t->hosts)
		freed_one(t->vpc, t->hosts, hosts_size(t->hosts->n));
	free(t->href); /* control-plane only: never seen by readers */
	free(t->cnt);
	freed_one(t->vpc, t, sizeof(*t));
}

static void vip_retire(struct ovr_vpc *vpc, struct vpc_vip_node *n)
{
	retired_one(vpc);
	call_rcu(&n->rcu, vip_free_cb);
}

static void sg_retire(struct ovr_vpc *vpc, struct vpc_sg *sg)
{
	retired_one(vpc);
	call_rcu(&sg->rcu, sg_free_cb);
}

static void hosts_retire(struct ovr_vpc *vpc, struct vpc_hosts *hs)
{
	retired_one(vpc);
	call_rcu(&hs->rcu, hosts_free_cb);
}

static void tenant_retire(struct ovr_vpc *vpc, struct vpc_tenant *t)
{
	retired_one(vpc);
	if (t->sg)
		retired_one(vpc);
	if (t->hosts)
		retired_one(vpc);
	call_rcu(&t->rcu, tenant_free_cb);
}

/* ---- control-plane thread state -------------------------------------------- */

enum ctl_state {
	CTL_AS_IS, /* already a registered, online reader */
	CTL_REGISTERED, /* registered for this call only */
	CTL_ONLINED, /* registered but offline: online for this call */
};

/*
 * cds_lfht updates and call_rcu() need a registered, online thread. A
 * control-plane thread usually is not a reader: register it for the call
 * (a few hundred ns, fine at control-plane rates), so that it never holds
 * up grace periods between calls.
 */
static enum ctl_state ctl_enter(void)
{
	tls_qgen++; /* the thread's own update: its verdicts are stale */
	if (!tls_refs) {
		rcu_register_thread();
		tls_refs++;
		return CTL_REGISTERED;
	}
	if (tls_offline) {
		rcu_thread_online();
		return CTL_ONLINED;
	}
	return CTL_AS_IS;
}

static void ctl_leave(enum ctl_state s)
{
	switch (s) {
	case CTL_REGISTERED:
		tls_refs--;
		rcu_unregister_thread();
		break;
	case CTL_ONLINED:
		rcu_thread_offline();
		break;
	case CTL_AS_IS:
		break;
	}
}

/* ---- create / destroy ---------------------------------------------------- */

struct ovr_vpc *ovr_vpc_create(const struct ovr_vpc_config *cfg)
{
	unsigned long init;
	struct ovr_vpc *vpc;
	int flags = CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING;

	if (!cfg || !cfg->local_host || cfg->max_threads > VPC_MAX_THREADS ||
	    (cfg->underlay_mtu &&
	     (cfg->underlay_mtu < VPC_MIN_MTU || cfg->underlay_mtu > 65535))) {
		errno = EINVAL;
		return NULL;
	}
	vpc = calloc(1, sizeof(*vpc));
	if (!vpc)
		return NULL;
	vpc->local_host = cfg->local_host;
	memcpy(vpc->local_mac, cfg->local_mac, sizeof(vpc->local_mac));
	vpc->dport = cfg->dport ? cfg->dport : OVR_WIRE_UDP_PORT;
	vpc->underlay_mtu = cfg->underlay_mtu ? cfg->underlay_mtu :
						VPC_DEFAULT_MTU;
	vpc->max_threads = cfg->max_threads ? cfg->max_threads :
					      VPC_DEFAULT_MAX_THREADS;
	if (getrandom(&vpc->seed, sizeof(vpc->seed), GRND_NONBLOCK) !=
	    sizeof(vpc->seed))
		vpc->seed = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull;

	vpc->slots = aligned_alloc(64, vpc->max_threads * sizeof(*vpc->slots));
	vpc->slot_used = calloc(vpc->max_threads, 1);
	if (!vpc->slots || !vpc->slot_used)
		goto err_alloc;
	memset(vpc->slots, 0, vpc->max_threads * sizeof(*vpc->slots));
	if (pthread_mutex_init(&vpc->lock, NULL))
		goto err_alloc;

	init = ovr_pow2_at_least(cfg->size_hint ? cfg->size_hint :
						  VPC_DEFAULT_SIZE_HINT);
	vpc->vips = cds_lfht_new(init, 1, 0, flags, NULL);
	if (!vpc->vips)
		goto err_vips;
	vpc->tenants = cds_lfht_new(64, 1, 0, flags, NULL);
	if (!vpc->tenants)
		goto err_tenants;
	return vpc;

err_tenants:
	cds_lfht_destroy(vpc->vips, NULL);
err_vips:
	pthread_mutex_destroy(&vpc->lock);
err_alloc:
	free(vpc->slot_used);
	free(vpc->slots);
	free(vpc);
	errno = ENOMEM;
	return NULL;
}

void ovr_vpc_destroy(struct ovr_vpc *vpc)
{
	struct cds_lfht_node *node;
	struct cds_lfht_iter it;
	enum ctl_state s;
	bool was_online;

	if (!vpc)
		return;
	/*
	 * Not cds_lfht_for_each_entry(): it applies container_of to the NULL
	 * that ends the walk, which UBSan rightly reports.
	 */
	s = ctl_enter();
	pthread_mutex_lock(&vpc->lock);
	rcu_read_lock();
	cds_lfht_first(vpc->vips, &it);
	while ((node = cds_lfht_iter_get_node(&it))) {
		cds_lfht_next(vpc->vips, &it);
		if (!cds_lfht_del(vpc->vips, node))
			vip_retire(vpc,
				   caa_container_of(node, struct vpc_vip_node,
						    node));
	}
	cds_lfht_first(vpc->tenants, &it);
	while ((node = cds_lfht_iter_get_node(&it))) {
		cds_lfht_next(vpc->tenants, &it);
		if (!cds_lfht_del(vpc->tenants, node))
			tenant_retire(vpc,
				      caa_container_of(node, struct vpc_tenant,
						       node));
	}
	rcu_read_unlock();
	pthread_mutex_unlock(&vpc->lock);
	ctl_leave(s);

	/*
	 * Wait for the frees, then for the tables' resize worker, which may
	 * itself wait for a grace period: a reader thread calling this (a
	 * misuse, but cheap to survive) must not be online meanwhile.
	 */
	was_online = tls_refs && !tls_offline;
	if (was_online)
		ovr_vpc_thread_offline();
	rcu_barrier();
	cds_lfht_destroy(vpc->vips, NULL);
	cds_lfht_destroy(vpc->tenants, NULL);
	if (was_online)
		ovr_vpc_thread_online();
	pthread_mutex_destroy(&vpc->lock);
	free(vpc->slot_used);
	free(vpc->slots);
	free(vpc);
}

void ovr_vpc_barrier(struct ovr_vpc *vpc)
{
	(void)vpc;
	rcu_barrier(); /* puts a registered QSBR caller offline meanwhile */
}

/* ---- tenants ------------------------------------------------------------- */

int ovr_vpc_tenant_add(struct ovr_vpc *vpc, uint32_t vni)
{
	struct cds_lfht_node *got;
	struct vpc_tenant *t;
	enum ctl_state s;

	if (vni > OVR_VPC_VNI_MAX)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->cnt = aligned_alloc(64, vpc->max_threads * sizeof(*t->cnt));
	if (!t->cnt) {
		free(t);
		return -ENOMEM;
	}
	memset(t->cnt, 0, vpc->max_threads * sizeof(*t->cnt));
	t->vni = vni;
	t->vpc = vpc;
	cds_lfht_node_init(&t->node);

	s = ctl_enter();
	pthread_mutex_lock(&vpc->lock);
	rcu_read_lock();
	got = cds_lfht_add_unique(vpc->tenants, vpc_hash(vni, vpc->seed),
				  tenant_match, &vni, &t->node);
	rcu_read_unlock();
	if (got == &t->node)
		vpc->ntenants++;
	pthread_mutex_unlock(&vpc->lock);
	ctl_leave(s);
	if (got != &t->node) {
		free(t->cnt);
		free(t);
		return -EEXIST;
	}
	return 0;
}

int ovr_vpc_tenant_del(struct ovr_vpc *vpc, uint32_t vni)
{
	struct cds_lfht_iter it;
	struct vpc_tenant *t;
	enum ctl_state s;
	int ret = 0;

	s = ctl_enter();
	pthread_mutex_lock(&vpc->lock);
	rcu_read_lock();
	t = tenant_find(vpc, vni, &it);
	if (!t)
		ret = -ENOENT;
	else if (t->nvips)
		ret = -EBUSY; /* vIP nodes point at it: delete them first */
	else if (cds_lfht_del(vpc->tenants, &t->node))
		ret = -ENOENT;
	rcu_read_unlock();
	if (!ret) {
		vpc->ntenants--;
		tenant_retire(vpc, t);
	}
	pthread_mutex_unlock(&vpc->lock);
	ctl_leave(s);
	return ret;
}

/* ---- vIP bindings -------------------------------------------------------- */

/* 0.0.0.0, and 224.0.0.0 and above (multicast, reserved, broadcast). */
static bool vip_valid(uint32_t vip)
{
	return vip != 0 && vip < 0xe0000000u;
}

static int binding_check(const struct ovr_vpc *vpc, uint32_t vni, uint32_t vip,
			 const struct ovr_vpc_binding *b)
{
	if (vni > OVR_VPC_VNI_MAX || !vip_valid(vip) || !b || !b->host)
		return -EINVAL;
	/* served here iff bound to this host, and then to a device */
	if ((b->host == vpc->local_host) != (b->dev >= 0))
		return -EINVAL;
	if (b->dev < OVR_VPC_DEV_NONE)
		return -EINVAL;
	return 0;
}

static struct vpc_vip_node *vip_node_new(struct ovr_vpc *vpc, uint32_t vni,
					 uint32_t vip,
					 const struct ovr_vpc_binding *b)
{
	struct vpc_vip_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	cds_lfht_node_init(&n->node);
	n->key = vip_key(vni, vip);
	n->pub.vip = vip;
	n->pub.vni = vni;
	n->pub.host = b->host;
	n->pub.dev = b->dev;
	memcpy(n->pub.mac, b->mac, sizeof(n->pub.mac));
	n->vpc = vpc;
	return n;
}

/*
 * A tenant's host list. The writer counts, per host, the tenant's vIPs
 * bound there (href, sorted by host) and publishes a copy for readers
 * when the list changes: a host gains its first vIP or loses its last,
 * or a binding brings a new MAC for it. Each update first works out
 * whether it will change the list and reserves what it needs (room for
 * one more host, the copy), so that nothing can fail once the table has
 * changed. O(log hosts) for an update that leaves the list alone (most:
 * a host serves many vIPs), O(hosts of the tenant) for one that does.
 */
static int href_reserve(struct vpc_tenant *t)
{
	struct vpc_hostref *r;
	uint32_t cap;

	if (t->nhref < t->caphref)
		return 0;
	cap = t->caphref ? 2 * t->caphref : 4;
	r = realloc(t->href, cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	t->href = r;
	t->caphref = cap;
	return 0;
}

/* Index of @host in t->href, or where it would go (*found false). */
static uint32_t href_find(const struct vpc_tenant *t, uint32_t host,
			  bool *found)
{
	uint32_t lo = 0, hi = t->nhref, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (t->href[mid].host < host)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < t->nhref && t->href[lo].host == host;
	return lo;
}

/* One more vIP bound to b->host (room reserved by href_reserve). */
static void href_get(struct vpc_tenant *t, const struct ovr_vpc_binding *b)
{
	bool found;
	uint32_t i = href_find(t, b->host, &found);

	if (!found) {
		memmove(&t->href[i + 1], &t->href[i],
			(t->nhref - i) * sizeof(t->href[0]));
		t->nhref++;
		t->href[i].host = b->host;
		t->href[i].refs = 0;
	}
	t->href[i].refs++;
	memcpy(t->href[i].mac, b->mac, sizeof(t->href[i].mac));
}

/* Would href_get(t, b) change what readers see of b->host? */
static bool href_get_changes(const struct ovr_vpc *vpc,
			     const struct vpc_tenant *t,
			     const struct ovr_vpc_binding *b)
{
	bool found;
	uint32_t i = href_find(t, b->host, &found);

	/* this host is listed with local_mac, whatever its bindings say */
	return !found || (b->host != vpc->local_host &&
			  memcmp(t->href[i].mac, b->mac, sizeof(b->mac)) != 0);
}

/* Would href_put(t, host) remove @host? */
static bool href_put_changes(const struct vpc_tenant *t, uint32_t host)
{
	bool found;
	uint32_t i = href_find(t, host, &found);

	return found && t->href[i].refs == 1;
}

/* One vIP less bound to @host (which has one). */
static void href_put(struct vpc_tenant *t, uint32_t host)
{
	bool found;
	uint32_t i = href_find(t, host, &found);

	assert(found && t->href[i].refs > 0);
	if (--t->href[i].refs)
		return;
	t->nhref--;
	memmove(&t->href[i], &t->href[i + 1],
		(t->nhref - i) * sizeof(t->href[0]));
}

/* Room for the copy of a list of up to @n hosts. */
static struct vpc_hosts *hosts_alloc(uint32_t n)
{
	return malloc(hosts_size(n));
}

/*
 * Publishes t->href as the tenant's host list, in @fresh (from
 * hosts_alloc, room for t->nhref hosts; used or freed here), unless it
 * is what readers see already; the old list is retired.
 */
static void hosts_publish(struct ovr_vpc *vpc, struct vpc_tenant *t,
			  struct vpc_hosts *fresh)
{
	struct vpc_hosts *old = t->hosts; /* under vpc->lock: stable */
	uint32_t i;

	if (!t->nhref) {
		free(fresh);
		fresh = NULL;
	} else {
		fresh->n = t->nhref;
		fresh->vpc = vpc;
		memset(fresh->h, 0, t->nhref * sizeof(fresh->h[0]));
		for (i = 0; i < t->nhref; i++) {
			fresh->h[i].host = t->href[i].host;
			memcpy(fresh->h[i].mac,
			       t->href[i].host == vpc->local_host ?
				       vpc->local_mac :
				       t->href[i].mac,
			       sizeof(fresh->h[i].mac));
		}
		if (old && old->n == fresh->n &&
		    memcmp(old->h, fresh->h, fresh->n * sizeof(fresh->h[0])) ==
			    0) {
			free(fresh); /* unchanged: nothing to retire */
			return;
		}
	}
	if (!old && !fresh)
		return;
	rcu_set_pointer(&t->hosts, fresh);
	if (old)
		hosts_retire(vpc, old);
}

int ovr_vpc_vip_add(struct ovr_vpc *vpc, uint32_t vni, uint32_t vip,
		    const struct ovr_vpc_binding *b)
{
	struct vpc_hosts *fresh = NULL;
	struct cds_lfht_node *got;
	struct cds_lfht_iter it;
	struct vpc_vip_node *n;
	struct vpc_tenant *t;
	enum ctl_state s;
	int ret;

	ret = binding_check(vpc, vni, vip, b);
	if (ret)
		return ret;
	n = vip_node_new(vpc, vni, vip, b);
	if (!n)
		return -ENOMEM;

	s = ctl_enter();
	pthread_mutex_lock(&vpc->lock);
	rcu_read_lock();
	t = tenant_find(vpc, vni, &it);
	if (!t) {
		ret = -ENOENT;
	} else if (href_reserve(t) || (href_get_changes(vpc, t, b) &&
				       !(fresh = hosts_alloc(t->nhref + 1)))) {
		ret = -ENOMEM;
	} else {
		n->tenant = t;
		got = cds_lfht_add_unique(vpc->vips,
					  vpc_hash(n->key, vpc->seed),
					  vip_match, &n->key, &n->node);
		if (got == &n->node) {
			t->nvips++;
			vpc->nvips++;
			href_get(t, b);
			if (fresh)
				hosts_publish(vpc, t, fresh);
			fresh = NULL;
		} else {
			ret = -EEXIST;
		}
	}
	rcu_read_unlock();
	pthread_mutex_unlock(&vpc->lock);
	ctl_leave(s);
	free(fresh);
	if (ret)
		free(n);
	return ret;
}

int ovr_vpc_vip_move(struct ovr_vpc *vpc, uint32_t vni, uint32_t vip,
		     const struct ovr_vpc_binding *b)
{
	struct vpc_hosts *fresh = NULL;
	struct vpc_vip_node *old, *n;
	struct vpc_tenant *t = NULL;
	struct cds_lfht_iter it;
	enum ctl_state s;
	int ret;

	ret = binding_check(vpc, vni, vip, b);
	if (ret)
		return ret;
	n = vip_node_new(vpc, vni, vip, b);
	if (!n)
		return -ENOMEM;

	s = ctl_enter();
	pthread_mutex_lock(&vpc->lock);
	rcu_read_lock();
	old = vip_find(vpc, vni, vip, &it);
	if (old)
		t = old->tenant;
	if (!old) {
		ret = -ENOENT;
	} else if (href_reserve(t) || ((href_get_changes(vpc, t, b) ||
					(b->host != old->pub.host &&
					 href_put_changes(t, old->pub.host))) &&
				       !(fresh = hosts_alloc(t->nhref + 1)))) {
		ret = -ENOMEM;
	} else {
		n->tenant = t;
		if (cds_lfht_replace(vpc->vips, &it,
				     vpc_hash(n->key, vpc->seed), vip_match,
				     &n->key, &n->node))
			ret = -ENOENT;
	}
	rcu_read_unlock();
	if (!ret) {
		href_get(t, b);
		href_put(t, old->pub.host);
		if (fresh)
			hosts_publish(vpc, t, fresh);
		fresh = NULL;
		vip_retire(vpc, old);
	}
	pthread_mutex_unlock(&vpc->lock);
	ctl_leave(s);
	free(fresh);
	if (ret)
		free(n);
	return ret;
}

int ovr_vpc_vip_del(struct ovr_vpc *vpc, uint32_t vni, uint32_t vip)
{
	struct vpc_hosts *fresh = NULL;
	struct cds_lfht_iter it;
	struct vpc_vip_node *n;
	enum ctl_state s;
	int ret = 0;

	s = ctl_enter();
	pthread_mutex_lock(&vpc->lock);
	rcu_read_lock();
	n = vip_find(vpc, vni, vip, &it);
	if (!n)
		ret = -ENOENT;
	else if (href_put_changes(n->tenant, n->pub.host) &&
		 !(fresh = hosts_alloc(n->tenant->nhref)))
		ret = -ENOMEM;
	else if (cds_lfht_del(vpc->vips, &n->node))
		ret = -ENOENT;
	rcu_read_unlock();
	if (!ret) {
		n->tenant->nvips--;
		vpc->nvips--;
		href_put(n->tenant, n->pub.host);
		if (fresh)
			hosts_publish(vpc, n->tenant, fresh);
		fresh = NULL;
		vip_retire(vpc, n);
	}
	pthread_mutex_unlock(&vpc->lock);
	ctl_leave(s);
	free(fresh);
	return ret;
}

/* ---- security groups ----------------------------------------------------- */

static int range_cmp(const void *a, const void *b)
{
	const struct vpc_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Rules to sorted, merged ranges; *out NULL for an empty rule set. */
static int sg_build(struct ovr_vpc *vpc, const struct ovr_vpc_sg_rule *rules,
		    unsigned int n, struct vpc_sg **out)
{
	struct vpc_range *r;
	struct vpc_sg *sg;
	uint32_t host, i, m;

	*out = NULL;
	if (n > OVR_VPC_SG_MAX_RULES || (n && !rules))
		return -EINVAL;
	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		if (rules[i].len > 32)
			return -EINVAL;
		host = rules[i].len == 32 ? 0 : 0xffffffffu >> rules[i].len;
		if (rules[i].prefix & host)
			return -EINVAL; /* host bits set: a typo, say so */
	}
	sg = malloc(sizeof(*sg) + n * sizeof(sg->r[0]));
	if (!sg)
		return -ENOMEM;
	r = sg->r;
	for (i = 0; i < n; i++) {
		host = rules[i].len == 32 ? 0 : 0xffffffffu >> rules[i].len;
		r[i].lo = rules[i].prefix;
		r[i].hi = rules[i].prefix | host;
	}
	qsort(r, n, sizeof(r[0]), range_cmp);
	for (m = 0, i = 1; i < n; i++) {
		/* overlapping or adjacent (hi + 1 cannot wrap: lo > hi then) */
		if (r[m].hi == 0xffffffffu || r[i].lo <= r[m].hi + 1) {
			if (r[i].hi > r[m].hi)
				r[m].hi = r[i].hi;
		} else {
			r[++m] = r[i];
		}
	}
	sg->n = m + 1;
	sg->vpc = vpc;
	*out = sg;
	return 0;
}

int ovr_vpc_sg_set(struct ovr_vpc *vpc, uint32_t vni,
		   const struct ovr_vpc_sg_rule *rules, unsigned int n)
{
	struct vpc_sg *sg, *old = NULL;
	struct cds_lfht_iter it;
	struct vpc_tenant *t;
	enum ctl_state s;
	int ret;

	ret = sg_build(vpc, rules, n, &sg);
	if (ret)
		return ret;
	s = ctl_enter();
	pthread_mutex_lock(&vpc->lock);
	rcu_read_lock();
	t = tenant_find(vpc, vni, &it);
	if (t)
		old = rcu_xchg_pointer(&t->sg, sg);
	rcu_read_unlock();
	if (old)
		sg_retire(vpc, old);
	pthread_mutex_unlock(&vpc->lock);
	ctl_leave(s);
	if (!t) {
		free(sg);
		return -ENOENT;
	}
	return 0;
}

int ovr_vpc_may_connect(struct ovr_vpc *vpc, uint32_t vni, uint32_t local_vip,
			uint32_t peer_vip)
{
	const struct vpc_vip_node *local, *peer;
	struct cds_lfht_iter it;
	struct vpc_tenant *t;
	enum ctl_state s;
	int ret = 0;

	s = ctl_enter();
	rcu_read_lock();
	t = tenant_find(vpc, vni, &it);
	local = t ? vip_find(vpc, vni, local_vip, &it) : NULL;
	peer = local ? vip_find(vpc, vni, peer_vip, &it) : NULL;
	if (!t)
		ret = -ENOENT;
	else if (!local || local->pub.dev < 0)
		ret = -EADDRNOTAVAIL;
	else if (!peer)
		ret = -EHOSTUNREACH;
	else if (!sg_allows(rcu_dereference(t->sg), peer_vip))
		ret = -EACCES;
	rcu_read_unlock();
	ctl_leave(s);
	return ret;
}

/* ---- statistics ---------------------------------------------------------- */

int ovr_vpc_tenant_stats(struct ovr_vpc *vpc, uint32_t vni,
			 struct ovr_vpc_tenant_stats *st)
{
	struct cds_lfht_iter it;
	struct vpc_tenant *t;
	enum ctl_state s;
	uint32_t i;

	memset(st, 0, sizeof(*st));
	s = ctl_enter();
	rcu_read_lock();
	t = tenant_find(vpc, vni, &it);
	for (i = 0; t && i < vpc->max_threads; i++) {
		st->rx_pkts += cnt_read(&t->cnt[i].rx_pkts);
		st->rx_bytes += cnt_read(&t->cnt[i].rx_bytes);
		st->tx_pkts += cnt_read(&t->cnt[i].tx_pkts);
		st->tx_bytes += cnt_read(&t->cnt[i].tx_bytes);
		st->drops += cnt_read(&t->cnt[i].drops);
	}
	rcu_read_unlock();
	ctl_leave(s);
	return t ? 0 : -ENOENT;
}

void ovr_vpc_drop_stats(struct ovr_vpc *vpc, uint64_t drops[OVR_VPC_NDROP])
{
	uint32_t i, r;

	memset(drops, 0, OVR_VPC_NDROP * sizeof(drops[0]));
	/* slots live as long as vpc: no RCU needed */
	for (i = 0; i < vpc->max_threads; i++)
		for (r = 0; r < OVR_VPC_NDROP; r++)
			drops[r] += cnt_read(&vpc->slots[i].drops[r]);
}

void ovr_vpc_info(struct ovr_vpc *vpc, struct ovr_vpc_info *info)
{
	pthread_mutex_lock(&vpc->lock);
	info->tenants = vpc->ntenants;
	info->vips = vpc->nvips;
	pthread_mutex_unlock(&vpc->lock);
	info->retired = __atomic_load_n(&vpc->retired, __ATOMIC_RELAXED);
	info->freed = __atomic_load_n(&vpc->freed, __ATOMIC_ACQUIRE);
}

/* ---- reader threads ------------------------------------------------------ */

struct ovr_vpc_thread *ovr_vpc_thread_register(struct ovr_vpc *vpc)
{
	struct ovr_vpc_thread *t;
	uint32_t i;

	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_mutex_lock(&vpc->lock);
	for (i = 0; i < vpc->max_threads && vpc->slot_used[i]; i++)
		;
	if (i < vpc->max_threads)
		vpc->slot_used[i] = 1;
	pthread_mutex_unlock(&vpc->lock);
	if (i == vpc->max_threads) {
		free(t);
		errno = ENOSPC;
		return NULL;
	}
	/* A reused slot keeps its counts: sums over slots stay monotonic. */
	t->vpc = vpc;
	t->idx = i;
	t->slot = &vpc->slots[i];
	if (!tls_refs++) {
		rcu_register_thread();
		tls_offline = false;
	}
	return t;
}

void ovr_vpc_thread_unregister(struct ovr_vpc_thread *t)
{
	struct ovr_vpc *vpc;

	if (!t)
		return;
	vpc = t->vpc;
	assert(tls_refs > 0);
	if (!--tls_refs) {
		rcu_unregister_thread();
		tls_offline = false;
	}
	pthread_mutex_lock(&vpc->lock);
	vpc->slot_used[t->idx] = 0;
	pthread_mutex_unlock(&vpc->lock);
	free(t);
}

void ovr_vpc_quiescent(void)
{
	tls_qgen++;
	rcu_quiescent_state();
}

void ovr_vpc_thread_offline(void)
{
	tls_qgen++;
	rcu_thread_offline();
	tls_offline = true;
}

void ovr_vpc_thread_online(void)
{
	rcu_thread_online();
	tls_offline = false;
}

/* ---- fast path ------------------------------------------------------------- */

static inline void reader_check(void)
{
	/* a lookup from an unregistered or offline thread is a use after
	 * free waiting to happen: catch it in debug builds */
	assert(tls_refs > 0 && !tls_offline);
}

const struct ovr_vpc_vip *ovr_vpc_lookup(struct ovr_vpc_thread *t, uint32_t vni,
					 uint32_t vip)
{
	struct cds_lfht_iter it;
	struct vpc_vip_node *n;

	reader_check();
	n = vip_find(t->vpc, vni, vip, &it);
	return n ? &n->pub : NULL;
}

/* Tenant @vni for the multicast calls, through the thread's cache. */
static inline struct vpc_tenant *tn_cached(struct ovr_vpc_thread *t,
					   uint32_t vni)
{
	struct cds_lfht_iter it;
	struct vpc_tenant *tn;

	if (t->tnc.gen == tls_qgen && t->tnc.vni == vni)
		return t->tnc.tn;
	tn = tenant_find(t->vpc, vni, &it);
	if (tn)
		t->tnc = (struct vpc_tn_cache){ .gen = tls_qgen,
						.vni = vni,
						.tn = tn };
	return tn;
}

unsigned int ovr_vpc_tenant_hosts(struct ovr_vpc_thread *t, uint32_t vni,
				  struct ovr_vpc_host *out, unsigned int cap)
{
	const struct vpc_hosts *hs;
	struct vpc_tenant *tn;

	reader_check();
	tn = tn_cached(t, vni);
	hs = tn ? rcu_dereference(tn->hosts) : NULL;
	if (!hs)
		return 0;
	if (cap > hs->n)
		cap = hs->n;
	if (cap)
		memcpy(out, hs->h, cap * sizeof(out[0]));
	return hs->n;
}

bool ovr_vpc_sg_allows(struct ovr_vpc_thread *t, uint32_t vni, uint32_t vip)
{
	struct cds_lfht_iter it;
	struct vpc_tenant *tn;

	reader_check();
	tn = tenant_find(t->vpc, vni, &it);
	return tn && sg_allows(rcu_dereference(tn->sg), vip);
}

int ovr_vpc_decap(struct ovr_vpc_thread *t, const void *frame, size_t len,
		  struct ovr_vpc_rx *rx)
{
	struct ovr_vpc *vpc = t->vpc;
	struct vpc_vip_node *dst, *src;
	struct cds_lfht_iter it;
	struct vpc_tenant *tn;
	struct vpc_tcnt *c;
	int32_t dev;
	int rc;

	reader_check();
	rc = vpc_parse(frame, len, vpc->dport, rx);
	if (ovr_unlikely(rc))
		goto drop;
	if (ovr_unlikely(rx->dst_host != vpc->local_host)) {
		rc = -OVR_VPC_DROP_NOT_THIS_HOST;
		goto drop;
	}
	if (t->rxc.gen == tls_qgen && t->rxc.vni == rx->vni &&
	    t->rxc.dst_vip == rx->dst_vip && t->rxc.src_vip == rx->src_vip &&
	    t->rxc.src_host == rx->src_host) {
		/* the flow of the frame before, passed since the last
		 * quiescent state: the same verdict */
		tn = t->rxc.tn;
		rx->dev = t->rxc.dev;
		goto pass;
	}
	if (ovr_unlikely(ovr_vpc_is_mcast(rx->dst_vip))) {
		/* to a group: no destination binding, the local members are
		 * the caller's; the source is checked as for unicast */
		tn = tenant_find(vpc, rx->vni, &it);
		if (!tn) {
			rc = -OVR_VPC_DROP_UNKNOWN_VNI;
			goto drop;
		}
		dev = OVR_VPC_DEV_NONE;
		goto check_src;
	}
	/* The destination binding leads to the tenant: one lookup for both. */
	dst = vip_find(vpc, rx->vni, rx->dst_vip, &it);
	if (ovr_unlikely(!dst)) {
		tn = tenant_find(vpc, rx->vni, &it);
		if (!tn) {
			rc = -OVR_VPC_DROP_UNKNOWN_VNI;
			goto drop;
		}
		rc = -OVR_VPC_DROP_DST_NOT_LOCAL;
		goto drop_tenant;
	}
	tn = dst->tenant;
	if (ovr_unlikely(dst->pub.dev < 0)) {
		rc = -OVR_VPC_DROP_DST_NOT_LOCAL;
		goto drop_tenant;
	}
	dev = dst->pub.dev;
check_src:
	src = vip_find(vpc, rx->vni, rx->src_vip, &it);
	if (ovr_unlikely(!src)) {
		rc = -OVR_VPC_DROP_SRC_UNKNOWN;
		goto drop_tenant;
	}
	if (ovr_unlikely(src->pub.host != rx->src_host)) {
		rc = -OVR_VPC_DROP_SPOOF;
		goto drop_tenant;
	}
	if (ovr_unlikely(!sg_allows(rcu_dereference(tn->sg), rx->src_vip))) {
		rc = -OVR_VPC_DROP_SG_DENY;
		goto drop_tenant;
	}
	rx->dev = dev;
	t->rxc = (struct vpc_rx_cache){ .gen = tls_qgen,
					.vni = rx->vni,
					.dst_vip = rx->dst_vip,
					.src_vip = rx->src_vip,
					.src_host = rx->src_host,
					.tn = tn,
					.dev = rx->dev };
pass:
	c = &tn->cnt[t->idx];
	cnt_add(&c->rx_pkts, 1);
	cnt_add(&c->rx_bytes, len);
	return 0;

drop_tenant:
	cnt_add(&tn->cnt[t->idx].drops, 1);
drop:
	cnt_add(&t->slot->drops[-rc], 1);
	return rc;
}

/* The encapsulation of ovr_vpc_tx() and ovr_vpc_tx_via(), to underlay
 * host @host through next hop @mac, counted for tenant @tn. */
static inline int tx_encap(struct ovr_vpc_thread *t,
			   const struct ovr_vpc_flow *f, uint8_t path,
			   uint8_t *pdu, size_t headroom, size_t pdu_len,
			   uint32_t host, const uint8_t mac[6],
			   struct vpc_tenant *tn)
{
	struct ovr_vpc *vpc = t->vpc;
	struct ovr_vpc_hdr h;
	struct vpc_tcnt *c;
	int rc;

	h.src_host = vpc->local_host;
	h.dst_host = host;
	h.vni = f->vni;
	h.src_vip = f->src_vip;
	h.dst_vip = f->dst_vip;
	h.sport = ovr_vpc_flow_sport(f->hash, path);
	h.dport = vpc->dport;
	h.dscp = f->dscp;
	h.ecn = f->ecn;
	memcpy(h.src_mac, vpc->local_mac, sizeof(h.src_mac));
	memcpy(h.dst_mac, mac, sizeof(h.dst_mac));
	rc = vpc_encap(pdu, headroom, pdu_len, &h);
	if (ovr_unlikely(rc))
		return rc;
	c = &tn->cnt[t->idx];
	cnt_add(&c->tx_pkts, 1);
	cnt_add(&c->tx_bytes, pdu_len + OVR_WIRE_ENCAP_LEN);
	return 0;
}

int ovr_vpc_tx(struct ovr_vpc_thread *t, const struct ovr_vpc_flow *f,
	       uint8_t path, uint8_t *pdu, size_t headroom, size_t pdu_len)
{
	struct ovr_vpc *vpc = t->vpc;
	struct cds_lfht_iter it;
	struct vpc_vip_node *dst;

	reader_check();
	/* underlay_mtu >= 68 (ovr_vpc_create): no wrap */
	if (ovr_unlikely(pdu_len >
			 vpc->underlay_mtu - OVR_WIRE_ENCAP_MTU_OVERHEAD)) {
		cnt_add(&t->slot->drops[OVR_VPC_DROP_TX_MTU], 1);
		return -EMSGSIZE;
	}
	if (t->txc.gen == tls_qgen && t->txc.vni == f->vni &&
	    t->txc.dst_vip == f->dst_vip) {
		dst = t->txc.dst; /* as for the frame before (vpc_tx_cache) */
	} else {
		dst = vip_find(vpc, f->vni, f->dst_vip, &it);
		if (ovr_unlikely(!dst)) {
			cnt_add(&t->slot->drops[OVR_VPC_DROP_TX_NO_ROUTE], 1);
			return -EHOSTUNREACH;
		}
		t->txc = (struct vpc_tx_cache){ .gen = tls_qgen,
						.vni = f->vni,
						.dst_vip = f->dst_vip,
						.dst = dst };
	}
	return tx_encap(t, f, path, pdu, headroom, pdu_len, dst->pub.host,
			dst->pub.mac, dst->tenant);
}

int ovr_vpc_tx_via(struct ovr_vpc_thread *t, const struct ovr_vpc_flow *f,
		   uint8_t path, uint8_t *pdu, size_t headroom, size_t pdu_len,
		   const struct ovr_vpc_host *via)
{
	struct ovr_vpc *vpc = t->vpc;
	struct vpc_tenant *tn;

	reader_check();
	if (ovr_unlikely(!ovr_vpc_is_mcast(f->dst_vip) || !via || !via->host))
		return -EINVAL;
	/* the checks and counts of ovr_vpc_tx(), the tenant for the binding */
	if (ovr_unlikely(pdu_len >
			 vpc->underlay_mtu - OVR_WIRE_ENCAP_MTU_OVERHEAD)) {
		cnt_add(&t->slot->drops[OVR_VPC_DROP_TX_MTU], 1);
		return -EMSGSIZE;
	}
	tn = tn_cached(t, f->vni);
	if (ovr_unlikely(!tn)) {
		cnt_add(&t->slot->drops[OVR_VPC_DROP_TX_NO_ROUTE], 1);
		return -ENOENT;
	}
	return tx_encap(t, f, path, pdu, headroom, pdu_len, via->host, via->mac,
			tn);
}
