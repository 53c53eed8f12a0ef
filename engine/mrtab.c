// SPDX-License-Identifier: MIT
/*
 * Memory-region table: see mrtab.h for the model. Slots are one flat
 * array indexed by the key's low bits. A free slot keeps the key of its
 * last occupant (so the next tag can be made to differ) and threads the
 * FIFO free list through its refs field (a window's through its seq).
 *
 * Threads (mrtab.h, "Sharing"): what the data path may change while
 * other threads read it is atomic - a region's refs (read-modify-write
 * when shared, plain load and store when not: one thread), its access
 * byte (invalidation clears remote rights with an atomic AND), and
 * every field of a window a bind changes, under the window's seq: a
 * seqlock whose writers (bind, invalidation) take it exclusively with
 * a compare-and-swap from even to odd. Everything else in a slot (key,
 * pd, range, where the bytes live, a window's type and pd) changes only
 * in control operations, made while no thread uses the table, and is
 * read plainly. Relaxed loads and stores are plain moves on x86-64 and
 * arm64: the unshared table costs what it did.
 */
#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "mrtab.h"

#define MR_LIVE 0x80u /* in entry.access: the slot holds a region */
#define MR_DEV 0x40u /* in entry.access: a device-memory region */
/* in entry.access (with MR_DEV): host memory reached through the copy
 * op, synchronously (ovr_eng_reg_mr_ext, OVR_ENG_MR_HOST) */
#define MR_HOST 0x20u
#define MR_NIL UINT32_MAX /* end of the free list */

/* relaxed atomic load and store: what another thread may change, or
 * what it may read while this one changes it */
#define LOAD(p) atomic_load_explicit((p), memory_order_relaxed)
#define STORE(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)

/* the access a region may be registered with */
#define MR_ACCESS_REG ((unsigned int)OVR_ACCESS_ALL | OVR_ACCESS_MW_BIND)

static_assert((MR_ACCESS_REG & (MR_LIVE | MR_DEV | MR_HOST)) == 0,
	      "flag bits are free");
static_assert(OVR_MR_MAX_REGIONS - 1 < MR_NIL, "free list links fit");

struct ovr_mr_entry {
	union {
		uint8_t *host; /* where byte va lives */
		uint64_t dev_off; /* MR_DEV: byte va's offset in dev */
	};
	void *dev; /* MR_DEV: the owner's cookie; else NULL */
	uint64_t va; /* start, as the application sees it */
	uint64_t len; /* va + len <= 2^64 - 1 */
	uint32_t key; /* full key; 0 only if the slot was never used */
	uint32_t pd;
	_Atomic uint32_t refs; /* live: references held; free: next free slot */
	_Atomic uint8_t access; /* OVR_ACCESS_* | MR_LIVE | MR_DEV | MR_HOST */
};

/* 100k regions in 5 MB; keep it from growing unnoticed. */
static_assert(sizeof(struct ovr_mr_entry) == 48, "MR entry is 48 bytes");

/*
 * A memory window. Free slot: type 0, key that of its last occupant,
 * seq the free list's link. Allocated: type 1 or 2; bound (va, len,
 * access, mr_key, qpn valid) or not; seq even, odd while a bind or an
 * invalidation writes the binding (the fields marked *), which a
 * reader copies out between two equal even values of seq (mw_read).
 */
struct ovr_mw_entry {
	_Atomic uint64_t va; /* * the window, in its region's addresses */
	_Atomic uint64_t len; /* * */
	/* * full key: top 24 bits fixed, low 8 the binder's */
	_Atomic uint32_t key;
	uint32_t pd;
	_Atomic uint32_t mr_key; /* * bound: the region's (one reference) */
	_Atomic uint32_t qpn; /* * bound type 2: the QP it was bound through */
	_Atomic uint32_t seq; /* allocated: the seqlock; free: next free slot */
	uint8_t type; /* 0 free, OVR_MW_TYPE_1, OVR_MW_TYPE_2 */
	_Atomic uint8_t access; /* * bound: OVR_ACCESS_* rights it grants */
	_Atomic uint8_t bound; /* * */
};

