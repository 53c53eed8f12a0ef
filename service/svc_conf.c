// SPDX-License-Identifier: MIT
/*
 * ovrdmad's configuration file (docs/SERVICE.md section 6), parsed with
 * inih: sections [service], [limits], [gpu] and any number of [tenant]
 * sections, each starting with its vni. Any error names the line.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ovrdma/cc.h>

#include "svc.h"

void svc_conf_default(struct svc_conf *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->socket, sizeof(c->socket), "%s", OVR_CTL_SOCK_DEFAULT);
	snprintf(c->sysfs, sizeof(c->sysfs), "%s", SVC_SYSFS_DEFAULT);
	c->underlay_mtu = 1500;
	c->rate_bps = 100000000000ull;
	snprintf(c->cc, sizeof(c->cc), "ovr");
	c->spin_us = 50;
	c->dp_cores = 0; /* auto: the CPUs given less one (svc_cores_auto) */
	c->port_queues = 0; /* auto */
	c->max_contexts = 256;
	c->ctx_max_qp = 2048;
	c->ctx_max_cq = 2048;
	c->ctx_max_mr = 4096;
	c->ctx_max_pd = 256;
	c->ctx_max_srq = 256;
	c->ctx_max_ah = 4096;
	c->ctx_max_pinned = 0;
	c->ctx_max_cq_bytes = 1024ull << 20;
	c->cm_channel_bytes = 64ull << 20;
	c->eng_max_qp = 4096;
	c->gdrcopy = true;
	c->gdrcopy_h2d_max = OVR_GDR_BAR_H2D_MAX;
	c->gdrcopy_d2h_max = OVR_GDR_BAR_D2H_MAX;
}

int svc_parse_rate(const char *s, uint64_t *bps)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v <= 0)
		return -1;
	switch (tolower((unsigned char)*end)) {
	case 'g':
		v *= 1e9;
		end++;
		break;
	case 'm':
		v *= 1e6;
		end++;
		break;
	case 'k':
		v *= 1e3;
		end++;
		break;
	default:
		break;
	}
	if (*end || v > 1e13)
		return -1;
	*bps = (uint64_t)v;
	return 0;
}

int svc_parse_ipv4(const char *s, uint32_t *ip)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return -1;
	*ip = ntohl(a.s_addr);
	return 0;
}

int svc_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4],
		   &b[5], &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (b[i] > 255)
			return -1;
		mac[i] = (uint8_t)b[i];
	}
	return 0;
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

struct conf_state {
	struct svc_conf *c;
	int32_t vni; /* current [tenant]'s, -1 before its vni line */
	char section[32]; /* the section of the previous entry */
	const char *err;
};

