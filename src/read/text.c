/*
 * text.c - the documents of show, history (rows or changes), why,
 * stats, tenants, entities and search as aligned text for a person to read:
 * what the keel tool prints on a terminal (docs/cli.md, "On a terminal").
 *
 * The text is a view of the JSON document, rendered from it and from
 * nothing else, so the two forms cannot disagree: every fact and relation
 * of the document is a row of a table. Cells keep the document's own
 * spelling: times in canonical form, values as JSON text, names with their
 * JSON escapes (so a control character in a subject can never reach the
 * terminal raw), and every null (an open end, no kind, not closed) as "-".
 *
 * Layout: a block of "label:  value" lines, then one titled table per list
 * (columns two blanks apart, numbers right-aligned, a list with no rows
 * says "none").
 *
 * Fitting a terminal (keel_query_text_fit): no line is wider than the
 * terminal, so that nothing wraps into the next column. A table too wide
 * gives up width in an order that loses the least (table_fit): first the
 * event references (their source, then their id), then the other long
 * cells (values, names), widest first, then times down to their second (a
 * fraction is cut, the rest stays), then references further, times to
 * their minute, the long cells further, then the rest. A cut cell ends in
 * "…". A label line is cut at the width.
 */
#include "keel.h"
#include "event/json_write.h"

#include <stdlib.h>
#include <string.h>

#include "event/json.h"
#include "util.h"

struct text_ctx {
	const struct keel_json_doc *doc;
	struct keel_buf out;
	size_t width; /* terminal columns; 0: no limit */
	bool bad;     /* the document lacks a member its kind must have */
};

/* The member key of obj; marks the document bad when it is missing. */
static const struct keel_json *member(struct text_ctx *t, const struct keel_json *obj,
				      const char *key)
{
	const struct keel_json *v = NULL;
	if (obj && obj->type == KEEL_JSON_OBJECT)
		v = keel_json_get(obj, key, strlen(key));
	if (!v)
		t->bad = true;
	return v;
}

static void add_cell(struct text_ctx *t, struct keel_buf *b, const struct keel_json *v);

/* An event reference, {"source":S,"id":I}: "I", or "I (from S)" when the
 * event has a source. False when v is not one. */
static bool add_ref(struct text_ctx *t, struct keel_buf *b, const struct keel_json *v)
{
	const struct keel_json *source = keel_json_get(v, "source", 6);
	const struct keel_json *id = keel_json_get(v, "id", 2);
	if (!source || !id || source->type != KEEL_JSON_STRING ||
	    id->type != KEEL_JSON_STRING)
		return false;
	add_cell(t, b, id);
	if (source->len) {
		keel_buf_adds(b, " (from ");
		add_cell(t, b, source);
		keel_buf_addc(b, ')');
	}
	return true;
}

/* Appends a value as a cell: null as "-", a string as its JSON text without
 * the quotes (escapes kept), booleans as yes/no, an event reference as
 * add_ref writes it, anything else as JSON. */
static void add_cell(struct text_ctx *t, struct keel_buf *b, const struct keel_json *v)
{
	if (!v)
		return;
	const char *raw = t->doc->text + v->raw_off;
	if (v->type == KEEL_JSON_OBJECT && add_ref(t, b, v))
		return;
	switch (v->type) {
	case KEEL_JSON_NULL:
		keel_buf_addc(b, '-');
		break;
	case KEEL_JSON_STRING:
		keel_buf_add(b, raw + 1, v->raw_len - 2);
		break;
	case KEEL_JSON_TRUE:
		keel_buf_adds(b, "yes");
		break;
	case KEEL_JSON_FALSE:
		keel_buf_adds(b, "no");
		break;
	default:
		keel_buf_add(b, raw, v->raw_len);
		break;
	}
}

/* Appends a fact's value: always its JSON text, so "2019" and 2019 differ. */
static void add_value(struct text_ctx *t, struct keel_buf *b, const struct keel_json *v)
{
	if (v)
		keel_buf_add(b, t->doc->text + v->raw_off, v->raw_len);
}

/* The code point at s[*i] (UTF-8, which the document's strings are),
 * advancing *i past it. */
