/*
 * forget.c - keel forget (docs/semantics.md, "Forgetting"): a subject
 * erased from a tenant, by construction the graph a replay would give,
 * without rebuilding the tenant.
 *
 * Rows are written once and never updated (valid_to and closed_by are
 * derived on read), so forgetting touches only what named the subject.
 * In one transaction:
 *  1. The events that may mention the subject are found by the store
 *     (forget_find): those that asserted a row naming it, those whose
 *     envelope holds its bytes (or an escape that may spell them), and,
 *     within the subject's span, those of the types whose entity
 *     operations the cartridge cannot show to come with a row or the
 *     subject's text (src/cartridge/rowless.c; every type of a C
 *     cartridge; a type whose entity operations are covered by rows,
 *     once redacted). Each is prepared as replay prepares it (prepare.c). An event mentions
 *     the subject when one of its operations names it (as subject or
 *     object, or as a fact's string value), or when a string of its
 *     envelope is the subject.
 *  2. Each such event is redacted: its attributes other than the
 *     CloudEvents context ones (id, source, specversion, type, time,
 *     tenant, datacontenttype, dataschema) and the fields of its data go,
 *     one by one, as long as the event's other operations - those that do
 *     not name the subject - stay exactly as they were. What is left is
 *     what other subjects need. The envelope gets "keelredacted": true,
 *     which makes a pointer its cartridge finds missing skip its operation
 *     instead of rejecting the event (src/cartridge/plan.c), so the operations that
 *     named the subject vanish when the event is replayed. The trials are
 *     replays of the one event: whatever the cartridge (declarative or C),
 *     what is kept is what its other operations read.
 *  3. The redacted envelopes are written over the logged ones (hashes
 *     kept). Since a redacted event's other operations come out exactly
 *     as before, a replay would give exactly the rows it gave, and none
 *     of the rows naming the subject: the store deletes those rows and
 *     every other row stays (forget_rows). What aggregates is mended:
 *     the mentions of another entity by an operation that named the
 *     subject go, so for each (entity, transaction) that lost one at
 *     the first or last time its mentions of that transaction span, the
 *     span is folded again from the entity's rows of the transaction
 *     and those of its events (redacted) that may mention it without a
 *     row (run through the cartridge); the store keeps what it derives from rows (SQLite's current rows
 *     and spans) right for the keys it deleted rows of. Then the
 *     tombstone is written.
 * After the commit the store makes the old bytes unreadable in its files
 * (keel_store_scrub).
 *
 * The subject's mentions the found events make are checked against the
 * ones stored, and when they differ (a store loaded from a dump, whose
 * entities carry no kind time) the whole log is read, as before.
 */
#include <stdlib.h>
#include <string.h>

#include "keel.h"
#include "event/json_write.h"
#include "event/envelope.h"
#include "store/tombstone.h"
#include "sha256.h"
#include "ingest.h"
#include "event/json.h"
#include "options.h"
#include "prepare.h"
#include "append.h"
#include "cartridge/cartridge.h"
#include "cartridge/tenant.h"
#include "store/store.h"
#include "util.h"

/* ------------------------------------------------------ the walk's state */

struct keel_forgetting {
	struct keel_str subject;
	struct keel_buf quoted; /* the subject as a JSON string */
	struct keel_prep prep;	/* the log's events, as replay prepares them */
	struct keel_prep trial; /* the redaction's trials */
	struct keel_report report, trial_report;
	struct keel_arena scratch, trial_arena;
	struct keel_json_doc doc;   /* the event being redacted */
	struct keel_ptrvec removed; /* const struct keel_json *: members gone */
	struct keel_buf keep, got;  /* the other operations, before and now */
	struct keel_buf text;	    /* a candidate redaction */
	uint64_t position;
	/* the redactions, their texts in out */
	struct keel_arena out;
	struct keel_redaction *r;
	size_t n, cap;
	int rc; /* a refusal, with why */
	struct keel_buf why;
	/* Mentions of other entities that redacted events no longer make
	 * (their text in out), and the subject's own mentions found. */
	struct keel_lost *lost;
	size_t nlost, lost_cap;
	struct keel_mention found;
	bool found_any;
};

/* A mention an operation that named the subject made of another entity,
 * which the redacted event no longer makes. */