static_assert(sizeof(struct ovr_mw_entry) == 40, "MW entry is 40 bytes");

struct ovr_mr_table {
	struct ovr_mr_entry *slots;
	/* more than one user (ovr_mr_share), ever: references change by
	 * atomic read-modify-write */
	bool shared;
	_Atomic uint32_t users; /* ovr_mr_create's and ovr_mr_share's */
	uint64_t rng; /* splitmix64 state */
	uint32_t mask; /* slots - 1 */
	uint32_t shift; /* log2(slots): the tag's position in a key */
	uint32_t tag_mask; /* tag bits, before the shift */
	uint32_t count;
	uint32_t free_head; /* oldest free slot */
	uint32_t free_tail; /* newest free slot */
	/* memory windows: as many slots as regions */
	struct ovr_mw_entry *mws;
	uint32_t mw_count;
	uint32_t mw_free_head, mw_free_tail;
	uint32_t mw_tag_mask; /* tag bits above the slot in bits 8..31 */
};

/* splitmix64 (Steele, Lea, Flood 2014): any state, full period 2^64. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int seed_random(uint64_t *seed)
{
	uint8_t *p = (uint8_t *)seed;
	size_t got = 0;

	while (got < sizeof(*seed)) {
		ssize_t n = getrandom(p + got, sizeof(*seed) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	return 0;
}

struct ovr_mr_table *ovr_mr_create(uint32_t max_regions, uint64_t seed)
{
	struct ovr_mr_table *tab;
	uint32_t shift = 0;

	if (!max_regions || max_regions > OVR_MR_MAX_REGIONS ||
	    (max_regions & (max_regions - 1))) {
		errno = EINVAL;
		return NULL;
	}
	while ((1u << shift) < max_regions)
		shift++;
	tab = calloc(1, sizeof(*tab));
	if (!tab)
		return NULL;
	tab->slots = calloc(max_regions, sizeof(*tab->slots));
	tab->mws = calloc(max_regions, sizeof(*tab->mws));
	if (!tab->slots || !tab->mws) {
		free(tab->slots);
		free(tab->mws);
		free(tab);
		return NULL;
	}
	if (!seed) {
		int err = seed_random(&seed);

		if (err) {
			free(tab->slots);
			free(tab->mws);
			free(tab);
			errno = -err;
			return NULL;
		}
	}
	tab->rng = seed;
	tab->mask = max_regions - 1;
	tab->shift = shift;
	tab->tag_mask = (uint32_t)((1ull << (32 - shift)) - 1);
	atomic_init(&tab->users, 1);
	for (uint32_t i = 0; i < max_regions; i++)
		atomic_init(&tab->slots[i].refs,
			    i + 1 < max_regions ? i + 1 : MR_NIL);
	tab->free_head = 0;
	tab->free_tail = max_regions - 1;
	tab->mw_tag_mask = (uint32_t)((1ull << (24 - shift)) - 1);
	for (uint32_t i = 0; i < max_regions; i++)
		atomic_init(&tab->mws[i].seq,
			    i + 1 < max_regions ? i + 1 : MR_NIL);
	tab->mw_free_head = 0;
	tab->mw_free_tail = max_regions - 1;
	return tab;
}

struct ovr_mr_table *ovr_mr_share(struct ovr_mr_table *tab)
{
	atomic_fetch_add_explicit(&tab->users, 1, memory_order_relaxed);
	tab->shared = true;
	return tab;
}

bool ovr_mr_shared(const struct ovr_mr_table *tab)
{
	return tab->shared;
}

void ovr_mr_destroy(struct ovr_mr_table *tab)
{
	/* the last user frees it; acq_rel: every user's writes are done */
	if (!tab || atomic_fetch_sub_explicit(&tab->users, 1,
					      memory_order_acq_rel) != 1)
		return;
	free(tab->slots);
	free(tab->mws);
	free(tab);
}

