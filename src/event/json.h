/*
 * json.h - Keel's validating JSON parser and the few JSON helpers the rest
 * of the library needs (pointer lookup, compaction).
 *
 * The parser builds a read-only tree in a caller-owned keel_json_doc whose
 * memory is reused from one parse to the next, so parsing an envelope does
 * no malloc in the steady state. It enforces RFC 8259 strictly plus Keel's
 * rules: valid UTF-8 everywhere (no overlongs, no surrogates encoded in
 * UTF-8, \u escapes paired correctly), no duplicate keys in an object, depth
 * at most KEEL_JSON_MAX_DEPTH, nothing but whitespace after the value.
 *
 * Strings (decoded), keys and number lexemes are copied into the doc's
 * arena with str[len] == 0 and key[key_len] == 0: the text is const and
 * need not be NUL-terminated, so pointing into it could not keep that
 * promise (the copy rides along with validation and costs next to nothing).
 * raw_off/raw_len refer to the source text, which must outlive the tree.
 */
#ifndef KEEL_JSON_H
#define KEEL_JSON_H

#include "util.h"

#define KEEL_JSON_MAX_DEPTH 64

enum keel_json_type {
	KEEL_JSON_NULL,
	KEEL_JSON_FALSE,
	KEEL_JSON_TRUE,
	KEEL_JSON_NUMBER,
	KEEL_JSON_STRING,
	KEEL_JSON_ARRAY,
	KEEL_JSON_OBJECT,
};

struct keel_json {
	enum keel_json_type type;
	/* STRING: decoded bytes; NUMBER: the lexeme as written. */
	const char *str;
	size_t len; /* STRING/NUMBER: bytes of str; ARRAY/OBJECT: members */
	/* The value's span in the source text, from its first to its last
	 * byte inclusive of quotes/brackets: used to copy values verbatim. */
	size_t raw_off;
	size_t raw_len;
	/* Member of an object: its decoded key. */
	const char *key;
	size_t key_len;
	struct keel_json *child; /* first member (ARRAY/OBJECT) */
	struct keel_json *next;  /* next sibling */
};

/* Where a parse failed and why: the message names the rule broken,
 * e.g. "duplicate key \"id\"", "invalid UTF-8", "nesting deeper than 64". */
struct keel_json_error {
	size_t offset; /* byte offset into the text */
	char msg[96];
};

struct keel_json_doc {
	struct keel_arena arena; /* nodes and decoded strings */
	struct keel_json *root;
	const char *text; /* the source text of the last parse */
	size_t text_len;
	bool compact; /* the root value has no blanks outside strings */
	void *scratch; /* parser state reused between parses (private) */
};

void keel_json_doc_init(struct keel_json_doc *doc);
void keel_json_doc_free(struct keel_json_doc *doc);

/* Parses text[0..len) into doc (dropping any previous tree). Returns 0 and
 * sets doc->root, or -1 and fills *err (doc->root is then NULL). The text
 * need not be NUL-terminated. */
int keel_json_parse(struct keel_json_doc *doc, const char *text, size_t len,
		    struct keel_json_error *err);

/* Member of an object by key, or NULL. */
const struct keel_json *keel_json_get(const struct keel_json *obj,
				      const char *key, size_t key_len);

/* Resolves an RFC 6901 pointer ("" is the whole document; "~0" and "~1"
 * are unescaped; array indexes are decimal without leading zeros).
 * Returns NULL when any step is missing. */
const struct keel_json *keel_json_pointer(const struct keel_json *root,
					  const char *ptr, size_t ptr_len);

/* Appends the source text of a value with all whitespace outside strings
 * removed; strings and numbers are copied byte for byte as written. */
void keel_json_compact(const struct keel_json_doc *doc,
		       const struct keel_json *v, struct keel_buf *out);

/* Same on raw, already validated JSON text. */
void keel_json_compact_text(const char *text, size_t len, struct keel_buf *out);

#endif
