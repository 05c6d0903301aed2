/*
 * store.c - the registry of backends and the wrappers the library calls.
 *
 * Backends are looked up by URL scheme in one const table. Every call goes
 * through a wrapper here so that transaction state is checked in one place,
 * and every question about a backend (does it keep its state in the handle,
 * take concurrent writers, hash on demand) is answered here, so that no
 * code outside src/store/ knows which backend it holds.
 */
#include "store.h"

#include "derive.h"

#include <stdlib.h>
#include <string.h>

/* The default store, when neither a URL nor KEEL_STORE names one. */
#define KEEL_STORE_DEFAULT_URL "sqlite:keel.db"

/* The registry: one line per backend (docs/architecture.md, "A new
 * store"), in the order the unknown-scheme message lists them. */
static const struct keel_store_ops *const keel_backends[] = {
	&keel_store_memory_ops,
	&keel_store_sqlite_ops,
#ifdef KEEL_WITH_MYSQL
	&keel_store_mysql_ops,
#endif
#ifdef KEEL_WITH_POSTGRES
	&keel_store_postgres_ops,
#endif
};

static const char *const keel_errnames[] = {
#define KEEL_XX(name, num, msg) [-(num)] = "KEEL_E" #name,
	KEEL_ERRNO_MAP(KEEL_XX)
#undef KEEL_XX
};
static const char *const keel_errmsgs[] = {
#define KEEL_XX(name, num, msg) [-(num)] = msg,
	KEEL_ERRNO_MAP(KEEL_XX)
#undef KEEL_XX
};

const char *keel_err_name(int code)
{
	if (code == 0)
		return "KEEL_OK";
	if (code < 0 && (size_t)-code < KEEL_ARRAY_LEN(keel_errnames) && keel_errnames[-code])
		return keel_errnames[-code];
	return "KEEL_EUNKNOWN";
}

const char *keel_strerror(int code)
{
	if (code == 0)
		return "success";
	if (code < 0 && (size_t)-code < KEEL_ARRAY_LEN(keel_errmsgs) && keel_errmsgs[-code])
		return keel_errmsgs[-code];
	return "unknown error";
}

void keel_store_base_init(struct keel_store *s, const struct keel_store_ops *ops,
			  const char *url)
{
	s->ops = ops;
	keel_buf_init(&s->errmsg);
	s->statements = 0;
	s->in_tx = false;
	s->max_envelope = 0;
	s->max_envelope_why = NULL;
	s->state_in_handle = false;
	s->recorded_floor = 0;
	s->url = keel_xstrdup(url);
}

void keel_store_base_free(struct keel_store *s)
{
	keel_buf_free(&s->errmsg);
	free(s->url);
}

int keel_store_fail(struct keel_store *s, int code, const char *fmt, ...)
{
	va_list ap;
	keel_buf_reset(&s->errmsg);
	va_start(ap, fmt);
	keel_buf_vaddf(&s->errmsg, fmt, ap);
	va_end(ap);
	return code;
}

const char *keel_store_default_url(void)
{
	const char *url = getenv("KEEL_STORE");
	return url && *url ? url : KEEL_STORE_DEFAULT_URL;
}

/* The unknown-scheme message: the URL forms of the registered backends. */
static char *keel_store_unknown_scheme(const char *url)
{
	struct keel_buf err;
	keel_buf_init(&err);
	keel_buf_addf(&err, "store \"%s\": unknown scheme (expected ", url);
	size_t n = KEEL_ARRAY_LEN(keel_backends);
	for (size_t i = 0; i < n; i++)
		keel_buf_addf(&err, "%s%s", i == 0 ? "" : i + 1 < n ? ", " : " or ",
			      keel_backends[i]->url_form);
	keel_buf_adds(&err, ")");
	return err.data;
}

/* Whether the URL's scheme (its first len bytes) is name. */
static bool keel_store_scheme_is(const char *name, const char *url, size_t len)
{
	return name && strlen(name) == len && !memcmp(name, url, len);
}