struct keel_lost {
	struct keel_str subject;
	int64_t recorded_at, time;
};

static bool op_names(const struct keel_forgetting *f, const struct keel_op *op)
{
	if (keel_str_eq(op->subject, f->subject))
		return true;
	if ((op->kind == KEEL_OP_LINK || op->kind == KEEL_OP_UNLINK) &&
	    keel_str_eq(op->object, f->subject))
		return true;
	return op->kind == KEEL_OP_FACT && op->value.ptr &&
	       keel_str_eq(op->value, keel_str_make(f->quoted.data, f->quoted.len));
}

static void add_field(struct keel_buf *b, struct keel_str s)
{
	uint64_t n = s.ptr ? s.len : UINT64_MAX;
	keel_buf_add(b, &n, sizeof n);
	if (s.ptr)
		keel_buf_add(b, s.ptr, s.len);
}

/* The operations of ev (NULL: rejected, none) that do not name the
 * subject, written out for comparison; whether any does. */
static bool other_ops(const struct keel_forgetting *f, const struct keel_batch_event *ev,
		      struct keel_buf *out)
{
	bool names = false;
	keel_buf_reset(out);
	for (size_t i = 0; ev && i < ev->nops; i++) {
		const struct keel_op *op = &ev->ops[i];
		if (op_names(f, op)) {
			names = true;
			continue;
		}
		keel_buf_addc(out, (char)op->kind);
		add_field(out, op->subject);
		add_field(out, op->name);
		add_field(out, op->object);
		add_field(out, op->value);
	}
	return names;
}

/* Whether a string or a key anywhere in v is the subject. */
static bool has_string(const struct keel_forgetting *f, const struct keel_json *v)
{
	if (v->type == KEEL_JSON_STRING &&
	    keel_str_eq(keel_str_make(v->str, v->len), f->subject))
		return true;
	for (const struct keel_json *m = v->child; m; m = m->next) {
		if (m->key && keel_str_eq(keel_str_make(m->key, m->key_len), f->subject))
			return true;
		if (has_string(f, m))
			return true;
	}
	return false;
}

/* ---------------------------------------------------------- redaction */

/* The context attributes an envelope keeps (and data, which keeps what
 * other subjects need). */
static bool is_context(const struct keel_json *m)
{
	static const char *const keep[] = {
	    "id",     "source", "specversion",	   "type",	"time",
	    "tenant", "data",	"datacontenttype", "dataschema"};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(keep); i++)
		if (m->key_len == strlen(keep[i]) && !memcmp(m->key, keep[i], m->key_len))
			return true;
	return false;
}

static bool is_marker(const struct keel_json *m)
{
	return m->key_len == strlen(KEEL_REDACTED_ATTR) &&
	       !memcmp(m->key, KEEL_REDACTED_ATTR, m->key_len);
}

static bool is_removed(const struct keel_forgetting *f, const struct keel_json *m)
{
	for (size_t i = 0; i < f->removed.len; i++)
		if (f->removed.items[i] == m)
			return true;
	return false;
}

/* Writes obj without the removed members; the top level gets the marker
 * last. */
static void emit(struct keel_forgetting *f, const struct keel_json *obj, bool top)
{
	struct keel_buf *b = &f->text;
	bool first = true;
	keel_buf_addc(b, '{');
	for (const struct keel_json *m = obj->child; m; m = m->next) {
		if (is_removed(f, m) || (top && is_marker(m)))
			continue;
		if (!first)
			keel_buf_addc(b, ',');
		first = false;
		keel_buf_add_json_str(b, keel_str_make(m->key, m->key_len));
		keel_buf_addc(b, ':');
		if (m->type == KEEL_JSON_OBJECT)
			emit(f, m, false);
		else
			keel_json_compact(&f->doc, m, b);
	}
	if (top)
		keel_buf_adds(b, first ? "\"" KEEL_REDACTED_ATTR "\":true"
				       : ",\"" KEEL_REDACTED_ATTR "\":true");
	keel_buf_addc(b, '}');
}

/* The candidate's event as a replay would prepare it (NULL: rejected). */
static struct keel_batch_event *trial(struct keel_forgetting *f)
{
	keel_buf_reset(&f->text);
	emit(f, f->doc.root, true);
	keel_arena_reset(&f->trial_arena);
	return keel_prep_event(&f->trial, &f->trial_arena, f->text.data, f->text.len,
			       f->position);
}

