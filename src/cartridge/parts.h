/*
 * parts.h - what the cartridge's files share; the rest of the
 * library sees cartridge.h and keel.h only.
 *
 *   cartridge.c           the object, its handler map, keel_cartridge_run
 *   load.c      keel_cartridge_load: built-in, JSON file or .so
 *   shared.c    a cartridge in a shared object
 *   compile.c   the JSON form compiled into plans, its messages
 *   template.c  template and value fields, optional and default
 *   pointer.c   JSON Pointers: compiled once, resolved per event
 *   plan.c      a plan run on one event
 *   rowless.c   the types that may mention an entity no row names
 *   handler.c   the C handler API: keel_event_* (what a handler
 *                         reads), keel_ctx_* (an operation checked, added)
 *
 * A declarative cartridge becomes, per event type, a plan: an array of
 * operations whose templates are pre-split into literal pieces and
 * pre-parsed JSON Pointer tokens, and whose constants are pre-compacted.
 * A plan is run by keel_plan_handler, an ordinary keel_handler_fn, so
 * declarative and C cartridges share every keel_ctx_* call, limit and
 * message.
 */
#ifndef KEEL_CARTRIDGE_PARTS_H
#define KEEL_CARTRIDGE_PARTS_H

#include "cartridge.h"

/* ------------------------------------------------------ the cartridge */

typedef void (*keel_cartridge_fini_fn)(struct keel_cartridge *c);

struct keel_cartridge {
	char *name;
	char *version;
	/* What a store records of it (docs/cartridges.md, "The recorded
	 * cartridge"): "sha256:" and the hex digest of its compacted JSON text,
	 * or of a shared object's file; "" for one built with
	 * keel_cartridge_new. text: the compacted JSON (NULL if not JSON). */
	char hash[KEEL_CARTRIDGE_HASH_BUFSZ];
	char *text;
	size_t text_len;
	struct keel_arena arena;  /* handlers, plans and every string they hold */
	struct keel_map handlers; /* keel_hash64(type) -> struct handler */
	void *dl;		  /* shared-object cartridge: its handle */
	keel_cartridge_fini_fn fini;
};

/* One event type's handler: a plan's (fn keel_plan_handler, userdata its
 * plan) or C code's. */
struct handler {
	struct keel_str type; /* NUL-terminated copy in the cartridge arena */
	keel_handler_fn fn;
	void *userdata;
};

/* Registers fn for events of type type[0..len): KEEL_EINVAL for an empty
 * or too long type, or one already registered. */
int keel_cartridge_handler_add(struct keel_cartridge *c, const char *type, size_t len,
			       keel_handler_fn fn, void *userdata);
/* c->hash = "sha256:" and the hex digest of p[0..n). */
void keel_cartridge_set_hash(struct keel_cartridge *c, const void *p, size_t n);

/* ----------------------------------------------- handlers and context */

struct keel_event {
	const struct keel_json_doc *doc;
	const struct keel_envelope *env;
	struct keel_arena *arena; /* where keel_event_get puts its texts */
};

struct keel_ctx {
	const struct keel_event *ev;
	struct keel_arena *arena;
	struct keel_op *ops;
	size_t nops;
	size_t cap;
	size_t calls; /* operations requested so far: numbers them in messages */
	struct keel_buf *msg;
	bool rejected;
};

/* One operation as a handler asks for it: keel_ctx_* (C handlers) and
 * plans (declarative cartridges) both hand one to keel_ctx_add. */
struct op_request {
	enum keel_op_kind kind;
	const char *subject, *name, *object; /* name: kind, predicate, relation */
	size_t subject_len, name_len, object_len;
	const char *value; /* a fact's JSON text; NULL: none */
	size_t value_len;
	/* What a plan knows and a C handler does not. trusted: the texts come
	 * from validated JSON, so UTF-8 and JSON syntax need no second check.
	 * same_subject: the subject is the previous operation's text, and
	 * shares its copy. name_kept, value_kept: the text lives as long as
	 * the operations already (the plan's own literal; the arena or the
	 * envelope's copy, keel_envelope.copy), so it is not copied again. */
	bool trusted, same_subject, name_kept, value_kept;
};

/* Indexed by enum keel_op_kind: the operation's name, and the field its
 * name template fills (kind, predicate or relation). */
extern const char *const keel_op_names[];
extern const char *const keel_op_name_fields[];

/* Checks r's fields in the order of its arguments and adds the operation;
 * 0, or the event rejected with the rule broken in ctx->msg. */
int keel_ctx_add(struct keel_ctx *ctx, const struct op_request *r);
/* Rejects the event with `type "T": operation N (kind): ...`; the first
 * reason given is the one reported. Returns KEEL_EREJECTED. */
