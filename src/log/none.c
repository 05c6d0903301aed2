/*
 * none.c - the log's functions in a library built without NATS
 * (KEEL_WITH_NATS off): each says so. keel_log_partition is always built
 * (partition.c).
 */
#include <stdlib.h>

#include "keel.h"
#include "util.h"

#define KEEL_LOG_NONE "this keel was built without the NATS log (KEEL_WITH_NATS)"

static int keel_log_none(char **errmsg)
{
	if (errmsg)
		*errmsg = keel_xstrdup(KEEL_LOG_NONE);
	return KEEL_EINVAL;
}

int keel_log_create(const struct keel_log_options *o, char **report, char **errmsg)
{
	(void)o;
	if (report)
		*report = NULL;
	return keel_log_none(errmsg);
}

int keel_publisher_new(const struct keel_publish_options *o, struct keel_publisher **out,
		       char **errmsg)
{
	(void)o;
	*out = NULL;
	return keel_log_none(errmsg);
}

int keel_publisher_add(struct keel_publisher *p, const char *text, size_t len,
		       uint64_t position)
{
	(void)p, (void)text, (void)len, (void)position;
	return KEEL_EINVAL;
}

int keel_publisher_add_too_long(struct keel_publisher *p, uint64_t position,
				const char *head, size_t head_len)
{
	(void)p, (void)position, (void)head, (void)head_len;
	return KEEL_EINVAL;
}

int keel_publisher_flush(struct keel_publisher *p)
{
	(void)p;
	return KEEL_EINVAL;
}

const struct keel_publish_report *keel_publisher_report(struct keel_publisher *p)
{
	(void)p;
	static const struct keel_publish_report none;
	return &none;
}

const char *keel_publisher_errmsg(const struct keel_publisher *p)
{
	(void)p;
	return KEEL_LOG_NONE;
}

void keel_publisher_free(struct keel_publisher *p)
{
	(void)p;
}

int keel_consume(const struct keel_consume_options *o, char **errmsg)
{
	(void)o;
	return keel_log_none(errmsg);
}

int keel_consume_status(const struct keel_consume_options *o, bool prometheus, FILE *out,
			char **errmsg)
{
	(void)o, (void)prometheus, (void)out;
	return keel_log_none(errmsg);
}