/* Whether the candidate leaves the other operations as they were. */
static bool trial_keeps(struct keel_forgetting *f)
{
	struct keel_batch_event *ev = trial(f);
	other_ops(f, ev, &f->got);
	return f->got.len == f->keep.len &&
	       (!f->keep.len || !memcmp(f->got.data, f->keep.data, f->keep.len));
}

/* Removes what it can of obj's members, one at a time; an object that
 * cannot go whole loses what it can of its own members. */
static void redact_members(struct keel_forgetting *f, const struct keel_json *obj,
			   bool top)
{
	for (const struct keel_json *m = obj->child; m; m = m->next) {
		if (top && is_marker(m))
			continue;
		bool context = top && is_context(m);
		if (!context) {
			keel_ptrvec_push(&f->removed, (void *)(uintptr_t)m);
			if (trial_keeps(f))
				continue;
			f->removed.len--;
		}
		if (m->type == KEEL_JSON_OBJECT && (!context || !strcmp(m->key, "data")))
			redact_members(f, m, false);
	}
}

static int forget_refuse(struct keel_forgetting *f, const struct keel_record *r,
			 const char *what)
{
	keel_buf_reset(&f->why);
	keel_buf_addf(&f->why,
		      "event \"%.*s\" (source \"%.*s\") names subject \"%.*s\" %s",
		      (int)r->id.len, r->id.ptr, (int)r->source.len,
		      r->source.ptr ? r->source.ptr : "", (int)f->subject.len,
		      f->subject.ptr, what);
	f->rc = KEEL_EINVAL;
	return 1;
}

/* Whether one of ev's operations mentions subject (as keel_append_add_event
 * makes mentions: every operation its subject, a relation its object). */
static bool mentions(const struct keel_batch_event *ev, struct keel_str subject)
{
	for (size_t i = 0; ev && i < ev->nops; i++) {
		const struct keel_op *op = &ev->ops[i];
		if (keel_str_eq(op->subject, subject))
			return true;
		if ((op->kind == KEEL_OP_LINK || op->kind == KEEL_OP_UNLINK) &&
		    keel_str_eq(op->object, subject))
			return true;
	}
	return false;
}

static void lose(struct keel_forgetting *f, struct keel_str subject, const struct keel_record *r,
		 int64_t time)
{
	for (size_t i = 0; i < f->nlost; i++)
		if (f->lost[i].recorded_at == r->recorded_at && f->lost[i].time == time &&
		    keel_str_eq(f->lost[i].subject, subject))
			return;
	if (f->nlost == f->lost_cap) {
		f->lost_cap = f->lost_cap ? 2 * f->lost_cap : 64;
		f->lost = keel_xrealloc(f->lost, f->lost_cap * sizeof *f->lost);
	}
	f->lost[f->nlost++] = (struct keel_lost){
	    .subject = keel_arena_str(&f->out, subject),
	    .recorded_at = r->recorded_at,
	    .time = time};
}

/* What redacting ev (now: as redacted) changes in the mentions: the
 * subject's own, folded into found (to check that every event was found),
 * and each other entity that only the operations naming the subject
 * mentioned. */
static void note_mentions(struct keel_forgetting *f, const struct keel_record *r,
			  const struct keel_batch_event *ev, const struct keel_batch_event *now)
{
	for (size_t i = 0; ev && i < ev->nops; i++) {
		const struct keel_op *op = &ev->ops[i];
		struct keel_str who[2] = {op->subject, KEEL_STR_NULL};
		if (op->kind == KEEL_OP_LINK || op->kind == KEEL_OP_UNLINK)
			who[1] = op->object;
		for (int k = 0; k < 2 && who[k].ptr; k++) {
			if (keel_str_eq(who[k], f->subject)) {
				struct keel_str kind =
				    op->kind == KEEL_OP_ENTITY && k == 0 ? op->name : KEEL_STR_NULL;
				if (!f->found_any) {
					f->found = (struct keel_mention){.first_seen = ev->time,
									 .last_seen = ev->time};
					f->found_any = true;
				}
				keel_mention_fold(&f->found, ev->time, kind);
			} else if (op_names(f, op) && !mentions(now, who[k])) {
				lose(f, who[k], r, ev->time);
			}
		}
	}
}

