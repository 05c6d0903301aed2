/*
 * test_cartridge.c - cartridges: compile errors with their exact messages,
 * template and value rendering, limits, pointers, the fleet cartridge, the C
 * handler API through a dlopen'd shared object, and the golden cases under
 * tests/data/cartridge/.
 *
 * Events are given to keel_cartridge_run the way the ingester does: a parsed
 * document and an envelope. The envelope is filled here from the document
 * without validation, since envelope rules are not the cartridge's business.
 */
#include "support.h"
#include "event/json_write.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cartridge/cartridge.h"
#include "event/json.h"

/* ------------------------------------------------------------- helpers */

static struct keel_str member_str(const struct keel_json *root, const char *key)
{
	const struct keel_json *v = keel_json_get(root, key, strlen(key));
	if (!v || v->type != KEEL_JSON_STRING)
		return KEEL_STR_NULL;
	return keel_str_make(v->str, v->len);
}

static void add_op(struct keel_buf *b, const struct keel_op *op)
{
	static const char *const names[] = {"entity", "fact", "unset", "link", "unlink"};
	keel_buf_adds(b, names[op->kind]);
	keel_buf_addc(b, ' ');
	keel_buf_add_json_str(b, op->subject);
	switch (op->kind) {
	case KEEL_OP_ENTITY:
		keel_buf_adds(b, " kind ");
		if (op->name.ptr)
			keel_buf_add_json_str(b, op->name);
		else
			keel_buf_adds(b, "none");
		break;
	case KEEL_OP_FACT:
		keel_buf_addc(b, ' ');
		keel_buf_add_json_str(b, op->name);
		keel_buf_adds(b, " = ");
		if (op->value.ptr)
			keel_buf_addstr(b, op->value);
		else
			keel_buf_adds(b, "none");
		break;
	case KEEL_OP_UNSET:
		keel_buf_addc(b, ' ');
		keel_buf_add_json_str(b, op->name);
		break;
	case KEEL_OP_LINK:
	case KEEL_OP_UNLINK:
		keel_buf_addc(b, ' ');
		keel_buf_add_json_str(b, op->name);
		keel_buf_addc(b, ' ');
		keel_buf_add_json_str(b, op->object);
		break;
	}
	keel_buf_addc(b, '\n');
}

/* One envelope run as the ingester runs it: the parsed document, the
 * envelope filled from it, a batch arena and a message buffer that already
 * holds text of the caller's, which a run must leave alone; ops and nops
 * hold values a run must overwrite. */
struct one_run {
	struct keel_json_doc doc;
	struct keel_envelope env;
	struct keel_arena arena;
	struct keel_buf msg;
	struct keel_op *ops;
	size_t nops;
	enum keel_run_result result;
};

static void one_run(struct one_run *r, const struct keel_cartridge *c, const char *text,
		    size_t len)
{
	struct keel_json_error err;
	keel_json_doc_init(&r->doc);
	if (keel_json_parse(&r->doc, text, len, &err) != 0)
		fail_msg("test envelope is not JSON: %s: %.*s", err.msg, (int)len, text);
	const struct keel_json *root = r->doc.root;
	memset(&r->env, 0, sizeof r->env);
	r->env.root = root;
	r->env.id = member_str(root, "id");
	r->env.tenant = member_str(root, "tenant");
	r->env.type = member_str(root, "type");
	r->env.data = keel_json_get(root, "data", 4);
	struct keel_str time = member_str(root, "time");
	if (time.ptr)
		assert_int_equal(keel_time_parse(time.ptr, time.len, &r->env.time, NULL),
				 0);
	keel_arena_init(&r->arena);
	keel_buf_init(&r->msg);
	keel_buf_adds(&r->msg, "(earlier text kept)");
	r->ops = (struct keel_op *)&r->arena;
	r->nops = 99;
	r->result = keel_cartridge_run(c, &r->doc, &r->env, &r->arena, &r->ops, &r->nops,
				       &r->msg);
}

static void one_run_free(struct one_run *r)
{
	keel_buf_free(&r->msg);
	keel_arena_free(&r->arena);
	keel_json_doc_free(&r->doc);
}

/* Runs one envelope; appends "ok" and one line per op, "rejected: MSG" or
 * "unhandled" to out. Returns the result. */
static enum keel_run_result run_into(const struct keel_cartridge *c, const char *text,
				     size_t len, struct keel_buf *out)
{
	struct one_run r;
	one_run(&r, c, text, len);
	switch (r.result) {
	case KEEL_RUN_OK:
		keel_buf_adds(out, "ok\n");
		for (size_t i = 0; i < r.nops; i++) {
			keel_buf_adds(out, "  ");
			add_op(out, &r.ops[i]);
		}
		/* The previous content of msg is the caller's: left alone. */
		assert_string_equal(r.msg.data, "(earlier text kept)");
		break;
	case KEEL_RUN_UNHANDLED:
		keel_buf_adds(out, "unhandled\n");
		assert_int_equal(r.nops, 0);
		break;
	case KEEL_RUN_REJECTED:
		assert_int_equal(r.nops, 0);
		assert_null(r.ops);
		assert_memory_equal(r.msg.data, "(earlier text kept)", 19);
		keel_buf_adds(out, "rejected: ");
		keel_buf_adds(out, r.msg.data + 19);
		keel_buf_addc(out, '\n');
		break;
	}
	one_run_free(&r);
	return r.result;
}

/* The result of one event as a malloc'd string. */
static char *run(const struct keel_cartridge *c, const char *envelope)
{
	struct keel_buf out;
	keel_buf_init(&out);
	run_into(c, envelope, strlen(envelope), &out);
	return out.data;
}

/* An envelope of the given type around a data object. */
static char *envelope(const char *type, const char *data)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_adds(
	    &b,
	    "{\"specversion\":\"1.0\",\"id\":\"e-1\",\"tenant\":\"acme\",\"type\":\"");
	keel_buf_adds(&b, type);
	keel_buf_adds(&b, "\",\"time\":\"2026-03-01T10:00:00.5Z\",\"data\":");
	keel_buf_adds(&b, data);
	keel_buf_addc(&b, '}');
	return b.data;
}

/* The result of an event of the given type around data, malloc'd. */
static char *run_data(const struct keel_cartridge *c, const char *type, const char *data)
{
	char *env = envelope(type, data);
	char *got = run(c, env);
	free(env);
	return got;
}

static void expect_run(const struct keel_cartridge *c, const char *type, const char *data,
		       const char *expected)
{
	char *got = run_data(c, type, data);
	if (strcmp(got, expected) != 0)
		fail_msg("event of type %s with data %s\nexpected:\n%s\ngot:\n%s", type,
			 data, expected, got);
	free(got);
}

static struct keel_cartridge *compile_ok(const char *json)
{
	struct keel_cartridge *c = NULL;
	char *err = NULL;
	int rc = keel_cartridge_compile(json, strlen(json), &c, &err);
	if (rc != 0)
		fail_msg("compile failed: %s", err ? err : "(no message)");
	assert_null(err);
	assert_non_null(c);
	return c;
}

static void expect_compile_error(const char *json, const char *expected)
{
	struct keel_cartridge *c = (struct keel_cartridge *)&c;
	char *err = NULL;
	int rc = keel_cartridge_compile(json, strlen(json), &c, &err);
	assert_int_equal(rc, KEEL_ECARTRIDGE);
	assert_null(c);
	assert_non_null(err);
	if (strcmp(err, expected) != 0)
		fail_msg("cartridge %s\nexpected: %s\ngot:      %s", json, expected, err);
	free(err);
}

/* A one-type cartridge "t" whose type "e" has the given operations. */
static char *one_type(const char *ops)
{
	struct keel_buf b;
	keel_buf_init(&b);
	keel_buf_adds(&b, "{\"cartridge\":\"t\",\"version\":\"1\",\"events\":{\"e\":[");
	keel_buf_adds(&b, ops);
	keel_buf_adds(&b, "]}}");
	return b.data;
}

/* one_type(ops) compiled; it must compile. */
static struct keel_cartridge *compile_one_type(const char *ops)
{
	char *json = one_type(ops);
	struct keel_cartridge *c = compile_ok(json);
	free(json);
	return c;
}

static void expect_op_error(const char *ops, const char *expected)
{
	char *json = one_type(ops);
	expect_compile_error(json, expected);
	free(json);
}

static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);
	memset(s, c, n);
	s[n] = 0;
	return s;
}

/* ------------------------------------------------------- compile errors */

