/*
 * partition.c - a tenant's partition, and the names Keel gives a log's
 * parts (docs/log.md, "Partitions" and "Names"). Everything here is
 * documented for producers that are not Keel: changing any of it
 * changes where their events go.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"

uint32_t keel_log_partition(const char *tenant, size_t len, uint32_t partitions)
{
	/* FNV-1a, 32 bits: simple enough to write in any language from its
	 * two constants, and it spreads short similar names well. */
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)tenant[i];
		h *= 16777619u;
	}
	return partitions ? h % partitions : 0;
}

bool keel_log_name_ok(const char *stream)
{
	size_t n = stream ? strlen(stream) : 0;
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = stream[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return false;
	}
	return true;
}

void keel_log_stream_name(struct keel_buf *b, const char *stream, uint32_t p)
{
	keel_buf_reset(b);
	keel_buf_addf(b, "%s-%u", stream, (unsigned)p);
}

void keel_log_subject(struct keel_buf *b, const char *stream, uint32_t p)
{
	keel_buf_reset(b);
	keel_buf_addf(b, "%s.%u", stream, (unsigned)p);
}

void keel_log_bucket(struct keel_buf *b, const char *stream)
{
	keel_buf_reset(b);
	keel_buf_addf(b, "%s-leases", stream);
}

#define KEEL_LOG_DESCRIPTION "keel log %s: partition %u of %u"

void keel_log_description(struct keel_buf *b, const char *stream, uint32_t p,
			  uint32_t partitions)
{
	keel_buf_reset(b);
	keel_buf_addf(b, KEEL_LOG_DESCRIPTION " (tenant: fnv-1a 32 mod %u)", stream,
		      (unsigned)p, (unsigned)partitions, (unsigned)partitions);
}

bool keel_log_description_parse(const char *desc, uint32_t *p, uint32_t *partitions)
{
	if (!desc || strncmp(desc, "keel log ", 9) != 0)
		return false;
	const char *at = strstr(desc, ": partition ");
	unsigned a, b;
	if (!at || sscanf(at, ": partition %u of %u", &a, &b) != 2 || b == 0 ||
	    b > KEEL_LOG_MAX_PARTITIONS || a >= b)
		return false;
	*p = a;
	*partitions = b;
	return true;
}

static void keel_log_pct(struct keel_buf *b, struct keel_str s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (size_t i = 0; i < s.len; i++) {
		unsigned char c = (unsigned char)s.ptr[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			keel_buf_addc(b, (char)c);
		} else {
			keel_buf_addc(b, '%');
			keel_buf_addc(b, hex[c >> 4]);
			keel_buf_addc(b, hex[c & 15]);
		}
	}
}

void keel_log_msg_id(struct keel_buf *b, struct keel_str tenant, struct keel_str source,
		     struct keel_str id)
{
	keel_buf_reset(b);
	keel_log_pct(b, tenant);
	keel_buf_addc(b, '/');
	keel_log_pct(b, source);
	keel_buf_addc(b, '/');
	keel_log_pct(b, id);
}