static int keel_store_open_as(const char *url, bool existing, struct keel_store **out,
			      char **errmsg)
{
	*out = NULL;
	if (errmsg)
		*errmsg = NULL;
	if (!url || !*url)
		url = keel_store_default_url();
	const char *colon = strchr(url, ':');
	size_t scheme_len = colon ? (size_t)(colon - url) : 0;
	for (size_t i = 0; colon && i < KEEL_ARRAY_LEN(keel_backends); i++) {
		const struct keel_store_ops *ops = keel_backends[i];
		if (!keel_store_scheme_is(ops->scheme, url, scheme_len) &&
		    !keel_store_scheme_is(ops->scheme_alias, url, scheme_len))
			continue;
		struct keel_buf err;
		keel_buf_init(&err);
		int rc = ops->open(url, existing, out, &err);
		if (rc) {
			*out = NULL;
			if (errmsg)
				*errmsg = keel_xstrdup(err.len ? err.data : keel_strerror(rc));
		}
		keel_buf_free(&err);
		return rc;
	}
	if (errmsg)
		*errmsg = keel_store_unknown_scheme(url);
	return KEEL_EURL;
}

int keel_store_open(const char *url, struct keel_store **out, char **errmsg)
{
	return keel_store_open_as(url, false, out, errmsg);
}

int keel_store_open_existing(const char *url, struct keel_store **out, char **errmsg)
{
	return keel_store_open_as(url, true, out, errmsg);
}

void keel_store_close(struct keel_store *s)
{
	if (!s)
		return;
	if (s->in_tx)
		s->ops->rollback(s);
	s->ops->close(s);
}

const char *keel_store_url(const struct keel_store *s)
{
	return s->url ? s->url : "";
}

bool keel_store_concurrent_writers(const struct keel_store *s)
{
	return s->ops->concurrent_writers;
}

const char *keel_store_errmsg(const struct keel_store *s)
{
	return s && s->errmsg.len ? s->errmsg.data : "";
}

uint64_t keel_store_statements(const struct keel_store *s)
{
	return s ? s->statements : 0;
}

int keel_store_begin(struct keel_store *s)
{
	if (s->in_tx)
		return keel_store_fail(s, KEEL_EINVAL, "transaction already open");
	int rc = s->ops->begin(s);
	if (rc)
		return rc;
	s->in_tx = true;
	/* Another process may have written since: recorded_at continues
	 * from the log's latest (keel_store_recorded_at). */
	int64_t last = 0;
	if (s->ops->writer_gate)
		rc = s->ops->writer_gate(s, &last);
	else if (s->ops->last_recorded_at)
		rc = s->ops->last_recorded_at(s, &last);
	if (rc)
		return rc;
	if (last > s->recorded_floor)
		s->recorded_floor = last;
	return 0;
}

int keel_store_commit(struct keel_store *s)
{
	if (!s->in_tx)
		return keel_store_fail(s, KEEL_EINVAL, "no transaction open");
	int rc = s->ops->commit(s);
	/* A failed commit leaves the transaction to be rolled back; one
	 * whose outcome is unknown has ended, one way or the other. */
	if (rc == 0 || rc == KEEL_EUNCERTAIN)
		s->in_tx = false;
	return rc;
}

void keel_store_durable_commits(struct keel_store *s)
{
	if (s->ops->durable_commits)
		s->ops->durable_commits(s);
}

int keel_store_rollback(struct keel_store *s)
{
	if (!s->in_tx)
		return 0;
	s->in_tx = false;
	return s->ops->rollback(s);
}

int keel_store_savepoint(struct keel_store *s)
{
	if (!s->in_tx)
		return keel_store_fail(s, KEEL_EINVAL, "savepoint outside a transaction");
	return s->ops->savepoint ? s->ops->savepoint(s) : 0;
}

int keel_store_release(struct keel_store *s)
{
	return s->ops->release ? s->ops->release(s) : 0;
}