static void test_compile_errors_document(void **state)
{
	(void)state;
	expect_compile_error("[]", "cartridge: not a JSON object but an array");
	expect_compile_error("{}", "cartridge: field \"cartridge\": missing");
	expect_compile_error("{\"cartridge\":1}",
			     "cartridge: field \"cartridge\": not a string but a number");
	expect_compile_error("{\"cartridge\":\"\"}",
			     "cartridge: field \"cartridge\": empty");
	expect_compile_error("{\"cartridge\":\"t\",\"events\":{}}",
			     "cartridge \"t\": field \"version\": missing");
	expect_compile_error(
	    "{\"cartridge\":\"t\",\"version\":1,\"events\":{}}",
	    "cartridge \"t\": field \"version\": not a string but a number");
	expect_compile_error("{\"cartridge\":\"t\",\"version\":\"1\"}",
			     "cartridge \"t\": field \"events\": missing");
	expect_compile_error(
	    "{\"cartridge\":\"t\",\"version\":\"1\",\"events\":[]}",
	    "cartridge \"t\": field \"events\": not an object but an array");
	expect_compile_error(
	    "{\"cartridge\":\"t\",\"version\":\"1\",\"events\":{},\"handlers\":{}}",
	    "cartridge \"t\": field \"handlers\": unknown");
	expect_compile_error(
	    "{\"cartridge\":\"t\",\"version\":\"1\",\"description\":false,\"events\":{}}",
	    "cartridge \"t\": field \"description\": not a string but a boolean");
	expect_compile_error(
	    "{\"cartridge\":\"t\",\"version\":\"1\",\"events\":{\"\":[]}}",
	    "cartridge \"t\": type \"\": not 1-256 bytes");
	expect_compile_error(
	    "{\"cartridge\":\"t\",\"version\":\"1\",\"events\":{\"e\":{}}}",
	    "cartridge \"t\": type \"e\": not an array of operations but an object");
	/* The parser refuses duplicate keys, so a type listed twice fails
	 * there, naming it. */
	expect_compile_error(
	    "{\"cartridge\":\"t\",\"version\":\"1\",\"events\":{\"e\":[],\"e\":[]}}",
	    "cartridge: not valid JSON: duplicate key \"e\" at byte 48");
	expect_compile_error("{\"cartridge\":\"t\",",
			     "cartridge: not valid JSON: "
			     "unexpected end of input at byte 17");
	/* Names are quoted as JSON strings in messages. */
	expect_compile_error("{\"cartridge\":\"a\\\"b\"}",
			     "cartridge \"a\\\"b\": field \"version\": missing");
	/* So are keys, operations and pointers from the cartridge's text:
	 * a control character stays escaped and the message one line. */
	expect_compile_error(
	    "{\"cartridge\":\"t\",\"version\":\"1\",\"events\":{},\"a\\nb\":1}",
	    "cartridge \"t\": field \"a\\nb\": unknown");
}

static void test_compile_errors_operations(void **state)
{
	(void)state;
	expect_op_error(
	    "\"entity\"",
	    "cartridge \"t\": type \"e\": operation 1: not an object but a string");
	expect_op_error(
	    "{\"subject\":\"s\"}",
	    "cartridge \"t\": type \"e\": operation 1: field \"op\": missing");
	expect_op_error("{\"op\":3}", "cartridge \"t\": type \"e\": operation 1: field "
				      "\"op\": not a string but a number");
	expect_op_error("{\"op\":\"me\\u0000rge\"}",
			"cartridge \"t\": type \"e\": operation 1: field \"op\": unknown "
			"operation \"me\\u0000rge\"");
	expect_op_error("{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"p\","
			"\"value\":{\"from\":\"/a\",\"\\twhy\":1}}",
			"cartridge \"t\": type \"e\": operation 1 (fact): field "
			"\"value.\\twhy\": unknown");
	expect_op_error("{\"op\":\"entity\",\"subject\":\"s\"},{\"op\":\"merge\"}",
			"cartridge \"t\": type \"e\": operation 2: field \"op\": unknown "
			"operation \"merge\"");
	expect_op_error("{\"op\":\"entity\"}", "cartridge \"t\": type \"e\": operation 1 "
					       "(entity): field \"subject\": missing");
	expect_op_error(
	    "{\"op\":\"fact\",\"subject\":\"s\",\"kind\":\"k\",\"predicate\":\"p\","
	    "\"value\":{\"const\":1}}",
	    "cartridge \"t\": type \"e\": operation 1 (fact): field \"kind\": "
	    "unknown");
	expect_op_error(
	    "{\"op\":\"unset\",\"subject\":\"s\",\"predicate\":\"p\",\"value\":{"
	    "\"const\":1}}",
	    "cartridge \"t\": type \"e\": operation 1 (unset): field \"value\": "
	    "unknown");
	expect_op_error("{\"op\":\"fact\",\"subject\":\"s\",\"value\":{\"const\":1}}",
			"cartridge \"t\": type \"e\": operation 1 (fact): field "
			"\"predicate\": missing");
	expect_op_error("{\"op\":\"unset\",\"subject\":\"s\"}",
			"cartridge \"t\": type \"e\": operation 1 (unset): field "
			"\"predicate\": missing");
	/* The example of the brief: the third operation of a type. */
	expect_op_error(
	    "{\"op\":\"entity\",\"subject\":\"s\"},"
	    "{\"op\":\"link\",\"subject\":\"s\",\"relation\":\"r\"}",
	    "cartridge \"t\": type \"e\": operation 2 (link): field \"object\": "
	    "missing");
	expect_op_error("{\"op\":\"unlink\",\"subject\":\"s\",\"object\":\"o\"}",
			"cartridge \"t\": type \"e\": operation 1 (unlink): field "
			"\"relation\": missing");
	expect_op_error(
	    "{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"p\"}",
	    "cartridge \"t\": type \"e\": operation 1 (fact): field \"value\": "
	    "missing");
	expect_op_error(
	    "{\"op\":\"link\",\"subject\":1,\"relation\":\"r\",\"object\":\"o\"}",
	    "cartridge \"t\": type \"e\": operation 1 (link): field "
	    "\"subject\": not a string or an object but a number");
	expect_op_error(
	    "{\"op\":\"entity\",\"subject\":\"s\",\"kind\":null}",
	    "cartridge \"t\": type \"e\": operation 1 (entity): field \"kind\": "
	    "not a string or an object but null");
}

static void test_compile_errors_values(void **state)
{
	(void)state;
	const char *pre = "cartridge \"t\": type \"e\": operation 1 (fact): ";
	struct {
		const char *value, *msg;
	} cases[] = {
	    {"\"/data/x\"", "field \"value\": not an object but a string"},
	    {"{}", "field \"value\": needs exactly one of \"from\" and \"const\""},
	    {"{\"from\":\"/a\",\"const\":1}",
	     "field \"value\": needs exactly one of \"from\" and \"const\""},
	    {"{\"path\":\"/a\"}", "field \"value.path\": unknown"},
	    {"{\"from\":[\"/a\"]}", "field \"value.from\": not a string but an array"},
	    {"{\"from\":\"data/x\"}", "field \"value.from\": pointer \"data/x\": must be "
				      "empty or start with \"/\""},
	    {"{\"from\":\"/data/x~\"}",
	     "field \"value.from\": pointer \"/data/x~\": \"~\" not followed by \"0\" or "
	     "\"1\""},
	};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(cases); i++) {
		struct keel_buf ops, msg;
		keel_buf_init(&ops);
		keel_buf_init(&msg);
		keel_buf_addf(&ops,
			      "{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"p\","
			      "\"value\":%s}",
			      cases[i].value);
		keel_buf_addf(&msg, "%s%s", pre, cases[i].msg);
		expect_op_error(ops.data, msg.data);
		keel_buf_free(&ops);
		keel_buf_free(&msg);
	}

	/* A constant of exactly 64 KiB compiles; one byte more does not. */
	char *s = repeat('x', KEEL_VALUE_MAX - 2);
	struct keel_buf ops;
	keel_buf_init(&ops);
	keel_buf_addf(&ops,
		      "{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"p\","
		      "\"value\":{\"const\":\"%s\"}}",
		      s);
	keel_cartridge_free(compile_one_type(ops.data));
	keel_buf_reset(&ops);
	keel_buf_addf(&ops,
		      "{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"p\","
		      "\"value\":{\"const\":[\"%s\"]}}",
		      s);
	expect_op_error(ops.data,
			"cartridge \"t\": type \"e\": operation 1 (fact): field "
			"\"value.const\": longer than 65536 bytes");
	keel_buf_free(&ops);
	free(s);
}

static void test_compile_errors_templates(void **state)
{
	(void)state;
	const char *pre = "cartridge \"t\": type \"e\": operation 1 (entity): ";
	struct {
		const char *subject, *msg;
	} cases[] = {
	    {"v:{/data/id", "field \"subject\": unbalanced \"{\" in template"},
	    {"v:/data/id}", "field \"subject\": unbalanced \"}\" in template"},
	    {"v:{/a{/b}}", "field \"subject\": unbalanced \"{\" in template"},
	    {"v:{}", "field \"subject\": empty pointer in template"},
	    {"v:{data/id}",
	     "field \"subject\": pointer \"data/id\": must be empty or start with \"/\""},
	    {"v:{/a~2}",
	     "field \"subject\": pointer \"/a~2\": \"~\" not followed by \"0\" or \"1\""},
	    {"", "field \"subject\": empty"},
	    {"{{}}{", "field \"subject\": unbalanced \"{\" in template"},
	};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(cases); i++) {
		struct keel_buf ops, msg;
		keel_buf_init(&ops);
		keel_buf_init(&msg);
		keel_buf_adds(&ops, "{\"op\":\"entity\",\"subject\":");
		keel_buf_add_json_str(&ops, keel_str_cstr(cases[i].subject));
		keel_buf_addc(&ops, '}');
		keel_buf_addf(&msg, "%s%s", pre, cases[i].msg);
		expect_op_error(ops.data, msg.data);
		keel_buf_free(&ops);
		keel_buf_free(&msg);
	}

	/* Literal text that can never fit fails at load. */
	struct keel_buf ops;
	keel_buf_init(&ops);
	char *s = repeat('a', 255);
	keel_buf_addf(&ops, "{\"op\":\"entity\",\"subject\":\"%s\"}", s);
	keel_cartridge_free(compile_one_type(ops.data));
	keel_buf_reset(&ops);
	keel_buf_addf(&ops, "{\"op\":\"entity\",\"subject\":\"%s{/x}b\"}", s);
	expect_op_error(ops.data, "cartridge \"t\": type \"e\": operation 1 (entity): "
				  "field \"subject\": longer than 255 bytes");
	free(s);
	s = repeat('p', 129);
	keel_buf_reset(&ops);
	keel_buf_addf(&ops, "{\"op\":\"unset\",\"subject\":\"s\",\"predicate\":\"%s\"}",
		      s);
	expect_op_error(ops.data, "cartridge \"t\": type \"e\": operation 1 (unset): "
				  "field \"predicate\": longer than 128 bytes");
	free(s);
	keel_buf_free(&ops);
}

