/*
 * prepare.c - see prepare.h. Messages are built here once: the rule from
 * the parser, the envelope or the cartridge, prefixed with the position
 * and, where the event had a valid id, the id.
 */
#include "prepare.h"
#include "event/json_write.h"

#include <stdlib.h>
#include <string.h>

#include "cartridge/cartridge.h"
#include "event/envelope.h"
#include "cartridge/tenant.h"

void keel_prep_init(struct keel_prep *p, const struct keel_cartridge *c,
		    struct keel_report *report)
{
	memset(p, 0, sizeof *p);
	p->cartridge = c;
	p->position_word = "line";
	p->report = report;
	keel_json_doc_init(&p->doc);
	keel_buf_init(&p->msg);
}

void keel_prep_free(struct keel_prep *p)
{
	keel_json_doc_free(&p->doc);
	keel_buf_free(&p->msg);
}

/* Reports a rejection: p->msg holds the rule. */
static void keel_prep_reject(struct keel_prep *p, uint64_t position, struct keel_str id,
			     const char *input, size_t input_len)
{
	p->report->rejected++;
	if (!p->on_reject)
		return;
	struct keel_buf full;
	keel_buf_init(&full);
	keel_buf_addf(&full, "%s %llu: ", p->position_word, (unsigned long long)position);
	char *id_copy = NULL;
	if (id.ptr) {
		keel_buf_adds(&full, "event ");
		keel_buf_add_json_str(&full, id);
		keel_buf_adds(&full, ": ");
		id_copy = keel_xstrndup(id.ptr, id.len);
	}
	keel_buf_add(&full, p->msg.data, p->msg.len);
	if (p->max_line && input_len > p->max_line)
		input_len = p->max_line;
	p->on_reject(p->reject_userdata, position, id_copy, full.data, input, input_len);
	free(id_copy);
	keel_buf_free(&full);
}

void keel_prep_conflict(struct keel_prep *p, const struct keel_batch_event *ev,
			bool first_known, uint64_t first_position, int64_t stored_seq)
{
	if (!p->on_conflict)
		return;
	const char *word = p->position_word;
	struct keel_buf m;
	keel_buf_init(&m);
	keel_buf_addf(&m, "%s %llu: event ", word, (unsigned long long)ev->position);
	keel_buf_add_json_str(&m, ev->id);
	if (ev->source.len) {
		keel_buf_adds(&m, " from ");
		keel_buf_add_json_str(&m, ev->source);
	}
	keel_buf_adds(&m, ": conflicting duplicate: its envelope differs from that of ");
	if (first_known)
		keel_buf_addf(&m, "%s %llu", word, (unsigned long long)first_position);
	else
		keel_buf_addf(&m, "the event already in the store (seq %lld)",
			      (long long)stored_seq);
	char *source = keel_xstrndup(ev->source.ptr, ev->source.len);
	char *id = keel_xstrndup(ev->id.ptr, ev->id.len);
	p->on_conflict(p->conflict_userdata, ev->position, source, id, m.data,
		       ev->envelope.ptr, ev->envelope.len);
	free(source);
	free(id);
	keel_buf_free(&m);
}

void keel_prep_too_long(struct keel_prep *p, uint64_t position, const char *head,
			size_t head_len)
{
	p->report->read++;
	p->refused = 0;
	keel_buf_reset(&p->msg);
	keel_buf_addf(&p->msg, "line longer than the maximum of %zu bytes", p->max_line);
	keel_prep_reject(p, position, KEEL_STR_NULL, head, head_len);
}

/* The document compacted straight into the arena: compaction never
 * lengthens the text, so raw_len + 1 bytes hold it (a document written
 * without blanks, the usual case, is one copy). */
static struct keel_str keel_prep_compact(const struct keel_json_doc *doc,
					 struct keel_arena *a)
{
	const struct keel_json *root = doc->root;
	struct keel_buf b = {keel_arena_alloc(a, root->raw_len + 1), 0,
			     root->raw_len + 1};
	keel_json_compact(doc, root, &b);
	return keel_str_make(b.data, b.len);
}

