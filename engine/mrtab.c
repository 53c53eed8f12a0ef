// SPDX-License-Identifier: MIT
/*
 * Memory-region table: see mrtab.h for the model. Slots are one flat
 * array indexed by the key's low bits. A free slot keeps the key of its
 * last occupant (so the next tag can be made to differ) and threads the
 * FIFO free list through its refs field.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/random.h>

#include "mrtab.h"

#define MR_LIVE 0x80u /* in entry.access: the slot holds a region */
#define MR_DEV 0x40u /* in entry.access: a device-memory region */
/* in entry.access (with MR_DEV): host memory reached through the copy
 * op, synchronously (ovr_eng_reg_mr_ext, OVR_ENG_MR_HOST) */
#define MR_HOST 0x20u
#define MR_NIL UINT32_MAX /* end of the free list */

static_assert((OVR_ACCESS_ALL & (MR_LIVE | MR_DEV | MR_HOST)) == 0,
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
	uint32_t refs; /* live: references held; free: next free slot */
	uint8_t access; /* OVR_ACCESS_* | MR_LIVE | MR_DEV | MR_HOST */
};

/* 100k regions in 5 MB; keep it from growing unnoticed. */
static_assert(sizeof(struct ovr_mr_entry) == 48, "MR entry is 48 bytes");

struct ovr_mr_table {
	struct ovr_mr_entry *slots;
	uint64_t rng; /* splitmix64 state */
	uint32_t mask; /* slots - 1 */
	uint32_t shift; /* log2(slots): the tag's position in a key */
	uint32_t tag_mask; /* tag bits, before the shift */
	uint32_t count;
	uint32_t free_head; /* oldest free slot */
	uint32_t free_tail; /* newest free slot */
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
	if (!tab->slots) {
		free(tab);
		return NULL;
	}
	if (!seed) {
		int err = seed_random(&seed);

		if (err) {
			free(tab->slots);
			free(tab);
			errno = -err;
			return NULL;
		}
	}
	tab->rng = seed;
	tab->mask = max_regions - 1;
	tab->shift = shift;
	tab->tag_mask = (uint32_t)((1ull << (32 - shift)) - 1);
	for (uint32_t i = 0; i < max_regions; i++)
		tab->slots[i].refs = i + 1 < max_regions ? i + 1 : MR_NIL;
	tab->free_head = 0;
	tab->free_tail = max_regions - 1;
	return tab;
}

void ovr_mr_destroy(struct ovr_mr_table *tab)
{
	if (!tab)
		return;
	free(tab->slots);
	free(tab);
}

/* The live region of @key, or NULL. */
static inline struct ovr_mr_entry *lookup(const struct ovr_mr_table *tab,
					  uint32_t key)
{
	struct ovr_mr_entry *e = &tab->slots[key & tab->mask];

	return (e->access & MR_LIVE) && e->key == key ? e : NULL;
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
	uint32_t slot;

	if (!key_out || (access & ~(unsigned int)OVR_ACCESS_ALL) ||
	    ((access & (OVR_ACCESS_REMOTE_WRITE | OVR_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & OVR_ACCESS_LOCAL_WRITE)) ||
	    length > UINT64_MAX - va || (!dev && !host && length) ||
	    (dev && length > UINT64_MAX - dev_off))
		return -EINVAL;
	if (tab->free_head == MR_NIL)
		return -ENOSPC;
	slot = tab->free_head;
	e = &tab->slots[slot];
	tab->free_head = e->refs;
	if (tab->free_head == MR_NIL)
		tab->free_tail = MR_NIL;

	e->key = new_tag(tab, e->key) << tab->shift | slot;
	if (dev)
		e->dev_off = dev_off;
	else
		e->host = host;
	e->dev = dev;
	e->va = va;
	e->len = length;
	e->pd = pd;
	e->refs = 0;
	e->access = (uint8_t)(access | MR_LIVE | (dev ? MR_DEV : 0) |
			      (dev && host_ops ? MR_HOST : 0));
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
	if (e->refs)
		return -EBUSY;
	/* keep e->key: the next tag must differ from it */
	e->access = 0;
	e->host = NULL;
	e->dev = NULL;
	e->refs = MR_NIL;
	if (tab->free_tail == MR_NIL)
		tab->free_head = slot;
	else
		tab->slots[tab->free_tail].refs = slot;
	tab->free_tail = slot;
	tab->count--;
	return 0;
}

int ovr_mr_check_dev(const struct ovr_mr_table *tab, uint32_t key, uint32_t pd,
		     uint64_t va, uint64_t len, unsigned int access_needed,
		     struct ovr_mr_loc *loc)
{
	const struct ovr_mr_entry *e = lookup(tab, key);
	uint64_t off;

	if (!e)
		return -OVR_MR_EKEY;
	if (e->pd != pd)
		return -OVR_MR_EPD;
	/* off <= e->len and len <= e->len - off: no sum can wrap */
	if (va < e->va)
		return -OVR_MR_EBOUNDS;
	off = va - e->va;
	if (off > e->len || len > e->len - off)
		return -OVR_MR_EBOUNDS;
	if (access_needed & ~(e->access & (unsigned int)OVR_ACCESS_ALL))
		return -OVR_MR_EACCESS;
	if (e->access & MR_DEV) {
		loc->host = NULL;
		loc->dev = e->dev;
		loc->dev_off = e->dev_off + off;
		loc->host_ops = e->access & MR_HOST;
		return 0;
	}
	/* a zero-length region may have no host buffer: no NULL + 0 */
	loc->host = off ? e->host + off : e->host;
	loc->dev = NULL;
	loc->dev_off = 0;
	loc->host_ops = false;
	return 0;
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

	return e && (e->access & MR_DEV);
}

int ovr_mr_get(struct ovr_mr_table *tab, uint32_t key)
{
	struct ovr_mr_entry *e = lookup(tab, key);

	if (!e)
		return -EINVAL;
	if (e->refs == UINT32_MAX)
		return -EOVERFLOW;
	e->refs++;
	return 0;
}

int ovr_mr_put(struct ovr_mr_table *tab, uint32_t key)
{
	struct ovr_mr_entry *e = lookup(tab, key);

	if (!e)
		return -EINVAL;
	if (!e->refs)
		return -ERANGE;
	e->refs--;
	return 0;
}

int64_t ovr_mr_refs(const struct ovr_mr_table *tab, uint32_t key)
{
	const struct ovr_mr_entry *e = lookup(tab, key);

	return e ? (int64_t)e->refs : -EINVAL;
}

int ovr_mr_invalidate(struct ovr_mr_table *tab, uint32_t key, uint32_t pd)
{
	struct ovr_mr_entry *e = lookup(tab, key);

	if (!e)
		return -OVR_MR_EKEY;
	if (e->pd != pd)
		return -OVR_MR_EPD;
	e->access &= (uint8_t)~OVR_ACCESS_REMOTE;
	return 0;
}

uint32_t ovr_mr_count(const struct ovr_mr_table *tab)
{
	return tab->count;
}

size_t ovr_mr_table_bytes(const struct ovr_mr_table *tab)
{
	return sizeof(*tab) + ((size_t)tab->mask + 1) * sizeof(*tab->slots);
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
	e->access =
		(uint8_t)((e->access & (MR_LIVE | MR_DEV | MR_HOST)) | access);
	return 0;
}