/* "optional" and "default" (docs/cartridges.md, "Fields a producer may
 * leave out"): every bad form fails at load, naming the field. */
static void test_compile_errors_absent(void **state)
{
	(void)state;
	const char *pre = "cartridge \"t\": type \"e\": operation 1 ";
	struct {
		const char *op, *msg;
	} cases[] = {
	    /* values */
	    {"{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"p\","
	     "\"value\":{\"from\":\"/a\",\"optional\":1}}",
	     "(fact): field \"value.optional\": not a boolean but a number"},
	    {"{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"p\","
	     "\"value\":{\"from\":\"/a\",\"optional\":true,\"default\":1}}",
	     "(fact): field \"value\": \"optional\" and \"default\" together (a field "
	     "with a default is never absent)"},
	    {"{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"p\","
	     "\"value\":{\"const\":1,\"optional\":true}}",
	     "(fact): field \"value.optional\": only with \"from\""},
	    {"{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"p\","
	     "\"value\":{\"const\":1,\"default\":2}}",
	     "(fact): field \"value.default\": only with \"from\""},
	    {"{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"p\","
	     "\"value\":{\"default\":2}}",
	     "(fact): field \"value\": needs exactly one of \"from\" and \"const\""},
	    {"{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"p\","
	     "\"value\":{\"from\":\"/a\",\"Optional\":true}}",
	     "(fact): field \"value.Optional\": unknown"},
	    /* templates */
	    {"{\"op\":\"entity\",\"subject\":[\"v\"]}",
	     "(entity): field \"subject\": not a string or an object but an array"},
	    {"{\"op\":\"entity\",\"subject\":{\"template\":\"v:{/a}\",\"optional\":"
	     "\"yes\"}}",
	     "(entity): field \"subject.optional\": not a boolean but a string"},
	    {"{\"op\":\"entity\",\"subject\":{\"template\":\"v:{/a}\",\"optional\":true,"
	     "\"default\":\"x\"}}",
	     "(entity): field \"subject\": \"optional\" and \"default\" together (a "
	     "field with a default is never absent)"},
	    {"{\"op\":\"entity\",\"subject\":{\"optional\":true}}",
	     "(entity): field \"subject.template\": missing"},
	    {"{\"op\":\"entity\",\"subject\":{\"template\":7}}",
	     "(entity): field \"subject.template\": not a string but a number"},
	    {"{\"op\":\"entity\",\"subject\":{\"template\":\"v:{/a}\",\"fallback\":"
	     "\"x\"}}",
	     "(entity): field \"subject.fallback\": unknown"},
	    {"{\"op\":\"entity\",\"subject\":{\"template\":\"v\",\"optional\":true}}",
	     "(entity): field \"subject\": \"optional\" but no pointer in the template"},
	    {"{\"op\":\"entity\",\"subject\":{\"template\":\"{{v}}\",\"default\":\"x\"}}",
	     "(entity): field \"subject\": \"default\" but no pointer in the template"},
	    {"{\"op\":\"entity\",\"subject\":{\"template\":\"v:{/a}\",\"default\":null}}",
	     "(entity): field \"subject.default\": null, not a string, number or "
	     "boolean"},
	    {"{\"op\":\"entity\",\"subject\":{\"template\":\"v:{/a}\",\"default\":{}}}",
	     "(entity): field \"subject.default\": an object, not a string, number or "
	     "boolean"},
	    {"{\"op\":\"entity\",\"subject\":{\"template\":\"v:{/a}\",\"default\":"
	     "\"a\\u0000b\"}}",
	     "(entity): field \"subject.default\": contains U+0000 (NUL)"},
	    {"{\"op\":\"entity\",\"subject\":{\"template\":\"v:{/a\",\"optional\":true}}",
	     "(entity): field \"subject\": unbalanced \"{\" in template"},
	    {"{\"op\":\"entity\",\"subject\":\"s\",\"kind\":{\"template\":\"{/k}\","
	     "\"optional\":null}}",
	     "(entity): field \"kind.optional\": not a boolean but null"},
	    {"{\"op\":\"link\",\"subject\":\"s\",\"relation\":\"r\",\"object\":{"
	     "\"template\":\"o:{/o}\",\"default\":[1]}}",
	     "(link): field \"object.default\": an array, not a string, number or "
	     "boolean"},
	};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(cases); i++) {
		struct keel_buf msg;
		keel_buf_init(&msg);
		keel_buf_addf(&msg, "%s%s", pre, cases[i].msg);
		expect_op_error(cases[i].op, msg.data);
		keel_buf_free(&msg);
	}

	/* A default that can never fit beside the template's literal text
	 * fails at load; one that just fits compiles. */
	struct keel_buf ops;
	keel_buf_init(&ops);
	char *s = repeat('d', 253);
	keel_buf_addf(&ops,
		      "{\"op\":\"entity\",\"subject\":{\"template\":\"v:{/a}\","
		      "\"default\":\"%s\"}}",
		      s);
	keel_cartridge_free(compile_one_type(ops.data));
	free(s);
	s = repeat('d', 254);
	keel_buf_reset(&ops);
	keel_buf_addf(&ops,
		      "{\"op\":\"entity\",\"subject\":{\"template\":\"v:{/a}\","
		      "\"default\":\"%s\"}}",
		      s);
	expect_op_error(ops.data, "cartridge \"t\": type \"e\": operation 1 (entity): "
				  "field \"subject.default\": longer than 255 bytes with "
				  "the template's text");
	free(s);
	/* A value's default obeys the value limit, as a constant does. */
	s = repeat('x', KEEL_VALUE_MAX);
	keel_buf_reset(&ops);
	keel_buf_addf(&ops,
		      "{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"p\","
		      "\"value\":{\"from\":\"/a\",\"default\":\"%s\"}}",
		      s);
	expect_op_error(ops.data, "cartridge \"t\": type \"e\": operation 1 (fact): "
				  "field \"value.default\": longer than 65536 bytes");
	free(s);
	keel_buf_free(&ops);
}

/* -------------------------------------------------------------- running */

static const char render_cartridge[] =
    "{\"cartridge\":\"render\",\"version\":\"1\",\"events\":{"
    "\"r.tmpl\":[{\"op\":\"link\",\"subject\":\"s:{/data/a}\","
    "\"relation\":\"r{/data/b}\",\"object\":\"{/data/c}-{/data/c}\"}],"
    "\"r.value\":[{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"p\","
    "\"value\":{\"from\":\"/data/v\"}}],"
    "\"r.const\":[{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"c\","
    "\"value\":{\"const\": { \"a\" : [1, 2.50, \"x y\"] } }},"
    "{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"n\",\"value\":{\"const\":null}}],"
    "\"r.two\":[{\"op\":\"entity\",\"subject\":\"s:{/data/a}\",\"kind\":\"k\"},"
    "{\"op\":\"link\",\"subject\":\"s:{/data/a}\",\"relation\":\"r\","
    "\"object\":\"o:{/data/missing}\"}],"
    "\"r.ptr\":[{\"op\":\"fact\",\"subject\":\"s:{/data/a~1b}:{/data/m~0n}:{/data/arr/"
    "1}\","
    "\"predicate\":\"p\",\"value\":{\"from\":\"/data/arr/0\"}}],"
    "\"r.braces\":[{\"op\":\"entity\",\"subject\":\"{{{/data/a}}}\"}],"
    "\"r.empty\":[]"
    "}}";

