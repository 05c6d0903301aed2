/*
 * envelope.h - validation of one CloudEvents envelope (docs/time-and-envelopes.md).
 *
 * keel_envelope_read checks a parsed JSON document against every envelope
 * rule and extracts the fields Keel uses. Views point into the document,
 * which must outlive the envelope.
 */
#ifndef KEEL_ENVELOPE_H
#define KEEL_ENVELOPE_H

#include "json.h"
#include "util.h"

#define KEEL_ID_MAX 256
#define KEEL_TENANT_MAX 64
#define KEEL_TYPE_MAX 256
#define KEEL_SOURCE_MAX 1024

struct keel_envelope {
	struct keel_str id; /* set as soon as "id" is valid, even on failure */
	struct keel_str tenant;
	struct keel_str source; /* "" when absent */
	struct keel_str type;
	int64_t time;
	const struct keel_json *root;
	const struct keel_json *data;
	/* Where id, tenant, type and source are written without escapes: the offset
	 * of their first byte in the document's text, else SIZE_MAX. A copy
	 * of the text then holds them too (prepare.c). */
	size_t id_at, tenant_at, type_at, source_at;
	/* Set by whoever keeps a copy of the text's compaction for as long as
	 * the event's operations (prepare.c), when that copy is the text
	 * itself (doc->compact): the text at offset off is at copy + off -
	 * root->raw_off. The cartridge then points values into it rather
	 * than copying them. NULL otherwise (keel_envelope_read sets NULL). */
	const char *copy;
	/* "keelredacted": true - the event was redacted by keel forget
	 * (docs/semantics.md, "Forgetting"): a pointer its cartridge finds
	 * missing skips its operation instead of rejecting the event. */
	bool redacted;
};

/* The attribute keel forget adds to the envelopes it redacts. */
#define KEEL_REDACTED_ATTR "keelredacted"


/* Validates doc->root as an envelope. Returns 0, or -1 with the rule broken
 * appended to msg in the form `field "time": not an RFC 3339 timestamp`
 * (no position prefix: the caller adds line and id). */
int keel_envelope_read(const struct keel_json_doc *doc, struct keel_envelope *env,
		       struct keel_buf *msg);

#endif