int keel_store_rollback_to_savepoint(struct keel_store *s)
{
	return s->ops->rollback_to_savepoint ? s->ops->rollback_to_savepoint(s) : 0;
}

int keel_store_seen_ids(struct keel_store *s, struct keel_batch_event **ev, size_t n)
{
	return n ? s->ops->seen_ids(s, ev, n) : 0;
}

int keel_store_append(struct keel_store *s, const struct keel_append *a)
{
	if (!s->in_tx)
		return keel_store_fail(s, KEEL_EINVAL, "append outside a transaction");
	return s->ops->append(s, a);
}

/* Strictly later than anything the log holds: every transaction's rows
 * are then recorded after the last committed one's, which is what lets a
 * read known at a moment no later than that one stand (keel_store_settle). */
int64_t keel_store_recorded_at(struct keel_store *s)
{
	int64_t now = keel_time_now();
	if (now <= s->recorded_floor)
		now = s->recorded_floor + 1;
	s->recorded_floor = now;
	return now;
}

int keel_store_settle(struct keel_store *s, int64_t known_at)
{
	/* Not yet past: what is recorded at it is still being written, and
	 * no answer about it can stand. */
	if (!s->ops->settle || known_at == KEEL_TIME_INF || known_at >= keel_time_now())
		return 0;
	return s->ops->settle(s, known_at);
}

int keel_store_tenants(struct keel_store *s, struct keel_ptrvec *out)
{
	return s->ops->tenants(s, out);
}

int keel_store_tenants_known(struct keel_store *s, int64_t known_at, struct keel_ptrvec *out)
{
	size_t from = out->len;
	int rc = keel_store_tenants(s, out);
	if (rc || known_at == KEEL_TIME_INF)
		return rc;
	size_t kept = from;
	for (size_t i = from; i < out->len; i++) {
		uint64_t c[4] = {0};
		if (rc == 0)
			rc = keel_store_counts(s, keel_str_cstr(out->items[i]), known_at, c);
		if (rc == 0 && (c[0] || c[1] || c[2] || c[3]))
			out->items[kept++] = out->items[i];
		else
			free(out->items[i]);
	}
	out->len = kept;
	return rc;
}

int keel_store_tenant_known(struct keel_store *s, struct keel_str tenant,
			    int64_t known_at)
{
	/* The usual case first, one index probe: a tenant with an entity. */
	if (known_at == KEEL_TIME_INF) {
		struct keel_candidates q = {.tenant = tenant, .limit = 1};
		struct keel_ptrvec one = {0};
		int rc = keel_store_entity_subjects(s, &q, &one);
		bool some = one.len > 0;
		for (size_t i = 0; i < one.len; i++)
			free(one.items[i]);
		keel_ptrvec_free(&one);
		if (rc || some)
			return rc;
	}
	/* Otherwise what keel stats counts: events, entities, rows. */
	uint64_t c[4] = {0};
	int rc = keel_store_counts(s, tenant, known_at, c);
	if (rc || c[0] || c[1] || c[2] || c[3])
		return rc;
	if (known_at == KEEL_TIME_INF)
		return keel_store_fail(s, KEEL_ENOTFOUND, "tenant \"%.*s\" not found",
				       (int)tenant.len, tenant.ptr);
	char kb[KEEL_TIME_BUFSZ];
	keel_time_format(known_at, kb);
	return keel_store_fail(s, KEEL_ENOTFOUND,
			       "tenant \"%.*s\" not found as known at %s",
			       (int)tenant.len, tenant.ptr, kb);
}

static int derive_fn(void *ud, const struct keel_record *r)
{
	return keel_deriver_push(ud, r);
}

int keel_store_scan(struct keel_store *s, const struct keel_scan *q, keel_scan_fn fn,
		    void *ud)
{
	if (q->raw || (q->type != KEEL_REC_FACT && q->type != KEEL_REC_RELATION))
		return s->ops->scan(s, q, fn, ud);
	struct keel_deriver d;
	keel_deriver_init(&d, q, fn, ud);
	int rc = s->ops->scan(s, q, derive_fn, &d);
	if (rc) {
		keel_deriver_free(&d);
		return rc;
	}
	return keel_deriver_finish(&d);
}