/* "192.168.1.1 local [name]" or "192.168.1.2 host 10.0.0.2 mac M" */
static int parse_vip(struct conf_state *st, const char *value)
{
	struct svc_conf *c = st->c;
	struct svc_conf_vip *v;
	char buf[256], *tok[6], *save = NULL;
	int n = 0;

	if (c->nvips >= SVC_MAX_TENANT_VIPS) {
		st->err = "too many vip lines";
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", value);
	for (char *t = strtok_r(buf, " \t", &save); t && n < 6;
	     t = strtok_r(NULL, " \t", &save))
		tok[n++] = t;
	v = &c->vips[c->nvips];
	memset(v, 0, sizeof(*v));
	v->vni = (uint32_t)st->vni;
	if (n < 2 || svc_parse_ipv4(tok[0], &v->vip) || !v->vip) {
		st->err = "vip: expected ADDRESS local [NAME] or ADDRESS host "
			  "HOST mac MAC";
		return 0;
	}
	if (!strcmp(tok[1], "local") && n <= 3) {
		v->local = true;
		v->host = c->host;
		if (n == 3) {
			if (strlen(tok[2]) >= OVR_CTL_NAME_LEN) {
				st->err = "vip: device name too long";
				return 0;
			}
			snprintf(v->name, sizeof(v->name), "%s", tok[2]);
		}
	} else if (!strcmp(tok[1], "host") && n == 5 &&
		   !strcmp(tok[3], "mac")) {
		if (svc_parse_ipv4(tok[2], &v->host) ||
		    svc_parse_mac(tok[4], v->mac)) {
			st->err = "vip: bad host address or MAC";
			return 0;
		}
	} else {
		st->err = "vip: expected ADDRESS local [NAME] or ADDRESS host "
			  "HOST mac MAC";
		return 0;
	}
	c->nvips++;
	return 1;
}

static int parse_sg(struct conf_state *st, const char *value)
{
	struct svc_conf *c = st->c;
	char buf[64], *slash;
	uint32_t len = 32, ip;

	if (c->nsgs >= SVC_MAX_TENANT_VIPS) {
		st->err = "too many sg lines";
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", value);
	slash = strchr(buf, '/');
	if (slash) {
		*slash = 0;
		if (parse_u32(slash + 1, 0, 32, &len)) {
			st->err = "sg: bad prefix length";
			return 0;
		}
	}
	if (svc_parse_ipv4(buf, &ip) || (len < 32 && (ip & (~0u >> len)))) {
		st->err = "sg: expected PREFIX/LEN with no host bits set";
		return 0;
	}
	c->sgs[c->nsgs++] = (struct svc_conf_sg){ .vni = (uint32_t)st->vni,
						  .prefix = ip,
						  .len = len };
	return 1;
}

/* [service] */
static int on_service(struct conf_state *st, const char *name,
		      const char *value)
{
	struct svc_conf *c = st->c;

	if (!strcmp(name, "socket")) {
		if (strlen(value) >= sizeof(c->socket)) {
			st->err = "socket path too long";
			return 0;
		}
		snprintf(c->socket, sizeof(c->socket), "%s", value);
	} else if (!strcmp(name, "sysfs")) {
		/* empty: publish nothing */
		if (value[0] && (value[0] != '/' || !value[1] ||
				 strlen(value) >= sizeof(c->sysfs) ||
				 strstr(value, "/../") ||
				 strspn(value, "/") == strlen(value))) {
			st->err = "sysfs: expected an absolute directory "
				  "of at most 191 characters (empty: "
				  "publish no device)";
			return 0;
		}
		snprintf(c->sysfs, sizeof(c->sysfs), "%s", value);
		/* no trailing slash: paths are built as DIR/class */
		while (strlen(c->sysfs) > 1 &&
		       c->sysfs[strlen(c->sysfs) - 1] == '/')
			c->sysfs[strlen(c->sysfs) - 1] = 0;
	} else if (!strcmp(name, "group")) {
		snprintf(c->group, sizeof(c->group), "%s", value);
	} else if (!strcmp(name, "eal")) {
		/* repeatable: lines are joined (inih's lines are
		 * at most 200 bytes) */
		size_t used = strlen(c->eal);

		if (used + 1 + strlen(value) >= sizeof(c->eal)) {
			st->err = "eal arguments too long";
			return 0;
		}
		snprintf(c->eal + used, sizeof(c->eal) - used, "%s%s",
			 used ? " " : "", value);
	} else if (!strcmp(name, "host")) {
		if (svc_parse_ipv4(value, &c->host) || !c->host) {
			st->err = "host: expected an IPv4 address";
			return 0;
		}
	} else if (!strcmp(name, "underlay_mtu")) {
		if (parse_u32(value, 576, 9216, &c->underlay_mtu)) {
			st->err = "underlay_mtu: 576..9216";
			return 0;
		}
	} else if (!strcmp(name, "rate")) {
		if (svc_parse_rate(value, &c->rate_bps)) {
			st->err = "rate: expected e.g. 100g, 25g, 800m";
			return 0;
		}
	} else if (!strcmp(name, "base_rtt_us")) {
		uint32_t v;

		if (parse_u32(value, 0, 1000000, &v)) {
			st->err = "base_rtt_us: 0..1000000";
			return 0;
		}
		c->base_rtt_ns = v * 1000ull;
	} else if (!strcmp(name, "cc")) {
		if (strlen(value) >= sizeof(c->cc) || !ovr_cc_find(value)) {
			st->err = "cc: unknown congestion controller "
				  "(ovr, swift, timely, dcqcn, fixed)";
			return 0;
		}
		snprintf(c->cc, sizeof(c->cc), "%s", value);
	} else if (!strcmp(name, "dataplane_cores")) {
		if (!strcmp(value, "auto")) {
			c->dp_cores = 0;
		} else if (parse_u32(value, 1, SVC_MAX_CORES, &c->dp_cores)) {
			st->err = "dataplane_cores: 1..16 or auto";
			return 0;
		}
	} else if (!strcmp(name, "port_queues")) {
		if (!strcmp(value, "auto"))
			c->port_queues = 0;
		else if (parse_u32(value, 1, SVC_MAX_CORES * SVC_MAX_CORES,
				   &c->port_queues)) {
			st->err = "port_queues: auto or 1..256";
			return 0;
		}
	} else if (!strcmp(name, "spin_us")) {
		if (parse_u32(value, 0, 1000000, &c->spin_us)) {
			st->err = "spin_us: 0..1000000";
			return 0;
		}
	} else {
		st->err = "unknown key in [service]";
		return 0;
	}
	return 1;
}

/* [limits] */
static int on_limits(struct conf_state *st, const char *name, const char *value)
{
	struct svc_conf *c = st->c;

	uint32_t v;

	if (parse_u32(value, 1, 1u << 24, &v)) {
		st->err = "limit: expected an integer 1..16777216";
		return 0;
	}
	if (!strcmp(name, "contexts"))
		c->max_contexts = v;
	else if (!strcmp(name, "qp_per_context"))
		c->ctx_max_qp = v;
	else if (!strcmp(name, "cq_per_context"))
		c->ctx_max_cq = v;
	else if (!strcmp(name, "mr_per_context"))
		c->ctx_max_mr = v;
	else if (!strcmp(name, "pd_per_context"))
		c->ctx_max_pd = v;
	else if (!strcmp(name, "srq_per_context"))
		c->ctx_max_srq = v;
	else if (!strcmp(name, "ah_per_context"))
		c->ctx_max_ah = v;
	else if (!strcmp(name, "pinned_mb_per_context"))
		c->ctx_max_pinned = (uint64_t)v << 20;
	else if (!strcmp(name, "cq_mb_per_context"))
		c->ctx_max_cq_bytes = (uint64_t)v << 20;
	else if (!strcmp(name, "cm_channel_kb"))
		c->cm_channel_bytes = (uint64_t)v << 10;
	else if (!strcmp(name, "qps"))
		c->eng_max_qp = v;
	else {
		st->err = "unknown key in [limits]";
		return 0;
	}
	return 1;
}

/* [gpu] */
static int on_gpu(struct conf_state *st, const char *name, const char *value)
{
	struct svc_conf *c = st->c;

	if (!strcmp(name, "gdrcopy")) {
		if (!strcmp(value, "auto")) {
			c->gdrcopy = true;
		} else if (!strcmp(value, "off")) {
			c->gdrcopy = false;
		} else {
			st->err = "gdrcopy: auto or off";
			return 0;
		}
	} else if (!strcmp(name, "gdrcopy_h2d_max") ||
		   !strcmp(name, "gdrcopy_d2h_max")) {
		uint32_t *max = strcmp(name, "gdrcopy_h2d_max") ?
					&c->gdrcopy_d2h_max :
					&c->gdrcopy_h2d_max;

		if (parse_u32(value, 0, OVR_GDR_BAR_MAX, max)) {
			st->err = "gdrcopy_h2d_max, gdrcopy_d2h_max: "
				  "0..1048576 bytes";
			return 0;
		}
	} else {
		st->err = "unknown key in [gpu] (gdrcopy, "
			  "gdrcopy_h2d_max, gdrcopy_d2h_max)";
		return 0;
	}
	return 1;
}

/* [tenant]: vni first, then vip and sg lines */
static int on_tenant(struct conf_state *st, const char *name, const char *value)
{
	struct svc_conf *c = st->c;

	if (!strcmp(name, "vni")) {
		uint32_t v;

		if (parse_u32(value, 1, OVR_VPC_VNI_MAX, &v)) {
			st->err = "vni: 1..16777215";
			return 0;
		}
		if (c->ntenants >= SVC_MAX_DEVS) {
			st->err = "too many tenants";
			return 0;
		}
		for (uint32_t i = 0; i < c->ntenants; i++)
			if (c->tenants[i] == v) {
				st->err = "vni: tenant defined twice";
				return 0;
			}
		c->tenants[c->ntenants++] = v;
		st->vni = (int32_t)v;
		return 1;
	}
	if (st->vni < 0) {
		st->err = "[tenant]: the first key must be vni";
		return 0;
	}
	if (!strcmp(name, "vip"))
		return parse_vip(st, value);
	if (!strcmp(name, "sg"))
		return parse_sg(st, value);
	st->err = "unknown key in [tenant] (vni, vip, sg)";
	return 0;
}

static int on_entry(void *user, const char *section, const char *name,
		    const char *value)
{
	struct conf_state *st = user;

	if (!name) /* section headers: checked and numbered by prepare() */
		return 1;
	if (strcmp(section, st->section)) {
		/* a new section ([tenant] headers are numbered apart) */
		snprintf(st->section, sizeof(st->section), "%s", section);
		st->vni = -1;
	}
	if (!strncmp(section, "tenant ", 7))
		section = "tenant";
	if (!strcmp(section, "service"))
		return on_service(st, name, value);
	if (!strcmp(section, "limits"))
		return on_limits(st, name, value);
	if (!strcmp(section, "gpu"))
		return on_gpu(st, name, value);
	return on_tenant(st, name, value);
}

/*
 * The file as inih will parse it, or NULL with *line and *why set. inih
 * cuts lines at INI_MAX_LINE bytes and parses the rest as a line of its
 * own, and (as Debian builds it) does not tell the handler where a
 * section starts: so long lines and unknown sections are refused here,
 * naming their line, and every [tenant] header becomes [tenant N] so that
 * two tenants' keys cannot run together.
 */
#define CONF_MAX (1u << 20)

static char *prepare(const char *path, int *line, const char **why)
{
	FILE *f = fopen(path, "r");
	char *in, *out, *p;
	size_t n, o = 0;
	unsigned int tenants = 0;

	*line = 0;
	if (!f)
		return NULL; /* errno says why */
	in = malloc(CONF_MAX + 1);
	out = malloc(CONF_MAX + 64 * 1024);
	n = in ? fread(in, 1, CONF_MAX + 1, f) : 0;
	fclose(f);
	if (!in || !out) {
		free(in);
		free(out);
		errno = ENOMEM;
		return NULL;
	}
	if (n > CONF_MAX) {
		*line = 1;
		*why = "file larger than 1 MB";
		goto bad;
	}
	in[n] = 0;
	for (p = in; *p;) {
		char *end = strchr(p, '\n'), *t = p, *close;
		size_t len = end ? (size_t)(end - p) : strlen(p);

		++*line;
		if (len >= INI_MAX_LINE - 1) {
			*why = "line too long (eal = may be repeated)";
			goto bad;
		}
		while (t < p + len && isspace((unsigned char)*t))
			t++;
		if (*t == '[') {
			close = memchr(t, ']', len - (size_t)(t - p));
			if (!close) {
				*why = "section header without ']'";
				goto bad;
			}
			*close = 0;
			if (!strcmp(t + 1, "tenant")) {
				if (o + 32 > CONF_MAX + 60 * 1024) {
					*why = "too many sections";
					goto bad;
				}
				o += (size_t)sprintf(out + o, "[tenant %u]\n",
						     ++tenants);
				p += len + (end ? 1 : 0);
				continue;
			}
			if (strcmp(t + 1, "service") &&
			    strcmp(t + 1, "limits") && strcmp(t + 1, "gpu")) {
				*why = "unknown section (service, limits, gpu, "
				       "tenant)";
				goto bad;
			}
			*close = ']';
		}
		memcpy(out + o, p, len);
		o += len;
		out[o++] = '\n';
		p += len + (end ? 1 : 0);
	}
	out[o] = 0;
	free(in);
	return out;
bad:
	free(in);
	free(out);
	return NULL;
}

int svc_conf_load(struct svc_conf *c, const char *path)
{
	struct conf_state st = { .c = c, .vni = -1 };
	const char *why = NULL;
	int line;
	char *text = prepare(path, &line, &why);

	if (!text && why) {
		fprintf(stderr, "ovrdmad: %s:%d: %s\n", path, line, why);
		return -1;
	}
	if (!text) {
		fprintf(stderr, "ovrdmad: %s: %s\n", path, strerror(errno));
		return -1;
	}
	line = ini_parse_string(text, on_entry, &st);
	free(text);
	if (line) {
		fprintf(stderr, "ovrdmad: %s:%d: %s\n", path, line,
			st.err ? st.err : "syntax error");
		return -1;
	}
	/* local vIPs name this host even if host= came after them */
	for (uint32_t i = 0; i < c->nvips; i++)
		if (c->vips[i].local)
			c->vips[i].host = c->host;
	return 0;
}
