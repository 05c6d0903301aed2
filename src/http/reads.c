/*
 * reads.c - the read endpoints of keel serve (entity, history, why,
 * stats, and the finding reads: tenants, entities, search) and the pool
 * of read handles they use (docs/http.md).
 */
#include "server.h"
#include "event/json_write.h"
#include "read/find.h"

/* ------------------------------------------------------------- stores */

size_t keel_http_store_of(const struct keel_server *srv, const char *tenant)
{
	if (!srv->mapped || !tenant)
		return 0;
	uint32_t p = keel_log_partition(tenant, strlen(tenant), srv->map_partitions);
	return keel_store_map_find(&srv->map, p);
}

/* The pool a handle goes back to: its store's (the writer's one without
 * a map). */
static struct keel_ptrvec *pool_of(struct keel_server *srv, size_t i)
{
	return srv->mapped ? &srv->pools[i] : &srv->readers;
}

struct keel_store *keel_http_reader_get(struct keel_server *srv, const char *tenant,
					char **err)
{
	if (srv->shared_store) {
		pthread_mutex_lock(&srv->write_lock);
		return srv->writer;
	}
	size_t i = keel_http_store_of(srv, tenant);
	struct keel_ptrvec *pool = pool_of(srv, i);
	struct keel_store *s = NULL;
	pthread_mutex_lock(&srv->readers_lock);
	if (pool->len)
		s = pool->items[--pool->len];
	pthread_mutex_unlock(&srv->readers_lock);
	const char *url = srv->mapped ? srv->map.urls[i] : srv->store_url;
	if (!s && keel_store_open(url, &s, err) != 0)
		return NULL;
	return s;
}

void keel_http_reader_put(struct keel_server *srv, struct keel_store *s)
{
	if (srv->shared_store) {
		pthread_mutex_unlock(&srv->write_lock);
		return;
	}
	size_t i = 0;
	while (srv->mapped && i + 1 < srv->map.n &&
	       strcmp(srv->map.urls[i], keel_store_url(s)) != 0)
		i++;
	pthread_mutex_lock(&srv->readers_lock);
	keel_ptrvec_push(pool_of(srv, i), s);
	pthread_mutex_unlock(&srv->readers_lock);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* GET /v1/tenants with a store map: a page of the tenants of every
 * store, merged (a tenant's rows are all in its partition's store). Each
 * store gives its first `limit` tenants after the cursor, so the first
 * `limit` of them all are among those; there is a next page when more
 * than a page came, or a store had more than it gave. */
static int mapped_tenants(struct keel_server *srv, bool (*visible)(void *, const char *),
			  void *ud, const struct keel_find_options *f,
			  const struct keel_read_options *o, char **json, char **msg)
{
	struct keel_ptrvec names = {0};
	char *known_at = NULL;
	bool more = false;
	int rc = 0;
	size_t limit = f->limit ? f->limit : KEEL_DEFAULT_PAGE;
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	for (size_t i = 0; rc == 0 && i < srv->map.n; i++) {
		char *err = NULL, *one = NULL;
		struct keel_store *s = NULL;
		pthread_mutex_lock(&srv->readers_lock);
		if (srv->pools[i].len)
			s = srv->pools[i].items[--srv->pools[i].len];
		pthread_mutex_unlock(&srv->readers_lock);
		if (!s && keel_store_open(srv->map.urls[i], &s, &err) != 0) {
			*msg = err;
			rc = KEEL_ESTORE;
			break;
		}
		rc = keel_tenants_page(s, visible, ud, f, o, &one);
		if (rc)
			*msg = keel_xstrdup(keel_store_errmsg(s));
		keel_http_reader_put(srv, s);
		struct keel_json_error jerr;
		if (rc == 0 && keel_json_parse(&doc, one, strlen(one), &jerr) == 0) {
			const struct keel_json *k = keel_json_get(doc.root, "known_at", 8);
			if (k && !known_at)
				known_at = keel_xstrndup(one + k->raw_off, k->raw_len);
			const struct keel_json *t = keel_json_get(doc.root, "tenants", 7);
			for (const struct keel_json *e = t ? t->child : NULL; e; e = e->next)
				keel_ptrvec_push(&names, keel_xstrndup(e->str, e->len));
			const struct keel_json *n = keel_json_get(doc.root, "next", 4);
			more |= n && n->type != KEEL_JSON_NULL;
		}
		free(one);
	}
	keel_json_doc_free(&doc);
	if (rc == 0) {
		qsort(names.items, names.len, sizeof *names.items, name_cmp);
		struct keel_buf b;
		keel_buf_init(&b);
		keel_buf_addc(&b, '{');
		if (known_at)
			keel_buf_addf(&b, "\"known_at\":%s,", known_at);
		keel_buf_adds(&b, "\"tenants\":[");
		size_t shown = 0;
		const char *last = NULL;
		for (size_t i = 0; i < names.len; i++) {
			if (last && strcmp(names.items[i], last) == 0)
				continue; /* a tenant in two stores (a map changed) */
			if (shown == limit) {
				more = true;
				break;
			}
			if (shown++)
				keel_buf_addc(&b, ',');
			keel_buf_add_json_str(&b, keel_str_cstr(names.items[i]));
			last = names.items[i];
		}
		keel_buf_adds(&b, "],");
		keel_find_next(&b, more ? last : NULL, more && last ? strlen(last) : 0);
		keel_buf_addc(&b, '}');
		*json = b.data;
	}
	for (size_t i = 0; i < names.len; i++)
		free(names.items[i]);
	keel_ptrvec_free(&names);
	free(known_at);
	return rc;
}

/* --------------------------------------------------------------- reads */

/* A query argument, percent-decoded into out; false when absent. */
static bool get_arg(struct MHD_Connection *c, const char *key, struct keel_buf *out,
		    bool *bad)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
	if (!v)
		return false;
	if (!keel_http_percent_decode(v, strlen(v), out))
		*bad = true;
	return true;
}