int keel_store_counts(struct keel_store *s, struct keel_str tenant, int64_t known_at,
		      uint64_t out[4])
{
	return s->ops->counts(s, tenant, known_at, out);
}

void keel_candidates_range(const struct keel_candidates *q, struct keel_str *lo,
			   bool *lo_inclusive, struct keel_buf *hi)
{
	keel_buf_reset(hi);
	*lo = q->after;
	*lo_inclusive = false;
	if (!q->prefix.ptr)
		return;
	if (!q->after.ptr || keel_str_cmp(q->after, q->prefix) < 0) {
		*lo = q->prefix;
		*lo_inclusive = true;
	}
	size_t n = q->prefix.len;
	while (n && (unsigned char)q->prefix.ptr[n - 1] == 0xff)
		n--;
	if (n) {
		keel_buf_add(hi, q->prefix.ptr, n);
		hi->data[n - 1] = (char)((unsigned char)hi->data[n - 1] + 1);
	}
}

/* The candidates of a finding read: checked here once for every store. */
static int keel_candidates_ok(struct keel_store *s, const struct keel_candidates *q,
			      bool fact)
{
	if (!q->tenant.ptr || q->limit == 0 ||
	    (fact && (!q->predicate.ptr || !q->value.ptr)))
		return keel_store_fail(s, KEEL_EINVAL,
				       "candidates: no tenant, predicate, value or limit");
	return 0;
}

int keel_store_entity_subjects(struct keel_store *s, const struct keel_candidates *q,
			       struct keel_ptrvec *out)
{
	int rc = keel_candidates_ok(s, q, false);
	return rc ? rc : s->ops->entity_subjects(s, q, out);
}

int keel_store_fact_subjects(struct keel_store *s, const struct keel_candidates *q,
			     struct keel_ptrvec *out)
{
	int rc = keel_candidates_ok(s, q, true);
	return rc ? rc : s->ops->fact_subjects(s, q, out);
}

int keel_store_fold(struct keel_store *s, int64_t most, bool *left)
{
	*left = false;
	return s->ops->fold ? s->ops->fold(s, most, left) : 0;
}

int keel_store_replace_tenant(struct keel_store *s, struct keel_str tenant,
			      const struct keel_replace_scope *scope,
			      const struct keel_append *a, uint64_t log_events,
			      struct keel_buf *note)
{
	if (!s->in_tx)
		return keel_store_fail(s, KEEL_EINVAL, "replace outside a transaction");
	if (!s->ops->replace_tenant)
		return keel_store_fail(s, KEEL_EINVAL,
				       "the %s store cannot replace a tenant",
				       s->ops->scheme);
	return s->ops->replace_tenant(s, tenant, scope, a, log_events, note);
}

int keel_store_forget(struct keel_store *s, struct keel_str tenant,
		      const struct keel_redaction *r, size_t n,
		      const struct keel_tombstone *t)
{
	if (!s->in_tx)
		return keel_store_fail(s, KEEL_EINVAL, "forget outside a transaction");
	return s->ops->forget(s, tenant, r, n, t);
}

int keel_store_forget_find(struct keel_store *s, struct keel_str tenant,
			   const struct keel_forget_find *f, keel_scan_fn fn, void *ud)
{
	if (!s->in_tx)
		return keel_store_fail(s, KEEL_EINVAL, "forget outside a transaction");
	return s->ops->forget_find(s, tenant, f, fn, ud);
}

int keel_store_forget_rows(struct keel_store *s, struct keel_str tenant,
			   struct keel_str subject, struct keel_str quoted,
			   const struct keel_mention_fix *fix, size_t n, uint64_t *removed)
{
	*removed = 0;
	if (!s->in_tx)
		return keel_store_fail(s, KEEL_EINVAL, "forget outside a transaction");
	return s->ops->forget_rows(s, tenant, subject, quoted, fix, n, removed);
}

