/* SPDX-License-Identifier: MIT */
/*
 * Memory-region table of one engine thread: the registered MRs, their
 * keys, and the checks every work request and every inbound RDMA
 * READ/WRITE/ATOMIC makes against them. Single-threaded: each engine
 * thread owns its table, nothing here locks.
 *
 * A region is (pd, va, length, access) as the application registered it
 * (va is the address the application sees and names in its SGEs and
 * RETHs) plus host, where those bytes really live in this process.
 * Access follows libibverbs: REMOTE_WRITE and REMOTE_ATOMIC require
 * LOCAL_WRITE; local reads need no flag. A zero-length region is
 * allowed: only zero-length accesses at its va pass its bounds.
 *
 * Keys: one 32-bit key serves as lkey and rkey. Its low log2(size) bits
 * name the slot, its high bits are a random tag, never 0, drawn afresh
 * (and different from the slot's previous tag) every time the slot is
 * used: so key 0 is never issued, the key of a deregistered region no
 * longer matches its slot's next occupant, and keys do not follow from
 * slot history. Tags come from a PRNG seeded from getrandom(2) at create
 * (or from the caller's seed, for reproducible tests). They have only
 * 32 - log2(size) bits (12 at the largest table), so the tag space, not
 * the PRNG, bounds what a blind guess can hit: a stale key from an older
 * generation of a slot, or a guessed one, matches with probability
 * about 2^-(32 - log2(size)). Free slots are reused in FIFO order, so a
 * slot rests as long as possible between occupants.
 *
 * Device memory (docs/GPU.md): a region may instead live in memory the
 * engine cannot touch with the CPU (GPU memory imported by gdr/). Such a
 * region carries an opaque cookie and the offset of its first byte in
 * it; ovr_mr_check_dev says where a checked range lies, and every copy
 * to or from it goes through the engine's dev_copy op. ovr_mr_check,
 * for callers that can only memcpy, refuses device regions.
 *
 * Lookup is O(1): slot = key & (size - 1), then the full key and the
 * live bit are compared. Memory: 48 bytes per slot (static_assert in
 * mrtab.c) plus the table header; 2^17 slots cost 6 MiB.
 */
#ifndef OVR_DP_MRTAB_H
#define OVR_DP_MRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ovrdma/verbs.h>

/* Largest table: 2^20 slots leave a 12-bit tag. */
#define OVR_MR_MAX_REGIONS (1u << 20)

/*
 * Why ovr_mr_check (and ovr_mr_invalidate) refused, returned negated.
 * The values lie above every errno value so that they never read as one.
 * When several apply, the first in this order is reported.
 */
enum ovr_mr_err {
	OVR_MR_EKEY = 256, /* no such key: never issued, or deregistered */
	OVR_MR_EPD, /* the region belongs to another protection domain */
	OVR_MR_EBOUNDS, /* [va, va + len) not inside it, or va + len wraps */
	OVR_MR_EACCESS, /* a needed right (or an unknown bit) not granted */
};

struct ovr_mr_table;

/*
 * A table of @max_regions slots: a power of two, 1 to OVR_MR_MAX_REGIONS.
 * @seed 0: seed the key PRNG from getrandom(2) (which blocks only until
 * the kernel's pool is first initialised); other values: reproducible
 * keys for tests. Returns NULL with errno EINVAL (bad size), ENOMEM, or
 * getrandom's error.
 */
struct ovr_mr_table *ovr_mr_create(uint32_t max_regions, uint64_t seed);

/* Frees the table; the regions in it vanish with it. NULL is a no-op. */
void ovr_mr_destroy(struct ovr_mr_table *tab);

/*
 * Register [va, va + length) of @pd, whose bytes live at @host, and
 * return its key in @key_out. -EINVAL: unknown @access bits, REMOTE_WRITE
 * or REMOTE_ATOMIC without LOCAL_WRITE, va + length beyond 2^64 - 1,
 * @host NULL with a non-zero length, or @key_out NULL. -ENOSPC: full.
 */
int ovr_mr_reg(struct ovr_mr_table *tab, uint32_t pd, uint64_t va,
	       uint64_t length, unsigned int access, uint8_t *host,
	       uint32_t *key_out);

/*
 * Register [va, va + length) of @pd whose bytes lie in device memory:
 * byte va is at offset @dev_off of @dev (non-NULL, the owner's cookie).
 * Errors as ovr_mr_reg (@dev NULL or dev_off + length wrapping:
 * -EINVAL).
 */