static int forget_event(void *ud, const struct keel_record *r)
{
	struct keel_forgetting *f = ud;
	f->position++;
	keel_arena_reset(&f->scratch);
	struct keel_batch_event *ev = keel_prep_event(
	    &f->prep, &f->scratch, r->envelope.ptr, r->envelope.len, f->position);
	bool names = other_ops(f, ev, &f->keep);
	/* Most events neither name the subject nor hold its text: without an
	 * escape the text would be there verbatim, so they need no parse. */
	if (!names && !memchr(r->envelope.ptr, '\\', r->envelope.len) &&
	    !memmem(r->envelope.ptr, r->envelope.len, f->subject.ptr, f->subject.len))
		return 0;
	struct keel_json_error err;
	if (keel_json_parse(&f->doc, r->envelope.ptr, r->envelope.len, &err) != 0 ||
	    f->doc.root->type != KEEL_JSON_OBJECT)
		return 0; /* not an envelope: it cannot have been logged */
	if (!names && !has_string(f, f->doc.root))
		return 0;
	f->removed.len = 0;
	redact_members(f, f->doc.root, true);
	struct keel_batch_event *now = trial(f);
	struct keel_buf scratch;
	keel_buf_init(&scratch);
	bool still = other_ops(f, now, &scratch);
	keel_buf_free(&scratch);
	if (still)
		return forget_refuse(
		    f, r,
		    "through fields that other subjects' operations need "
		    "(or none at all): it cannot be redacted");
	note_mentions(f, r, ev, now);
	if (f->n == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 64;
		f->r = keel_xrealloc(f->r, f->cap * sizeof *f->r);
	}
	f->r[f->n].seq = r->seq;
	f->r[f->n].envelope =
	    keel_arena_str(&f->out, keel_str_make(f->text.data, f->text.len));
	f->n++;
	return 0;
}

static void forgetting_init(struct keel_forgetting *f, const struct keel_cartridge *c,
			    struct keel_str subject)
{
	memset(f, 0, sizeof *f);
	f->subject = subject;
	keel_buf_init(&f->quoted);
	keel_buf_add_json_str(&f->quoted, subject);
	keel_prep_init(&f->prep, c, &f->report);
	f->prep.position_word = "event";
	keel_prep_init(&f->trial, c, &f->trial_report);
	f->trial.position_word = "event";
	keel_arena_init(&f->scratch);
	keel_arena_init(&f->trial_arena);
	keel_arena_init(&f->out);
	keel_json_doc_init(&f->doc);
	keel_buf_init(&f->keep);
	keel_buf_init(&f->got);
	keel_buf_init(&f->text);
	keel_buf_init(&f->why);
}

static void forgetting_free(struct keel_forgetting *f)
{
	keel_buf_free(&f->quoted);
	keel_prep_free(&f->prep);
	keel_prep_free(&f->trial);
	keel_arena_free(&f->scratch);
	keel_arena_free(&f->trial_arena);
	keel_arena_free(&f->out);
	keel_json_doc_free(&f->doc);
	keel_ptrvec_free(&f->removed);
	keel_buf_free(&f->keep);
	keel_buf_free(&f->got);
	keel_buf_free(&f->text);
	keel_buf_free(&f->why);
	free(f->r);
	free(f->lost);
}

/* -------------------------------------------------- mending the mentions */

/* Whether the subject's mentions the found events make are the ones the
 * store holds: if not, an event was missed (see the top of the file). */
struct stored_entity {
	bool any;
	struct keel_buf kind;
	bool has_kind;
	int64_t kind_time, first_seen, last_seen;
};

static int stored_entity_fn(void *ud, const struct keel_record *r)
{
	struct stored_entity *e = ud;
	e->any = true;
	e->has_kind = r->kind.ptr != NULL;
	keel_buf_reset(&e->kind);
	if (r->kind.ptr)
		keel_buf_add(&e->kind, r->kind.ptr, r->kind.len);
	e->kind_time = r->kind_time;
	e->first_seen = r->first_seen;
	e->last_seen = r->last_seen;
	return 0;
}

/* The entity subject as its mentions recorded at `recorded` (or all of
 * them) make it. */
