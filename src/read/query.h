/*
 * query.h - what keel history (query.c) shares with the document of
 * history --changes (changes.c): the range and the limit a history is
 * narrowed by. Not API.
 */
#ifndef KEEL_QUERY_H
#define KEEL_QUERY_H

#include "keel.h"
#include "store/store.h"
#include "util.h"

/* Appends ,"facts":[...],"relations":[...] of the history --changes
 * document (docs/cli.md) for subject (and predicate, when not NULL):
 * every assertion of each of its timelines, in arrival order, with the
 * row it created and the row it shortened; narrowed as keel_history
 * narrows rows (o's from, to and limit), omitted[0] and [1] counting the
 * facts' and relations' changes the limit left out. */
int keel_query_changes(struct keel_store *s, const char *tenant, const char *subject,
		       const char *predicate, const struct keel_read_options *o,
		       struct keel_buf *b, uint64_t omitted[2]);

/* history --from/--to: whether a row valid over [valid_from, valid_to)
 * is valid at some moment of [o->from, o->to) (either end absent: open);
 * a row emptied at a moment counts at that moment. */
bool keel_history_keeps(const struct keel_read_options *o, int64_t valid_from,
			int64_t valid_to);

/* history --limit: the latest `limit` rows of each timeline. Rows are
 * written into the window as they come, one timeline after another; when
 * the timeline changes (and at the end: flush) its last `limit` rows go
 * to the document, comma-separated, *written counting what the document's
 * list holds. With limit 0 every row goes straight to the document. */
struct keel_history_window {
	size_t limit;
	struct keel_buf rows; /* the current timeline's rows */
	size_t *offs;	      /* where each starts in rows */
	size_t n, cap;
	struct keel_buf key; /* the current timeline */
	uint64_t omitted;    /* rows left out so far */
};
void keel_history_window_init(struct keel_history_window *w, size_t limit);
void keel_history_window_free(struct keel_history_window *w);
struct keel_buf *keel_history_window_row(struct keel_history_window *w,
					 struct keel_buf *doc, size_t *written,
					 const char *key, size_t len);
void keel_history_window_flush(struct keel_history_window *w, struct keel_buf *doc,
			       size_t *written);

#endif