/* The live region of @key, or NULL; its access byte, read once (so
 * the check that follows reads no second value), in *@a. */
static inline struct ovr_mr_entry *lookup_acc(const struct ovr_mr_table *tab,
					      uint32_t key, unsigned int *a)
{
	struct ovr_mr_entry *e = &tab->slots[key & tab->mask];

	*a = LOAD(&e->access);
	return (*a & MR_LIVE) && e->key == key ? e : NULL;
}

/* The live region of @key, or NULL. */
static inline struct ovr_mr_entry *lookup(const struct ovr_mr_table *tab,
					  uint32_t key)
{
	unsigned int a;

	return lookup_acc(tab, key, &a);
}

/* The allocated window whose key's top 24 bits are @key's, or NULL. */
static inline struct ovr_mw_entry *mw_slot(const struct ovr_mr_table *tab,
					   uint32_t key)
{
	struct ovr_mw_entry *w = &tab->mws[(key >> 8) & tab->mask];

	/* type and the top 24 bits change only while no thread looks */
	return w->type && (LOAD(&w->key) >> 8) == (key >> 8) ? w : NULL;
}

/* A tag for the slot whose last key was @old: random, not 0, not old's. */
static uint32_t new_tag(struct ovr_mr_table *tab, uint32_t old)
{
	uint32_t old_tag = old >> tab->shift;
	uint32_t tag;

	do
		tag = (uint32_t)(rng_next(&tab->rng) >> 32) & tab->tag_mask;
	while (!tag || tag == old_tag);
	return tag;
}

