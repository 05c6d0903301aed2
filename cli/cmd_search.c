/*
 * cmd_search.c - keel search: the subjects whose fact has a value at a
 * time, a page at a time (docs/cli.md).
 */
#include "cli.h"

static int search_find(struct keel_store *s, char **args, int nargs,
		       const struct keel_find_options *f, const struct keel_read_options *o,
		       char **json)
{
	(void)nargs;
	return keel_search(s, args[0], args[1], args[2], f, o, json);
}

static int search_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct cli_read read = {
	    .kind = KEEL_QUERY_SEARCH,
	    .min_args = 3,
	    .max_args = 3,
	    .takes_at = true,
	    .takes_page = true,
	    .arity = "expected a tenant, a predicate and a value",
	    .find = search_find,
	};
	return cli_run_read(cmd, &read, argc, argv);
}

const struct keel_cmd keel_cmd_search = {
    .name = "search",
    .summary = "Find the subjects whose fact has a value at a time.",
    .usage = "search TENANT PREDICATE VALUE [--at TIME] [--known-at TIME]\n"
	     "         [--limit N] [--after CURSOR] [--json] [--store URL]\n"
	     "\n"
	     "options:\n"
	     "  -a, --at TIME      RFC 3339 time to look at (default: now)\n"
	     CLI_HELP_KNOWN_AT
	     "  -l, --limit N      subjects a page, 1 to " CLI_STR(KEEL_MAX_PAGE)
	     " (default " CLI_STR(KEEL_DEFAULT_PAGE) ")\n"
	     "  -A, --after CURSOR the page after the one whose \"next\" is CURSOR\n"
	     CLI_HELP_JSON
	     CLI_HELP_STORE
	     "  -h, --help         this help\n"
	     "\n"
	     "Prints the subjects whose PREDICATE has the value VALUE at TIME, in\n"
	     "bytewise order, each with the row that holds it, and \"next\": the\n"
	     "cursor of the next page (null on the last one). VALUE is JSON when\n"
	     "it parses as JSON (42, true, \"active\", {\"a\":1}), else a string:\n"
	     "active and '\"active\"' both mean the string. Values compare as\n"
	     "stored: blanks outside strings dropped, numbers and escapes as\n"
	     "written (1.0 is not 1). A cursor keel did not give, or a bad\n"
	     "--limit, exits 2 (docs/cli.md).",
    .run = search_run,
};
