// SPDX-License-Identifier: MIT
/*
 * The registry of congestion-control algorithms (include/ovrdma/cc.h).
 *
 * A small array behind a mutex: registration is a slow-path call made at
 * start-up, and a transport resolves a name once per engine or flow, then
 * keeps the ops pointer. Built-ins sit in a constant table and cannot be
 * removed.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <ovrdma/cc.h>

static const struct ovr_cc_ops *const builtin[] = {
	&ovr_cc_ovr,   &ovr_cc_dcqcn, &ovr_cc_timely,
	&ovr_cc_swift, &ovr_cc_fixed,
};
#define NBUILTIN (sizeof(builtin) / sizeof(builtin[0]))

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct ovr_cc_ops *extra[OVR_CC_MAX_ALGS - NBUILTIN];
static size_t nextra;

int ovr_cc_ops_validate(const struct ovr_cc_ops *ops)
{
	size_t n;

	if (!ops || !ops->on_ack || !ops->on_ecn || !ops->on_loss ||
	    !ops->on_timeout || !ops->init || !ops->name ||
	    ops->priv_size > OVR_CC_PRIV_BYTES)
		return -EINVAL;
	n = strnlen(ops->name, OVR_CC_NAME_MAX);
	if (n == 0 || n == OVR_CC_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = ops->name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return -EINVAL;
	}
	return 0;
}

static const struct ovr_cc_ops *find_locked(const char *name)
{
	for (size_t i = 0; i < NBUILTIN; i++)
		if (!strcmp(builtin[i]->name, name))
			return builtin[i];
	for (size_t i = 0; i < nextra; i++)
		if (!strcmp(extra[i]->name, name))
			return extra[i];
	return NULL;
}

int ovr_cc_register(const struct ovr_cc_ops *ops)
{
	int rc = 0;

	if (ovr_cc_ops_validate(ops))
		return -EINVAL;
	pthread_mutex_lock(&reg_lock);
	if (find_locked(ops->name))
		rc = -EEXIST;
	else if (nextra == sizeof(extra) / sizeof(extra[0]))
		rc = -ENOSPC;
	else
		extra[nextra++] = ops;
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

int ovr_cc_unregister(const struct ovr_cc_ops *ops)
{
	int rc = -ENOENT;

	if (!ops)
		return -EINVAL;
	for (size_t i = 0; i < NBUILTIN; i++)
		if (builtin[i] == ops)
			return -EPERM;
	pthread_mutex_lock(&reg_lock);
	for (size_t i = 0; i < nextra; i++) {
		if (extra[i] == ops) {
			extra[i] = extra[--nextra];
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

const struct ovr_cc_ops *ovr_cc_find(const char *name)
{
	const struct ovr_cc_ops *ops;

	if (!name)
		return NULL;
	pthread_mutex_lock(&reg_lock);
	ops = find_locked(name);
	pthread_mutex_unlock(&reg_lock);
	return ops;
}

size_t ovr_cc_list(const struct ovr_cc_ops **out, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&reg_lock);
	for (size_t i = 0; i < NBUILTIN; i++, n++)
		if (out && n < max)
			out[n] = builtin[i];
	for (size_t i = 0; i < nextra; i++, n++)
		if (out && n < max)
			out[n] = extra[i];
	pthread_mutex_unlock(&reg_lock);
	return n;
}

const struct ovr_cc_ops *ovr_cc_default(void)
{
	return &ovr_cc_ovr;
}