/* Parses ?at= as the command line parses --at ("now" or RFC 3339). MHD
 * has turned '+' into ' ' (form encoding); an offset such as +02:00 sent
 * unescaped is restored rather than refused. */
static bool parse_at(const char *s, int64_t *out, const char **why)
{
	if (keel_time_parse_at(s, strlen(s), out, why) == 0)
		return true;
	char *copy = keel_xstrdup(s);
	for (char *p = copy; *p; p++)
		if (*p == ' ')
			*p = '+';
	bool ok = keel_time_parse_at(copy, strlen(copy), out, NULL) == 0;
	free(copy);
	return ok;
}

/* ?changes= on history: "1" or "true" asks for the changes, "0", "false"
 * or nothing for the rows. */
static bool parse_flag(const char *s, bool *out)
{
	if (!strcmp(s, "1") || !strcmp(s, "true"))
		*out = true;
	else if (!*s || !strcmp(s, "0") || !strcmp(s, "false"))
		*out = false;
	else
		return false;
	return true;
}

/* The reads that answer for a valid time (docs/http.md); history, stats
 * and the tenants list do not. */
static bool read_takes_at(enum read_kind kind)
{
	return kind == READ_SHOW || kind == READ_WHY || kind == READ_ENTITIES ||
	       kind == READ_SEARCH;
}

/* ?limit=: 1 to KEEL_MAX_PAGE. */
static bool parse_limit(const char *s, size_t *out)
{
	size_t v = 0;
	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > KEEL_MAX_PAGE)
			return false;
		v = v * 10 + (size_t)(*s - '0');
	}
	if (v == 0 || v > KEEL_MAX_PAGE)
		return false;
	*out = v;
	return true;
}

/* GET /v1/tenants lists only what the token may see. */
struct token_scope {
	const struct keel_token_entry *tok; /* NULL: no token file */
};

static bool token_sees(void *ud, const char *tenant)
{
	const struct token_scope *scope = ud;
	return !scope->tok || keel_token_allows(scope->tok, tenant, strlen(tenant));
}

/* The finding reads' own parameters (docs/http.md): an empty kind,
 * prefix or cursor is the same as none. */
struct find_args {
	struct keel_buf kind, prefix, limit, cursor, value;
	bool has_kind, has_prefix, has_limit, has_cursor, has_value;
};