static void test_render_scalars(void **state)
{
	(void)state;
	struct keel_cartridge *c = compile_ok(render_cartridge);
	assert_string_equal(keel_cartridge_name(c), "render");
	/* A string renders as its decoded text, a number as its lexeme, a
	 * boolean as true/false. */
	expect_run(c, "r.tmpl", "{\"a\":\"x\\u00e9\\\"\",\"b\":1.50E+3,\"c\":true}",
		   "ok\n  link \"s:x\xc3\xa9\\\"\" \"r1.50E+3\" \"true-true\"\n");
	expect_run(c, "r.tmpl", "{\"a\":-0,\"b\":\"\",\"c\":false}",
		   "ok\n  link \"s:-0\" \"r\" \"false-false\"\n");
	/* Values are copied as compact JSON exactly as they appeared. */
	expect_run(c, "r.value", "{\"v\":\"caf\\u00e9 \\/ x\"}",
		   "ok\n  fact \"s\" \"p\" = \"caf\\u00e9 \\/ x\"\n");
	expect_run(c, "r.value", "{\"v\":1.0e-7}", "ok\n  fact \"s\" \"p\" = 1.0e-7\n");
	expect_run(c, "r.value", "{\"v\":false}", "ok\n  fact \"s\" \"p\" = false\n");
	expect_run(c, "r.value",
		   "{\"v\": { \"lat\" : 45.5 ,\n \"lon\":[ 1 , \"a b\" ] } }",
		   "ok\n  fact \"s\" \"p\" = {\"lat\":45.5,\"lon\":[1,\"a b\"]}\n");
	expect_run(c, "r.value", "{\"v\":[]}", "ok\n  fact \"s\" \"p\" = []\n");
	/* Constants are compacted once, at load. */
	expect_run(
	    c, "r.const", "{}",
	    "ok\n  fact \"s\" \"c\" = {\"a\":[1,2.50,\"x y\"]}\n  fact \"s\" \"n\" = "
	    "none\n");
	/* "{{" and "}}" are literal braces. */
	expect_run(c, "r.braces", "{\"a\":7}", "ok\n  entity \"{7}\" kind none\n");
	/* A type with no operations is handled, not unhandled. */
	expect_run(c, "r.empty", "{}", "ok\n");
	expect_run(c, "r.nope", "{}", "unhandled\n");
	keel_cartridge_free(c);
}

/* "" points at the whole envelope (RFC 6901), not at its data: the value
 * is the envelope itself, compacted. The pointer's in_data flag was once
 * left unset for "", and read whatever the arena held: under ASan, whose
 * fill byte makes fresh memory non-zero, the value was the data object. */
static void test_empty_pointer_is_the_envelope(void **state)
{
	(void)state;
	struct keel_cartridge *c =
	    compile_one_type("{\"op\":\"fact\",\"subject\":\"s\",\"predicate\":\"p\","
			     "\"value\":{\"from\":\"\"}}");
	char *env = envelope("e", "{\"a\": 1}");
	struct keel_buf want;
	keel_buf_init(&want);
	keel_buf_adds(&want, "ok\n  fact \"s\" \"p\" = ");
	keel_json_compact_text(env, strlen(env), &want);
	keel_buf_addc(&want, '\n');
	char *got = run(c, env);
	assert_string_equal(got, want.data);
	free(got);
	keel_buf_free(&want);
	free(env);
	keel_cartridge_free(c);
}

static void test_null_values(void **state)
{
	(void)state;
	struct keel_cartridge *c = compile_ok(render_cartridge);
	/* A value that is JSON null asserts "no value": a fact without one. */
	expect_run(c, "r.value", "{\"v\":null}", "ok\n  fact \"s\" \"p\" = none\n");
	expect_run(c, "r.value", "{\"v\":  null }", "ok\n  fact \"s\" \"p\" = none\n");
	/* A template pointer may not land on null, an object or an array. */
	expect_run(
	    c, "r.tmpl", "{\"a\":null,\"b\":1,\"c\":1}",
	    "rejected: type \"r.tmpl\": operation 1 (link): pointer \"/data/a\": null, "
	    "not a string, number or boolean\n");
	expect_run(
	    c, "r.tmpl", "{\"a\":1,\"b\":{},\"c\":1}",
	    "rejected: type \"r.tmpl\": operation 1 (link): pointer \"/data/b\": an "
	    "object, not a string, number or boolean\n");
	expect_run(
	    c, "r.tmpl", "{\"a\":1,\"b\":1,\"c\":[\"x\"]}",
	    "rejected: type \"r.tmpl\": operation 1 (link): pointer \"/data/c\": an "
	    "array, not a string, number or boolean\n");
	keel_cartridge_free(c);
}

static void test_pointer_misses(void **state)
{
	(void)state;
	struct keel_cartridge *c = compile_ok(render_cartridge);
	expect_run(c, "r.value", "{}",
		   "rejected: type \"r.value\": operation 1 (fact): pointer \"/data/v\": "
		   "missing\n");
	expect_run(c, "r.tmpl", "{\"a\":1,\"c\":1}",
		   "rejected: type \"r.tmpl\": operation 1 (link): pointer \"/data/b\": "
		   "missing\n");
	/* The second operation fails: the first takes no effect either. */
	expect_run(c, "r.two", "{\"a\":1}",
		   "rejected: type \"r.two\": operation 2 (link): pointer "
		   "\"/data/missing\": missing\n");
	/* Data that is not an object has no members. */
	expect_run(c, "r.value", "[1]",
		   "rejected: type \"r.value\": operation 1 (fact): pointer \"/data/v\": "
		   "missing\n");
	keel_cartridge_free(c);
}

/* Operations whose subject template is the previous one's share its
 * rendered copy (the overlay then looks the entity up once); any other
 * template is rendered afresh, even right after a run. */
static const char runs_cartridge[] =
    "{\"cartridge\":\"runs\",\"version\":\"1\",\"events\":{\"s.runs\":["
    "{\"op\":\"entity\",\"subject\":\"a:{/data/x}\"},"
    "{\"op\":\"fact\",\"subject\":\"a:{/data/x}\",\"predicate\":\"p\","
    "\"value\":{\"const\":1}},"
    "{\"op\":\"fact\",\"subject\":\"b:{/data/x}\",\"predicate\":\"p\","
    "\"value\":{\"const\":2}},"
    "{\"op\":\"unset\",\"subject\":\"a:{/data/x}\",\"predicate\":\"p\"},"
    "{\"op\":\"link\",\"subject\":\"a:{/data/y}\",\"relation\":\"r\","
    "\"object\":\"a:{/data/x}\"},"
    "{\"op\":\"unlink\",\"subject\":\"a:{/data/y}\",\"relation\":\"r\","
    "\"object\":\"b:{/data/y}\"}"
    "]}}";

static void test_subject_runs(void **state)
{
	(void)state;
	struct keel_cartridge *c = compile_ok(runs_cartridge);
	expect_run(c, "s.runs", "{\"x\":1,\"y\":\"z\"}",
		   "ok\n  entity \"a:1\" kind none\n  fact \"a:1\" \"p\" = 1\n"
		   "  fact \"b:1\" \"p\" = 2\n  unset \"a:1\" \"p\"\n"
		   "  link \"a:z\" \"r\" \"a:1\"\n  unlink \"a:z\" \"r\" \"b:z\"\n");

	char *text = envelope("s.runs", "{\"x\":1,\"y\":\"z\"}");
	struct one_run r;
	one_run(&r, c, text, strlen(text));
	assert_int_equal(r.result, KEEL_RUN_OK);
	assert_int_equal(r.nops, 6);
	const struct keel_op *ops = r.ops;
	assert_ptr_equal(ops[1].subject.ptr, ops[0].subject.ptr);
	assert_ptr_not_equal(ops[2].subject.ptr, ops[1].subject.ptr);
	assert_ptr_not_equal(ops[3].subject.ptr, ops[1].subject.ptr);
	assert_ptr_not_equal(ops[4].subject.ptr, ops[3].subject.ptr);
	assert_ptr_equal(ops[5].subject.ptr, ops[4].subject.ptr);
	one_run_free(&r);
	free(text);
	keel_cartridge_free(c);
}

/* Optional values and defaults: a missing pointer skips the operation or
 * takes the default; a pointer landing on null is a value, "no value". */
static const char forgive_cartridge[] =
    "{\"cartridge\":\"forgive\",\"version\":\"1\",\"events\":{"
    "\"f.value\":["
    "{\"op\":\"entity\",\"subject\":\"s:{/data/id}\"},"
    "{\"op\":\"fact\",\"subject\":\"s:{/data/id}\",\"predicate\":\"reason\","
    "\"value\":{\"from\":\"/data/reason\",\"optional\":true}},"
    "{\"op\":\"fact\",\"subject\":\"s:{/data/id}\",\"predicate\":\"note\","
    "\"value\":{\"from\":\"/data/note\",\"default\":{ \"x\" : [ 1.50, \"a b\" ] }}},"
    "{\"op\":\"fact\",\"subject\":\"s:{/data/id}\",\"predicate\":\"n\","
    "\"value\":{\"from\":\"/data/n\",\"default\":null}},"
    "{\"op\":\"fact\",\"subject\":\"s:{/data/id}\",\"predicate\":\"off\","
    "\"value\":{\"from\":\"/data/off\",\"optional\":false}}],"
    "\"f.tmpl\":["
    "{\"op\":\"link\",\"subject\":{\"template\":\"a:{/data/a}\",\"optional\":true},"
    "\"relation\":\"r\",\"object\":\"b:{/data/b}\"},"
    "{\"op\":\"entity\",\"subject\":{\"template\":\"c:{/data/c}-{/data/c2}\","
    "\"default\":\"unknown\"},\"kind\":{\"template\":\"k{/data/k}\",\"default\":1.50E+3}},"
    "{\"op\":\"fact\",\"subject\":\"b:{/data/b}\",\"predicate\":{\"template\":\"{/data/p}\","
    "\"default\":true},\"value\":{\"const\":1}}]"
    "}}";

