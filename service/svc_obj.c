// SPDX-License-Identifier: MIT
/*
 * What the control side and the dataplane both use: a context's handle
 * table and doorbell indexes, the node's CQ slots (the engine's CQ
 * numbers) and QP index (QPN -> QP, for received PDUs), and the shared
 * memory rings live in. Nothing here calls out of this file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "svc.h"

/* ---- a context's handles ------------------------------------------------- */

int svc_obj_new(struct svc_ctx *c, uint8_t type, void *p, uint32_t *handle)
{
	uint32_t i;

	for (i = 0; i < c->nobj; i++)
		if (c->obj[i].type == SVC_OBJ_FREE)
			break;
	if (i == c->nobj) {
		uint32_t n = c->nobj ? c->nobj * 2 : 16;
		struct svc_obj *t = realloc(c->obj, n * sizeof(*t));

		if (!t)
			return -ENOMEM;
		memset(t + c->nobj, 0, (n - c->nobj) * sizeof(*t));
		c->obj = t;
		c->nobj = n;
	}
	c->obj[i].type = type;
	c->obj[i].p = p;
	c->obj[i].gen++;
	*handle = i + 1;
	return 0;
}

void *svc_obj_get(struct svc_ctx *c, uint32_t handle, uint8_t type)
{
	if (!handle || handle > c->nobj || c->obj[handle - 1].type != type)
		return NULL;
	return c->obj[handle - 1].p;
}

void svc_obj_free(struct svc_ctx *c, uint32_t handle)
{
	c->obj[handle - 1].type = SVC_OBJ_FREE;
	c->obj[handle - 1].p = NULL;
}

int svc_db_alloc(struct svc_ctx *c, struct svc_core *core)
{
	uint32_t free_w = OVR_RING_DB_WORDS;

	for (uint32_t w = 0; w < OVR_RING_DB_WORDS; w++) {
		if (c->db_owner[w] == SVC_DB_NONE) {
			if (free_w == OVR_RING_DB_WORDS)
				free_w = w;
			continue;
		}
		if (c->db_owner[w] != core->idx)
			continue;
		for (uint32_t i = w * 64; i < w * 64 + 64; i++)
			if (!c->db_qp[i] && !c->db_srq[i])
				return (int)i;
	}
	if (free_w == OVR_RING_DB_WORDS)
		return -ENOSPC;
	c->db_owner[free_w] = (uint8_t)core->idx;
	c->db_words[core->idx] |= 1ull << free_w;
	return (int)(free_w * 64);
}

void svc_db_free(struct svc_ctx *c, uint32_t idx)
{
	uint32_t w = idx / 64;

	if (c->db_owner[w] == SVC_DB_NONE)
		return;
	for (uint32_t i = w * 64; i < w * 64 + 64; i++)
		if (c->db_qp[i] || c->db_srq[i])
			return;
	/* a bit the client set for a QP gone stays in the word: the next
	 * owner finds no QP under it */
	c->db_words[c->db_owner[w]] &= ~(1ull << w);
	c->db_owner[w] = SVC_DB_NONE;
}

void *svc_map_memfd(const char *name, size_t len, int *fd_out)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	void *p;

	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)len)) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	*fd_out = fd;
	return p;
}

/* ---- lookup tables ------------------------------------------------------- */

int svc_cq_slot_get(struct svc *s, struct svc_cq *cq)
{
	for (uint32_t i = 0; i < s->ncq_slots; i++)
		if (!s->cqs[i]) {
			s->cqs[i] = cq;
			cq->slot = i;
			return 0;
		}
	uint32_t n = s->ncq_slots ? s->ncq_slots * 2 : 64;
	struct svc_cq **t = realloc(s->cqs, n * sizeof(*t));

	if (!t)
		return -ENOMEM;
	memset(t + s->ncq_slots, 0, (n - s->ncq_slots) * sizeof(*t));
	s->cqs = t;
	cq->slot = s->ncq_slots;
	s->cqs[cq->slot] = cq;
	s->ncq_slots = n;
	return 0;
}

void svc_cq_slot_put(struct svc *s, struct svc_cq *cq)
{
	if (cq->slot < s->ncq_slots && s->cqs[cq->slot] == cq)
		s->cqs[cq->slot] = NULL;
}

int svc_qp_index(struct svc *s, struct svc_qp *qp)
{
	struct svc_qp **slot = &s->qp_by_slot[qp->qpn & s->qp_mask];

	if (*slot)
		return -EEXIST;
	*slot = qp;
	return 0;
}

/* ...and off the dataplane's lists of stalled and lost QPs */
void svc_qp_unindex(struct svc *s, struct svc_qp *qp)
{
	struct svc_qp **slot = &s->qp_by_slot[qp->qpn & s->qp_mask];
	struct svc_qp **p;

	if (*slot == qp)
		*slot = NULL;
	for (p = &qp->core->stalled; *p; p = &(*p)->stall_next)
		if (*p == qp) {
			*p = qp->stall_next;
			break;
		}
	for (p = &qp->core->lost; *p; p = &(*p)->lost_next)
		if (*p == qp) {
			*p = qp->lost_next;
			break;
		}
}

struct svc_qp *svc_qp_find(struct svc *s, uint32_t qpn)
{
	struct svc_qp *qp = s->qp_by_slot[qpn & s->qp_mask];

	return qp && qp->qpn == qpn ? qp : NULL;
}

struct svc_core *svc_core_pick(struct svc *s)
{
	struct svc_core *best = &s->core[0];

	for (uint32_t i = 1; i < s->ncores; i++)
		if (s->core[i].nctx < best->nctx)
			best = &s->core[i];
	best->nctx++;
	return best;
}

struct svc_core *svc_core_pick_qp(struct svc *s)
{
	struct svc_core *best = &s->core[0];

	for (uint32_t i = 1; i < s->ncores; i++)
		if (s->core[i].nqp < best->nqp)
			best = &s->core[i];
	return best;
}

void svc_core_unpick(struct svc_ctx *c)
{
	if (c->core) {
		c->core->nctx--;
		c->core = NULL;
	}
}

void svc_counters_sum(const struct svc *s, struct svc_counters *out)
{
	const size_t n = sizeof(*out) / sizeof(uint64_t);
	uint64_t *o = (uint64_t *)out;

	_Static_assert(sizeof(struct svc_counters) % sizeof(uint64_t) == 0,
		       "counters are 64-bit words");
	*out = s->cnt;
	for (uint32_t i = 0; i < s->ncores; i++) {
		const uint64_t *k = (const uint64_t *)&s->core[i].cnt;

		for (size_t j = 0; j < n; j++)
			o[j] += k[j];
	}
}

void svc_eng_stats(const struct svc *s, struct ovr_eng_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < s->ncores; i++) {
		struct ovr_eng_stats one;

		ovr_eng_get_stats(s->core[i].eng, &one);
		ovr_eng_stats_add(out, &one);
	}
}
