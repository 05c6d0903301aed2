/*
 * acme.c - an example cartridge written against the C handler API and
 * loaded with dlopen; the test suite builds it as acme.so and
 * tests/test_cartridge.c drives it.
 *
 * It shows what the declarative form cannot say: a value computed from the
 * event (a pass/fail verdict from a score), a rejection with a domain
 * message, and operations that must not survive a rejection that follows
 * them. Two more handlers misbehave on purpose so the tests can check that
 * the library's limits hold for C handlers too.
 *
 * Build one like it with: cc -shared -fPIC -o acme.so acme.c
 * (no -lkeel: the keel_* functions come from the host that loads it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel.h"

int keel_cartridge_init(struct keel_cartridge *c);
void keel_cartridge_fini(struct keel_cartridge *c);

/* "widget:" + the widget id, into buf; 0 or the reject code. */
static int widget_subject(struct keel_ctx *ctx, const struct keel_event *ev, char *buf,
			  size_t size, size_t *len)
{
	struct keel_value id;
	if (keel_event_get(ev, "/data/widget_id", &id) != 0 ||
	    id.type != KEEL_VALUE_STRING)
		return keel_ctx_reject(ctx, "widget_id: missing or not a string");
	int n = snprintf(buf, size, "widget:%s", id.text);
	if (n < 0 || (size_t)n >= size)
		return keel_ctx_reject(ctx, "widget_id: too long");
	*len = (size_t)n;
	return 0;
}

/* acme.widget.made: entity, the spec object as a value, a link to its
 * factory, and the event's own id and tenant as facts. */
static int on_made(struct keel_ctx *ctx, const struct keel_event *ev, void *userdata)
{
	char subject[300], factory[300];
	size_t sl = 0;
	int rc = widget_subject(ctx, ev, subject, sizeof subject, &sl);
	if (rc)
		return rc;
	(void)userdata;
	struct keel_value spec, fac;
	if ((rc = keel_ctx_entity(ctx, subject, sl, "widget", 6)))
		return rc;
	if (keel_event_get(ev, "/data/spec", &spec) == 0 &&
	    (rc = keel_ctx_fact(ctx, subject, sl, "spec", 4, spec.json, spec.json_len)))
		return rc;
	if (keel_event_get(ev, "/data/factory", &fac) != 0)
		return keel_ctx_reject(ctx, "factory: missing");
	int n = snprintf(factory, sizeof factory, "factory:%s", fac.text);
	if (n < 0 || (size_t)n >= sizeof factory)
		return keel_ctx_reject(ctx, "factory: too long");
	if ((rc = keel_ctx_link(ctx, subject, sl, "made_in", 7, factory, (size_t)n)))
		return rc;
	char made_by[300];
	n = snprintf(made_by, sizeof made_by, "\"%s/%s\"", keel_event_tenant(ev),
		     keel_event_id(ev));
	return keel_ctx_fact(ctx, subject, sl, "made_by", 7, made_by, (size_t)n);
}

/* acme.widget.checked: a verdict computed from a number. */
static int on_checked(struct keel_ctx *ctx, const struct keel_event *ev, void *userdata)
{
	const int *pass_mark = userdata;
	char subject[300];
	size_t sl = 0;
	int rc = widget_subject(ctx, ev, subject, sizeof subject, &sl);
	if (rc)
		return rc;
	struct keel_value score;
	if (keel_event_get(ev, "/data/score", &score) != 0 ||
	    score.type != KEEL_VALUE_NUMBER)
		return keel_ctx_reject(ctx, "score: missing or not a number");
	bool pass = strtod(score.text, NULL) >= *pass_mark;
	return keel_ctx_fact(ctx, subject, sl, "passed", 6, pass ? "true" : "false",
			     pass ? 4 : 5);
}

/* acme.widget.scrapped: operations first, then maybe a rejection: none of
 * them may take effect when it rejects. */
static int on_scrapped(struct keel_ctx *ctx, const struct keel_event *ev, void *userdata)
{
	char subject[300];
	size_t sl = 0;
	(void)userdata;
	int rc = widget_subject(ctx, ev, subject, sizeof subject, &sl);
	if (rc)
		return rc;
	if ((rc = keel_ctx_unset(ctx, subject, sl, "spec", 4)) ||
	    (rc = keel_ctx_unlink(ctx, subject, sl, "made_in", 7, "factory:f1", 10)))
		return rc;
	struct keel_value reason;
	if (keel_event_get(ev, "/data/reason", &reason) != 0)
		return keel_ctx_reject(ctx, "a scrapped widget needs a reason");
	return keel_ctx_fact(ctx, subject, sl, "scrapped", 8, reason.json,
			     reason.json_len);
}

/* acme.bad.*: handlers that break the rules. */
static int on_bad_value(struct keel_ctx *ctx, const struct keel_event *ev, void *userdata)
{
	(void)ev;
	(void)userdata;
	return keel_ctx_fact(ctx, "widget:w1", 9, "spec", 4, "{oops", 5);
}

static int on_bad_code(struct keel_ctx *ctx, const struct keel_event *ev, void *userdata)
{
	(void)ev;
	(void)userdata;
	keel_ctx_entity(ctx, "widget:w1", 9, NULL, 0);
	return -5; /* no keel_ctx_reject: the library reports the code */
}

static int on_bad_utf8(struct keel_ctx *ctx, const struct keel_event *ev, void *userdata)
{
	(void)ev;
	(void)userdata;
	return keel_ctx_link(ctx, "widget:w1", 9, "made_in", 7, "factory:\xc3(", 10);
}

static int on_ignored_reject(struct keel_ctx *ctx, const struct keel_event *ev,
			     void *userdata)
{
	(void)ev;
	(void)userdata;
	/* Ignores the failure of the oversized subject and carries on: the
	 * event must still be rejected. */
	char big[256];
	memset(big, 'x', sizeof big);
	keel_ctx_entity(ctx, big, sizeof big, NULL, 0);
	keel_ctx_entity(ctx, "widget:w1", 9, NULL, 0);
	return 0;
}

static int pass_mark = 50;

int keel_cartridge_init(struct keel_cartridge *c)
{
	if (getenv("ACME_INIT_FAIL"))
		return -42;
	if (keel_cartridge_on(c, "acme.widget.made", on_made, NULL) ||
	    keel_cartridge_on(c, "acme.widget.checked", on_checked, &pass_mark) ||
	    keel_cartridge_on(c, "acme.widget.scrapped", on_scrapped, NULL) ||
	    keel_cartridge_on(c, "acme.bad.value", on_bad_value, NULL) ||
	    keel_cartridge_on(c, "acme.bad.code", on_bad_code, NULL) ||
	    keel_cartridge_on(c, "acme.bad.utf8", on_bad_utf8, NULL) ||
	    keel_cartridge_on(c, "acme.bad.ignored", on_ignored_reject, NULL))
		return -1;
	return 0;
}

/* Optional: called by keel_cartridge_free before the object is unloaded.
 * Here it leaves a mark the test can see. */
void keel_cartridge_fini(struct keel_cartridge *c)
{
	const char *path = getenv("ACME_FINI_FILE");
	FILE *f = path ? fopen(path, "w") : NULL;
	if (f) {
		fputs(keel_cartridge_name(c), f);
		fclose(f);
	}
}