static void test_optional_values(void **state)
{
	(void)state;
	struct keel_cartridge *c = compile_ok(forgive_cartridge);
	/* Present: used as ever. */
	expect_run(c, "f.value",
		   "{\"id\":1,\"reason\":\"r\",\"note\":\"x\",\"n\":2,\"off\":3}",
		   "ok\n  entity \"s:1\" kind none\n  fact \"s:1\" \"reason\" = \"r\"\n"
		   "  fact \"s:1\" \"note\" = \"x\"\n  fact \"s:1\" \"n\" = 2\n"
		   "  fact \"s:1\" \"off\" = 3\n");
	/* Missing: optional skips, a default stands in (compacted at load;
	 * null is "no value"), "optional": false is required. */
	expect_run(c, "f.value", "{\"id\":1,\"off\":3}",
		   "ok\n  entity \"s:1\" kind none\n"
		   "  fact \"s:1\" \"note\" = {\"x\":[1.50,\"a b\"]}\n"
		   "  fact \"s:1\" \"n\" = none\n  fact \"s:1\" \"off\" = 3\n");
	expect_run(c, "f.value", "{\"id\":1}",
		   "rejected: type \"f.value\": operation 5 (fact): pointer \"/data/off\": "
		   "missing\n");
	/* Null is there: a value asserting "no value", never the default and
	 * never skipped. */
	expect_run(c, "f.value", "{\"id\":1,\"reason\":null,\"note\":null,\"n\":null,\"off\":3}",
		   "ok\n  entity \"s:1\" kind none\n  fact \"s:1\" \"reason\" = none\n"
		   "  fact \"s:1\" \"note\" = none\n  fact \"s:1\" \"n\" = none\n"
		   "  fact \"s:1\" \"off\" = 3\n");
	/* A default gives the same operations as an event carrying it. */
	char *a = run_data(c, "f.value", "{\"id\":1,\"note\":{\"x\":[1.50,\"a b\"]},\"off\":3}");
	char *b = run_data(c, "f.value", "{\"id\":1,\"off\":3}");
	assert_string_equal(a, b);
	free(a);
	free(b);
	keel_cartridge_free(c);
}

static void test_optional_templates(void **state)
{
	(void)state;
	struct keel_cartridge *c = compile_ok(forgive_cartridge);
	expect_run(c, "f.tmpl", "{\"a\":1,\"b\":2,\"c\":3,\"c2\":4,\"k\":5,\"p\":\"q\"}",
		   "ok\n  link \"a:1\" \"r\" \"b:2\"\n  entity \"c:3-4\" kind \"k5\"\n"
		   "  fact \"b:2\" \"q\" = 1\n");
	/* Missing or null: the optional link is skipped; a default renders as
	 * a value would (a number keeps its lexeme, a boolean is true), in
	 * place of each pointer that found nothing. */
	expect_run(c, "f.tmpl", "{\"b\":2,\"c2\":4}",
		   "ok\n  entity \"c:unknown-4\" kind \"k1.50E+3\"\n"
		   "  fact \"b:2\" \"true\" = 1\n");
	expect_run(c, "f.tmpl", "{\"a\":null,\"b\":2,\"c\":null,\"c2\":null,\"k\":null,"
				"\"p\":null}",
		   "ok\n  entity \"c:unknown-unknown\" kind \"k1.50E+3\"\n"
		   "  fact \"b:2\" \"true\" = 1\n");
	/* An object or an array is not absent: it rejects as ever. */
	expect_run(c, "f.tmpl", "{\"a\":{},\"b\":2}",
		   "rejected: type \"f.tmpl\": operation 1 (link): pointer \"/data/a\": an "
		   "object, not a string, number or boolean\n");
	expect_run(c, "f.tmpl", "{\"b\":2,\"c\":[1]}",
		   "rejected: type \"f.tmpl\": operation 2 (entity): pointer \"/data/c\": an "
		   "array, not a string, number or boolean\n");
	/* Skipping one pointer's operation does not forgive another's. */
	expect_run(c, "f.tmpl", "{\"a\":1}",
		   "rejected: type \"f.tmpl\": operation 1 (link): pointer \"/data/b\": "
		   "missing\n");
	keel_cartridge_free(c);
}

/* After a skipped operation, later ones keep their numbers in messages and
 * never share a subject with an operation that was not added. */
static const char skips_cartridge[] =
    "{\"cartridge\":\"skips\",\"version\":\"1\",\"events\":{"
    "\"k.num\":["
    "{\"op\":\"fact\",\"subject\":{\"template\":\"{/data/x}\",\"optional\":true},"
    "\"predicate\":\"p\",\"value\":{\"const\":1}},"
    "{\"op\":\"entity\",\"subject\":\"{/data/e}\"}],"
    "\"k.share\":["
    "{\"op\":\"entity\",\"subject\":\"x:{/data/a}\"},"
    "{\"op\":\"fact\",\"subject\":\"s:{/data/a}\",\"predicate\":\"p\","
    "\"value\":{\"from\":\"/data/v\",\"optional\":true}},"
    "{\"op\":\"fact\",\"subject\":\"s:{/data/a}\",\"predicate\":\"q\","
    "\"value\":{\"const\":2}}],"
    "\"k.kind\":[{\"op\":\"entity\",\"subject\":\"s\",\"kind\":{\"template\":"
    "\"{/data/k}\",\"optional\":true}}],"
    "\"k.dflt\":["
    "{\"op\":\"fact\",\"subject\":{\"template\":\"s:{/data/a}\",\"default\":\"d\"},"
    "\"predicate\":\"p\",\"value\":{\"const\":1}},"
    "{\"op\":\"fact\",\"subject\":\"s:{/data/a}\",\"predicate\":\"q\","
    "\"value\":{\"const\":2}}]"
    "}}";

static void test_skipped_operations(void **state)
{
	(void)state;
	struct keel_cartridge *c = compile_ok(skips_cartridge);
	/* Operation 1 skipped, operation 2's subject empty: it is operation 2. */
	expect_run(c, "k.num", "{\"e\":\"\"}",
		   "rejected: type \"k.num\": operation 2 (entity): field \"subject\": "
		   "empty\n");
	expect_run(c, "k.num", "{\"e\":\"y\"}", "ok\n  entity \"y\" kind none\n");
	/* Operation 2 skipped: operation 3 renders its own subject rather than
	 * take operation 1's, which is another. */
	expect_run(c, "k.share", "{\"a\":1}",
		   "ok\n  entity \"x:1\" kind none\n  fact \"s:1\" \"q\" = 2\n");
	expect_run(c, "k.share", "{\"a\":1,\"v\":0}",
		   "ok\n  entity \"x:1\" kind none\n  fact \"s:1\" \"p\" = 0\n"
		   "  fact \"s:1\" \"q\" = 2\n");
	/* An optional kind skips its whole entity operation. */
	expect_run(c, "k.kind", "{\"k\":\"v\"}", "ok\n  entity \"s\" kind \"v\"\n");
	expect_run(c, "k.kind", "{}", "ok\n");
	/* The same text with a default is another template: the default does
	 * not carry over to the operation without one. */
	expect_run(c, "k.dflt", "{\"a\":1}",
		   "ok\n  fact \"s:1\" \"p\" = 1\n  fact \"s:1\" \"q\" = 2\n");
	expect_run(c, "k.dflt", "{}",
		   "rejected: type \"k.dflt\": operation 2 (fact): pointer \"/data/a\": "
		   "missing\n");
	keel_cartridge_free(c);
}

static void test_pointer_escapes(void **state)
{
	(void)state;
	struct keel_cartridge *c = compile_ok(render_cartridge);
	/* ~1 is "/", ~0 is "~"; array indexes count from 0. */
	expect_run(
	    c, "r.ptr",
	    "{\"a/b\":\"AB\",\"m~n\":\"MN\",\"arr\":[{\"k\":1},\"second\"],\"a\":\"no\"}",
	    "ok\n  fact \"s:AB:MN:second\" \"p\" = {\"k\":1}\n");
	/* "~01" is "~1", not "/": unescaping happens once, left to right. */
	struct keel_cartridge *c2 =
	    compile_one_type("{\"op\":\"entity\",\"subject\":\"{/data/~01}\"}");
	expect_run(c2, "e", "{\"~1\":\"tilde-one\",\"/\":\"slash\"}",
		   "ok\n  entity \"tilde-one\" kind none\n");
	keel_cartridge_free(c2);
	/* Index rules: no leading zeros, "-" is past the end, out of range. */
	const char *idx[] = {"00", "-", "2", "01", "x"};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(idx); i++) {
		struct keel_buf b, exp;
		keel_buf_init(&b);
		keel_buf_init(&exp);
		keel_buf_addf(&b, "{\"op\":\"entity\",\"subject\":\"{/data/%s}\"}",
			      idx[i]);
		c2 = compile_one_type(b.data);
		keel_buf_addf(
		    &exp,
		    "rejected: type \"e\": operation 1 (entity): pointer \"/data/%s\": "
		    "missing\n",
		    idx[i]);
		expect_run(c2, "e", "[\"a\",\"b\"]", exp.data);
		keel_cartridge_free(c2);
		keel_buf_free(&b);
		keel_buf_free(&exp);
	}
	/* The same digits name a member of an object. */
	c2 = compile_one_type("{\"op\":\"entity\",\"subject\":\"{/data/01}\"}");
	expect_run(c2, "e", "{\"01\":\"zero-one\"}",
		   "ok\n  entity \"zero-one\" kind none\n");
	keel_cartridge_free(c2);
	/* The empty key is a key like any other: "/data/" names it. */
	c2 = compile_one_type("{\"op\":\"entity\",\"subject\":\"{/data/}\"}");
	expect_run(c2, "e", "{\"\":\"blank\"}", "ok\n  entity \"blank\" kind none\n");
	keel_cartridge_free(c2);
	keel_cartridge_free(c);
}

