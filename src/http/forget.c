/*
 * forget.c - DELETE /v1/tenants/T/entities/SUBJECT: keel forget over
 * HTTP (docs/http.md, "Forgetting"). It runs on the writer's handle under
 * the write lock, between two group commits, so it is the one transaction
 * writing the tenant while it runs.
 */
#include "server.h"
#include "event/json_write.h"

/* Who forgets, as the tombstone records it: the token by the start of its
 * hash (the token file holds all of it, the token itself is nowhere), or
 * the loopback client of a server without tokens. */
static void forget_by(const struct keel_token_entry *tok, char *out, size_t size)
{
	static const char digits[] = "0123456789abcdef";
	if (!tok) {
		snprintf(out, size, "http:loopback (no token file)");
		return;
	}
	char hex[17];
	for (size_t i = 0; i < 8; i++) {
		hex[2 * i] = digits[tok->hash[i] >> 4];
		hex[2 * i + 1] = digits[tok->hash[i] & 15];
	}
	hex[16] = 0;
	snprintf(out, size, "token:sha256:%s", hex);
}

enum MHD_Result keel_http_handle_forget(struct keel_server *srv, struct MHD_Connection *c,
					const struct keel_token_entry *tok,
					const char *tenant, const char *subject)
{
	/* The tenant is in the token's scope (route_get); forgetting needs
	 * every tenant or the right. */
	if (srv->mapped)
		return keel_http_answer_error(srv, c, MHD_HTTP_NOT_IMPLEMENTED,
					      "this server reads through a store map: run keel "
					      "forget against the tenant's store");
	if (tok && !tok->all && !tok->forget)
		return keel_http_answer_error(srv, c, MHD_HTTP_FORBIDDEN,
					      "the token may not forget (it needs the "
					      "\"forget\" right or every tenant)");
	char by[64];
	forget_by(tok, by, sizeof by);
	struct keel_forget_options o = {
	    .size = sizeof o, .cartridge = srv->cartridge, .by = by};
	struct keel_forget_report rep;
	pthread_mutex_lock(&srv->write_lock);
	int rc = keel_forget(srv->writer, tenant, subject, &o, &rep);
	char *msg = rc ? keel_xstrdup(keel_store_errmsg(srv->writer)) : NULL;
	pthread_mutex_unlock(&srv->write_lock);
	enum MHD_Result ret;
	if (rc == KEEL_ENOTFOUND) {
		ret = keel_http_answer_error(srv, c, MHD_HTTP_NOT_FOUND, "%s", msg);
	} else if (rc == KEEL_EFORGOTTEN) {
		ret = keel_http_answer_error(srv, c, MHD_HTTP_GONE, "%s", msg);
	} else if (rc == KEEL_EINVAL || rc == KEEL_ECARTRIDGE) {
		/* the subject cannot be cut out alone, or the server runs
		 * another cartridge than the tenant's recorded one */
		ret = keel_http_answer_error(srv, c, MHD_HTTP_CONFLICT, "%s", msg);
	} else if (rc) {
		atomic_fetch_add(&srv->metrics.store_errors, 1);
		keel_http_log(srv, "forget failed: %s",
			      msg && *msg ? msg : keel_strerror(rc));
		ret = keel_http_answer_error(
		    srv, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s",
		    rc == KEEL_EUNCERTAIN
			? "store error (details in the server log) during the commit: "
			  "whether the subject was forgotten is unknown; sending the "
			  "DELETE again is safe (410 when it was)"
			: "store error (details in the server log)");
	} else {
		struct keel_buf b;
		keel_buf_init(&b);
		keel_buf_adds(&b, "{\"tenant\":");
		keel_buf_add_json_str(&b, keel_str_cstr(tenant));
		keel_buf_adds(&b, ",\"subject\":");
		keel_buf_add_json_str(&b, keel_str_cstr(subject));
		keel_buf_adds(&b, ",\"forgotten\":true,\"forgotten_at\":");
		keel_buf_add_json_time(&b, rep.forgotten_at);
		keel_buf_adds(&b, ",\"forgotten_by\":");
		keel_buf_add_json_str(&b, keel_str_cstr(by));
		keel_buf_addf(&b,
			      ",\"subject_sha256\":\"%s\",\"events_redacted\":%llu,"
			      "\"rows_removed\":%llu}",
			      rep.subject_sha256, (unsigned long long)rep.events,
			      (unsigned long long)rep.rows);
		ret = keel_http_answer_json(srv, c, MHD_HTTP_OK, &b);
	}
	free(msg);
	return ret;
}