static void find_args_get(struct MHD_Connection *c, struct find_args *a, bool *bad)
{
	memset(a, 0, sizeof *a);
	keel_buf_init(&a->kind);
	keel_buf_init(&a->prefix);
	keel_buf_init(&a->limit);
	keel_buf_init(&a->cursor);
	keel_buf_init(&a->value);
	a->has_kind = get_arg(c, "kind", &a->kind, bad) && a->kind.len;
	a->has_prefix = get_arg(c, "prefix", &a->prefix, bad) && a->prefix.len;
	a->has_limit = get_arg(c, "limit", &a->limit, bad);
	a->has_cursor = get_arg(c, "cursor", &a->cursor, bad) && a->cursor.len;
	a->has_value = get_arg(c, "value", &a->value, bad);
	/* NUL-terminated even when empty */
	keel_buf_reserve(&a->value, 0);
}

static void find_args_free(struct find_args *a)
{
	keel_buf_free(&a->kind);
	keel_buf_free(&a->prefix);
	keel_buf_free(&a->limit);
	keel_buf_free(&a->cursor);
	keel_buf_free(&a->value);
}

/* The answer to a read (it takes json and msg): its document with a
 * trailing newline, as on the command line, or the error its code means. */
static enum MHD_Result answer_read(struct keel_server *srv, struct MHD_Connection *c, int rc,
				   char *json, char *msg)
{
	enum MHD_Result ret;
	const char *why = msg && *msg ? msg : NULL;
	if (rc == 0) {
		size_t len = strlen(json);
		char *body = keel_xrealloc(json, len + 2);
		body[len] = '\n';
		body[len + 1] = 0;
		ret = keel_http_answer(srv, c, MHD_HTTP_OK, body, len + 1, "application/json");
		free(msg);
		return ret;
	}
	free(json);
	if (rc == KEEL_ENOTFOUND) {
		ret = keel_http_answer_error(srv, c, MHD_HTTP_NOT_FOUND, "%s",
					     why ? why : "not found");
	} else if (rc == KEEL_EFORGOTTEN) {
		/* keel forget erased it: Gone, saying when and by whom */
		ret = keel_http_answer_error(srv, c, MHD_HTTP_GONE, "%s", why ? why : "");
	} else if (rc == KEEL_EINVAL) {
		ret = keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST, "%s",
					     why ? why : keel_strerror(rc));
	} else {
		atomic_fetch_add(&srv->metrics.store_errors, 1);
		keel_http_log(srv, "read failed: %s", why ? why : keel_strerror(rc));
		ret = keel_http_answer_error(srv, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
					     "store error (details in the server log)");
	}
	free(msg);
	return ret;
}