static const char limits_cartridge[] =
    "{\"cartridge\":\"lim\",\"version\":\"1\",\"events\":{"
    "\"l.link\":[{\"op\":\"link\",\"subject\":\"{/data/s}\",\"relation\":\"{/data/r}\","
    "\"object\":\"{/data/o}\"}],"
    "\"l.entity\":[{\"op\":\"entity\",\"subject\":\"x\",\"kind\":\"{/data/k}\"}],"
    "\"l.fact\":[{\"op\":\"fact\",\"subject\":\"x\",\"predicate\":\"{/data/p}\","
    "\"value\":{\"from\":\"/data/v\"}}]"
    "}}";

/* Runs l.link with subject, relation and object of the given lengths. */
static char *run_link(const struct keel_cartridge *c, size_t s, size_t r, size_t o)
{
	char *ss = repeat('s', s), *rr = repeat('r', r), *oo = repeat('o', o);
	struct keel_buf data;
	keel_buf_init(&data);
	keel_buf_addf(&data, "{\"s\":\"%s\",\"r\":\"%s\",\"o\":\"%s\"}", ss, rr, oo);
	char *got = run_data(c, "l.link", data.data);
	keel_buf_free(&data);
	free(ss);
	free(rr);
	free(oo);
	return got;
}

static void expect_prefix(const char *got, const char *prefix)
{
	if (strncmp(got, prefix, strlen(prefix)) != 0)
		fail_msg("expected a result starting with\n%s\ngot\n%s", prefix, got);
}

static void test_limits(void **state)
{
	(void)state;
	struct keel_cartridge *c = compile_ok(limits_cartridge);
	char *got = run_link(c, 255, 128, 255);
	expect_prefix(got, "ok\n  link \"sss");
	free(got);
	got = run_link(c, 1, 1, 1);
	assert_string_equal(got, "ok\n  link \"s\" \"r\" \"o\"\n");
	free(got);
	got = run_link(c, 256, 1, 1);
	assert_string_equal(got, "rejected: type \"l.link\": operation 1 (link): field "
				 "\"subject\": longer than 255 bytes\n");
	free(got);
	got = run_link(c, 1, 129, 1);
	assert_string_equal(got, "rejected: type \"l.link\": operation 1 (link): field "
				 "\"relation\": longer than 128 bytes\n");
	free(got);
	got = run_link(c, 1, 1, 256);
	assert_string_equal(got, "rejected: type \"l.link\": operation 1 (link): field "
				 "\"object\": longer than 255 bytes\n");
	free(got);
	got = run_link(c, 0, 1, 1);
	assert_string_equal(got, "rejected: type \"l.link\": operation 1 (link): field "
				 "\"subject\": empty\n");
	free(got);
	got = run_link(c, 1, 1, 0);
	assert_string_equal(got, "rejected: type \"l.link\": operation 1 (link): field "
				 "\"object\": empty\n");
	free(got);
	/* Bytes, not characters: 127 "e" and one 2-byte "é" are 129 bytes. */
	char *k = repeat('e', 127);
	struct keel_buf data;
	keel_buf_init(&data);
	keel_buf_addf(&data, "{\"k\":\"%s\\u00e9\"}", k);
	got = run_data(c, "l.entity", data.data);
	assert_string_equal(got,
			    "rejected: type \"l.entity\": operation 1 (entity): field "
			    "\"kind\": longer than 128 bytes\n");
	free(got);
	keel_buf_reset(&data);
	keel_buf_addf(&data, "{\"k\":\"%s\"}", k);
	got = run_data(c, "l.entity", data.data);
	expect_prefix(got, "ok\n  entity \"x\" kind \"eee");
	free(got);
	free(k);

	/* Values: 64 KiB of compact JSON text is the most. */
	char *v = repeat('v', KEEL_VALUE_MAX - 2);
	keel_buf_reset(&data);
	keel_buf_addf(&data, "{\"p\":\"p\",\"v\":\"%s\"}", v);
	got = run_data(c, "l.fact", data.data);
	expect_prefix(got, "ok\n  fact \"x\" \"p\" = \"vvv");
	assert_int_equal(strlen(got),
			 strlen("ok\n  fact \"x\" \"p\" = \n") + KEEL_VALUE_MAX);
	free(got);
	keel_buf_reset(&data);
	keel_buf_addf(&data, "{\"p\":\"p\",\"v\":[\"%s\"]}", v);
	got = run_data(c, "l.fact", data.data);
	assert_string_equal(got, "rejected: type \"l.fact\": operation 1 (fact): field "
				 "\"value\": longer than 65536 bytes\n");
	free(got);
	/* Whitespace does not count: the limit applies after compaction. */
	keel_buf_reset(&data);
	keel_buf_addf(&data, "{\"p\":\"p\",\"v\":[   \"%.*s\"   ]}", KEEL_VALUE_MAX - 4,
		      v);
	got = run_data(c, "l.fact", data.data);
	expect_prefix(got, "ok\n  fact \"x\" \"p\" = [\"vvv");
	free(got);
	free(v);
	/* An empty predicate is rejected. */
	expect_run(c, "l.fact", "{\"p\":\"\",\"v\":1}",
		   "rejected: type \"l.fact\": operation 1 (fact): field \"predicate\": "
		   "empty\n");
	keel_buf_free(&data);
	keel_cartridge_free(c);
}

/* U+0000 is valid JSON and UTF-8, but an identifier holding it could never
 * be named again (C strings downstream): every rendered identifier refuses
 * it, values keep it. */
static void test_nul_in_identifiers(void **state)
{
	(void)state;
	struct keel_cartridge *c = compile_ok(limits_cartridge);
	const char *pre = "rejected: type \"l.link\": operation 1 (link): field ";
	struct {
		const char *data, *field;
	} cases[] = {
	    {"{\"s\":\"a\\u0000b\",\"r\":\"r\",\"o\":\"o\"}", "\"subject\""},
	    {"{\"s\":\"s\",\"r\":\"\\u0000\",\"o\":\"o\"}", "\"relation\""},
	    {"{\"s\":\"s\",\"r\":\"r\",\"o\":\"o\\u0000\"}", "\"object\""},
	};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(cases); i++) {
		char want[256];
		snprintf(want, sizeof want, "%s%s: contains U+0000 (NUL)\n", pre,
			 cases[i].field);
		expect_run(c, "l.link", cases[i].data, want);
	}
	expect_run(c, "l.entity", "{\"k\":\"k\\u0000\"}",
		   "rejected: type \"l.entity\": operation 1 (entity): field \"kind\": "
		   "contains U+0000 (NUL)\n");
	expect_run(c, "l.fact", "{\"p\":\"\\u0000p\",\"v\":1}",
		   "rejected: type \"l.fact\": operation 1 (fact): field \"predicate\": "
		   "contains U+0000 (NUL)\n");
	/* A value is JSON text: the escape stays an escape, and is kept. */
	expect_run(c, "l.fact", "{\"p\":\"p\",\"v\":\"a\\u0000b\"}",
		   "ok\n  fact \"x\" \"p\" = \"a\\u0000b\"\n");
	keel_cartridge_free(c);

	/* The fleet cartridge's own template, as a producer would hit it. */
	c = compile_ok("{\"cartridge\":\"v\",\"version\":\"1\",\"events\":{\"v.seen\":"
		       "[{\"op\":\"entity\",\"subject\":\"vehicle:{/data/vehicle_id}\"}]}}");
	expect_run(c, "v.seen", "{\"vehicle_id\":\"a\\u0000b\"}",
		   "rejected: type \"v.seen\": operation 1 (entity): field \"subject\": "
		   "contains U+0000 (NUL)\n");
	expect_run(c, "v.seen", "{\"vehicle_id\":\"a\\u0001b\"}",
		   "ok\n  entity \"vehicle:a\\u0001b\" kind none\n");
	keel_cartridge_free(c);

	/* A literal NUL in the cartridge can never render: refused at load. */
	expect_op_error("{\"op\":\"entity\",\"subject\":\"v:\\u0000{/x}\"}",
			"cartridge \"t\": type \"e\": operation 1 (entity): field "
			"\"subject\": contains U+0000 (NUL)");
	expect_op_error("{\"op\":\"unset\",\"subject\":\"s\",\"predicate\":\"p\\u0000\"}",
			"cartridge \"t\": type \"e\": operation 1 (unset): field "
			"\"predicate\": contains U+0000 (NUL)");
	/* A NUL inside a pointer names a key; it is not rendered. */
	struct keel_cartridge *c2 =
	    compile_one_type("{\"op\":\"entity\",\"subject\":\"{/data/a\\u0000b}\"}");
	expect_run(c2, "e", "{\"a\\u0000b\":\"k\"}", "ok\n  entity \"k\" kind none\n");
	keel_cartridge_free(c2);
}

/* ----------------------------------------------------------- C handlers */