static int stored_entity(struct keel_store *s, struct keel_str tenant, struct keel_str subject,
			 bool recorded_set, int64_t recorded, struct stored_entity *e)
{
	e->any = false;
	struct keel_scan q = {.type = KEEL_REC_ENTITY,
			      .tenant = tenant,
			      .subject = subject,
			      .recorded_set = recorded_set,
			      .recorded = recorded};
	return keel_store_scan(s, &q, stored_entity_fn, e);
}

static bool found_all(struct keel_forgetting *f, const struct stored_entity *e)
{
	if (!e->any)
		return !f->found_any;
	if (!f->found_any || e->first_seen != f->found.first_seen ||
	    e->last_seen != f->found.last_seen || e->has_kind != (f->found.kind.ptr != NULL))
		return false;
	return !e->has_kind ||
	       (e->kind_time == f->found.kind_time &&
		keel_str_eq(keel_str_make(e->kind.data, e->kind.len), f->found.kind));
}

static int cmp_lost(const void *pa, const void *pb)
{
	const struct keel_lost *a = pa, *b = pb;
	if (a->recorded_at != b->recorded_at)
		return a->recorded_at < b->recorded_at ? -1 : 1;
	int c = keel_str_cmp(a->subject, b->subject);
	if (c)
		return c;
	return a->time < b->time ? -1 : a->time > b->time;
}

/* The cartridge's event types whose events may mention an entity that no
 * row they assert names (keel_cartridge_rowless), with how; and those
 * forget_find reads within the subject's span: the events of `always`
 * types, and of `redacted` types once redacted. The types live in the
 * cartridge. */
struct rowless_types {
	struct keel_str *types;
	unsigned *how;
	size_t n;
	struct keel_str *always, *redacted;
	size_t nalways, nredacted;
};

static void push_type(struct keel_str **v, size_t *n, struct keel_str type)
{
	*v = keel_xrealloc(*v, (*n + 1) * sizeof **v);
	(*v)[(*n)++] = type;
}

static void rowless_type(void *ud, struct keel_str type, unsigned how)
{
	struct rowless_types *r = ud;
	r->how = keel_xrealloc(r->how, (r->n + 1) * sizeof *r->how);
	r->how[r->n] = how;
	push_type(&r->types, &r->n, type);
	if (how & KEEL_ROWLESS_HIDDEN)
		push_type(&r->always, &r->nalways, type);
	else if (how & KEEL_ROWLESS_REDACTED)
		push_type(&r->redacted, &r->nredacted, type);
}

static void rowless_types_free(struct rowless_types *r)
{
	free(r->types);
	free(r->how);
	free(r->always);
	free(r->redacted);
}

/* Whether an event of this type and envelope may mention an entity that no
 * row it asserts names. */
static bool rowless_event(const struct rowless_types *r, const struct keel_record *ev)
{
	static const char marker[] = KEEL_REDACTED_ATTR;
	for (size_t i = 0; i < r->n; i++) {
		if (!keel_str_eq(r->types[i], ev->event_type))
			continue;
		if (r->how[i] & (KEEL_ROWLESS_HIDDEN | KEEL_ROWLESS_UNROWED))
			return true;
		return memmem(ev->envelope.ptr, ev->envelope.len, marker, sizeof marker - 1);
	}
	return false;
}

/* The entities of one transaction whose span is folded again from its
 * events. */
struct refold {
	struct keel_forgetting *f;
	const struct rowless_types *types;
	struct keel_mention_fix *fix; /* subject, recorded_at set; gone until seen */
	size_t n;
};

static void refold_at(struct keel_mention_fix *x, int64_t t)
{
	if (x->gone || t < x->first_seen)
		x->first_seen = t;
	if (x->gone || t > x->last_seen)
		x->last_seen = t;
	x->gone = false;
}

/* A row of an entity being mended: unless it names the forgotten subject
 * (deleted after the mend), its event still mentions the entity. */