static int reg(struct ovr_mr_table *tab, uint32_t pd, uint64_t va,
	       uint64_t length, unsigned int access, uint8_t *host, void *dev,
	       uint64_t dev_off, bool host_ops, uint32_t *key_out)
{
	struct ovr_mr_entry *e;
	uint32_t slot, old;

	if (!key_out || (access & ~MR_ACCESS_REG) ||
	    ((access & (OVR_ACCESS_REMOTE_WRITE | OVR_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & OVR_ACCESS_LOCAL_WRITE)) ||
	    length > UINT64_MAX - va || (!dev && !host && length) ||
	    (dev && length > UINT64_MAX - dev_off))
		return -EINVAL;
	if (tab->free_head == MR_NIL)
		return -ENOSPC;
	slot = tab->free_head;
	e = &tab->slots[slot];
	tab->free_head = LOAD(&e->refs);
	if (tab->free_head == MR_NIL)
		tab->free_tail = MR_NIL;

	/* never the key of a live window (see mrtab.h) */
	old = e->key;
	do
		e->key = new_tag(tab, old) << tab->shift | slot;
	while (mw_slot(tab, e->key));
	if (dev)
		e->dev_off = dev_off;
	else
		e->host = host;
	e->dev = dev;
	e->va = va;
	e->len = length;
	e->pd = pd;
	STORE(&e->refs, 0);
	STORE(&e->access, (uint8_t)(access | MR_LIVE | (dev ? MR_DEV : 0) |
				    (dev && host_ops ? MR_HOST : 0)));
	tab->count++;
	*key_out = e->key;
	return 0;
}

int ovr_mr_reg(struct ovr_mr_table *tab, uint32_t pd, uint64_t va,
	       uint64_t length, unsigned int access, uint8_t *host,
	       uint32_t *key_out)
{
	return reg(tab, pd, va, length, access, host, NULL, 0, false, key_out);
}

int ovr_mr_reg_dev(struct ovr_mr_table *tab, uint32_t pd, uint64_t va,
		   uint64_t length, unsigned int access, void *dev,
		   uint64_t dev_off, uint32_t *key_out)
{
	return ovr_mr_reg_ops(tab, pd, va, length, access, dev, dev_off, false,
			      key_out);
}

int ovr_mr_reg_ops(struct ovr_mr_table *tab, uint32_t pd, uint64_t va,
		   uint64_t length, unsigned int access, void *dev,
		   uint64_t dev_off, bool host_ops, uint32_t *key_out)
{
	if (!dev)
		return -EINVAL;
	return reg(tab, pd, va, length, access, NULL, dev, dev_off, host_ops,
		   key_out);
}

int ovr_mr_dereg(struct ovr_mr_table *tab, uint32_t key)
{
	struct ovr_mr_entry *e = lookup(tab, key);
	uint32_t slot = key & tab->mask;

	if (!e)
		return -EINVAL;
	if (LOAD(&e->refs))
		return -EBUSY;
	/* keep e->key: the next tag must differ from it */
	STORE(&e->access, 0);
	e->host = NULL;
	e->dev = NULL;
	STORE(&e->refs, MR_NIL);
	if (tab->free_tail == MR_NIL)
		tab->free_head = slot;
	else
		STORE(&tab->slots[tab->free_tail].refs, slot);
	tab->free_tail = slot;
	tab->count--;
	return 0;
}

/* Where byte @off of region @e (whose access byte is @a) lies. */
static void loc_of(const struct ovr_mr_entry *e, unsigned int a, uint64_t off,
		   struct ovr_mr_loc *loc)
{
	if (a & MR_DEV) {
		loc->host = NULL;
		loc->dev = e->dev;
		loc->dev_off = e->dev_off + off;
		loc->host_ops = a & MR_HOST;
		return;
	}
	/* a zero-length region may have no host buffer: no NULL + 0 */
	loc->host = off ? e->host + off : e->host;
	loc->dev = NULL;
	loc->dev_off = 0;
	loc->host_ops = false;
}

/* Is [va, va + len) inside [start, start + size)? (size fits: no sum
 * can wrap) */
static bool in_range(uint64_t start, uint64_t size, uint64_t va, uint64_t len)
{
	return va >= start && va - start <= size && len <= size - (va - start);
}

/* ovr_mr_check_dev of the region @e (NULL: no such key) whose access
 * byte lookup_acc read as @a: one read, while another thread may be
 * clearing the remote rights */
static int check_mr(const struct ovr_mr_entry *e, unsigned int a, uint32_t pd,
		    uint64_t va, uint64_t len, unsigned int access_needed,
		    struct ovr_mr_loc *loc)
{
	if (!e)
		return -OVR_MR_EKEY;
	if (e->pd != pd)
		return -OVR_MR_EPD;
	if (!in_range(e->va, e->len, va, len))
		return -OVR_MR_EBOUNDS;
	if (access_needed & ~(a & (unsigned int)OVR_ACCESS_ALL))
		return -OVR_MR_EACCESS;
	loc_of(e, a, va - e->va, loc);
	return 0;
}

int ovr_mr_check_dev(const struct ovr_mr_table *tab, uint32_t key, uint32_t pd,
		     uint64_t va, uint64_t len, unsigned int access_needed,
		     struct ovr_mr_loc *loc)
{
	unsigned int a;
	const struct ovr_mr_entry *e = lookup_acc(tab, key, &a);

	return check_mr(e, a, pd, va, len, access_needed, loc);
}

int ovr_mr_check(const struct ovr_mr_table *tab, uint32_t key, uint32_t pd,
		 uint64_t va, uint64_t len, unsigned int access_needed,
		 uint8_t **host_out)
{
	struct ovr_mr_loc loc;
	int rc = ovr_mr_check_dev(tab, key, pd, va, len, access_needed, &loc);

	if (rc)
		return rc;
	if (loc.dev)
		return -OVR_MR_EACCESS; /* not reachable with memcpy */
	*host_out = loc.host;
	return 0;
}

int ovr_mr_is_dev(const struct ovr_mr_table *tab, uint32_t key)
{
	const struct ovr_mr_entry *e = lookup(tab, key);

	return e && (LOAD(&e->access) & MR_DEV);
}

void *ovr_mr_dev_cookie(const struct ovr_mr_table *tab, uint32_t key)
{
	const struct ovr_mr_entry *e = lookup(tab, key);

	return e && (LOAD(&e->access) & MR_DEV) ? e->dev : NULL;
}

/*
 * One reference more on @e, or -EOVERFLOW. A table that is not shared
 * has one thread: a plain load and store. A shared one: compare and
 * swap, so that no count is lost and none passes 2^32 - 1.
 */
static int ref_get(const struct ovr_mr_table *tab, struct ovr_mr_entry *e)
{
	uint32_t r = LOAD(&e->refs);

	if (!tab->shared) {
		if (r == UINT32_MAX)
			return -EOVERFLOW;
		STORE(&e->refs, r + 1);
		return 0;
	}
	do
		if (r == UINT32_MAX)
			return -EOVERFLOW;
	while (!atomic_compare_exchange_weak_explicit(&e->refs, &r, r + 1,
						      memory_order_relaxed,
						      memory_order_relaxed));
	return 0;
}

/* One reference less on @e, or -ERANGE: none held. */
static int ref_put(const struct ovr_mr_table *tab, struct ovr_mr_entry *e)
{
	uint32_t r = LOAD(&e->refs);

	if (!tab->shared) {
		if (!r)
			return -ERANGE;
		STORE(&e->refs, r - 1);
		return 0;
	}
	do
		if (!r)
			return -ERANGE;
	while (!atomic_compare_exchange_weak_explicit(&e->refs, &r, r - 1,
						      memory_order_relaxed,
						      memory_order_relaxed));
	return 0;
}

int ovr_mr_get(struct ovr_mr_table *tab, uint32_t key)
{
	struct ovr_mr_entry *e = lookup(tab, key);

	return e ? ref_get(tab, e) : -EINVAL;
}

int ovr_mr_put(struct ovr_mr_table *tab, uint32_t key)
{
	struct ovr_mr_entry *e = lookup(tab, key);

	return e ? ref_put(tab, e) : -EINVAL;
}

int64_t ovr_mr_refs(const struct ovr_mr_table *tab, uint32_t key)
{
	const struct ovr_mr_entry *e = lookup(tab, key);

	return e ? (int64_t)LOAD(&e->refs) : -EINVAL;
}

int ovr_mr_query(const struct ovr_mr_table *tab, uint32_t key, uint32_t *pd,
		 unsigned int *access)
{
	const struct ovr_mr_entry *e = lookup(tab, key);

	if (!e)
		return -EINVAL;
	*pd = e->pd;
	*access = LOAD(&e->access) & MR_ACCESS_REG;
	return 0;
}

int ovr_mr_invalidate(struct ovr_mr_table *tab, uint32_t key, uint32_t pd)
{
	struct ovr_mr_entry *e = lookup(tab, key);

	if (!e)
		return -OVR_MR_EKEY;
	if (e->pd != pd)
		return -OVR_MR_EPD;
	/* atomic: other threads may be taking references or checking */
	atomic_fetch_and_explicit(&e->access, (uint8_t)~OVR_ACCESS_REMOTE,
				  memory_order_relaxed);
	return 0;
}

uint32_t ovr_mr_count(const struct ovr_mr_table *tab)
{
	return tab->count;
}

size_t ovr_mr_table_bytes(const struct ovr_mr_table *tab)
{
	return sizeof(*tab) + ((size_t)tab->mask + 1) *
				      (sizeof(*tab->slots) + sizeof(*tab->mws));
}

/* ---- memory windows ---------------------------------------------------- */

/* The most tags a window allocation tries before it gives up: each try
 * fails only if one of 256 keys is a live region's, so a second try is
 * already rare. */
#define MW_TAG_TRIES 64

/* Is any of the 256 keys with top 24 bits @top a live region's? */
static bool mw_top_clashes(const struct ovr_mr_table *tab, uint32_t top)
{
	for (uint32_t b = 0; b < 256; b++)
		if (lookup(tab, top << 8 | b))
			return true;
	return false;
}

/* A spinning thread's hint to the core (a seqlock's writer is never
 * more than a few dozen instructions long). */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Test seams: tests/unit/test_engine_mrshare.c compiles this file with
 * them defined, to stop a reader or a writer in the middle of a window's
 * binding (other threads then bind, or a bind runs right there); in the
 * library they are nothing. */
#ifndef MW_READ_HOOK
#define MW_READ_HOOK(w) ((void)0)
#endif
#ifndef MW_WRITE_HOOK
#define MW_WRITE_HOOK(w) ((void)0)
#endif

/* A window's binding as one reader saw it, whole (mw_read). */
struct mw_snap {
	uint64_t va, len;
	uint32_t key, mr_key, qpn;
	uint8_t access, bound;
};

/*
 * Copy out @w's binding consistently: between two reads of the same
 * even seq, so never half of one bind and half of another (a writer
 * makes seq odd first and even again, two higher, last). The fence
 * keeps the field loads before the second read of seq (Boehm, "Can
 * seqlocks get along with programming language memory models?", 2012).
 */
static void mw_read(const struct ovr_mw_entry *w, struct mw_snap *s)
{
	for (;;) {
		uint32_t s0 =
			atomic_load_explicit(&w->seq, memory_order_acquire);

		if (!(s0 & 1)) {
			s->va = LOAD(&w->va);
			s->len = LOAD(&w->len);
			MW_READ_HOOK(w);
			s->key = LOAD(&w->key);
			s->mr_key = LOAD(&w->mr_key);
			s->qpn = LOAD(&w->qpn);
			s->access = LOAD(&w->access);
			s->bound = LOAD(&w->bound);
			atomic_thread_fence(memory_order_acquire);
			if (LOAD(&w->seq) == s0)
				return;
		}
		cpu_relax();
	}
}

/*
 * Become @w's one writer: seq from even to odd by compare and swap (a
 * second writer, a bind or an invalidation on another thread, waits
 * for the first to finish; acquire: it sees what that one wrote).
 * Returns the odd value, for mw_write_end.
 */
static uint32_t mw_write_begin(struct ovr_mw_entry *w)
{
	uint32_t s = LOAD(&w->seq);

	for (;;) {
		if (!(s & 1) &&
		    atomic_compare_exchange_weak_explicit(&w->seq, &s, s + 1,
							  memory_order_acquire,
							  memory_order_relaxed))
			break;
		cpu_relax();
		s = LOAD(&w->seq);
	}
	/* the fields' stores stay after the odd seq */
	atomic_thread_fence(memory_order_release);
	return s + 1;
}

/* Done writing: seq even again (release: after the fields). */
static void mw_write_end(struct ovr_mw_entry *w, uint32_t odd)
{
	atomic_store_explicit(&w->seq, odd + 1, memory_order_release);
}

int ovr_mw_alloc(struct ovr_mr_table *tab, uint32_t pd, unsigned int type,
		 uint32_t *key_out)
{
	uint32_t shift = tab->shift, slot, old_tag, tag = 0, top = 0, i;
	struct ovr_mw_entry *w;

	if (!key_out || (type != OVR_MW_TYPE_1 && type != OVR_MW_TYPE_2))
		return -EINVAL;
	if (tab->mw_free_head == MR_NIL)
		return -ENOSPC;
	slot = tab->mw_free_head;
	w = &tab->mws[slot];
	old_tag = (LOAD(&w->key) >> 8) >> shift;
	for (i = 0; i < MW_TAG_TRIES; i++) {
		tag = (uint32_t)(rng_next(&tab->rng) >> 32) & tab->mw_tag_mask;
		if (!tag || tag == old_tag)
			continue;
		top = tag << shift | slot;
		if (!mw_top_clashes(tab, top))
			break;
	}
	if (i == MW_TAG_TRIES)
		return -ENOSPC;
	tab->mw_free_head = LOAD(&w->seq);
	if (tab->mw_free_head == MR_NIL)
		tab->mw_free_tail = MR_NIL;
	STORE(&w->va, 0);
	STORE(&w->len, 0);
	/* the consumer's 8 bits start random too, as rxe's */
	STORE(&w->key, top << 8 | (uint32_t)(rng_next(&tab->rng) & 0xff));
	w->pd = pd;
	STORE(&w->mr_key, 0);
	STORE(&w->qpn, 0);
	STORE(&w->seq, 0);
	w->type = (uint8_t)type;
	STORE(&w->access, 0);
	STORE(&w->bound, 0);
	tab->mw_count++;
	*key_out = LOAD(&w->key);
	return 0;
}

/* Unbind @w (its writer, or no thread runs): its region's reference
 * dropped. */
static void mw_unbind(struct ovr_mr_table *tab, struct ovr_mw_entry *w)
{
	if (LOAD(&w->bound)) {
		struct ovr_mr_entry *m = lookup(tab, LOAD(&w->mr_key));

		/* the reference held it: it is there */
		if (m)
			ref_put(tab, m);
	}
	STORE(&w->bound, 0);
	STORE(&w->va, 0);
	STORE(&w->len, 0);
	STORE(&w->access, 0);
	STORE(&w->mr_key, 0);
	STORE(&w->qpn, 0);
}

int ovr_mw_dealloc(struct ovr_mr_table *tab, uint32_t key)
{
	struct ovr_mw_entry *w = mw_slot(tab, key);
	uint32_t slot = (key >> 8) & tab->mask;

	if (!w)
		return -EINVAL;
	mw_unbind(tab, w);
	/* keep w->key: the next tag must differ from it */
	w->type = 0;
	w->pd = 0;
	STORE(&w->seq, MR_NIL);
	if (tab->mw_free_tail == MR_NIL)
		tab->mw_free_head = slot;
	else
		STORE(&tab->mws[tab->mw_free_tail].seq, slot);
	tab->mw_free_tail = slot;
	tab->mw_count--;
	return 0;
}

/* ovr_mw_bind of @w, its writer. */
static int mw_bind(struct ovr_mr_table *tab, struct ovr_mw_entry *w,
		   const struct ovr_mw_bind *b, uint32_t *key_out)
{
	struct ovr_mr_entry *m = NULL;
	uint32_t key;

	if (w->type == OVR_MW_TYPE_2) {
		if (LOAD(&w->bound))
			return -EBUSY; /* o10-37.2.30: free state only */
		if (!b->len)
			return -EINVAL; /* o10-37.2.40 */
	}
	if (b->access & ~(unsigned int)OVR_ACCESS_ALL)
		return -EINVAL;
	if (b->len) {
		unsigned int ma;
		int rc;

		m = lookup(tab, b->mr_key);
		if (!m)
			return -EINVAL;
		if (m->pd != w->pd)
			return -EPERM;
		ma = LOAD(&m->access);
		if (!(ma & OVR_ACCESS_MW_BIND))
			return -EACCES; /* C10-73 */
		if ((b->access &
		     (OVR_ACCESS_REMOTE_WRITE | OVR_ACCESS_REMOTE_ATOMIC)) &&
		    !(ma & OVR_ACCESS_LOCAL_WRITE))
			return -EACCES; /* C10-74 */
		if (!in_range(m->va, m->len, b->va, b->len))
			return -ERANGE; /* C10-75 */
		/* the new region's reference first: the old one's may be
		 * the same region's */
		rc = ref_get(tab, m);
		if (rc)
			return rc;
	}
	mw_unbind(tab, w);
	MW_WRITE_HOOK(w);
	key = (LOAD(&w->key) & ~0xffu) | (b->new_key & 0xffu);
	STORE(&w->key, key);
	if (b->len) {
		STORE(&w->bound, 1);
		STORE(&w->va, b->va);
		STORE(&w->len, b->len);
		STORE(&w->access, (uint8_t)(b->access & OVR_ACCESS_REMOTE));
		STORE(&w->mr_key, b->mr_key);
		STORE(&w->qpn, w->type == OVR_MW_TYPE_2 ? b->qpn : 0);
	}
	if (key_out)
		*key_out = key;
	return 0;
}

int ovr_mw_bind(struct ovr_mr_table *tab, const struct ovr_mw_bind *b,
		uint32_t *key_out)
{
	struct ovr_mw_entry *w = mw_slot(tab, b->mw_key);
	uint32_t seq;
	int rc;

	if (!w)
		return -ENOENT;
	if (w->pd != b->pd)
		return -EPERM; /* C10-72: the QP's PD is the window's */
	seq = mw_write_begin(w);
	rc = mw_bind(tab, w, b, key_out);
	mw_write_end(w, seq);
	return rc;
}

int ovr_mr_check_rkey(const struct ovr_mr_table *tab, uint32_t key, uint32_t pd,
		      uint32_t qpn, uint64_t va, uint64_t len,
		      unsigned int access_needed, struct ovr_mr_loc *loc)
{
	unsigned int a;
	const struct ovr_mr_entry *m = lookup_acc(tab, key, &a);
	const struct ovr_mw_entry *w;
	struct mw_snap s;

	/* a region's key first: the common case, one lookup */
	if (m)
		return check_mr(m, a, pd, va, len, access_needed, loc);
	w = mw_slot(tab, key);
	if (!w)
		return -OVR_MR_EKEY;
	mw_read(w, &s);
	if (s.key != key || !s.bound ||
	    (w->type == OVR_MW_TYPE_2 && s.qpn != qpn))
		return -OVR_MR_EKEY;
	if (w->pd != pd)
		return -OVR_MR_EPD;
	if (!in_range(s.va, s.len, va, len))
		return -OVR_MR_EBOUNDS;
	if (access_needed & ~(unsigned int)s.access)
		return -OVR_MR_EACCESS;
	/* the binding held it when read; regions go only while no thread
	 * runs, so it is there now (a later rebind does not matter) */
	m = lookup_acc(tab, s.mr_key, &a);
	if (!m)
		return -OVR_MR_EKEY; /* cannot be */
	loc_of(m, a, va - m->va, loc);
	return 0;
}

int ovr_mr_invalidate_key(struct ovr_mr_table *tab, uint32_t key, uint32_t pd,
			  uint32_t qpn, bool remote)
{
	struct ovr_mw_entry *w;
	uint32_t seq;
	int rc;

	if (lookup(tab, key))
		return ovr_mr_invalidate(tab, key, pd);
	w = mw_slot(tab, key);
	if (!w)
		return -OVR_MR_EKEY;
	/* the window's writer: a bind on another thread waits, or wins */
	seq = mw_write_begin(w);
	if (LOAD(&w->key) != key || !LOAD(&w->bound) ||
	    (remote && w->type == OVR_MW_TYPE_2 && LOAD(&w->qpn) != qpn))
		rc = -OVR_MR_EKEY;
	else if (w->pd != pd)
		rc = -OVR_MR_EPD;
	else if (w->type != OVR_MW_TYPE_2)
		rc = -OVR_MR_EACCESS; /* o10-37.2.26 */
	else
		rc = 0;
	if (!rc)
		mw_unbind(tab, w);
	mw_write_end(w, seq);
	return rc;
}

uint32_t ovr_mw_count(const struct ovr_mr_table *tab)
{
	return tab->mw_count;
}

int ovr_mr_modify(struct ovr_mr_table *tab, uint32_t key, uint32_t pd,
		  unsigned int access)
{
	struct ovr_mr_entry *e = lookup(tab, key);

	if (!e || (access & ~(unsigned int)OVR_ACCESS_ALL) ||
	    ((access & (OVR_ACCESS_REMOTE_WRITE | OVR_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & OVR_ACCESS_LOCAL_WRITE)))
		return -EINVAL;
	e->pd = pd;
	STORE(&e->access,
	      (uint8_t)((LOAD(&e->access) & (MR_LIVE | MR_DEV | MR_HOST)) |
			access));
	return 0;
}