/* An envelope field of the event: a view into its compacted envelope when
 * it is written there verbatim (a document without blanks is its own
 * compaction, so the text's offsets hold), else a copy. Either way it
 * lives in the arena; a view is not NUL-terminated. */
static struct keel_str keel_prep_field(const struct keel_json_doc *doc,
				       struct keel_str envelope, struct keel_str v,
				       size_t at, struct keel_arena *a)
{
	if (doc->compact && at != SIZE_MAX)
		return keel_str_make(envelope.ptr + (at - doc->root->raw_off), v.len);
	return keel_arena_str(a, v);
}

/* Runs the event's cartridge: false when it was rejected or refused
 * (reported), else its operations are in ev. */
static bool keel_prep_run(struct keel_prep *p, struct keel_batch_event *ev,
			  const struct keel_envelope *env, struct keel_arena *a,
			  const char *text, size_t len, uint64_t position)
{
	const struct keel_cartridge *c = p->cartridge;
	if (p->tenants) {
		int rc = keel_tc_resolve(p->tenants, env->tenant, &c, &p->msg);
		if (rc) {
			p->refused = rc;
			if (rc == KEEL_ECARTRIDGE)
				keel_prep_reject(p, position, env->id, text, len);
			return false;
		}
	}
	enum keel_run_result run =
	    keel_cartridge_run(c, &p->doc, env, a, &ev->ops, &ev->nops, &p->msg);
	if (run == KEEL_RUN_REJECTED) {
		keel_prep_reject(p, position, env->id, text, len);
		return false;
	}
	ev->unhandled = run == KEEL_RUN_UNHANDLED;
	return true;
}

struct keel_batch_event *keel_prep_event(struct keel_prep *p, struct keel_arena *a,
					 const char *text, size_t len, uint64_t position)
{
	p->refused = 0;
	if (p->max_line && len > p->max_line) {
		keel_prep_too_long(p, position, text, p->max_line);
		return NULL;
	}
	p->report->read++;
	keel_buf_reset(&p->msg);
	struct keel_json_error jerr;
	if (keel_json_parse(&p->doc, text, len, &jerr) != 0) {
		keel_buf_addf(&p->msg, "invalid JSON at byte %zu: %s", jerr.offset, jerr.msg);
		keel_prep_reject(p, position, KEEL_STR_NULL, text, len);
		return NULL;
	}
	struct keel_envelope env;
	if (keel_envelope_read(&p->doc, &env, &p->msg) != 0) {
		keel_prep_reject(p, position, env.id, text, len);
		return NULL;
	}
	struct keel_batch_event *ev = keel_arena_alloc(a, sizeof *ev);
	memset(ev, 0, sizeof *ev);
	/* Compacted first: the operations' values can then point into it. */
	ev->envelope = keel_prep_compact(&p->doc, a);
	if (p->max_envelope && ev->envelope.len > p->max_envelope) {
		keel_buf_addf(&p->msg,
			      "envelope of %zu bytes (compacted) is longer than the %s "
			      "takes: at most %zu bytes (%s)",
			      ev->envelope.len,
			      p->max_envelope_holder ? p->max_envelope_holder : "store",
			      p->max_envelope,
			      p->max_envelope_why ? p->max_envelope_why : "its limit");
		keel_prep_reject(p, position, env.id, text, len);
		return NULL;
	}
	if (p->doc.compact)
		env.copy = ev->envelope.ptr;
	if (!p->envelope_only && !keel_prep_run(p, ev, &env, a, text, len, position))
		return NULL;
	ev->tenant = keel_prep_field(&p->doc, ev->envelope, env.tenant, env.tenant_at, a);
	ev->id = keel_prep_field(&p->doc, ev->envelope, env.id, env.id_at, a);
	ev->source = env.source.len ? keel_prep_field(&p->doc, ev->envelope, env.source,
						      env.source_at, a)
				    : env.source;
	ev->type = keel_prep_field(&p->doc, ev->envelope, env.type, env.type_at, a);
	ev->time = env.time;
	ev->position = position;
	if (!p->defer_hash)
		ev->hash = keel_hash64(ev->envelope.ptr, ev->envelope.len, 0);
	return ev;
}