int keel_store_tombstone(struct keel_store *s, struct keel_str tenant,
			 const char *subject_hash, struct keel_tombstone *out,
			 struct keel_buf *buf)
{
	return s->ops->tombstone(s, tenant, subject_hash, out, buf);
}

int keel_store_scrub(struct keel_store *s)
{
	if (s->in_tx)
		return keel_store_fail(s, KEEL_EINVAL, "scrub inside a transaction");
	return s->ops->scrub ? s->ops->scrub(s) : 0;
}

int keel_store_cartridge_get(struct keel_store *s, struct keel_str tenant,
			     struct keel_cartridge_record *out, struct keel_arena *hold)
{
	memset(out, 0, sizeof *out);
	return s->ops->cartridge_get(s, tenant, out, hold);
}

int keel_store_cartridge_put(struct keel_store *s, const struct keel_str *tenants,
			     size_t n, const struct keel_cartridge_record *r, bool replace)
{
	if (!s->in_tx)
		return keel_store_fail(s, KEEL_EINVAL,
				       "cartridge recorded outside a transaction");
	if (n == 0)
		return 0;
	return s->ops->cartridge_put(s, tenants, n, r, replace);
}

bool keel_store_keeps_log_positions(const struct keel_store *s)
{
	return s->ops->log_position && s->ops->log_positions;
}

static int keel_store_no_log_positions(struct keel_store *s)
{
	return keel_store_fail(s, KEEL_EINVAL,
			       "store \"%s\" keeps no log positions: consuming a log needs "
			       "a store that takes concurrent writers (mysql, postgres)",
			       keel_store_url(s));
}

int keel_store_log_position(struct keel_store *s, const struct keel_log_position *p,
			    uint64_t *stored)
{
	if (!keel_store_keeps_log_positions(s))
		return keel_store_no_log_positions(s);
	if (!s->in_tx)
		return keel_store_fail(s, KEEL_EINVAL,
				       "log position written outside a transaction");
	return s->ops->log_position(s, p, stored);
}

int keel_store_log_positions(struct keel_store *s, struct keel_str log,
			     keel_log_position_fn fn, void *ud)
{
	if (!keel_store_keeps_log_positions(s))
		return keel_store_no_log_positions(s);
	return s->ops->log_positions(s, log, fn, ud);
}

int keel_store_worker_init(struct keel_store *s)
{
	return s->ops->worker_init ? s->ops->worker_init(s) : 0;
}

bool keel_store_state_in_handle(const struct keel_store *s)
{
	return s->state_in_handle;
}

bool keel_store_hashes_on_demand(const struct keel_store *s)
{
	return s->ops->hashes_on_demand;
}

void keel_store_metrics(struct keel_store *s, struct keel_buf *out)
{
	if (s->ops->metrics)
		s->ops->metrics(s, out);
}

static void (*keel_store_progress_fn)(void *ud, const char *what);
static void *keel_store_progress_ud;

void keel_store_migrate_progress(void (*fn)(void *ud, const char *what), void *ud)
{
	keel_store_progress_fn = fn;
	keel_store_progress_ud = ud;
}

void keel_store_migrating(const char *what)
{
	if (keel_store_progress_fn)
		keel_store_progress_fn(keel_store_progress_ud, what);
}

int keel_store_schema_versions(struct keel_store *s, int *was, int *now)
{
	*was = *now = 0;
	if (!s->ops->schema_versions)
		return keel_store_fail(s, KEEL_EINVAL, "store \"%s\": has no schema",
				       keel_store_url(s));
	return s->ops->schema_versions(s, was, now);
}

int keel_store_check(struct keel_store *s)
{
	int rc = s->ops->check ? s->ops->check(s) : 0;
	if (rc)
		return rc;
	/* The empty name is no valid tenant: an index lookup that finds
	 * nothing, but still goes to the database (or server). */
	uint64_t counts[4];
	return s->ops->counts(s, keel_str_make("", 0), KEEL_TIME_INF, counts);
}