int ovr_mr_reg_dev(struct ovr_mr_table *tab, uint32_t pd, uint64_t va,
		   uint64_t length, unsigned int access, void *dev,
		   uint64_t dev_off, uint32_t *key_out);
/* ovr_mr_reg_dev; @host_ops: the "device" is host memory that the copy
 * op reaches synchronously (ovr_mr_loc.host_ops) */
int ovr_mr_reg_ops(struct ovr_mr_table *tab, uint32_t pd, uint64_t va,
		   uint64_t length, unsigned int access, void *dev,
		   uint64_t dev_off, bool host_ops, uint32_t *key_out);

/*
 * Deregister. -EINVAL: @key names no region (never issued, or stale);
 * -EBUSY: references are held (see ovr_mr_get); the region stays intact.
 */
int ovr_mr_dereg(struct ovr_mr_table *tab, uint32_t key);

/*
 * May @pd access [va, va + len) with the rights @access_needed (0 for a
 * local read) through @key? 0 and the host address of byte @va in
 * *@host_out (may be one past the region's last byte when len is 0), or
 * -OVR_MR_EKEY, -OVR_MR_EPD, -OVR_MR_EBOUNDS, -OVR_MR_EACCESS, checked
 * in that order. *@host_out is left alone on failure. A zero-length
 * access anywhere in [start, end] passes the bounds.
 */
int ovr_mr_check(const struct ovr_mr_table *tab, uint32_t key, uint32_t pd,
		 uint64_t va, uint64_t len, unsigned int access_needed,
		 uint8_t **host_out);

/* Where a checked range starts: host memory, or an offset in a device
 * region (host NULL, dev its cookie). */
struct ovr_mr_loc {
	uint8_t *host;
	void *dev;
	uint64_t dev_off;
	/* dev: host memory behind the copy op (ovr_mr_reg_ops), whose
	 * copies are synchronous: atomics may read-modify-write it */
	bool host_ops;
};

/*
 * ovr_mr_check for callers that handle device memory: the same checks;
 * on success *@loc says where byte @va lies. ovr_mr_check itself answers
 * -OVR_MR_EACCESS for a device region.
 */
int ovr_mr_check_dev(const struct ovr_mr_table *tab, uint32_t key, uint32_t pd,
		     uint64_t va, uint64_t len, unsigned int access_needed,
		     struct ovr_mr_loc *loc);

/* Does @key name a live device-memory region? */
int ovr_mr_is_dev(const struct ovr_mr_table *tab, uint32_t key);

/*
 * Take / drop a reference on the region of @key, one per posted work
 * request naming it, dropped at its completion; a region with
 * references cannot be deregistered. -EINVAL: unknown or stale key;
 * get: -EOVERFLOW at 2^32 - 1 references; put: -ERANGE when none held.
 */
int ovr_mr_get(struct ovr_mr_table *tab, uint32_t key);
int ovr_mr_put(struct ovr_mr_table *tab, uint32_t key);
/* The references held on the region of @key, or -EINVAL. */
int64_t ovr_mr_refs(const struct ovr_mr_table *tab, uint32_t key);

/*
 * Remote invalidation (SEND_WITH_INV): clear the region's remote rights
 * (REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC); LOCAL_WRITE, references
 * and the key stay. Idempotent. 0, -OVR_MR_EKEY or -OVR_MR_EPD.
 */
int ovr_mr_invalidate(struct ovr_mr_table *tab, uint32_t key, uint32_t pd);

/*
 * ibv_rereg_mr's CHANGE_PD / CHANGE_ACCESS in place: the region of @key
 * now belongs to @pd with exactly @access; the key, the range, where its
 * bytes live and the references held stay. Work requests already
 * checked go on; every later check sees the new PD and rights (pd 0,
 * access 0: a region nothing can use until it is deregistered).
 * -EINVAL: unknown or stale key, or @access as ovr_mr_reg refuses it.
 */
int ovr_mr_modify(struct ovr_mr_table *tab, uint32_t key, uint32_t pd,
		  unsigned int access);

/* Regions registered now. */
uint32_t ovr_mr_count(const struct ovr_mr_table *tab);

/* Bytes the table occupies: its header and all its slots. */
size_t ovr_mr_table_bytes(const struct ovr_mr_table *tab);

#endif /* OVR_DP_MRTAB_H */
