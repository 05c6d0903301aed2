/*
 * store_map.c - store maps (docs/log.md, "Store maps"): a text file, one
 * range a line,
 *
 *     # partitions  store
 *     0-3           mysql://keel:secret@db1:3306/keel
 *     4-7           mysql://keel:secret@db2:3306/keel
 *
 * a range being "LO-HI" or one partition "N", then blanks, then the
 * store's URL (the rest of the line). Blank lines and lines starting with
 * '#' are skipped. Several ranges may name one store. Together the ranges
 * must cover the log's partitions, each once (keel_store_map_check, when
 * the number of partitions is known).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel.h"
#include "store_map.h"

static size_t keel_store_map_url(struct keel_store_map *m, const char *url)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->urls[i], url) == 0)
			return i;
	m->urls = keel_xrealloc(m->urls, (m->n + 1) * sizeof *m->urls);
	m->urls[m->n] = keel_xstrdup(url);
	return m->n++;
}

static void keel_store_map_add(struct keel_store_map *m, uint32_t lo, uint32_t hi,
			       const char *url)
{
	m->ranges = keel_xrealloc(m->ranges, (m->nranges + 1) * sizeof *m->ranges);
	m->ranges[m->nranges++] = (struct keel_store_range){lo, hi, keel_store_map_url(m, url)};
}

int keel_store_map_one(const char *url, struct keel_store_map *m)
{
	memset(m, 0, sizeof *m);
	keel_store_map_add(m, 0, UINT32_MAX, url);
	return 0;
}

static bool keel_store_map_number(const char **p, uint32_t *out)
{
	const char *s = *p;
	if (*s < '0' || *s > '9')
		return false;
	unsigned long long v = 0;
	while (*s >= '0' && *s <= '9') {
		v = v * 10 + (unsigned)(*s++ - '0');
		if (v > KEEL_LOG_MAX_PARTITIONS)
			return false;
	}
	*out = (uint32_t)v;
	*p = s;
	return true;
}

int keel_store_map_read(const char *path, struct keel_store_map *m, struct keel_buf *err)
{
	memset(m, 0, sizeof *m);
	FILE *f = fopen(path, "r");
	if (!f) {
		keel_buf_addf(err, "store map \"%s\": %s", path, strerror(errno));
		return KEEL_EIO;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned lineno = 0;
	int rc = 0;
	while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' ||
				 line[n - 1] == ' ' || line[n - 1] == '\t'))
			line[--n] = '\0';
		const char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '#')
			continue;
		uint32_t lo, hi;
		bool ok = keel_store_map_number(&p, &lo);
		hi = lo;
		if (ok && *p == '-') {
			p++;
			ok = keel_store_map_number(&p, &hi) && hi >= lo;
		}
		if (!ok || (*p != ' ' && *p != '\t')) {
			keel_buf_addf(err,
				      "store map \"%s\" line %u: not a partition range (N or "
				      "LO-HI, from 0 to %d) followed by a store URL",
				      path, lineno, KEEL_LOG_MAX_PARTITIONS - 1);
			rc = KEEL_EINVAL;
			break;
		}
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p) {
			keel_buf_addf(err, "store map \"%s\" line %u: no store URL after the range",
				      path, lineno);
			rc = KEEL_EINVAL;
			break;
		}
		keel_store_map_add(m, lo, hi, p);
	}
	if (rc == 0 && ferror(f)) {
		keel_buf_addf(err, "store map \"%s\": %s", path, strerror(errno));
		rc = KEEL_EIO;
	}
	if (rc == 0 && m->nranges == 0) {
		keel_buf_addf(err, "store map \"%s\": no ranges", path);
		rc = KEEL_EINVAL;
	}
	free(line);
	fclose(f);
	if (rc)
		keel_store_map_free(m);
	return rc;
}

int keel_store_map_check(const struct keel_store_map *m, uint32_t partitions,
			 struct keel_buf *err)
{
	for (uint32_t p = 0; p < partitions; p++) {
		size_t covers = 0;
		for (size_t i = 0; i < m->nranges; i++)
			covers += p >= m->ranges[i].lo && p <= m->ranges[i].hi;
		if (covers != 1) {
			keel_buf_addf(err,
				      "store map: partition %u of %u is in %zu ranges: each "
				      "must be in exactly one",
				      (unsigned)p, (unsigned)partitions, covers);
			return KEEL_EINVAL;
		}
	}
	for (size_t i = 0; i < m->nranges; i++)
		if (m->ranges[i].hi != UINT32_MAX && m->ranges[i].hi >= partitions) {
			keel_buf_addf(err, "store map: range %u-%u passes the log's %u partitions",
				      (unsigned)m->ranges[i].lo, (unsigned)m->ranges[i].hi,
				      (unsigned)partitions);
			return KEEL_EINVAL;
		}
	return 0;
}

size_t keel_store_map_find(const struct keel_store_map *m, uint32_t p)
{
	for (size_t i = 0; i < m->nranges; i++)
		if (p >= m->ranges[i].lo && p <= m->ranges[i].hi)
			return m->ranges[i].url;
	return 0;
}

void keel_store_map_free(struct keel_store_map *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->urls[i]);
	free(m->urls);
	free(m->ranges);
	memset(m, 0, sizeof *m);
}
