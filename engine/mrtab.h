/* SPDX-License-Identifier: MIT */
/*
 * Memory-region table of a node's engines: the registered MRs and
 * memory windows, their keys, and the checks every work request and
 * every inbound RDMA READ/WRITE/ATOMIC makes against them. An engine
 * owns a table of its own, or shares one with other engines (each on
 * its own thread) - see "Sharing" below. Nothing here locks.
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
 *
 * Memory windows (docs/PROVIDER.md, "Memory windows") live in a second
 * array of as many slots, 40 bytes each, with verbs' key layout: the low
 * 8 bits of a window's key are the consumer's (ibv_inc_rkey; a type-2
 * bind names them), bits 8.. name the slot and above it a random tag
 * drawn at allocation, never 0, different from the slot's previous one.
 * A key is a window's or a region's, never both: a region's new key is
 * redrawn while its top 24 bits are those of a live window, and a
 * window's tag is redrawn while any of its 256 keys is a live region's.
 * So an rkey lookup tries the regions (exact key), then the windows. A
 * window is in a region (it holds one reference on it while bound, so
 * the region cannot be deregistered: -EBUSY) and grants remote access
 * to exactly [va, va + len) with its own rights, whatever the region's
 * remote rights; type 2 only through the QP that bound it (type 2B).
 *
 * Sharing (ovr_eng_cfg.mr_share). Several engines, each on its own
 * thread, may use one table, so that a QP of any of them sees the same
 * regions and windows under the same keys. ovr_mr_share adds a user;
 * each user's ovr_mr_destroy drops one, the last frees the table. The
 * operations fall in two classes:
 *  - control: create, share, destroy, reg (all three), dereg, modify,
 *    mw_alloc, mw_dealloc (and count, query, table_bytes, which read
 *    what they change). Made while no other thread uses the table (the
 *    service stops every dataplane core for a control request); the
 *    stop and restart order them against the data path.
 *  - data path: check, check_dev, check_rkey, is_dev, dev_cookie, get,
 *    put, refs, invalidate, invalidate_key, mw_bind. These may run at
 *    the same time on several threads. A region's reference count
 *    changes by atomic read-modify-write (compare and swap: none lost,
 *    never past 2^32 - 1 or below 0) once the table is shared, by a
 *    plain load and store while it has one user (ovr_mr_shared: sticky
 *    once a second user came); its rights are one atomic byte that
 *    invalidation clears with an atomic AND and a check reads once. A
 *    window's binding (va, len, key, region, rights, QP) is under a
 *    sequence lock: a bind, unbind or invalidation takes it
 *    exclusively (compare and swap of the sequence from even to odd;
 *    a second writer spins until the first is done, a few dozen
 *    instructions), and ovr_mr_check_rkey copies the binding out
 *    between two equal even sequence values, retrying otherwise - so a
 *    check sees one bind's binding whole, never parts of two, and two
 *    binds of one window from two threads run one after the other,
 *    each dropping and taking exactly its region references. Nothing
 *    blocks: a reader or a second writer spins only while a writer on
 *    another thread is inside those few instructions.
 *  What is ordered: an invalidation or a bind that happens before a
 *  check (through whatever the threads synchronise with: a completion,
 *  a packet through a ring) is seen by it; one that races it may or
 *  may not be, as on a NIC. Regions are never deregistered under a
 *  running check, so what a check resolved stays valid memory until
 *  the next control operation.
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

/*
 * Drops one user of the table (ovr_mr_create's, or ovr_mr_share's); the
 * last frees it, and the regions and windows in it vanish with it. NULL
 * is a no-op.
 */
void ovr_mr_destroy(struct ovr_mr_table *tab);

/*
 * One more user of @tab (another engine's thread); returns @tab. From
 * now on references change by atomic read-modify-write (see "Sharing"
 * above). A control operation: no thread may use @tab meanwhile.
 */
struct ovr_mr_table *ovr_mr_share(struct ovr_mr_table *tab);

/* Has @tab ever had more than one user? */
bool ovr_mr_shared(const struct ovr_mr_table *tab);

