// SPDX-License-Identifier: MIT
/*
 * The verbs objects other than QPs and SRQs (svc_qp.c): protection
 * domains, memory regions (host memory as the application's shared
 * objects the service maps, or through the application's /proc/self/mem;
 * GPU memory through gdr/ and the CUDA driver it loads on first use),
 * completion
 * channels, CQs and address handles - their control requests and their
 * destruction, which context teardown (svc_conn.c) uses too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "svc.h"

#define PAGE SVC_PAGE

/* ---- protection domains -------------------------------------------------- */

int svc_do_alloc_pd(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	struct ovr_ctl_pd_rep rep = { 0 };
	struct svc_pd *pd;
	int rc;

	if (r->blen)
		return svc_status(c, r->h, -EINVAL);
	if (c->npd >= s->conf.ctx_max_pd)
		return svc_limit(c, r->h, SVC_LIM_PD, s->conf.ctx_max_pd,
				 -ENOSPC);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return svc_status(c, r->h, -ENOMEM);
	pd->id = s->next_pd++;
	rc = svc_obj_new(c, SVC_OBJ_PD, pd, &rep.pd);
	if (rc) {
		free(pd);
		return svc_status(c, r->h, rc);
	}
	c->npd++;
	return svc_reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

int svc_do_dealloc_pd(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_handle_req *q =
		SVC_BODY(c, r, struct ovr_ctl_handle_req);
	struct svc_pd *pd = svc_obj_get(c, q->handle, SVC_OBJ_PD);

	(void)s;
	if (!pd)
		return svc_status(c, r->h, -ENOENT);
	if (pd->users)
		return svc_status(c, r->h, -EBUSY);
	free(pd);
	svc_obj_free(c, q->handle);
	c->npd--;
	return svc_status(c, r->h, 0);
}

/* ---- memory regions ------------------------------------------------------ */

/* LOCAL_WRITE, REMOTE_WRITE/READ/ATOMIC, MW_BIND */
#define ACCESS_KNOWN 0x1fu
#define ACCESS_IGNORED ((1u << 7) | (1u << 20)) /* HUGETLB, RELAXED_ORDERING */

#define ACCESS_DEV_WRITES                                   \
	(OVR_ACCESS_LOCAL_WRITE | OVR_ACCESS_REMOTE_WRITE | \
	 OVR_ACCESS_REMOTE_ATOMIC)
#ifndef HUGETLBFS_MAGIC
#define HUGETLBFS_MAGIC 0x958458f6
#endif

/* What ovrdmactl show mrs lists of @mr (nothing else reads it). */
static void mr_describe(struct svc_mr *mr, enum svc_mr_route route, uint64_t va,
			uint64_t len, uint32_t access)
{
	mr->route = route;
	mr->va = va;
	mr->len = len;
	mr->access = access & ACCESS_KNOWN;
	mr->dev_writes = access & ACCESS_DEV_WRITES;
}

/*
 * The last step of every registration route: @mr (described, its key
 * in the engine, @handle its object) joins the context - counted
 * against the pinned limit with @pinned bytes - and the client hears
 * its keys.
 */
static int mr_publish(struct svc *s, struct svc_ctx *c, struct svc_req *r,
		      struct svc_pd *pd, uint32_t pd_handle, struct svc_mr *mr,
		      uint32_t handle, uint64_t pinned)
{
	struct ovr_ctl_reg_mr_rep rep = { .handle = handle,
					  .lkey = mr->key,
					  .rkey = mr->key };

	mr->pd_handle = pd_handle;
	mr->pinned = pinned;
	if (mr->route == SVC_MR_OBJ)
		s->cnt.mr_route_obj++;
	else if (mr->route == SVC_MR_PROC)
		s->cnt.mr_route_proc++;
	s->cnt.mr_odp += mr->odp;
	s->cnt.mr_odp_implicit += mr->implicit;
	pd->users++;
	c->nmr++;
	c->pinned += pinned;
	return svc_reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

/* Would @n more bytes take the context past pinned_mb_per_context? */
static bool over_pinned(const struct svc *s, const struct svc_ctx *c,
			uint64_t n)
{
	return s->conf.ctx_max_pinned && c->pinned + n > s->conf.ctx_max_pinned;
}

/* Unmaps @mr's view of host memory and forgets its tracked mappings. */
static void mr_unmap(struct svc_mr *mr)
{
	for (uint32_t i = 0; i < OVR_CTL_MR_MAX_SEG; i++)
		if (mr->obj_at[i])
			svc_mem_untrack(mr->obj_at[i]);
	if (mr->map)
		munmap(mr->map, mr->map_len);
}

/*
 * The dataplane's engines share one table of regions and windows (their
 * keys are the same on every core: a context's QPs may be on several),
 * changed through core 0's engine with the world stopped. A region goes
 * once every engine settled its copies and gave up its posted receives'
 * hold on it (ovr_eng_mr_yield); -EBUSY while a send-side WR of any
 * engine names it.
 */
static int eng_dereg(struct svc *s, uint32_t key)
{
	for (uint32_t k = 1; k < s->ncores; k++)
		ovr_eng_mr_yield(s->core[k].eng, key);
	return ovr_eng_dereg_mr(s->core[0].eng, key);
}

/* ibv_rereg_mr in place: the receives every engine holds are checked
 * again */
static int eng_mr_modify(struct svc *s, uint32_t key, uint32_t pd,
			 unsigned int access)
{
	int rc = ovr_eng_mr_modify(s->core[0].eng, key, pd, access);

	for (uint32_t k = 1; !rc && k < s->ncores; k++)
		ovr_eng_mr_recheck(s->core[k].eng, key);
	return rc;
}

int svc_mr_destroy(struct svc *s, struct svc_ctx *c, uint32_t h)
{
	struct svc_mr *mr = c->obj[h - 1].p;
	struct svc_pd *pd;
	int rc = eng_dereg(s, mr->key);

	if (rc)
		return rc;
	pd = svc_obj_get(c, mr->pd_handle, SVC_OBJ_PD);
	if (pd)
		pd->users--;
	if (mr->gpu)
		ovr_gdr_release(mr->gpu);
	else
		mr_unmap(mr); /* nothing mapped on the process route */
	c->pinned -= mr->pinned;
	svc_obj_free(c, h);
	c->nmr--;
	free(mr);
	return 0;
}

/* What one segment maps: [lo, hi) of its object (whole pages of @pg
 * bytes around the segment), with @prot; @obj: not a sealed memfd, so
 * it may shrink under us (svc_mem.c). */
struct seg_map {
	uint64_t lo, hi, pg;
	int prot;
	bool obj;
};

/*
 * Checks @q's segments against their fds (-EINVAL, or -EACCES for a
 * read-only fd the device would write through) and says how to map
 * each. A segment is whole pages of a regular file the application maps
 * shared (a sealed memfd cannot shrink; anything else may, svc_mem.c)
 * inside its size. On hugetlbfs, mappings are of whole huge pages: only
 * the first segment may start inside one, only the last end inside one.
 */
static int mr_segs_check(const struct ovr_ctl_reg_mr_req *q, const int *fds,
			 struct seg_map *sm, uint64_t *total)
{
	for (uint32_t i = 0; i < q->nseg; i++) {
		const struct ovr_ctl_mr_seg *g = &q->seg[i];
		int seals = fcntl(fds[i], F_GET_SEALS);
		int fl = fcntl(fds[i], F_GETFL);
		struct statfs sf;
		struct stat st;
		uint64_t pg = PAGE;

		if (g->len == 0 || g->len % PAGE || g->off % PAGE || fl < 0 ||
		    fstat(fds[i], &st) || !S_ISREG(st.st_mode) ||
		    g->off + g->len < g->off ||
		    g->off + g->len > (uint64_t)st.st_size ||
		    fstatfs(fds[i], &sf))
			return -EINVAL;
		if ((q->access & ACCESS_DEV_WRITES) &&
		    (fl & O_ACCMODE) != O_RDWR)
			return -EACCES;
		if ((unsigned long)sf.f_type == HUGETLBFS_MAGIC &&
		    (uint64_t)st.st_blksize > pg)
			pg = (uint64_t)st.st_blksize;
		if (pg & (pg - 1))
			return -EINVAL;
		sm[i] = (struct seg_map){
			.lo = g->off & ~(pg - 1),
			.hi = (g->off + g->len + pg - 1) & ~(pg - 1),
			.pg = pg,
			.prot = PROT_READ |
				((fl & O_ACCMODE) == O_RDWR ? PROT_WRITE : 0),
			.obj = seals < 0 || !(seals & F_SEAL_SHRINK),
		};
		if ((i > 0 && sm[i].lo != g->off) ||
		    (i + 1 < q->nseg && sm[i].hi != g->off + g->len))
			return -EINVAL;
		*total += g->len;
	}
	return 0;
}

/*
 * Maps @q's segments back to back (@total bytes) into @mr; *@span: the
 * service's address of q->span. Segments of huge pages need addresses
 * aligned to them: the view is placed congruent to the client's span
 * modulo the largest page size, as the client's mappings are.
 */
static int mr_map(const struct ovr_ctl_reg_mr_req *q, const int *fds,
		  const struct seg_map *sm, uint64_t total, struct svc_mr *mr,
		  uint8_t **span)
{
	const struct ovr_ctl_mr_seg *last = &q->seg[q->nseg - 1];
	uint64_t pre = q->seg[0].off - sm[0].lo;
	uint64_t post = sm[q->nseg - 1].hi - (last->off + last->len);
	uint64_t align = PAGE, len, slack;
	uint8_t *raw, *v, *b;

	for (uint32_t i = 0; i < q->nseg; i++)
		if (sm[i].pg > align)
			align = sm[i].pg;
	len = pre + total + post;
	raw = mmap(NULL, len + align - PAGE, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return -ENOMEM;
	slack = ((q->span - pre) - (uint64_t)(uintptr_t)raw) & (align - 1);
	v = raw + slack;
	if (slack)
		munmap(raw, slack);
	if (align - PAGE - slack)
		munmap(v + len, align - PAGE - slack);
	mr->map = v;
	mr->map_len = len;
	b = v + pre;
	for (uint64_t i = 0, at = 0; i < q->nseg; at += q->seg[i].len, i++) {
		uint8_t *to = b + at - (q->seg[i].off - sm[i].lo);

		if (mmap(to, sm[i].hi - sm[i].lo, sm[i].prot,
			 MAP_SHARED | MAP_FIXED, fds[i],
			 (off_t)sm[i].lo) == MAP_FAILED)
			return -errno;
		if (sm[i].obj) {
			int rc = svc_mem_track(to, sm[i].hi - sm[i].lo,
					       sm[i].pg, &mr->truncated);

			if (rc)
				return rc;
			mr->obj_at[i] = to;
		}
		mr->nseg_obj++;
	}
	*span = b;
	return 0;
}

/*
 * REG_MR's process route (docs/SERVICE.md section 4): bookkeeping only.
 * The engine reaches [va, va + len) through ops.dev_copy, whose cookie
 * names the context (svc_dp.c: reads and writes of c->memfd, the
 * application's /proc/self/mem, svc_procmem.c); offsets are the
 * application's addresses. The request carries that file; the
 * context's first one stays, and every later region of the context is
 * in the same address space (a later one is only checked). Nothing is
 * copied, mapped or pinned; the pages still count against
 * pinned_mb_per_context, as a NIC's registration counts against
 * RLIMIT_MEMLOCK: the limit bounds what an application registers.
 * On demand (OVR_CTL_MR_ODP) they do not, as the kernel does not charge
 * an ODP region to RLIMIT_MEMLOCK: nothing stands for pinned pages
 * (docs/SERVICE.md, "On-demand paging"). The implicit region, va 0 and
 * len 2^64 - 1, is the only one allowed to reach the last page.
 */
static int reg_mr_proc(struct svc *s, struct svc_ctx *c, struct svc_req *r,
		       struct svc_pd *pd)
{
	const struct ovr_ctl_reg_mr_req *q = r->body;
	bool odp = q->flags & OVR_CTL_MR_ODP;
	bool implicit = odp && q->va == 0 && q->len == UINT64_MAX;
	uint32_t handle = 0;
	uint64_t pages = 0;
	struct svc_mr *mr;
	int rc;

	if (q->len == 0 || q->span % PAGE ||
	    q->span != (q->va & ~(uint64_t)(PAGE - 1)) ||
	    (!implicit &&
	     (q->va + q->len < q->va || q->va + q->len > UINT64_MAX - PAGE)))
		return svc_status(c, r->h, -EINVAL);
	if (c->dead)
		return svc_status(c, r->h, -ESRCH);
	rc = svc_procmem_check(r->fds[0]);
	if (rc)
		return svc_status(c, r->h, rc);
	if (c->memfd < 0)
		c->memfd = svc_take_fd(r, 0);
	if (!odp)
		pages = ((q->va + q->len + PAGE - 1) & ~(uint64_t)(PAGE - 1)) -
			q->span;
	if (over_pinned(s, c, pages))
		return svc_limit(c, r->h, SVC_LIM_PINNED,
				 s->conf.ctx_max_pinned >> 20, -ENOMEM);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return svc_status(c, r->h, -ENOMEM);
	mr->dev = (struct svc_devref){ .kind = SVC_DEV_PROC, .p = c };
	rc = ovr_eng_reg_mr_ext(s->core[0].eng, pd->id, q->va, q->len,
				q->access & ACCESS_KNOWN, &mr->dev, q->va,
				OVR_ENG_MR_HOST, &mr->key);
	if (!rc)
		rc = svc_obj_new(c, SVC_OBJ_MR, mr, &handle);
	if (rc) {
		if (mr->key)
			eng_dereg(s, mr->key);
		free(mr);
		return svc_status(c, r->h, rc);
	}
	mr_describe(mr, SVC_MR_PROC, q->va, q->len, q->access);
	mr->odp = odp;
	mr->implicit = implicit;
	/* counted, not pinned (on demand: not even counted) */
	return mr_publish(s, c, r, pd, q->pd, mr, handle, pages);
}

int svc_do_reg_mr(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_reg_mr_req *q = r->body;
	uint32_t handle = 0;
	struct seg_map sm[OVR_CTL_MR_MAX_SEG];
	struct svc_pd *pd;
	struct svc_mr *mr;
	uint64_t total = 0;
	uint8_t *base = NULL;
	bool proc;
	int rc;

	if (r->blen < offsetof(struct ovr_ctl_reg_mr_req, seg) ||
	    (q->flags & ~(uint32_t)(OVR_CTL_MR_PROC | OVR_CTL_MR_ODP)) ||
	    ((q->flags & OVR_CTL_MR_ODP) && !(q->flags & OVR_CTL_MR_PROC)))
		return svc_status(c, r->h, -EINVAL);
	proc = q->flags & OVR_CTL_MR_PROC;
	/* max_mr_size, but for the implicit region (the whole space) */
	if (q->len > SVC_MR_MAX_SIZE && !((q->flags & OVR_CTL_MR_ODP) &&
					  q->va == 0 && q->len == UINT64_MAX))
		return svc_status(c, r->h, -EINVAL);
	if ((proc ? q->nseg != 0 :
		    q->nseg == 0 || q->nseg > OVR_CTL_MR_MAX_SEG) ||
	    r->blen != offsetof(struct ovr_ctl_reg_mr_req, seg) +
			       q->nseg * sizeof(q->seg[0]) ||
	    r->nfds != (proc ? 1 : (int)q->nseg))
		return svc_status(c, r->h, -EINVAL);
	pd = svc_obj_get(c, q->pd, SVC_OBJ_PD);
	if (!pd)
		return svc_status(c, r->h, -ENOENT);
	if (q->access & ~(ACCESS_KNOWN | ACCESS_IGNORED))
		return svc_status(c, r->h, -EOPNOTSUPP);
	if (c->nmr >= s->conf.ctx_max_mr)
		return svc_limit(c, r->h, SVC_LIM_MR, s->conf.ctx_max_mr,
				 -ENOSPC);
	if (proc)
		return reg_mr_proc(s, c, r, pd);
	rc = mr_segs_check(q, r->fds, sm, &total);
	if (rc)
		return svc_status(c, r->h, rc);
	if (q->span % PAGE || q->len == 0 || q->va < q->span ||
	    q->va - q->span + q->len > total)
		return svc_status(c, r->h, -EINVAL);
	if (over_pinned(s, c, total))
		return svc_limit(c, r->h, SVC_LIM_PINNED,
				 s->conf.ctx_max_pinned >> 20, -ENOMEM);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return svc_status(c, r->h, -ENOMEM);
	rc = mr_map(q, r->fds, sm, total, mr, &base);
	if (!rc)
		rc = ovr_eng_reg_mr(s->core[0].eng, pd->id, q->va, q->len,
				    q->access & ACCESS_KNOWN,
				    base + (q->va - q->span), &mr->key);
	if (!rc)
		rc = svc_obj_new(c, SVC_OBJ_MR, mr, &handle);
	if (rc) {
		if (mr->key)
			eng_dereg(s, mr->key);
		mr_unmap(mr);
		free(mr);
		return svc_status(c, r->h, rc);
	}
	mr_describe(mr, SVC_MR_OBJ, q->va, q->len, q->access);
	return mr_publish(s, c, r, pd, q->pd, mr, handle, total);
}

static int gdr_pin(void *arg, void *addr, size_t len)
{
	return ovr_gdr_host_register(arg, addr, len);
}

/*
 * The copy engine's frame buffers: pinned, so that copies between them
 * and GPU memory are queued (docs/GPU.md). Without it (a driver without
 * the async calls, a port that does not say where its buffers live, or
 * a refusal), copies stay synchronous: logged, not fatal.
 */
static void gdr_pin_bufs(struct svc *s)
{
	struct ovr_gdr_stats st;
	int rc = -EOPNOTSUPP;

	if (s->port_ops->buf_mem)
		rc = s->port_ops->buf_mem(s->port, gdr_pin, s->gdr);
	ovr_gdr_get_stats(s->gdr, &st);
	if (rc == 0 && st.pinned_ranges)
		fprintf(stderr,
			"ovrdmad: GPU copy engine: %llu bytes of frame buffers "
			"pinned (%u ranges), asynchronous copies\n",
			(unsigned long long)st.pinned_bytes, st.pinned_ranges);
	else
		fprintf(stderr,
			"ovrdmad: GPU copy engine: synchronous copies (frame "
			"buffers not pinned: %s%s%s)\n",
			strerror(rc ? -rc : EOPNOTSUPP), rc ? ": " : "",
			rc ? ovr_gdr_last_error(s->gdr) : "");
}

static void gdr_note(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "ovrdmad: %s\n", msg);
}

/*
 * BAR copies of small messages through GDRCopy ([gpu] gdrcopy = auto,
 * docs/GPU.md §1.2), where libgdrapi and the gdrdrv module are: on or
 * off, logged once with the reason. Off is not an error: every copy
 * then takes the copy streams.
 */
static void gdr_bar(struct svc *s)
{
	struct ovr_gdr_bar_cfg cfg = {
		.h2d_max = s->conf.gdrcopy_h2d_max,
		.d2h_max = s->conf.gdrcopy_d2h_max,
		.note = gdr_note,
	};
	char why[200];

	if (!s->conf.gdrcopy) {
		fprintf(stderr, "ovrdmad: GDRCopy: off (gdrcopy = off)\n");
		return;
	}
	if (ovr_gdr_bar_open(s->gdr, &cfg, why, sizeof(why)))
		fprintf(stderr, "ovrdmad: GDRCopy: off (%s)\n", why);
	else
		fprintf(stderr,
			"ovrdmad: GDRCopy: on, BAR copies of messages up to "
			"%u bytes host to GPU, %u bytes GPU to host\n",
			cfg.h2d_max, cfg.d2h_max);
}

/*
 * A copy channel per dataplane core (core 0 copies through the base):
 * its own streams, events and batches, so that the cores copy at once
 * (docs/GPU.md 1.1). The world is stopped. 0, or the error with the
 * driver closed again.
 */
static int gdr_chans(struct svc *s)
{
	int rc;

	s->core[0].gdr = s->gdr;
	for (uint32_t i = 1; i < s->ncores; i++) {
		rc = ovr_gdr_chan_open(s->gdr, &s->core[i].gdr);
		if (rc) {
			snprintf(s->gdr_why, sizeof(s->gdr_why),
				 "no copy channel for dataplane core %u: %s", i,
				 strerror(-rc));
			fprintf(stderr,
				"ovrdmad: GPU memory registration unavailable: "
				"%s\n",
				s->gdr_why);
			ovr_gdr_close(s->gdr); /* and its channels */
			s->gdr = NULL;
			for (uint32_t j = 0; j < s->ncores; j++)
				s->core[j].gdr = NULL;
			return rc;
		}
	}
	if (s->ncores > 1)
		fprintf(stderr,
			"ovrdmad: GPU copy engine: a channel per dataplane "
			"core (%u)\n",
			s->ncores);
	return 0;
}

/* The CUDA driver, loaded at the first GPU registration (not at start:
 * a node without GPUs never pays for it), then GDRCopy. 0 or
 * -EOPNOTSUPP / -ENODEV, logged once. */
static int gdr_ready(struct svc *s)
{
	if (s->gdr)
		return 0;
	if (s->gdr_err)
		return s->gdr_err;
	s->gdr_err = ovr_gdr_open(0, &s->gdr, s->gdr_why, sizeof(s->gdr_why));
	if (s->gdr_err)
		fprintf(stderr,
			"ovrdmad: GPU memory registration unavailable: %s\n",
			s->gdr_why);
	else
		fprintf(stderr,
			"ovrdmad: GPU memory registration: CUDA driver loaded\n");
	if (!s->gdr_err) {
		gdr_pin_bufs(s);
		gdr_bar(s);
		s->gdr_err = gdr_chans(s);
	}
	return s->gdr_err;
}

/*
 * What a GPU registration counts against pinned_mb_per_context: the GPU
 * pages covering it (64 KiB, what nvidia_p2p_get_pages pins for a NIC),
 * within its allocation. An IPC import shared by several registrations
 * counts for each, as host registrations of the same pages do.
 */
#define GPU_PAGE (64ull << 10)
static uint64_t gpu_pinned(const struct ovr_ctl_reg_mr_gpu_req *q)
{
	uint64_t lo = q->offset & ~(GPU_PAGE - 1);
	uint64_t hi = (q->offset + q->len + GPU_PAGE - 1) & ~(GPU_PAGE - 1);

	return (hi < q->alloc_size ? hi : q->alloc_size) - lo;
}

int svc_do_reg_mr_gpu(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_reg_mr_gpu_req *q = r->body;
	uint32_t handle = 0;
	struct ovr_gdr_export ex = { 0 };
	struct svc_pd *pd;
	struct svc_mr *mr;
	uint64_t pinned;
	int rc;

	if (r->blen != sizeof(*q) ||
	    (q->kind != OVR_GDR_KIND_IPC && q->kind != OVR_GDR_KIND_FD) ||
	    r->nfds != (q->kind == OVR_GDR_KIND_FD ? 1 : 0))
		return svc_status(c, r->h, -EINVAL);
	pd = svc_obj_get(c, q->pd, SVC_OBJ_PD);
	if (!pd)
		return svc_status(c, r->h, -ENOENT);
	if (q->access & ~(ACCESS_KNOWN | ACCESS_IGNORED))
		return svc_status(c, r->h, -EOPNOTSUPP);
	if (!q->len || q->len > SVC_MR_MAX_SIZE || !q->alloc_size ||
	    q->offset > q->alloc_size || q->len > q->alloc_size - q->offset)
		return svc_status(c, r->h, -EINVAL);
	if (c->nmr >= s->conf.ctx_max_mr)
		return svc_limit(c, r->h, SVC_LIM_MR, s->conf.ctx_max_mr,
				 -ENOSPC);
	pinned = gpu_pinned(q);
	if (over_pinned(s, c, pinned))
		return svc_limit(c, r->h, SVC_LIM_PINNED,
				 s->conf.ctx_max_pinned >> 20, -ENOMEM);
	rc = gdr_ready(s);
	if (rc)
		return svc_status(c, r->h, rc);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return svc_status(c, r->h, -ENOMEM);
	ex.base = q->alloc_base;
	ex.size = q->alloc_size;
	ex.device = q->device;
	ex.kind = q->kind;
	ex.fd = q->kind == OVR_GDR_KIND_FD ? r->fds[0] : -1;
	memcpy(ex.ipc, q->ipc, sizeof(ex.ipc));
	memcpy(ex.uuid, q->uuid, sizeof(ex.uuid));
	rc = ovr_gdr_import(s->gdr, &ex, &mr->gpu);
	if (rc) {
		fprintf(stderr,
			"ovrdmad: context %u (pid %d): GPU memory import refused: %s\n",
			c->id, (int)c->pid, ovr_gdr_last_error(s->gdr));
		free(mr);
		return svc_status(c, r->h, rc);
	}
	mr->dev = (struct svc_devref){ .kind = SVC_DEV_GPU, .p = mr->gpu };
	rc = ovr_eng_reg_mr_dev(s->core[0].eng, pd->id, q->va, q->len,
				q->access & ACCESS_KNOWN, &mr->dev, q->offset,
				&mr->key);
	if (!rc)
		rc = svc_obj_new(c, SVC_OBJ_MR, mr, &handle);
	if (rc) {
		if (mr->key)
			eng_dereg(s, mr->key);
		ovr_gdr_release(mr->gpu);
		free(mr);
		return svc_status(c, r->h, rc);
	}
	mr_describe(mr, SVC_MR_GPU, q->va, q->len, q->access);
	/* counted, not mapped */
	return mr_publish(s, c, r, pd, q->pd, mr, handle, pinned);
}

int svc_do_dereg_mr(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_handle_req *q =
		SVC_BODY(c, r, struct ovr_ctl_handle_req);

	if (!svc_obj_get(c, q->handle, SVC_OBJ_MR))
		return svc_status(c, r->h, -ENOENT);
	/*
	 * WRs the application posted before this request may still sit in
	 * its rings: hand them to the engine first, so that the answer does
	 * not depend on how far the loop got. A region that work still uses
	 * is then EBUSY (the engine holds its SGEs' pages), whenever the WRs
	 * were posted. O(QP slots of the context), on a control path.
	 */
	for (uint32_t i = 0; i < OVR_RING_MAX_QP_PER_CTX; i++) {
		if (c->db_qp[i])
			svc_qp_kick(s, c->db_qp[i]);
		else if (c->db_srq[i])
			svc_srq_kick(s, c->db_srq[i]);
	}
	return svc_status(c, r->h, svc_mr_destroy(s, c, q->handle));
}

/*
 * REREG_MR (ctl.h): ibv_rereg_mr's CHANGE_PD and CHANGE_ACCESS in place,
 * keys kept (the client re-registers for a new translation). A request
 * that fails leaves the region unusable - no PD, no rights - as
 * ibv_rereg_mr(3) says of a failed command ("MR shouldn't be used");
 * work already checked against it goes on, DEREG_MR ends it.
 */
int svc_do_rereg_mr(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_rereg_mr_req *q =
		SVC_BODY(c, r, struct ovr_ctl_rereg_mr_req);
	const uint32_t known = OVR_CTL_REREG_PD | OVR_CTL_REREG_ACCESS |
			       OVR_CTL_REREG_INVALIDATE;
	struct svc_mr *mr = svc_obj_get(c, q->handle, SVC_OBJ_MR);
	struct ovr_ctl_reg_mr_rep rep = { .handle = q->handle };
	struct svc_pd *old = NULL, *pd = NULL;
	uint32_t access;
	int rc = 0;

	if (!mr)
		return svc_status(c, r->h, -ENOENT);
	access = q->flags & OVR_CTL_REREG_ACCESS ? q->access : mr->access;
	if (!q->flags || (q->flags & ~known) ||
	    ((q->flags & OVR_CTL_REREG_INVALIDATE) &&
	     q->flags != OVR_CTL_REREG_INVALIDATE))
		rc = -EINVAL;
	else if (q->flags & OVR_CTL_REREG_INVALIDATE)
		rc = -ECANCELED; /* the client's failure: only invalidate */
	else if (mr->dead)
		rc = -EINVAL; /* stays unusable: deregister it */
	else if (access & ~(ACCESS_KNOWN | ACCESS_IGNORED))
		rc = -EOPNOTSUPP;
	else if ((access & ACCESS_DEV_WRITES) && !mr->dev_writes &&
		 mr->route != SVC_MR_GPU)
		rc = -EACCES; /* mapped, or checked, for reads only */
	if (!rc && (q->flags & OVR_CTL_REREG_PD)) {
		pd = svc_obj_get(c, q->pd, SVC_OBJ_PD);
		if (!pd)
			rc = -ENOENT;
	}
	old = svc_obj_get(c, mr->pd_handle, SVC_OBJ_PD);
	if (!rc)
		rc = eng_mr_modify(s, mr->key,
				   pd  ? pd->id :
				   old ? old->id :
					 0,
				   access & ACCESS_KNOWN);
	if (rc) {
		/* unusable until deregistered: PD 0 is never allocated */
		eng_mr_modify(s, mr->key, 0, 0);
		mr->access = 0;
		mr->dead = true;
		return svc_status(c, r->h, rc == -ECANCELED ? 0 : rc);
	}
	if (pd) {
		if (old)
			old->users--;
		pd->users++;
		mr->pd_handle = q->pd;
	}
	mr->access = access & ACCESS_KNOWN;
	rep.lkey = rep.rkey = mr->key;
	return svc_reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

/* ---- memory windows ------------------------------------------------------ */

int svc_do_alloc_mw(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_alloc_mw_req *q =
		SVC_BODY(c, r, struct ovr_ctl_alloc_mw_req);
	struct ovr_ctl_alloc_mw_rep rep = { 0 };
	struct svc_pd *pd = svc_obj_get(c, q->pd, SVC_OBJ_PD);
	struct svc_mw *mw;
	int rc;

	if (!pd)
		return svc_status(c, r->h, -ENOENT);
	if (q->type != OVR_MW_TYPE_1 && q->type != OVR_MW_TYPE_2)
		return svc_status(c, r->h, -EINVAL);
	/* windows count as regions do: the engine's table holds both */
	if (c->nmw >= s->conf.ctx_max_mr)
		return svc_limit(c, r->h, SVC_LIM_MR, s->conf.ctx_max_mr,
				 -ENOSPC);
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return svc_status(c, r->h, -ENOMEM);
	rc = ovr_eng_alloc_mw(s->core[0].eng, pd->id, q->type, &mw->rkey);
	if (!rc) {
		rc = svc_obj_new(c, SVC_OBJ_MW, mw, &rep.handle);
		if (rc)
			ovr_eng_dealloc_mw(s->core[0].eng, mw->rkey);
	}
	if (rc) {
		free(mw);
		return svc_status(c, r->h, rc);
	}
	mw->pd_handle = q->pd;
	rep.rkey = mw->rkey;
	pd->users++;
	c->nmw++;
	return svc_reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

void svc_mw_destroy(struct svc *s, struct svc_ctx *c, uint32_t h)
{
	struct svc_mw *mw = c->obj[h - 1].p;
	struct svc_pd *pd = svc_obj_get(c, mw->pd_handle, SVC_OBJ_PD);

	ovr_eng_dealloc_mw(s->core[0].eng, mw->rkey);
	if (pd)
		pd->users--;
	svc_obj_free(c, h);
	c->nmw--;
	free(mw);
}

int svc_do_dealloc_mw(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_handle_req *q =
		SVC_BODY(c, r, struct ovr_ctl_handle_req);

	if (!svc_obj_get(c, q->handle, SVC_OBJ_MW))
		return svc_status(c, r->h, -ENOENT);
	svc_mw_destroy(s, c, q->handle);
	return svc_status(c, r->h, 0);
}

/* ---- completion channels ------------------------------------------------- */

void svc_channel_destroy(struct svc_ctx *c, uint32_t h)
{
	struct svc_channel *ch = c->obj[h - 1].p;

	close(ch->fd);
	free(ch);
	svc_obj_free(c, h);
}

int svc_do_create_channel(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	struct ovr_ctl_channel_rep rep = { 0 };
	struct svc_channel *ch;
	int rc;

	(void)s;
	if (r->blen || r->nfds != 1)
		return svc_status(c, r->h, -EINVAL);
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return svc_status(c, r->h, -ENOMEM);
	rc = svc_obj_new(c, SVC_OBJ_CHANNEL, ch, &rep.channel);
	if (rc) {
		free(ch);
		return svc_status(c, r->h, rc);
	}
	ch->fd = svc_take_fd(r, 0);
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	return svc_reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

int svc_do_destroy_channel(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_handle_req *q =
		SVC_BODY(c, r, struct ovr_ctl_handle_req);
	struct svc_channel *ch = svc_obj_get(c, q->handle, SVC_OBJ_CHANNEL);

	(void)s;
	if (!ch)
		return svc_status(c, r->h, -ENOENT);
	if (ch->users)
		return svc_status(c, r->h, -EBUSY);
	svc_channel_destroy(c, q->handle);
	return svc_status(c, r->h, 0);
}

/* ---- completion queues --------------------------------------------------- */

void svc_cq_destroy(struct svc *s, struct svc_ctx *c, uint32_t h)
{
	struct svc_cq *cq = c->obj[h - 1].p;
	struct svc_channel *ch;

	svc_cq_slot_put(s, cq);
	ch = cq->chan_handle ?
		     svc_obj_get(c, cq->chan_handle, SVC_OBJ_CHANNEL) :
		     NULL;
	if (ch)
		ch->users--;
	munmap(cq->ring, cq->map_len);
	svc_obj_free(c, h);
	c->ncq--;
	c->cq_bytes -= cq->map_len;
	free(cq);
}

int svc_do_create_cq(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_create_cq_req *q =
		SVC_BODY(c, r, struct ovr_ctl_create_cq_req);
	struct ovr_ctl_create_cq_rep rep = { 0 };
	struct svc_channel *ch = NULL;
	struct svc_cq *cq;
	uint32_t depth;
	uint64_t len;
	int fd, rc;

	if (q->cqe == 0 || q->cqe >= SVC_CQ_MAX_DEPTH)
		return svc_status(c, r->h, -EINVAL);
	if (c->ncq >= s->conf.ctx_max_cq)
		return svc_limit(c, r->h, SVC_LIM_CQ, s->conf.ctx_max_cq,
				 -ENOSPC);
	/* the ring's pages cost memory once completions reach them:
	 * bound what all of a context's rings could come to */
	depth = (uint32_t)ovr_pow2_at_least(q->cqe + 1);
	len = SVC_CQ_RING_LEN(depth);
	if (len > s->conf.ctx_max_cq_bytes - c->cq_bytes)
		return svc_limit(c, r->h, SVC_LIM_CQ_MB,
				 s->conf.ctx_max_cq_bytes >> 20, -ENOMEM);
	if (q->channel != OVR_CTL_NO_CHANNEL) {
		ch = svc_obj_get(c, q->channel, SVC_OBJ_CHANNEL);
		if (!ch)
			return svc_status(c, r->h, -ENOENT);
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return svc_status(c, r->h, -ENOMEM);
	cq->ctx = c;
	cq->depth = depth;
	cq->map_len = len;
	/* sized, not touched: a page is allocated when the first
	 * completion is written to it (the client maps it the same way) */
	cq->ring = svc_map_memfd("ovrdma-cq", cq->map_len, &fd);
	if (!cq->ring) {
		free(cq);
		return svc_status(c, r->h, -ENOMEM);
	}
	cq->cqe = (void *)((uint8_t *)cq->ring + OVR_RING_CQ_ENTRIES_OFF);
	cq->user_handle = q->user_handle;
	cq->chan_fd = ch ? ch->fd : -1;
	cq->chan_handle = ch ? q->channel : 0;
	rc = svc_cq_slot_get(s, cq);
	if (!rc)
		rc = svc_obj_new(c, SVC_OBJ_CQ, cq, &cq->handle);
	if (rc) {
		svc_cq_slot_put(s, cq);
		munmap(cq->ring, cq->map_len);
		close(fd);
		free(cq);
		return svc_status(c, r->h, rc);
	}
	if (ch)
		ch->users++;
	c->ncq++;
	c->cq_bytes += cq->map_len;
	rep.cq = cq->handle;
	rep.depth = cq->depth;
	rep.map_len = cq->map_len;
	rc = svc_reply(c, r->h, 0, &rep, sizeof(rep), &fd, 1);
	close(fd);
	return rc;
}

int svc_do_destroy_cq(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_handle_req *q =
		SVC_BODY(c, r, struct ovr_ctl_handle_req);
	struct svc_cq *cq = svc_obj_get(c, q->handle, SVC_OBJ_CQ);

	if (!cq)
		return svc_status(c, r->h, -ENOENT);
	if (cq->users)
		return svc_status(c, r->h, -EBUSY);
	svc_cq_destroy(s, c, q->handle);
	return svc_status(c, r->h, 0);
}

/*
 * RESIZE_CQ (ctl.h): a new ring, the completions not yet consumed
 * copied into it at the same indexes (slot index % depth, gen index /
 * depth + 1), so nothing is lost or reordered and the client keeps its
 * consumer index. The client holds the CQ's lock meanwhile: cons is
 * stable. Before counting, WRs the application posted before this
 * request are handed to the engine and one round runs, so that what
 * they complete at once (UD sends, local errors, flushes) is in the
 * count whatever the loop's progress: ibv_resize_cq(3) refuses a size
 * below the completions the CQ holds (EINVAL). O(QP slots of the
 * context + completions held), on a control path.
 */
int svc_do_resize_cq(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_resize_cq_req *q =
		SVC_BODY(c, r, struct ovr_ctl_resize_cq_req);
	struct ovr_ctl_resize_cq_rep rep = { 0 };
	struct svc_cq *cq = svc_obj_get(c, q->cq, SVC_OBJ_CQ);
	struct ovr_ring_cq *ring;
	struct ovr_ring_cqe *cqe;
	uint32_t depth, cons, held;
	uint64_t len, next;
	int fd, rc;

	if (!cq)
		return svc_status(c, r->h, -ENOENT);
	if (q->cqe == 0 || q->cqe >= SVC_CQ_MAX_DEPTH)
		return svc_status(c, r->h, -EINVAL);
	for (uint32_t i = 0; i < OVR_RING_MAX_QP_PER_CTX; i++)
		if (c->db_qp[i])
			svc_qp_kick(s, c->db_qp[i]);
	for (uint32_t k = 0; k < s->ncores; k++)
		if (cq->cores & (1u << k))
			svc_dp_round(&s->core[k], svc_now(), &next);
	cons = atomic_load_explicit(&cq->ring->cons, memory_order_acquire);
	held = atomic_load_explicit(&cq->prod, memory_order_relaxed) - cons;
	/* a client that moved cons past prod broke the ring: refuse */
	if (held > cq->depth || q->cqe < held)
		return svc_status(c, r->h, -EINVAL);
	depth = (uint32_t)ovr_pow2_at_least(q->cqe + 1);
	len = SVC_CQ_RING_LEN(depth);
	if (len > s->conf.ctx_max_cq_bytes - (c->cq_bytes - cq->map_len))
		return svc_limit(c, r->h, SVC_LIM_CQ_MB,
				 s->conf.ctx_max_cq_bytes >> 20, -ENOMEM);
	ring = svc_map_memfd("ovrdma-cq", len, &fd);
	if (!ring)
		return svc_status(c, r->h, -ENOMEM);
	cqe = (void *)((uint8_t *)ring + OVR_RING_CQ_ENTRIES_OFF);
	for (uint32_t i = cons, p = atomic_load(&cq->prod); i != p; i++) {
		const struct ovr_ring_cqe *from = &cq->cqe[i & (cq->depth - 1)];
		struct ovr_ring_cqe *to = &cqe[i & (depth - 1)];

		memcpy(to, from, offsetof(struct ovr_ring_cqe, gen));
		atomic_store_explicit(&to->gen, i / depth + 1,
				      memory_order_relaxed);
	}
	atomic_store_explicit(&ring->cons, cons, memory_order_relaxed);
	atomic_store_explicit(&ring->arm,
			      atomic_load_explicit(&cq->ring->arm,
						   memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(&ring->prod, atomic_load(&cq->prod),
			      memory_order_relaxed);
	atomic_store_explicit(&ring->overflow,
			      atomic_load_explicit(&cq->ring->overflow,
						   memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(&ring->events,
			      atomic_load_explicit(&cq->ring->events,
						   memory_order_relaxed),
			      memory_order_relaxed);
	/* the reply (a syscall) orders these stores before the client's
	 * first look at the ring */
	atomic_thread_fence(memory_order_release);
	munmap(cq->ring, cq->map_len);
	c->cq_bytes += len - cq->map_len;
	cq->ring = ring;
	cq->cqe = cqe;
	cq->depth = depth;
	cq->map_len = len;
	rep.cq = cq->handle;
	rep.depth = depth;
	rep.map_len = len;
	rc = svc_reply(c, r->h, 0, &rep, sizeof(rep), &fd, 1);
	close(fd);
	return rc;
}

/* ---- address handles ------------------------------------------------------ */

void svc_ah_destroy(struct svc_ctx *c, uint32_t h)
{
	struct svc_ah *ah = c->obj[h - 1].p;
	struct svc_pd *pd = svc_obj_get(c, ah->pd_handle, SVC_OBJ_PD);

	if (pd)
		pd->users--;
	svc_obj_free(c, h);
	c->nah--;
	free(ah);
}

int svc_do_create_ah(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_create_ah_req *q =
		SVC_BODY(c, r, struct ovr_ctl_create_ah_req);
	const struct ovr_ctl_dev *d = &s->devs[c->dev].d;
	struct ovr_ctl_create_ah_rep rep = { 0 };
	struct svc_pd *pd = svc_obj_get(c, q->pd, SVC_OBJ_PD);
	struct svc_ah *ah;
	uint32_t peer;
	int rc;

	if (!pd)
		return svc_status(c, r->h, -ENOENT);
	/* RoCE: the destination is named by its GID, ::ffff:<vIP>, or a
	 * multicast group of the tenant (svc_mcast.c): any member may
	 * hear it, the receivers' security groups judge the sender */
	if (!q->is_global || q->sgid_index != 0 ||
	    (q->port_num && q->port_num != 1))
		return svc_status(c, r->h, -EINVAL);
	peer = svc_mcast_group(q->dgid);
	if (!peer) {
		if (ovr_vpc_gid_to_vip(q->dgid, &peer))
			return svc_status(c, r->h, -EINVAL);
		rc = ovr_vpc_may_connect(s->vpc, d->vni, d->vip, peer);
		if (rc)
			return svc_status(c, r->h, rc);
	}
	if (c->nah >= s->conf.ctx_max_ah)
		return svc_limit(c, r->h, SVC_LIM_AH, s->conf.ctx_max_ah,
				 -ENOSPC);
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return svc_status(c, r->h, -ENOMEM);
	ah->pd_handle = q->pd;
	ah->dst_vip = peer;
	ah->dscp = (uint8_t)(q->traffic_class >> 2);
	rc = svc_obj_new(c, SVC_OBJ_AH, ah, &rep.ah);
	if (rc) {
		free(ah);
		return svc_status(c, r->h, rc);
	}
	pd->users++;
	c->nah++;
	return svc_reply(c, r->h, 0, &rep, sizeof(rep), NULL, 0);
}

int svc_do_destroy_ah(struct svc *s, struct svc_ctx *c, struct svc_req *r)
{
	const struct ovr_ctl_handle_req *q =
		SVC_BODY(c, r, struct ovr_ctl_handle_req);

	/* UD WQEs already handed to the engine carry the address itself;
	 * those still in a send ring name the AH by handle, so the cores
	 * with this context's QPs take them first (a NIC's WQE holds a
	 * copy of the address from the post on): sends posted before the
	 * destroy go out to it (rdmacm-utils' mckey destroys its AH right
	 * after posting, without waiting for a completion) */
	if (!svc_obj_get(c, q->handle, SVC_OBJ_AH))
		return svc_status(c, r->h, -ENOENT);
	svc_dp_settle_ctx(s, c);
	svc_ah_destroy(c, q->handle);
	return svc_status(c, r->h, 0);
}
