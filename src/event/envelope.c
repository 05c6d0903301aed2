/*
 * envelope.c - the envelope rules of docs/time-and-envelopes.md (see envelope.h).
 *
 * One pass over the top-level members picks out the fields Keel reads;
 * the rules are then checked in a fixed order (id, specversion, source,
 * tenant, type, time, data or data_base64) so that an envelope breaking
 * several rules always gets
 * the same message, and the id - checked first - can name the event in the
 * message of any later rule.
 *
 * Every message has the form `field "NAME": RULE`, except the one for a
 * document that is not an object at all. Decisions beyond the field table
 * (docs/time-and-envelopes.md): a field that is present with the value
 * null counts as having the wrong type, not as missing; id and type may
 * not contain control characters (U+0000-U+001F), which would break
 * C-string interfaces such as keel_event_id and line-oriented output.
 */
#include "envelope.h"

#include <string.h>

#include "keel.h"

enum env_field {
	F_ID,
	F_SPECVERSION,
	F_SOURCE,
	F_TENANT,
	F_TYPE,
	F_TIME,
	F_DATA,
	F_DATA_BASE64,
	F_COUNT
};

/* For messages; keel_envelope_read matches the names itself. */
static const struct {
	const char *name;
} env_fields[F_COUNT] = {
    [F_ID] = {"id"},	     [F_SPECVERSION] = {"specversion"},
    [F_SOURCE] = {"source"},
    [F_TENANT] = {"tenant"}, [F_TYPE] = {"type"},
    [F_TIME] = {"time"},     [F_DATA] = {"data"},
    [F_DATA_BASE64] = {"data_base64"},
};

static int env_fail(struct keel_buf *msg, enum env_field f, const char *rule)
{
	keel_buf_addf(msg, "field \"%s\": %s", env_fields[f].name, rule);
	return -1;
}

static bool has_control(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20)
			return true;
	return false;
}

/* Checks a required string field of 1..max bytes; on success *out views it
 * and *at is where it is written verbatim (keel_envelope.id_at). */
static int env_string(const struct keel_json *v, enum env_field f, size_t max,
		      bool no_control, struct keel_str *out, size_t *at,
		      struct keel_buf *msg)
{
	if (!v)
		return env_fail(msg, f, "missing");
	if (v->type != KEEL_JSON_STRING)
		return env_fail(msg, f, "must be a string");
	if (v->len == 0 || v->len > max) {
		keel_buf_addf(msg, "field \"%s\": must be 1-%zu bytes (got %zu)",
			      env_fields[f].name, max, v->len);
		return -1;
	}
	/* An escape makes the text longer than the decoded string plus its
	 * two quotes. Raw control characters never get past the parser: only
	 * an escape can have put one in. */
	bool verbatim = v->raw_len == v->len + 2;
	if (no_control && !verbatim && has_control(v->str, v->len))
		return env_fail(msg, f, "must not contain control characters");
	*out = keel_str_make(v->str, v->len);
	*at = verbatim ? v->raw_off + 1 : SIZE_MAX;
	return 0;
}

/* RFC 4648 section 4: the standard alphabet, padded to a multiple of
 * four with at most two '=' at the end. */
static bool is_base64(const char *s, size_t n)
{
	if (n % 4)
		return false;
	size_t pad = 0;
	while (pad < 2 && pad < n && s[n - 1 - pad] == '=')
		pad++;
	for (size_t i = 0; i < n - pad; i++) {
		char c = s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '+' || c == '/'))
			return false;
	}
	return true;
}

static bool tenant_char_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* The last tenant that passed the character check, per thread: a stream's
 * events mostly share their tenant, whose check is then one compare. Only
 * a tenant that passed is kept (len 0: none yet; a tenant has 1-64 bytes). */
static _Thread_local struct {
	char name[KEEL_TENANT_MAX];
	size_t len;
} last_tenant;

static bool tenant_ok(struct keel_str t)
{
	if (t.len == last_tenant.len && keel_bytes_eq(t.ptr, last_tenant.name, t.len))
		return true;
	for (size_t i = 0; i < t.len; i++)
		if (!tenant_char_ok((unsigned char)t.ptr[i]))
			return false;
	if (t.len <= sizeof last_tenant.name) {
		memcpy(last_tenant.name, t.ptr, t.len);
		last_tenant.len = t.len;
	}
	return true;
}

int keel_envelope_read(const struct keel_json_doc *doc, struct keel_envelope *env,
		       struct keel_buf *msg)
{
	const struct keel_json *root = doc->root;
	const struct keel_json *f[F_COUNT] = {0};