enum MHD_Result keel_http_handle_read(struct keel_server *srv, struct MHD_Connection *c,
				      enum read_kind kind, const char *tenant,
				      const char *subject,
				      const struct keel_token_entry *tok)
{
	struct keel_buf predicate, at_text, known_at_text, changes_text;
	keel_buf_init(&predicate);
	keel_buf_init(&at_text);
	keel_buf_init(&known_at_text);
	keel_buf_init(&changes_text);
	bool bad = false;
	bool has_pred = get_arg(c, "predicate", &predicate, &bad);
	bool has_at = get_arg(c, "at", &at_text, &bad);
	bool has_known_at = get_arg(c, "known_at", &known_at_text, &bad);
	bool has_changes = get_arg(c, "changes", &changes_text, &bad);
	struct find_args fa;
	find_args_get(c, &fa, &bad);
	struct keel_find_options f = {.size = sizeof f,
				      .kind = fa.has_kind ? fa.kind.data : NULL,
				      .prefix = fa.has_prefix ? fa.prefix.data : NULL,
				      .cursor = fa.has_cursor ? fa.cursor.data : NULL};
	enum MHD_Result ret;
	struct keel_read_options o = {.size = sizeof o};
	if (bad) {
		ret = keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
					     "query: invalid percent-escape");
		goto out;
	}
	if (fa.has_limit && !parse_limit(fa.limit.data ? fa.limit.data : "", &f.limit)) {
		ret = keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
					     "parameter \"limit\": not a number from 1 to %d",
					     KEEL_MAX_PAGE);
		goto out;
	}
	if (kind == READ_SEARCH && (!has_pred || predicate.len == 0 || !fa.has_value)) {
		ret = keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
					     "parameter \"%s\": required",
					     !has_pred || predicate.len == 0 ? "predicate"
									     : "value");
		goto out;
	}
	/* A time a read does not take is refused, not ignored: ignored, it
	 * would answer the present to a question about the past. */
	if (has_at && !read_takes_at(kind)) {
		ret = keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
					     "parameter \"at\": only show, why, entities and "
					     "search take it");
		goto out;
	}
	const char *why = NULL;
	if (has_at && !parse_at(at_text.data, &o.at, &why)) {
		ret = keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
					     "parameter \"at\": %s",
					     why ? why : "not an RFC 3339 timestamp");
		goto out;
	}
	o.at_set = has_at;
	why = NULL;
	if (has_known_at && !parse_at(known_at_text.data, &o.known_at, &why)) {
		ret = keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
					     "parameter \"known_at\": %s",
					     why ? why : "not an RFC 3339 timestamp");
		goto out;
	}
	o.known_at_set = has_known_at;
	if (has_changes && (kind != READ_HISTORY ||
			    !parse_flag(changes_text.data, &o.changes))) {
		ret = keel_http_answer_error(
		    srv, c, MHD_HTTP_BAD_REQUEST, "parameter \"changes\": %s",
		    kind != READ_HISTORY ? "only history takes it" : "not 1, true, 0 or false");
		goto out;
	}
	if (kind == READ_WHY && (!has_pred || predicate.len == 0)) {
		ret = keel_http_answer_error(srv, c, MHD_HTTP_BAD_REQUEST,
					     "parameter \"predicate\": required");
		goto out;
	}
	char *err = NULL;
	if (kind == READ_TENANTS && srv->mapped) {
		struct token_scope scope = {tok};
		char *json = NULL, *msg = NULL;
		int rc = mapped_tenants(srv, token_sees, &scope, &f, &o, &json, &msg);
		ret = answer_read(srv, c, rc, json, msg);
		goto out;
	}
	struct keel_store *s = keel_http_reader_get(srv, tenant, &err);
	if (!s) {
		atomic_fetch_add(&srv->metrics.store_errors, 1);
		keel_http_log(srv, "read failed: %s",
			      err ? err : "cannot open the store");
		ret = keel_http_answer_error(srv, c, MHD_HTTP_INTERNAL_SERVER_ERROR,
					     "store error (details in the server log)");
		free(err);
		goto out;
	}
	char *json = NULL;
	int rc;
	switch (kind) {
	case READ_SHOW:
		rc = keel_show(s, tenant, subject, &o, &json);
		break;
	case READ_HISTORY:
		rc = keel_history(s, tenant, subject,
				  has_pred && predicate.len ? predicate.data : NULL, &o,
				  &json);
		break;
	case READ_WHY:
		rc = keel_why(s, tenant, subject, predicate.data, &o, &json);
		break;
	case READ_TENANTS: {
		struct token_scope scope = {tok};
		rc = keel_tenants_page(s, token_sees, &scope, &f, &o, &json);
		break;
	}
	case READ_ENTITIES:
		rc = keel_entities(s, tenant, &f, &o, &json);
		break;
	case READ_SEARCH:
		rc = keel_search(s, tenant, predicate.data, fa.value.data, &f, &o, &json);
		break;
	default:
		rc = keel_stats(s, tenant, &o, &json);
		break;
	}
	char *msg = rc != 0 ? keel_xstrdup(keel_store_errmsg(s)) : NULL;
	keel_http_reader_put(srv, s);
	ret = answer_read(srv, c, rc, json, msg);
out:
	find_args_free(&fa);
	keel_buf_free(&predicate);
	keel_buf_free(&at_text);
	keel_buf_free(&known_at_text);
	keel_buf_free(&changes_text);
	return ret;
}