/*
 * Register [va, va + length) of @pd, whose bytes live at @host, and
 * return its key in @key_out. @access: OVR_ACCESS_ALL and
 * OVR_ACCESS_MW_BIND. -EINVAL: unknown @access bits, REMOTE_WRITE
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
/* The owner's cookie of the live device region @key names; else NULL. */
void *ovr_mr_dev_cookie(const struct ovr_mr_table *tab, uint32_t key);

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

/* The PD and the rights (OVR_ACCESS_*, MW_BIND) of the region of @key:
 * 0, or -EINVAL (no such region). */
int ovr_mr_query(const struct ovr_mr_table *tab, uint32_t key, uint32_t *pd,
		 unsigned int *access);

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

/* ---- memory windows ---------------------------------------------------- */

/*
 * Allocate a window of @type (OVR_MW_TYPE_1 or _2) in @pd, unbound: its
 * key in @key_out. -EINVAL: another type or @key_out NULL; -ENOSPC:
 * every window slot is taken.
 */
int ovr_mw_alloc(struct ovr_mr_table *tab, uint32_t pd, unsigned int type,
		 uint32_t *key_out);

/*
 * Free the window whose key has the top 24 bits of @key (its low 8 bits
 * may be any: binds change them), bound or not; its region's reference
 * is dropped. -EINVAL: no such window.
 */
int ovr_mw_dealloc(struct ovr_mr_table *tab, uint32_t key);

/* A bind: IBV_WR_BIND_MW / ibv_bind_mw as the engine executes it. */
struct ovr_mw_bind {
	uint32_t mw_key; /* names the window: its top 24 bits */
	uint32_t new_key; /* its low 8 bits become the window's */
	uint32_t mr_key; /* the region (lkey); unused when len is 0 */
	uint32_t pd; /* the binding QP's */
	uint32_t qpn; /* the binding QP (type 2: the only one served) */
	uint32_t access; /* REMOTE_WRITE / READ / ATOMIC, LOCAL_WRITE */
	uint64_t va;
	uint64_t len; /* 0: unbind (type 1 only) */
};

/*
 * Bind (or, type 1 with len 0, unbind) a window; 0 and its new key in
 * *@key_out, or: -ENOENT no such window; -EPERM the window, the QP or
 * the region in different PDs; -EBUSY a type-2 window already bound
 * (invalidate it first); -EINVAL type 2 with len 0, an access bit other
 * than the four, or no such region; -EACCES the region lacks MW_BIND,
 * or LOCAL_WRITE for a window with REMOTE_WRITE / REMOTE_ATOMIC;
 * -ERANGE [va, va + len) not inside the region. Nothing changes on
 * failure.
 */
int ovr_mw_bind(struct ovr_mr_table *tab, const struct ovr_mw_bind *b,
		uint32_t *key_out);

/*
 * ovr_mr_check_dev for an rkey that a request of QP @qpn (in @pd)
 * names: a region's key as ovr_mr_check_dev, or a bound window's: its
 * range and rights checked, the location that of its region's byte.
 * A window unbound, invalidated or of another QP (type 2) is
 * -OVR_MR_EKEY, as a key never issued.
 */
int ovr_mr_check_rkey(const struct ovr_mr_table *tab, uint32_t key, uint32_t pd,
		      uint32_t qpn, uint64_t va, uint64_t len,
		      unsigned int access_needed, struct ovr_mr_loc *loc);

/*
 * LOCAL_INV (@remote false) or SEND_WITH_INV (@remote true) of @key by
 * QP @qpn in @pd: a region's key as ovr_mr_invalidate; a type-2 window
 * bound with exactly @key goes back to unbound (its region reference
 * dropped; remote invalidation only from the QP it is bound to). 0, or
 * -OVR_MR_EKEY (no such key, a window not bound or bound to another
 * QP), -OVR_MR_EPD, -OVR_MR_EACCESS (a type-1 window: verbs invalidates
 * those by binding them with length 0).
 */
int ovr_mr_invalidate_key(struct ovr_mr_table *tab, uint32_t key, uint32_t pd,
			  uint32_t qpn, bool remote);

/* Windows allocated now. */
uint32_t ovr_mw_count(const struct ovr_mr_table *tab);

/* Bytes the table occupies: its header and all its slots. */
size_t ovr_mr_table_bytes(const struct ovr_mr_table *tab);

#endif /* OVR_DP_MRTAB_H */