static int refold_row(void *ud, const struct keel_record *r)
{
	struct refold *g = ud;
	struct keel_forgetting *f = g->f;
	if (keel_str_eq(r->subject, f->subject) ||
	    (r->type == KEEL_REC_RELATION && keel_str_eq(r->object, f->subject)) ||
	    (r->type == KEEL_REC_FACT && r->value.ptr &&
	     keel_str_eq(r->value, keel_str_make(f->quoted.data, f->quoted.len))))
		return 0;
	for (size_t j = 0; j < g->n; j++)
		if (g->fix[j].recorded_at == r->recorded_at &&
		    (keel_str_eq(g->fix[j].subject, r->subject) ||
		     (r->type == KEEL_REC_RELATION && keel_str_eq(g->fix[j].subject, r->object))))
			refold_at(&g->fix[j], r->valid_from);
	return 0;
}

/* An event of a transaction being mended: only one that may mention an
 * entity without a row is run through the cartridge (the rows gave the
 * others' mentions). */
static int refold_event(void *ud, const struct keel_record *r)
{
	struct refold *g = ud;
	struct keel_forgetting *f = g->f;
	if (!rowless_event(g->types, r))
		return 0;
	keel_arena_reset(&f->scratch);
	struct keel_batch_event *ev =
	    keel_prep_event(&f->prep, &f->scratch, r->envelope.ptr, r->envelope.len, 0);
	for (size_t i = 0; ev && i < ev->nops; i++) {
		const struct keel_op *op = &ev->ops[i];
		struct keel_str who[2] = {op->subject, KEEL_STR_NULL};
		if (op->kind == KEEL_OP_LINK || op->kind == KEEL_OP_UNLINK)
			who[1] = op->object;
		for (int k = 0; k < 2 && who[k].ptr; k++)
			for (size_t j = 0; j < g->n; j++)
				if (keel_str_eq(g->fix[j].subject, who[k]))
					refold_at(&g->fix[j], ev->time);
	}
	return 0;
}

/* The mentions to mend: of each (entity, transaction) that lost a
 * mention at the first or last time its mentions of the transaction
 * span, the span folded again from what still mentions it there: the
 * entity's rows of the transaction that do not name the subject (every
 * operation but an entity one asserts a row, rowless.c) and, of the
 * transaction's events, those that may mention it without a row (the
 * redacted envelopes are written by now), run through the cartridge. In
 * *fix, malloc'd. */
static int mend_mentions(struct keel_store *s, struct keel_str tenant,
			 struct keel_forgetting *f, const struct rowless_types *types,
			 struct keel_mention_fix **fix, size_t *nfix)
{
	*fix = NULL;
	*nfix = 0;
	if (!f->nlost)
		return 0;
	qsort(f->lost, f->nlost, sizeof *f->lost, cmp_lost);
	struct stored_entity e = {0};
	keel_buf_init(&e.kind);
	size_t cap = 0;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < f->nlost;) {
		size_t j = i;
		bool edge = false;
		if ((rc = stored_entity(s, tenant, f->lost[i].subject, true, f->lost[i].recorded_at,
					&e)))
			break;
		for (; j < f->nlost && f->lost[j].recorded_at == f->lost[i].recorded_at &&
		       keel_str_eq(f->lost[j].subject, f->lost[i].subject);
		     j++)
			edge |= e.any && (f->lost[j].time <= e.first_seen ||
					  f->lost[j].time >= e.last_seen);
		if (edge) {
			if (*nfix == cap) {
				cap = cap ? 2 * cap : 16;
				*fix = keel_xrealloc(*fix, cap * sizeof **fix);
			}
			(*fix)[(*nfix)++] = (struct keel_mention_fix){
			    .subject = f->lost[i].subject,
			    .recorded_at = f->lost[i].recorded_at,
			    .gone = true};
		}
		i = j;
	}
	keel_buf_free(&e.kind);
	/* One read of each entity's rows for all its transactions. */
	struct refold all = {.f = f, .types = types, .fix = *fix, .n = *nfix};
	for (size_t i = 0; rc == 0 && i < *nfix; i++) {
		bool seen = false;
		for (size_t j = 0; !seen && j < i; j++)
			seen = keel_str_eq((*fix)[j].subject, (*fix)[i].subject);
		if (seen)
			continue;
		const struct keel_scan q[] = {
		    {.type = KEEL_REC_FACT, .tenant = tenant, .subject = (*fix)[i].subject,
		     .raw = true},
		    {.type = KEEL_REC_RELATION, .tenant = tenant, .subject = (*fix)[i].subject,
		     .raw = true},
		    {.type = KEEL_REC_RELATION, .tenant = tenant, .object = (*fix)[i].subject,
		     .raw = true},
		};
		for (size_t k = 0; rc == 0 && k < KEEL_ARRAY_LEN(q); k++)
			rc = keel_store_scan(s, &q[k], refold_row, &all);
	}
	/* One read of each transaction's events for all its entities, when
	 * the cartridge has types that may mention one without a row. */
	for (size_t i = 0; rc == 0 && types->n && i < *nfix;) {
		size_t j = i;
		while (j < *nfix && (*fix)[j].recorded_at == (*fix)[i].recorded_at)
			j++;
		struct refold g = {.f = f, .types = types, .fix = *fix + i, .n = j - i};
		struct keel_scan q = {.type = KEEL_REC_EVENT,
				      .tenant = tenant,
				      .recorded_set = true,
				      .recorded = (*fix)[i].recorded_at};
		rc = keel_store_scan(s, &q, refold_event, &g);
		i = j;
	}
	return rc;
}