static int h_counter(struct keel_ctx *ctx, const struct keel_event *ev, void *userdata)
{
	int *calls = userdata;
	(*calls)++;
	struct keel_value v;
	assert_int_equal(keel_event_get(ev, "/data/n", &v), 0);
	assert_int_equal(v.type, KEEL_VALUE_NUMBER);
	assert_string_equal(v.text, "12.0");
	assert_int_equal(keel_event_get(ev, "/data/o", &v), 0);
	assert_int_equal(v.type, KEEL_VALUE_OBJECT);
	assert_string_equal(v.json, "{\"a\":[true,null]}");
	assert_string_equal(v.text, v.json);
	assert_int_equal(keel_event_get(ev, "/data/o/a/0", &v), 0);
	assert_int_equal(v.type, KEEL_VALUE_BOOL);
	assert_string_equal(v.text, "true");
	assert_int_equal(keel_event_get(ev, "/data/o/a/1", &v), 0);
	assert_int_equal(v.type, KEEL_VALUE_NULL);
	assert_string_equal(v.json, "null");
	assert_int_equal(keel_event_get(ev, "/data/s", &v), 0);
	assert_int_equal(v.type, KEEL_VALUE_STRING);
	assert_string_equal(v.text, "a\"b");
	assert_string_equal(v.json, "\"a\\\"b\"");
	assert_int_equal(keel_event_get(ev, "/data/nope", &v), KEEL_ENOTFOUND);
	assert_int_equal(keel_event_get(ev, "data", &v), KEEL_EINVAL);
	assert_int_equal(keel_event_get(ev, "/data/o/a/~2", &v), KEEL_EINVAL);
	assert_int_equal(keel_event_get(ev, "", &v), 0);
	assert_int_equal(v.type, KEEL_VALUE_OBJECT);
	assert_string_equal(keel_event_type(ev), "c.count");
	assert_string_equal(keel_event_id(ev), "e-1");
	assert_string_equal(keel_event_tenant(ev), "acme");
	/* 2026-03-01T10:00:00.5Z */
	assert_true(keel_event_time(ev) == INT64_C(1772359200500000));
	/* More operations than a first guess: the array grows. */
	for (int i = 0; i < 20; i++) {
		char p[8];
		int n = snprintf(p, sizeof p, "p%d", i);
		assert_int_equal(keel_ctx_fact(ctx, "s", 1, p, (size_t)n, " [ 1 ] ", 7),
				 0);
	}
	assert_int_equal(keel_ctx_fact(ctx, "s", 1, "nul", 3, "null", 4), 0);
	return 0;
}

static int h_reject(struct keel_ctx *ctx, const struct keel_event *ev, void *userdata)
{
	(void)ev;
	(void)userdata;
	assert_int_equal(keel_ctx_entity(ctx, "s", 1, "k", 1), 0);
	assert_int_equal(keel_ctx_reject(ctx, "quota of %d exceeded", 3), KEEL_EREJECTED);
	/* After a rejection nothing more is taken, and the first reason stays. */
	assert_int_equal(keel_ctx_entity(ctx, "s", 1, NULL, 0), KEEL_EREJECTED);
	assert_int_equal(keel_ctx_reject(ctx, "second reason"), KEEL_EREJECTED);
	return KEEL_EREJECTED;
}

static void test_c_handlers_in_process(void **state)
{
	(void)state;
	struct keel_cartridge *c = keel_cartridge_new("inproc", "2");
	int calls = 0;
	assert_string_equal(keel_cartridge_name(c), "inproc");
	assert_int_equal(keel_cartridge_on(c, "c.count", h_counter, &calls), 0);
	assert_int_equal(keel_cartridge_on(c, "c.count", h_counter, &calls), KEEL_EINVAL);
	assert_int_equal(keel_cartridge_on(c, "", h_counter, &calls), KEEL_EINVAL);
	assert_int_equal(keel_cartridge_on(c, "c.reject", h_reject, NULL), 0);
	char *got = run_data(
	    c, "c.count", "{\"n\":12.0,\"o\":{ \"a\": [ true , null ] },\"s\":\"a\\\"b\"}");
	struct keel_buf exp;
	keel_buf_init(&exp);
	keel_buf_adds(&exp, "ok\n");
	for (int i = 0; i < 20; i++)
		keel_buf_addf(&exp, "  fact \"s\" \"p%d\" = [1]\n", i);
	keel_buf_adds(&exp, "  fact \"s\" \"nul\" = none\n");
	assert_string_equal(got, exp.data);
	assert_int_equal(calls, 1);
	free(got);
	keel_buf_free(&exp);
	expect_run(c, "c.reject", "{}",
		   "rejected: type \"c.reject\": quota of 3 exceeded\n");
	keel_cartridge_free(c);
}

static void test_shared_object(void **state)
{
	(void)state;
	char *dir = keel_test_tmpdir();
	char fini[4096];
	snprintf(fini, sizeof fini, "%s/fini", dir);
	setenv("ACME_FINI_FILE", fini, 1);

	struct keel_cartridge *c = NULL;
	char *err = NULL;
	int rc = keel_cartridge_load(KEEL_TEST_CARTRIDGE_SO, &c, &err);
	if (rc)
		fail_msg("load: %s", err);
	assert_string_equal(keel_cartridge_name(c), "acme");
	expect_run(
	    c, "acme.widget.made",
	    "{\"widget_id\":\"w1\",\"factory\":\"f1\",\"spec\":{ \"mm\" : [3, 4] }}",
	    "ok\n  entity \"widget:w1\" kind \"widget\"\n"
	    "  fact \"widget:w1\" \"spec\" = {\"mm\":[3,4]}\n"
	    "  link \"widget:w1\" \"made_in\" \"factory:f1\"\n"
	    "  fact \"widget:w1\" \"made_by\" = \"acme/e-1\"\n");
	expect_run(c, "acme.widget.checked", "{\"widget_id\":\"w1\",\"score\":49.5}",
		   "ok\n  fact \"widget:w1\" \"passed\" = false\n");
	expect_run(c, "acme.widget.checked", "{\"widget_id\":\"w1\",\"score\":50}",
		   "ok\n  fact \"widget:w1\" \"passed\" = true\n");
	expect_run(
	    c, "acme.widget.checked", "{\"widget_id\":\"w1\"}",
	    "rejected: type \"acme.widget.checked\": score: missing or not a number\n");
	expect_run(c, "acme.widget.scrapped",
		   "{\"widget_id\":\"w1\",\"reason\":\"dent\"}",
		   "ok\n  unset \"widget:w1\" \"spec\"\n"
		   "  unlink \"widget:w1\" \"made_in\" \"factory:f1\"\n"
		   "  fact \"widget:w1\" \"scrapped\" = \"dent\"\n");
	/* Two operations, then a rejection: none of them survives. */
	expect_run(c, "acme.widget.scrapped", "{\"widget_id\":\"w1\"}",
		   "rejected: type \"acme.widget.scrapped\": a scrapped widget needs a "
		   "reason\n");
	/* The library's rules hold for C handlers too. */
	expect_run(
	    c, "acme.bad.value", "{}",
	    "rejected: type \"acme.bad.value\": operation 1 (fact): field \"value\": "
	    "not JSON: expected a string key at byte 1\n");
	expect_run(c, "acme.bad.code", "{}",
		   "rejected: type \"acme.bad.code\": handler failed with code -5\n");
	expect_run(
	    c, "acme.bad.utf8", "{}",
	    "rejected: type \"acme.bad.utf8\": operation 1 (link): field \"object\": "
	    "invalid UTF-8\n");
	expect_run(c, "acme.bad.ignored", "{}",
		   "rejected: type \"acme.bad.ignored\": operation 1 (entity): field "
		   "\"subject\": longer than 255 bytes\n");
	expect_run(c, "acme.other", "{}", "unhandled\n");
	assert_int_equal(access(fini, F_OK), -1);
	keel_cartridge_free(c);
	/* keel_cartridge_fini ran before the object was unloaded. */
	char *mark = keel_test_read_file(fini, NULL);
	assert_non_null(mark);
	assert_string_equal(mark, "acme");
	free(mark);

	/* A failing init is reported with its code. */
	setenv("ACME_INIT_FAIL", "1", 1);
	c = (struct keel_cartridge *)&c;
	assert_int_equal(keel_cartridge_load(KEEL_TEST_CARTRIDGE_SO, &c, &err),
			 KEEL_ECARTRIDGE);
	assert_null(c);
	struct keel_buf exp;
	keel_buf_init(&exp);
	keel_buf_adds(&exp, "cartridge ");
	keel_buf_add_json_str(&exp, keel_str_cstr(KEEL_TEST_CARTRIDGE_SO));
	keel_buf_adds(&exp, ": keel_cartridge_init returned -42");
	assert_string_equal(err, exp.data);
	free(err);
	keel_buf_free(&exp);
	unsetenv("ACME_INIT_FAIL");
	unsetenv("ACME_FINI_FILE");

	/* Not a shared object. */
	char bogus[4096];
	snprintf(bogus, sizeof bogus, "%s/bogus.so", dir);
	keel_test_write_file(bogus, "not ELF", 7);
	assert_int_equal(keel_cartridge_load(bogus, &c, &err), KEEL_ECARTRIDGE);
	assert_null(c);
	expect_prefix(err, "cartridge \"");
	assert_non_null(strstr(err, "bogus.so\": cannot load: "));
	free(err);
	keel_test_rmdir(dir);
	free(dir);
}