static uint32_t next_cp(const char *s, size_t len, size_t *i)
{
	unsigned char c = (unsigned char)s[(*i)++];
	int more = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
	uint32_t cp = more == 3	  ? c & 0x07u
		      : more == 2 ? c & 0x0fu
		      : more	  ? c & 0x1fu
				  : c;
	for (; more && *i < len && ((unsigned char)s[*i] & 0xc0) == 0x80; more--)
		cp = (cp << 6) | ((unsigned char)s[(*i)++] & 0x3fu);
	return cp;
}

/* Terminal columns of one code point: none for a combining mark or a
 * zero-width joiner, two for the East Asian wide ranges and emoji, one
 * otherwise (the ranges wcwidth gives 0 and 2 for, in short). */
static size_t cp_width(uint32_t cp)
{
	if ((cp >= 0x0300 && cp <= 0x036f) || (cp >= 0x200b && cp <= 0x200f) ||
	    (cp >= 0xfe00 && cp <= 0xfe0f) || (cp >= 0x20d0 && cp <= 0x20ff))
		return 0;
	if ((cp >= 0x1100 && cp <= 0x115f) ||
	    (cp >= 0x2e80 && cp <= 0xa4cf && cp != 0x303f) ||
	    (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
	    (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
	    (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
	    (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x3fffd))
		return 2;
	return 1;
}

/* Terminal columns of s[0..len). */
static size_t text_width(const char *s, size_t len)
{
	size_t w = 0;
	for (size_t i = 0; i < len;)
		w += cp_width(next_cp(s, len, &i));
	return w;
}

/* Appends s[0..len), cut to at most `cols` columns: when it is wider, as
 * much of it as fits before a closing "…". */
static void add_cut(struct keel_buf *b, const char *s, size_t len, size_t cols)
{
	if (text_width(s, len) <= cols) {
		keel_buf_add(b, s, len);
		return;
	}
	if (cols == 0)
		return;
	size_t w = 0, i = 0;
	while (i < len) {
		size_t at = i;
		size_t cw = cp_width(next_cp(s, len, &i));
		if (w + cw > cols - 1) {
			i = at;
			break;
		}
		w += cw;
	}
	keel_buf_add(b, s, i);
	keel_buf_adds(b, "\xe2\x80\xa6"); /* U+2026 … */
}

/* Ends the line that began at out[start]: cut to the width, then '\n'. */
static void line_end(struct text_ctx *t, size_t start)
{
	if (t->width && text_width(t->out.data + start, t->out.len - start) > t->width) {
		struct keel_buf line;
		keel_buf_init(&line);
		add_cut(&line, t->out.data + start, t->out.len - start, t->width);
		t->out.len = start;
		keel_buf_add(&t->out, line.data, line.len);
		keel_buf_free(&line);
	}
	keel_buf_addc(&t->out, '\n');
}

static void add_spaces(struct keel_buf *b, size_t n)
{
	while (n--)
		keel_buf_addc(b, ' ');
}

/* ------------------------------------------------------------ label block */

/* "label:" padded so that the values of a block line up. */
#define LABEL_WIDTH 14

/* Starts a label line; returns where it starts, for line_end. */
static size_t add_label(struct text_ctx *t, const char *label)
{
	size_t start = t->out.len;
	keel_buf_adds(&t->out, label);
	keel_buf_addc(&t->out, ':');
	add_spaces(&t->out, LABEL_WIDTH - strlen(label) - 1);
	return start;
}

static void line_cell(struct text_ctx *t, const char *label, const struct keel_json *v)
{
	size_t start = add_label(t, label);
	add_cell(t, &t->out, v);
	line_end(t, start);
}

/* A label line with a fact's value (its JSON text) or a JSON member. */
static void line_value(struct text_ctx *t, const char *label, const struct keel_json *v)
{
	size_t start = add_label(t, label);
	add_value(t, &t->out, v);
	line_end(t, start);
}

/* A line for a member that only some documents have (history's
 * "predicate", every read's "known_at"): shown when present and not null. */
static void line_if_present(struct text_ctx *t, const char *label,
			    const struct keel_json *obj, const char *key)
{
	const struct keel_json *v = keel_json_get(obj, key, strlen(key));
	if (v && v->type != KEEL_JSON_NULL)
		line_cell(t, label, v);
}

/* ----------------------------------------------------------------- tables */

#define TABLE_MAX_COLS 10

struct table {
	size_t ncols;
	const char *heads[TABLE_MAX_COLS];
	bool right[TABLE_MAX_COLS]; /* right-aligned (counts) */
	struct keel_buf cells;	    /* each cell's text, NUL-terminated */
	size_t *offs;		    /* where each cell starts, row by row */
	size_t n, cap;
};

static void table_init(struct table *tb, const char *const *heads, size_t ncols)
{
	memset(tb, 0, sizeof *tb);
	tb->ncols = ncols;
	for (size_t i = 0; i < ncols; i++)
		tb->heads[i] = heads[i];
	keel_buf_init(&tb->cells);
}

static void table_free(struct table *tb)
{
	keel_buf_free(&tb->cells);
	free(tb->offs);
}

/* Starts the next cell; its text is then appended to tb->cells. */
static struct keel_buf *table_cell(struct table *tb)
{
	if (tb->n) /* end the previous cell */
		keel_buf_addc(&tb->cells, '\0');
	if (tb->n == tb->cap) {
		tb->cap = tb->cap ? 2 * tb->cap : 32;
		tb->offs = keel_xrealloc(tb->offs, tb->cap * sizeof *tb->offs);
	}
	tb->offs[tb->n++] = tb->cells.len;
	return &tb->cells;
}

static const char *cell_at(const struct table *tb, size_t i)
{
	return tb->cells.data + tb->offs[i];
}

/* A table too wide for the terminal gives up width in this order (see the
 * top of the file): event references down to FIT_REF (an id, its source
 * cut), the other long cells (values, names) down to FIT_SOFT, times down
 * to FIT_TIME (to the second), references down to FIT_HARD, times to the
 * minute, the long cells down to FIT_HARD, then anything. */
#define FIT_REF 13
#define FIT_SOFT 16
#define FIT_TIME 20   /* "2026-01-05T08:00:00Z", or to the second and "…" */
#define FIT_MINUTE 17 /* "2026-01-05T08:00…" */
#define FIT_HARD 6

/* A cell that is a time (or none): the column is cut to the second. */
static bool time_cell(const char *s)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd";
	if (strcmp(s, "-") == 0)
		return true;
	for (size_t i = 0; shape[i]; i++)
		if (shape[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != shape[i])
			return false;
	return true;
}

/* The columns that name an event ("ev-17 (from /fleet)"): what a person
 * reads last, so they give up width first. */
static bool event_column(const char *head)
{
	static const char *const heads[] = {"ASSERTED BY", "CLOSED BY", "SHORTENED"};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(heads); i++)
		if (strcmp(head, heads[i]) == 0)
			return true;
	return false;
}

/* Narrows the widest of the columns whose width is above floor[c] and
 * that `pick` allows by one; false when there is none. */
static bool narrow_widest(size_t ncols, size_t *width, const size_t *floor,
			  const bool *pick)
{
	size_t best = ncols;
	for (size_t c = 0; c < ncols; c++)
		if (pick[c] && width[c] > floor[c] &&
		    (best == ncols || width[c] - floor[c] >= width[best] - floor[best]))
			best = c;
	if (best == ncols)
		return false;
	width[best]--;
	return true;
}

/* Narrows the columns until a row fits in `avail` columns (cells and the
 * blanks between them), in the order described above. */
static void table_fit(const struct table *tb, size_t rows, size_t *width, size_t avail)
{
	size_t n = tb->ncols;
	enum { REF, LONG, TIME, COUNT } kind[TABLE_MAX_COLS];
	for (size_t c = 0; c < n; c++) {
		bool times = rows > 0;
		for (size_t r = 0; r < rows && times; r++)
			times = time_cell(cell_at(tb, r * n + c));
		kind[c] = tb->right[c]		       ? COUNT
			  : times		       ? TIME
			  : event_column(tb->heads[c]) ? REF
						       : LONG;
	}
	/* each phase: which kinds give up width, and down to what */
	static const struct {
		unsigned kinds; /* bits of kind */
		size_t floor;
	} phases[] = {
	    {1u << REF, FIT_REF},
	    {1u << LONG, FIT_SOFT},
	    {1u << TIME, FIT_TIME},
	    {1u << REF, FIT_HARD},
	    {1u << TIME, FIT_MINUTE},
	    {1u << LONG, FIT_HARD},
	    {1u << REF | 1u << LONG | 1u << TIME | 1u << COUNT, 1},
	};
	size_t total = 2 * (n - 1);
	for (size_t c = 0; c < n; c++)
		total += width[c];
	for (size_t ph = 0; ph < KEEL_ARRAY_LEN(phases) && total > avail; ph++) {
		bool pick[TABLE_MAX_COLS];
		size_t floor[TABLE_MAX_COLS];
		for (size_t c = 0; c < n; c++) {
			pick[c] = phases[ph].kinds & (1u << kind[c]);
			floor[c] =
			    width[c] < phases[ph].floor ? width[c] : phases[ph].floor;
		}
		while (total > avail && narrow_widest(n, width, floor, pick))
			total--;
	}
}

static void add_row(struct keel_buf *out, const struct table *tb, const char *indent,
		    const char *const *cols, const size_t *width)
{
	keel_buf_adds(out, indent);
	for (size_t c = 0; c < tb->ncols; c++) {
		size_t len = strlen(cols[c]);
		size_t w = text_width(cols[c], len);
		if (w > width[c]) {
			add_cut(out, cols[c], len, width[c]);
			w = width[c];
		} else {
			if (tb->right[c])
				add_spaces(out, width[c] - w);
			keel_buf_add(out, cols[c], len);
		}
		bool last = c + 1 == tb->ncols;
		if (!last && !tb->right[c])
			add_spaces(out, width[c] - w);
		if (!last)
			keel_buf_adds(out, "  ");
	}
}

/* Writes a blank line, "title:" and the table indented under it, or
 * "title: none"; without a title, just the table. */
static void table_print(struct text_ctx *t, const char *title, struct table *tb)
{
	size_t rows = tb->n / tb->ncols;
	const char *indent = title ? "  " : "";
	if (title) {
		/* a blank line after what came before; none to begin with */
		keel_buf_addf(&t->out, "%s", t->out.len ? "\n" : "");
		size_t start = t->out.len;
		keel_buf_addf(&t->out, "%s:%s", title, rows ? "" : " none");
		line_end(t, start);
		if (rows == 0)
			return;
	}
	keel_buf_addc(&tb->cells, '\0'); /* end the last cell */
	size_t width[TABLE_MAX_COLS] = {0};
	for (size_t c = 0; c < tb->ncols; c++) {
		width[c] = text_width(tb->heads[c], strlen(tb->heads[c]));
		for (size_t r = 0; r < rows; r++) {
			const char *s = cell_at(tb, r * tb->ncols + c);
			size_t w = text_width(s, strlen(s));
			if (w > width[c])
				width[c] = w;
		}
	}
	if (t->width > strlen(indent))
		table_fit(tb, rows, width, t->width - strlen(indent));
	size_t start = t->out.len;
	add_row(&t->out, tb, indent, tb->heads, width);
	line_end(t, start);
	const char *cols[TABLE_MAX_COLS];
	for (size_t r = 0; r < rows; r++) {
		for (size_t c = 0; c < tb->ncols; c++)
			cols[c] = cell_at(tb, r * tb->ncols + c);
		start = t->out.len;
		add_row(&t->out, tb, indent, cols, width);
		line_end(t, start);
	}
}

/* The cells of an interval: VALID FROM, VALID TO, ASSERTED BY. */
static void interval_cells(struct text_ctx *t, struct table *tb, const struct keel_json *row)
{
	add_cell(t, table_cell(tb), member(t, row, "valid_from"));
	add_cell(t, table_cell(tb), member(t, row, "valid_to"));
	add_cell(t, table_cell(tb), member(t, row, "asserted_by"));
}

/* A list member that must be an array (or, for show's facts, an object). */
static const struct keel_json *list(struct text_ctx *t, const struct keel_json *doc,
				    const char *key, enum keel_json_type type)
{
	const struct keel_json *v = member(t, doc, key);
	if (v && v->type != type) {
		t->bad = true;
		return NULL;
	}
	return v;
}

/* ------------------------------------------------------------------ show */

static void show_text(struct text_ctx *t, const struct keel_json *doc)
{
	line_cell(t, "tenant", member(t, doc, "tenant"));
	line_cell(t, "subject", member(t, doc, "subject"));
	line_cell(t, "kind", member(t, doc, "kind"));
	line_cell(t, "at", member(t, doc, "at"));
	line_if_present(t, "known at", doc, "known_at");
	line_cell(t, "first seen", member(t, doc, "first_seen"));
	line_cell(t, "last seen", member(t, doc, "last_seen"));

	static const char *const fact_heads[] = {"PREDICATE", "VALUE", "VALID FROM",
						 "VALID TO", "ASSERTED BY"};
	struct table tb;
	table_init(&tb, fact_heads, KEEL_ARRAY_LEN(fact_heads));
	const struct keel_json *facts = list(t, doc, "facts", KEEL_JSON_OBJECT);
	for (const struct keel_json *f = facts ? facts->child : NULL; f; f = f->next) {
		/* The key is the predicate, shown with its JSON escapes as
		 * every other name: take it from the row's escaped text. */
		struct keel_buf key;
		keel_buf_init(&key);
		keel_buf_add_json_str(&key, keel_str_make(f->key, f->key_len));
		keel_buf_add(table_cell(&tb), key.data + 1, key.len - 2);
		keel_buf_free(&key);
		add_value(t, table_cell(&tb), member(t, f, "value"));
		interval_cells(t, &tb, f);
	}
	table_print(t, "facts", &tb);
	table_free(&tb);

	static const char *const out_heads[] = {"RELATION", "OBJECT", "VALID FROM",
						"VALID TO", "ASSERTED BY"};
	table_init(&tb, out_heads, KEEL_ARRAY_LEN(out_heads));
	const struct keel_json *out = list(t, doc, "outgoing", KEEL_JSON_ARRAY);
	for (const struct keel_json *r = out ? out->child : NULL; r; r = r->next) {
		add_cell(t, table_cell(&tb), member(t, r, "relation"));
		add_cell(t, table_cell(&tb), member(t, r, "object"));
		interval_cells(t, &tb, r);
	}
	table_print(t, "outgoing", &tb);
	table_free(&tb);

	static const char *const in_heads[] = {"SUBJECT", "RELATION", "VALID FROM",
					       "VALID TO", "ASSERTED BY"};
	table_init(&tb, in_heads, KEEL_ARRAY_LEN(in_heads));
	const struct keel_json *in = list(t, doc, "incoming", KEEL_JSON_ARRAY);
	for (const struct keel_json *r = in ? in->child : NULL; r; r = r->next) {
		add_cell(t, table_cell(&tb), member(t, r, "subject"));
		add_cell(t, table_cell(&tb), member(t, r, "relation"));
		interval_cells(t, &tb, r);
	}
	table_print(t, "incoming", &tb);
	table_free(&tb);
}

/* --------------------------------------------------------------- history */

/* history --from, --to, --limit: what was asked, and what the limit left
 * out (of "rows" or "changes"), so a short list does not pass for all. */
static void range_lines(struct text_ctx *t, const struct keel_json *doc, const char *what)
{
	line_if_present(t, "from", doc, "from");
	line_if_present(t, "to", doc, "to");
	const struct keel_json *limit = keel_json_get(doc, "limit", 5);
	if (!limit || limit->type == KEEL_JSON_NULL)
		return;
	size_t start = add_label(t, "limit");
	add_cell(t, &t->out, limit);
	keel_buf_addf(&t->out, " latest %s of each timeline", what);
	line_end(t, start);
	const struct keel_json *om = member(t, doc, "omitted");
	start = add_label(t, "left out");
	add_cell(t, &t->out, member(t, om, "facts"));
	keel_buf_addf(&t->out, " earlier fact %s, ", what);
	add_cell(t, &t->out, member(t, om, "relations"));
	keel_buf_addf(&t->out, " relation %s", what);
	line_end(t, start);
}

static void history_text(struct text_ctx *t, const struct keel_json *doc)
{
	line_cell(t, "tenant", member(t, doc, "tenant"));
	line_cell(t, "subject", member(t, doc, "subject"));
	const struct keel_json *pred = member(t, doc, "predicate");
	if (pred && pred->type != KEEL_JSON_NULL)
		line_cell(t, "predicate", pred);
	line_if_present(t, "known at", doc, "known_at");
	range_lines(t, doc, "rows");

	static const char *const fact_heads[] = {"PREDICATE",	"VALUE",       "VALID FROM",
						 "VALID TO",	"ASSERTED BY", "CLOSED BY"};
	struct table tb;
	table_init(&tb, fact_heads, KEEL_ARRAY_LEN(fact_heads));
	const struct keel_json *facts = list(t, doc, "facts", KEEL_JSON_ARRAY);
	for (const struct keel_json *f = facts ? facts->child : NULL; f; f = f->next) {
		add_cell(t, table_cell(&tb), member(t, f, "predicate"));
		add_value(t, table_cell(&tb), member(t, f, "value"));
		interval_cells(t, &tb, f);
		add_cell(t, table_cell(&tb), member(t, f, "closed_by"));
	}
	table_print(t, "facts", &tb);
	table_free(&tb);

	static const char *const rel_heads[] = {"RELATION", "OBJECT",	   "LINKED",
						"VALID FROM", "VALID TO", "ASSERTED BY",
						"CLOSED BY"};
	table_init(&tb, rel_heads, KEEL_ARRAY_LEN(rel_heads));
	const struct keel_json *rels = list(t, doc, "relations", KEEL_JSON_ARRAY);
	for (const struct keel_json *r = rels ? rels->child : NULL; r; r = r->next) {
		add_cell(t, table_cell(&tb), member(t, r, "relation"));
		add_cell(t, table_cell(&tb), member(t, r, "object"));
		add_cell(t, table_cell(&tb), member(t, r, "linked"));
		interval_cells(t, &tb, r);
		add_cell(t, table_cell(&tb), member(t, r, "closed_by"));
	}
	table_print(t, "relations", &tb);
	table_free(&tb);
}

/* ------------------------------------------------------------------- why */

static void why_text(struct text_ctx *t, const struct keel_json *doc)
{
	line_cell(t, "tenant", member(t, doc, "tenant"));
	line_cell(t, "subject", member(t, doc, "subject"));
	line_cell(t, "predicate", member(t, doc, "predicate"));
	line_cell(t, "at", member(t, doc, "at"));
	line_if_present(t, "known at", doc, "known_at");
	line_value(t, "value", member(t, doc, "value"));
	line_cell(t, "valid from", member(t, doc, "valid_from"));
	line_cell(t, "valid to", member(t, doc, "valid_to"));
	line_cell(t, "asserted by", member(t, doc, "asserted_by"));
	line_cell(t, "closed by", member(t, doc, "closed_by"));
	const struct keel_json *ev = member(t, doc, "event");
	if (ev && ev->type == KEEL_JSON_NULL) {
		keel_buf_addc(&t->out, '\n');
		size_t start = add_label(t, "event");
		keel_buf_adds(&t->out, "- (no longer in the log)");
		line_end(t, start);
	} else if (ev) {
		keel_buf_addc(&t->out, '\n');
		line_cell(t, "event", ev);
		line_cell(t, "type", member(t, ev, "event_type"));
		line_cell(t, "time", member(t, ev, "time"));
		line_value(t, "envelope", member(t, ev, "envelope"));
	}
}

/* ----------------------------------------------------------------- stats */

static void count_cells(struct text_ctx *t, struct table *tb, const struct keel_json *row)
{
	static const char *const keys[] = {"entities", "facts", "relations", "events"};
	for (size_t i = 0; i < KEEL_ARRAY_LEN(keys); i++)
		add_cell(t, table_cell(tb), member(t, row, keys[i]));
}

static void stats_text(struct text_ctx *t, const struct keel_json *doc)
{
	static const char *const heads[] = {"TENANT", "ENTITIES", "FACTS", "RELATIONS",
					    "EVENTS"};
	struct table tb;
	table_init(&tb, heads, KEEL_ARRAY_LEN(heads));
	for (size_t c = 1; c < KEEL_ARRAY_LEN(heads); c++)
		tb.right[c] = true;
	const struct keel_json *tenants = list(t, doc, "tenants", KEEL_JSON_ARRAY);
	for (const struct keel_json *r = tenants ? tenants->child : NULL; r; r = r->next) {
		add_cell(t, table_cell(&tb), member(t, r, "tenant"));
		count_cells(t, &tb, r);
	}
	/* Tenant names are [A-Za-z0-9._-], so "(total)" cannot be one. */
	keel_buf_adds(table_cell(&tb), "(total)");
	count_cells(t, &tb, member(t, doc, "total"));
	/* No title: stats is nothing but the table (and, read as known at a
	 * moment, that moment above it). */
	const struct keel_json *known_at = keel_json_get(doc, "known_at", 8);
	if (known_at && known_at->type != KEEL_JSON_NULL) {
		line_cell(t, "known at", known_at);
		keel_buf_addc(&t->out, '\n');
	}
	table_print(t, NULL, &tb);
	table_free(&tb);
}

/* --------------------------------------------------- tenants, entities, search */

/* The page's last line: the cursor of the next page, when there is one. */
static void next_line(struct text_ctx *t, const struct keel_json *doc)
{
	const struct keel_json *next = member(t, doc, "next");
	if (next && next->type != KEEL_JSON_NULL) {
		keel_buf_addc(&t->out, '\n');
		line_cell(t, "next", next);
	}
}

static void tenants_text(struct text_ctx *t, const struct keel_json *doc)
{
	line_if_present(t, "known at", doc, "known_at");
	static const char *const heads[] = {"TENANT"};
	struct table tb;
	table_init(&tb, heads, KEEL_ARRAY_LEN(heads));
	const struct keel_json *tenants = list(t, doc, "tenants", KEEL_JSON_ARRAY);
	for (const struct keel_json *r = tenants ? tenants->child : NULL; r; r = r->next)
		add_cell(t, table_cell(&tb), r);
	table_print(t, "tenants", &tb);
	table_free(&tb);
	/* A page (keel_tenants_page) ends with its cursor; the whole list
	 * (keel_tenants) has none. */
	if (keel_json_get(doc, "next", 4))
		next_line(t, doc);
}

static void entities_text(struct text_ctx *t, const struct keel_json *doc)
{
	line_cell(t, "tenant", member(t, doc, "tenant"));
	line_cell(t, "at", member(t, doc, "at"));
	line_if_present(t, "known at", doc, "known_at");
	line_if_present(t, "kind", doc, "kind");
	line_if_present(t, "prefix", doc, "prefix");
	static const char *const heads[] = {"SUBJECT", "KIND", "FIRST SEEN", "LAST SEEN"};
	struct table tb;
	table_init(&tb, heads, KEEL_ARRAY_LEN(heads));
	const struct keel_json *list_ = list(t, doc, "entities", KEEL_JSON_ARRAY);
	for (const struct keel_json *e = list_ ? list_->child : NULL; e; e = e->next) {
		add_cell(t, table_cell(&tb), member(t, e, "subject"));
		add_cell(t, table_cell(&tb), member(t, e, "kind"));
		add_cell(t, table_cell(&tb), member(t, e, "first_seen"));
		add_cell(t, table_cell(&tb), member(t, e, "last_seen"));
	}
	table_print(t, "entities", &tb);
	table_free(&tb);
	next_line(t, doc);
}

static void search_text(struct text_ctx *t, const struct keel_json *doc)
{
	line_cell(t, "tenant", member(t, doc, "tenant"));
	line_cell(t, "predicate", member(t, doc, "predicate"));
	line_value(t, "value", member(t, doc, "value"));
	line_cell(t, "at", member(t, doc, "at"));
	line_if_present(t, "known at", doc, "known_at");
	static const char *const heads[] = {"SUBJECT", "VALID FROM", "VALID TO",
					    "ASSERTED BY"};
	struct table tb;
	table_init(&tb, heads, KEEL_ARRAY_LEN(heads));
	const struct keel_json *subjects = list(t, doc, "subjects", KEEL_JSON_ARRAY);
	for (const struct keel_json *r = subjects ? subjects->child : NULL; r; r = r->next) {
		add_cell(t, table_cell(&tb), member(t, r, "subject"));
		interval_cells(t, &tb, r);
	}
	table_print(t, "subjects", &tb);
	table_free(&tb);
	next_line(t, doc);
}

/* ------------------------------------------------------- history changes */

/* The cells every change ends with: its row (VALID FROM, VALID TO,
 * CLOSED BY), then the row it shortened (SHORTENED: that row's asserter,
 * WAS VALID TO: where it ended before; it now ends at VALID FROM). */
static void change_cells(struct text_ctx *t, struct table *tb, const struct keel_json *c)
{
	add_cell(t, table_cell(tb), member(t, c, "valid_from"));
	add_cell(t, table_cell(tb), member(t, c, "valid_to"));
	add_cell(t, table_cell(tb), member(t, c, "closed_by"));
	const struct keel_json *sh = member(t, c, "shortened");
	if (sh && sh->type == KEEL_JSON_NULL) {
		add_cell(t, table_cell(tb), sh);
		add_cell(t, table_cell(tb), sh);
	} else {
		add_cell(t, table_cell(tb), member(t, sh, "asserted_by"));
		add_cell(t, table_cell(tb), member(t, sh, "valid_to_before"));
	}
}

static void changes_text(struct text_ctx *t, const struct keel_json *doc)
{
	line_cell(t, "tenant", member(t, doc, "tenant"));
	line_cell(t, "subject", member(t, doc, "subject"));
	line_if_present(t, "predicate", doc, "predicate");
	line_if_present(t, "known at", doc, "known_at");
	range_lines(t, doc, "changes");

	static const char *const fact_heads[] = {
	    "PREDICATE", "RECORDED AT", "ASSERTED BY", "VALUE",	  "VALID FROM",
	    "VALID TO",	 "CLOSED BY",	"SHORTENED",   "WAS VALID TO"};
	struct table tb;
	table_init(&tb, fact_heads, KEEL_ARRAY_LEN(fact_heads));
	const struct keel_json *facts = list(t, doc, "facts", KEEL_JSON_ARRAY);
	for (const struct keel_json *f = facts ? facts->child : NULL; f; f = f->next) {
		add_cell(t, table_cell(&tb), member(t, f, "predicate"));
		add_cell(t, table_cell(&tb), member(t, f, "recorded_at"));
		add_cell(t, table_cell(&tb), member(t, f, "asserted_by"));
		add_value(t, table_cell(&tb), member(t, f, "value"));
		change_cells(t, &tb, f);
	}
	table_print(t, "fact changes", &tb);
	table_free(&tb);

	static const char *const rel_heads[] = {
	    "RELATION", "OBJECT",   "RECORDED AT", "ASSERTED BY", "LINKED",
	    "VALID FROM", "VALID TO", "CLOSED BY",	 "SHORTENED",	"WAS VALID TO"};
	table_init(&tb, rel_heads, KEEL_ARRAY_LEN(rel_heads));
	const struct keel_json *rels = list(t, doc, "relations", KEEL_JSON_ARRAY);
	for (const struct keel_json *r = rels ? rels->child : NULL; r; r = r->next) {
		add_cell(t, table_cell(&tb), member(t, r, "relation"));
		add_cell(t, table_cell(&tb), member(t, r, "object"));
		add_cell(t, table_cell(&tb), member(t, r, "recorded_at"));
		add_cell(t, table_cell(&tb), member(t, r, "asserted_by"));
		add_cell(t, table_cell(&tb), member(t, r, "linked"));
		change_cells(t, &tb, r);
	}
	table_print(t, "relation changes", &tb);
	table_free(&tb);
}

/* ------------------------------------------------------------------ entry */

int keel_query_text(enum keel_query_kind kind, const char *json, size_t len, char **text)
{
	return keel_query_text_fit(kind, json, len, 0, text);
}

int keel_query_text_fit(enum keel_query_kind kind, const char *json, size_t len,
			size_t width, char **text)
{
	if (!json || !text)
		return KEEL_EINVAL;
	*text = NULL;
	struct keel_json_doc doc;
	keel_json_doc_init(&doc);
	struct keel_json_error err;
	struct text_ctx t = {.doc = &doc, .width = width};
	keel_buf_init(&t.out);
	if (keel_json_parse(&doc, json, len, &err) != 0 || doc.root->type != KEEL_JSON_OBJECT) {
		t.bad = true;
	} else {
		switch (kind) {
		case KEEL_QUERY_SHOW:
			show_text(&t, doc.root);
			break;
		case KEEL_QUERY_HISTORY:
			history_text(&t, doc.root);
			break;
		case KEEL_QUERY_WHY:
			why_text(&t, doc.root);
			break;
		case KEEL_QUERY_STATS:
			stats_text(&t, doc.root);
			break;
		case KEEL_QUERY_HISTORY_CHANGES:
			changes_text(&t, doc.root);
			break;
		case KEEL_QUERY_TENANTS:
			tenants_text(&t, doc.root);
			break;
		case KEEL_QUERY_ENTITIES:
			entities_text(&t, doc.root);
			break;
		case KEEL_QUERY_SEARCH:
			search_text(&t, doc.root);
			break;
		default:
			t.bad = true;
			break;
		}
	}
	keel_json_doc_free(&doc);
	if (t.bad) {
		keel_buf_free(&t.out);
		return KEEL_EINVAL;
	}
	keel_buf_reserve(&t.out, 0); /* NUL-terminated even when empty */
	*text = t.out.data;
	return 0;
}