/* ---------------------------------------------------------------- forget */

/* The tombstone's rows_removed is the fact and relation rows deleted
 * (forget_rows counts them) and the entities gone: the subject, and each
 * other entity whose last mention a mend took away, counted here rather
 * than by counting the tenant's rows before and after (a scan of them). */
static int count_gone(struct keel_store *s, struct keel_str tenant,
		      const struct keel_mention_fix *fix, size_t nfix, uint64_t *gone)
{
	struct stored_entity e = {0};
	keel_buf_init(&e.kind);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < nfix; i++) {
		bool seen = !fix[i].gone;
		for (size_t j = 0; !seen && j < i; j++)
			seen = fix[j].gone && keel_str_eq(fix[j].subject, fix[i].subject);
		if (seen)
			continue;
		rc = stored_entity(s, tenant, fix[i].subject, false, 0, &e);
		if (rc == 0 && !e.any)
			(*gone)++;
	}
	keel_buf_free(&e.kind);
	return rc;
}

/* A given cartridge other than the tenant's recorded one would find the
 * subject in no event: refuse it as ingest and replay do, naming both. */
static int forget_refuses_another(struct keel_store *s, const char *tenant,
				  const struct keel_cartridge *c)
{
	struct keel_arena hold;
	keel_arena_init(&hold);
	struct keel_cartridge_record r;
	int rc = keel_store_cartridge_get(s, keel_str_cstr(tenant), &r, &hold);
	if (rc == KEEL_ENOTFOUND)
		rc = 0; /* none recorded (a migrated store): the given one runs */
	else if (rc == 0 && !keel_tc_matches(c, &r)) {
		struct keel_buf why;
		keel_buf_init(&why);
		keel_tc_describe_other(&why, keel_str_cstr(tenant), &r, c);
		rc = keel_store_fail(s, KEEL_ECARTRIDGE, "%s", why.data);
		keel_buf_free(&why);
	}
	keel_arena_free(&hold);
	return rc;
}