	memset(env, 0, sizeof *env);
	env->id = env->tenant = env->type = KEEL_STR_NULL;
	env->source = keel_str_make("", 0);
	env->id_at = env->tenant_at = env->type_at = env->source_at = SIZE_MAX;
	if (!root || root->type != KEEL_JSON_OBJECT) {
		keel_buf_adds(msg, "envelope is not a JSON object");
		return -1;
	}
	env->root = root;

	/* Keys are unique (the parser rejects duplicates), so the last match
	 * is the only one. A key's length names the candidates; comparing with
	 * a constant length lets the compiler compare words, not call memcmp. */
	for (const struct keel_json *m = root->child; m; m = m->next) {
		const char *k = m->key;
		switch (m->key_len) {
		case 2:
			if (memcmp(k, "id", 2) == 0)
				f[F_ID] = m;
			break;
		case 4:
			if (memcmp(k, "type", 4) == 0)
				f[F_TYPE] = m;
			else if (memcmp(k, "time", 4) == 0)
				f[F_TIME] = m;
			else if (memcmp(k, "data", 4) == 0)
				f[F_DATA] = m;
			break;
		case 6:
			if (memcmp(k, "tenant", 6) == 0)
				f[F_TENANT] = m;
			else if (memcmp(k, "source", 6) == 0)
				f[F_SOURCE] = m;
			break;
		case 11:
			if (memcmp(k, "specversion", 11) == 0)
				f[F_SPECVERSION] = m;
			else if (memcmp(k, "data_base64", 11) == 0)
				f[F_DATA_BASE64] = m;
			break;
		case 12:
			if (memcmp(k, KEEL_REDACTED_ATTR, 12) == 0)
				env->redacted = m->type == KEEL_JSON_TRUE;
			break;
		}
	}

	if (env_string(f[F_ID], F_ID, KEEL_ID_MAX, true, &env->id, &env->id_at, msg))
		return -1;

	const struct keel_json *sv = f[F_SPECVERSION];
	if (sv && (sv->type != KEEL_JSON_STRING || sv->len != 3 ||
		   memcmp(sv->str, "1.0", 3) != 0))
		return env_fail(msg, F_SPECVERSION, "must be \"1.0\"");

	/* Part of the event's identity (tenant, source, id); absent is "",
	 * which is also what an older Keel's events without one keep. */
	struct keel_str source = keel_str_make("", 0);
	size_t source_at = SIZE_MAX;
	if (f[F_SOURCE] && env_string(f[F_SOURCE], F_SOURCE, KEEL_SOURCE_MAX, true, &source,
				      &source_at, msg))
		return -1;

	struct keel_str tenant;
	size_t tenant_at, type_at;
	if (env_string(f[F_TENANT], F_TENANT, KEEL_TENANT_MAX, false, &tenant, &tenant_at,
		       msg))
		return -1;
	if (!tenant_ok(tenant))
		return env_fail(msg, F_TENANT, "must be 1-64 bytes of [A-Za-z0-9._-]");

	struct keel_str type;
	if (env_string(f[F_TYPE], F_TYPE, KEEL_TYPE_MAX, true, &type, &type_at, msg))
		return -1;

	const struct keel_json *t = f[F_TIME];
	if (!t)
		return env_fail(msg, F_TIME, "missing");
	if (t->type != KEEL_JSON_STRING)
		return env_fail(msg, F_TIME, "must be a string");
	const char *why = NULL;
	int64_t time;
	if (keel_time_parse(t->str, t->len, &time, &why) != 0)
		return env_fail(msg, F_TIME, why);

	/* Binary data (CloudEvents' data_base64) stands in for data: the
	 * event is logged, and its cartridge finds no /data fields. */
	const struct keel_json *d = f[F_DATA], *b64 = f[F_DATA_BASE64];
	if (b64 && d)
		return env_fail(msg, F_DATA_BASE64, "not allowed beside \"data\"");
	if (b64 && (b64->type != KEEL_JSON_STRING || !is_base64(b64->str, b64->len)))
		return env_fail(msg, F_DATA_BASE64, "must be a base64 string (RFC 4648)");
	if (!d && !b64)
		return env_fail(msg, F_DATA, "missing");
	if (d && d->type != KEEL_JSON_OBJECT)
		return env_fail(msg, F_DATA, "must be a JSON object");

	env->tenant = tenant;
	env->source = source;
	env->source_at = source_at;
	env->type = type;
	env->tenant_at = tenant_at;
	env->type_at = type_at;
	env->time = time;
	env->data = d;
	return 0;
}