int keel_ctx_op_fail(struct keel_ctx *ctx, size_t opno, enum keel_op_kind kind,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Validated JSON text compacted into the arena (len + 1 bytes at most). */
struct keel_str keel_compact_into_arena(struct keel_arena *a, const char *text,
					size_t len);

/* ----------------------------------------------------------- pointers */

struct ptr_tok {
	const char *s; /* unescaped */
	size_t len;
	size_t index; /* when is_index: the array index it names */
	bool is_index;
};

/* An RFC 6901 pointer split once into unescaped tokens. */
struct ptr {
	const char *text; /* as written, for messages */
	size_t text_len;
	struct ptr_tok *toks;
	size_t ntoks;
	bool in_data; /* the first token is "data": start at env->data */
};

/* Parses text into p (tokens allocated in a). Returns NULL, or a static
 * description of the rule broken. */
const char *keel_ptr_compile(struct keel_arena *a, const char *text, size_t len,
			     struct ptr *p);
/* Resolves p in the event; NULL when it finds nothing. */
const struct keel_json *keel_ptr_eval(const struct ptr *p,
				      const struct keel_envelope *env);

/* -------------------------------------------------------------- plans */

/* A template is literal pieces and pointers in order: "vehicle:{/data/id}"
 * is the literal "vehicle:" then the pointer /data/id. */
struct piece {
	const char *lit; /* literal text when ptr is NULL */
	size_t lit_len;
	struct ptr *ptr;
};

/* What a plan does when a pointer finds nothing (docs/cartridges.md,
 * "Fields a producer may leave out"). For a template, a pointer landing on
 * null finds nothing too: null can never render into a name. For a value it
 * does not: null is a value, "no value", and asserted as such. */
enum on_absent {
	ABSENT_REJECTS = 0, /* the event is rejected: the field is required */
	ABSENT_SKIPS,	    /* "optional": true: the operation is skipped */
	ABSENT_DEFAULTS,    /* "default": V: V stands in for what is absent */
};

struct tmpl {
	struct piece *pieces;
	size_t npieces;
	bool present;	/* the field was given (entity "kind" is optional) */
	bool has_ptr;	/* some piece is a pointer */
	size_t lit_len; /* the literal pieces' bytes */
	enum on_absent absent;
	const char *dflt; /* ABSENT_DEFAULTS: the default, rendered at load */
	size_t dflt_len;
};

/* The value of a fact: a pointer into the event, or a constant. */
struct value_src {
	struct ptr *from; /* NULL: a constant */
	const char *json; /* the constant compacted; NULL for JSON null */
	size_t json_len;
	enum on_absent absent; /* when from finds nothing */
	const char *dflt;      /* ABSENT_DEFAULTS: compacted; NULL for JSON null */
	size_t dflt_len;
};

struct plan_op {
	enum keel_op_kind kind;
	bool same_subject; /* subject template equal to the previous op's */
	struct tmpl subject;
	struct tmpl name; /* kind, predicate or relation */
	struct tmpl object;
	struct value_src value;
};

struct plan {
	struct plan_op *ops;
	size_t nops;
};

/* The handler every declarative event type runs; userdata is its plan. */
int keel_plan_handler(struct keel_ctx *ctx, const struct keel_event *ev, void *userdata);
/* The text a template renders for a scalar: a string decoded, a number's
 * lexeme, true or false. False for null, arrays and objects. */
bool keel_scalar_text(const struct keel_json *v, const char **s, size_t *n);
/* Indexed by the JSON types a template cannot render: "null", "an array",
 * "an object". */
extern const char *const keel_unrenderable[];

/* ----------------------------------------------------------- compiler */

struct compiler {
	struct keel_cartridge *c;
	const struct keel_json_doc *doc;
	struct keel_buf err;
	struct keel_str name;  /* the cartridge's, once known */
	struct keel_str type;  /* the event type being compiled, or absent */
	size_t opno;	       /* 1-based; 0 outside an operation */
	const char *opname;    /* NULL until the "op" field is known */
	struct keel_buf quote; /* scratch for cquote */
};

/* Appends `cartridge "N": type "T": operation K (op): ` and the message to
 * cc->err. Returns KEEL_ECARTRIDGE. */
int keel_compile_fail(struct compiler *cc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* prefix and p[0..n) as a JSON string, quotes included; valid until the
 * next call. */
const char *keel_compile_quote(struct compiler *cc, const char *prefix, const char *p,
			       size_t n);
/* "a string", "an object", ...: a JSON type in a message. */
const char *keel_json_type_name(enum keel_json_type t);
/* s[0..n) copied, NUL-terminated, into the cartridge's arena. */
const char *keel_compile_str(struct compiler *cc, const char *s, size_t n);
/* The members of object v named in known (NULL-terminated): found[k] is
 * known[k]'s or NULL; any other member fails, named as FIELD.KEY. */
int keel_compile_members(struct compiler *cc, const char *field,
			 const struct keel_json *v, const char *const *known,
			 const struct keel_json **found);

/* A template field (a string, or an object with "template" and "optional"
 * or "default") into t; a fact's value ("from" or "const") into out. */
int keel_tmpl_compile(struct compiler *cc, const char *field, const struct keel_json *v,
		      size_t max, struct tmpl *t);
int keel_value_compile(struct compiler *cc, const struct keel_json *v,
		       struct value_src *out);
/* Two templates that render the same text for every event. */
bool keel_tmpl_eq(const struct tmpl *a, const struct tmpl *b);
/* The same literals and pointers in the same order. */
bool keel_tmpl_same_pieces(const struct tmpl *a, const struct tmpl *b);

/* Compiles json, prefixing any message with `prefix: ` (a file's path). */
int keel_cartridge_compile_named(const char *json, size_t len, const char *prefix,
				 struct keel_cartridge **out, char **errmsg);

/* ------------------------------------------------------------ loading */

/* Sets *errmsg to `cartridge "PATH": ...`; returns KEEL_ECARTRIDGE. */
int keel_cartridge_load_fail(char **errmsg, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The whole file, malloc'ed (NULL when empty); -1 with errno on failure. */
int keel_cartridge_read_file(const char *path, char **text, size_t *len);
/* A shared object's cartridge (shared.c). */
int keel_cartridge_load_shared(const char *path, struct keel_cartridge **out,
			       char **errmsg);

#endif