int keel_forget(struct keel_store *s, const char *tenant, const char *subject,
		const struct keel_forget_options *given, struct keel_forget_report *out)
{
	if (!s || !out)
		return KEEL_EINVAL;
	memset(out, 0, sizeof *out);
	if (!tenant || !subject || !given)
		return keel_store_fail(s, KEEL_EINVAL,
				       "keel_forget: tenant, subject and "
				       "options are required");
	struct keel_forget_options o;
	const char *why = keel_options_copy(&o, sizeof o, given);
	if (why)
		return keel_store_fail(s, KEEL_EINVAL, "keel_forget_options: %s", why);
	if (!o.by || !*o.by)
		return keel_store_fail(s, KEEL_EINVAL, "keel_forget_options: by is required");
	/* No cartridge: the tenant's recorded one, as every other path
	 * (docs/cartridges.md, "The recorded cartridge"); a given one that is
	 * not the recorded one is refused before the log is read with it. */
	/* A tenant the store does not know: every command's answer. */
	int known = keel_store_tenant_known(s, keel_str_cstr(tenant), KEEL_TIME_INF);
	if (known)
		return known;
	struct keel_cartridge *recorded = NULL;
	if (!o.cartridge) {
		int rc = keel_cartridge_recorded(s, tenant, &recorded);
		uint64_t counts[4] = {0};
		if (rc == KEEL_ENOTFOUND &&
		    keel_store_counts(s, keel_str_cstr(tenant), KEEL_TIME_INF, counts) == 0 &&
		    counts[3])
			rc = keel_store_fail(s, KEEL_ECARTRIDGE,
					     "tenant \"%s\" has no recorded cartridge: name "
					     "one with --cartridge",
					     tenant);
		if (rc)
			return rc;
		o.cartridge = recorded;
	} else {
		int rc = forget_refuses_another(s, tenant, o.cartridge);
		if (rc)
			return rc;
	}
	struct keel_str t = keel_str_cstr(tenant);
	struct keel_forgetting f;
	forgetting_init(&f, o.cartridge, keel_str_cstr(subject));
	uint64_t removed = 0;
	struct keel_mention_fix *fix = NULL;
	size_t nfix = 0;
	struct keel_str quoted = keel_str_make(f.quoted.data, f.quoted.len);

	int rc = keel_store_begin(s);
	/* The subject's mentions: where an entity operation alone may have
	 * named it (struct rowless_types). */
	struct stored_entity e = {0};
	keel_buf_init(&e.kind);
	struct rowless_types types = {0};
	keel_cartridge_rowless(o.cartridge, rowless_type, &types);
	if (rc == 0)
		rc = stored_entity(s, t, f.subject, false, 0, &e);
	/* Without mentions of the subject, nothing named it without a row. */
	struct keel_forget_find find = {.subject = f.subject,
					.quoted = quoted,
					.always = types.always,
					.nalways = e.any ? types.nalways : 0,
					.redacted = types.redacted,
					.nredacted = e.any ? types.nredacted : 0,
					.from = e.first_seen,
					.to = e.last_seen};
	if (rc == 0)
		rc = keel_store_forget_find(s, t, &find, forget_event, &f);
	if (rc == 0 && !f.rc) {
		/* Every event that mentions the subject found? Else read the
		 * whole log, as a rebuild would: a safety net, which a store
		 * loaded from a dump (whose entities carry no kind time) may
		 * need. */
		if (!found_all(&f, &e)) {
			f.n = 0;
			f.nlost = 0;
			f.found_any = false;
			f.position = 0;
			keel_arena_reset(&f.out);
			struct keel_scan q = {.type = KEEL_REC_EVENT, .tenant = t};
			rc = keel_store_scan(s, &q, forget_event, &f);
		}
	}
	keel_buf_free(&e.kind);
	if (rc == 1 || (rc == 0 && f.rc))
		rc = keel_store_fail(s, f.rc, "%s", f.why.data);
	if (rc == 0 && f.n == 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "nothing in tenant \"%s\" names subject \"%s\"",
			 tenant, subject);
		rc = keel_forgotten_or(s, tenant, subject, msg);
	}
	if (rc == 0)
		rc = keel_store_forget(s, t, f.r, f.n, NULL);
	if (rc == 0)
		rc = mend_mentions(s, t, &f, &types, &fix, &nfix);
	if (rc == 0)
		rc = keel_store_forget_rows(s, t, f.subject, quoted, fix, nfix, &removed);
	uint64_t entities_gone = e.any ? 1 : 0;
	if (rc == 0)
		rc = count_gone(s, t, fix, nfix, &entities_gone);
	struct keel_tombstone tomb = {.tenant = t};
	if (rc == 0) {
		keel_subject_sha256(f.subject, tomb.subject_hash);
		tomb.forgotten_at = keel_store_recorded_at(s);
		tomb.forgotten_by = keel_str_cstr(o.by);
		tomb.events = f.n;
		tomb.rows = removed + entities_gone;
		rc = keel_store_forget(s, t, NULL, 0, &tomb);
	}
	if (rc == 0)
		rc = keel_store_commit(s);
	if (rc) {
		if (s->in_tx)
			keel_store_rollback(s);
		goto done;
	}
	out->events = tomb.events;
	out->rows = tomb.rows;
	out->forgotten_at = tomb.forgotten_at;
	memcpy(out->subject_sha256, tomb.subject_hash, sizeof out->subject_sha256);
	rc = keel_store_scrub(s);
done:
	rowless_types_free(&types);
	free(fix);
	forgetting_free(&f);
	keel_cartridge_free(recorded);
	return rc;
}