/* -------------------------------------------------------------- loading */

static void test_load(void **state)
{
	(void)state;
	struct keel_cartridge *c = NULL;
	char *err = NULL;
	assert_int_equal(keel_cartridge_load("fleet", &c, &err), 0);
	assert_null(err);
	assert_string_equal(keel_cartridge_name(c), "fleet");
	keel_cartridge_free(c);

	assert_int_equal(keel_cartridge_load("flet", &c, &err), KEEL_ECARTRIDGE);
	assert_null(c);
	assert_string_equal(err,
			    "cartridge \"flet\": no built-in cartridge of that name and "
			    "no such file");
	free(err);
	assert_int_equal(keel_cartridge_load("/nonexistent/x.json", &c, &err),
			 KEEL_ECARTRIDGE);
	assert_string_equal(err,
			    "cartridge \"/nonexistent/x.json\": cannot read: No such "
			    "file or directory");
	free(err);

	/* A file's compile errors are prefixed with its path. */
	char *dir = keel_test_tmpdir();
	char path[4096];
	snprintf(path, sizeof path, "%s/bad.json", dir);
	const char *bad = "{\"cartridge\":\"fleet\",\"version\":\"1\",\"events\":{"
			  "\"fleet.trip.started\":[{\"op\":\"entity\",\"subject\":\"t\"},"
			  "{\"op\":\"link\",\"subject\":\"t\",\"relation\":\"r\"}]}}";
	keel_test_write_file(path, bad, strlen(bad));
	assert_int_equal(keel_cartridge_load(path, &c, &err), KEEL_ECARTRIDGE);
	struct keel_buf exp;
	keel_buf_init(&exp);
	keel_buf_addf(&exp,
		      "%s: cartridge \"fleet\": type \"fleet.trip.started\": "
		      "operation 2 (link): field \"object\": missing",
		      path);
	assert_string_equal(err, exp.data);
	free(err);
	keel_buf_free(&exp);
	keel_test_rmdir(dir);
	free(dir);
	keel_cartridge_free(NULL);
}

/* ---------------------------------------------------------------- fleet */

/* Runs every line of in through c into out: `line N: RESULT`. */
static void run_lines(const struct keel_cartridge *c, const char *in,
		      struct keel_buf *out)
{
	uint64_t lineno = 0;
	for (const char *p = in; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		lineno++;
		if (len && p[0] != '#') {
			keel_buf_addf(out, "line %llu: ", (unsigned long long)lineno);
			run_into(c, p, len, out);
		}
		p += len + (nl ? 1 : 0);
	}
}

/* Every golden case: NAME.in holds envelopes, NAME.out the expected
 * results; the cartridge is NAME.json, or the built-in NAME without one.
 * A NAME.json without NAME.in expects its compile error in NAME.out. */
static void test_golden(void **state)
{
	(void)state;
	const char *dirpath = KEEL_TEST_DATA "/cartridge";
	DIR *d = opendir(dirpath);
	assert_non_null(d);
	struct dirent *e;
	int cases = 0;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n < 5 || strcmp(e->d_name + n - 4, ".out") != 0)
			continue;
		char base[4096], path[4200];
		snprintf(base, sizeof base, "%s/%.*s", dirpath, (int)(n - 4), e->d_name);
		snprintf(path, sizeof path, "%s.out", base);
		char *expected = keel_test_read_file(path, NULL);
		snprintf(path, sizeof path, "%s.json", base);
		struct keel_cartridge *c = NULL;
		char *err = NULL;
		struct keel_buf got;
		keel_buf_init(&got);
		int rc;
		if (access(path, F_OK) == 0) {
			rc = keel_cartridge_load(path, &c, &err);
		} else {
			char name[256];
			snprintf(name, sizeof name, "%.*s", (int)(n - 4), e->d_name);
			rc = keel_cartridge_load(name, &c, &err);
		}
		if (rc) {
			/* Drop the path prefix: it depends on the checkout. */
			const char *m = strstr(err, ".json: ");
			keel_buf_addf(&got, "error: %s\n", m ? m + 7 : err);
			free(err);
		} else {
			snprintf(path, sizeof path, "%s.in", base);
			char *in = keel_test_read_file(path, NULL);
			assert_non_null(in);
			run_lines(c, in, &got);
			free(in);
		}
		if (getenv("KEEL_REGEN")) {
			snprintf(path, sizeof path, "%s.out", base);
			keel_test_write_file(path, got.data, got.len);
		} else if (!expected || strcmp(expected, got.data) != 0) {
			fail_msg("golden case %s\nexpected:\n%s\ngot:\n%s", base,
				 expected ? expected : "(no file)", got.data);
		}
		free(expected);
		keel_buf_free(&got);
		keel_cartridge_free(c);
		cases++;
	}
	closedir(d);
	assert_true(cases >= 3);
}

/* The file under cartridges/ and the built-in copy are the same cartridge:
 * both give the same operations for the fleet golden input. */
static void test_fleet_file_matches_builtin(void **state)
{
	(void)state;
	struct keel_cartridge *a = NULL, *b = NULL;
	char *err = NULL;
	assert_int_equal(keel_cartridge_load("fleet", &a, &err), 0);
	assert_int_equal(
	    keel_cartridge_load(KEEL_SOURCE_DIR "/cartridges/fleet.json", &b, &err), 0);
	size_t len = 0;
	char *file = keel_test_read_file(KEEL_SOURCE_DIR "/cartridges/fleet.json", &len);
	assert_int_equal(len, keel_fleet_cartridge_json_len);
	assert_memory_equal(file, keel_fleet_cartridge_json, len);
	free(file);
	char *in = keel_test_read_file(KEEL_TEST_DATA "/cartridge/fleet.in", NULL);
	assert_non_null(in);
	struct keel_buf x, y;
	keel_buf_init(&x);
	keel_buf_init(&y);
	run_lines(a, in, &x);
	run_lines(b, in, &y);
	assert_string_equal(x.data, y.data);
	assert_true(x.len > 1000);
	free(in);
	keel_buf_free(&x);
	keel_buf_free(&y);
	keel_cartridge_free(a);
	keel_cartridge_free(b);
}

/* Every fleet type (docs/cartridges.md) is handled, and a typical event costs about
 * four row writes (an operation on a timeline inserts a row and closes the
 * previous one; an entity operation upserts one row). */
static void test_fleet_types(void **state)
{
	(void)state;
	static const char *const types[] = {
	    "fleet.depot.opened",
	    "fleet.vehicle.registered",
	    "fleet.vehicle.status_changed",
	    "fleet.vehicle.location_reported",
	    "fleet.vehicle.odometer_reported",
	    "fleet.vehicle.fuel_reported",
	    "fleet.vehicle.retired",
	    "fleet.driver.hired",
	    "fleet.driver.assigned",
	    "fleet.driver.unassigned",
	    "fleet.trip.started",
	    "fleet.trip.completed",
	};
	struct keel_cartridge *c = NULL;
	char *err = NULL;
	assert_int_equal(keel_cartridge_load("fleet", &c, &err), 0);
	const char *data =
	    "{\"depot_id\":\"D-01\",\"vehicle_id\":\"V-0001\",\"driver_id\":\"DR-0001\","
	    "\"trip_id\":\"T-000001\",\"name\":\"n\",\"city\":\"c\",\"location\":{"
	    "\"lat\":1.5,"
	    "\"lon\":-2.25},\"make\":\"m\",\"model\":\"m\",\"year\":2020,\"status\":"
	    "\"idle\","
	    "\"reason\":null,\"speed_kmh\":0.0,\"odometer_km\":1.0,\"fuel_pct\":50.0,"
	    "\"license_class\":\"C\",\"destination\":\"d\",\"distance_km\":3.5}";
	for (size_t i = 0; i < KEEL_ARRAY_LEN(types); i++) {
		char *got = run_data(c, types[i], data);
		if (strncmp(got, "ok\n  ", 5) != 0)
			fail_msg("%s: %s", types[i], got);
		free(got);
	}
	keel_cartridge_free(c);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_compile_errors_document),
    cmocka_unit_test(test_compile_errors_operations),
    cmocka_unit_test(test_compile_errors_values),
    cmocka_unit_test(test_compile_errors_templates),
    cmocka_unit_test(test_compile_errors_absent),
    cmocka_unit_test(test_render_scalars),
    cmocka_unit_test(test_empty_pointer_is_the_envelope),
    cmocka_unit_test(test_null_values),
    cmocka_unit_test(test_pointer_misses),
    cmocka_unit_test(test_subject_runs),
    cmocka_unit_test(test_optional_values),
    cmocka_unit_test(test_optional_templates),
    cmocka_unit_test(test_skipped_operations),
    cmocka_unit_test(test_pointer_escapes),
    cmocka_unit_test(test_limits),
    cmocka_unit_test(test_nul_in_identifiers),
    cmocka_unit_test(test_c_handlers_in_process),
    cmocka_unit_test(test_shared_object),
    cmocka_unit_test(test_load),
    cmocka_unit_test(test_golden),
    cmocka_unit_test(test_fleet_file_matches_builtin),
    cmocka_unit_test(test_fleet_types),
};

KEEL_TEST_MAIN(tests)
