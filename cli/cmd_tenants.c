/*
 * cmd_tenants.c - keel tenants: the store's tenants (docs/cli.md).
 */
#include "cli.h"

static int tenants_find(struct keel_store *s, char **args, int nargs,
			const struct keel_find_options *f, const struct keel_read_options *o,
			char **json)
{
	(void)args;
	(void)nargs;
	return keel_tenants_page(s, NULL, NULL, f, o, json);
}

static int tenants_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct cli_read read = {
	    .kind = KEEL_QUERY_TENANTS,
	    .min_args = 0,
	    .max_args = 0,
	    .takes_page = true,
	    .arity = "expected no arguments",
	    .find = tenants_find,
	};
	return cli_run_read(cmd, &read, argc, argv);
}

const struct keel_cmd keel_cmd_tenants = {
    .name = "tenants",
    .summary = "List the store's tenants, a page at a time.",
    .usage = "tenants [--known-at TIME] [--limit N] [--after CURSOR] [--json]\n"
	     "        [--store URL]\n"
	     "\n"
	     "options:\n"
	     CLI_HELP_KNOWN_AT
	     "  -l, --limit N      tenants a page, 1 to " CLI_STR(KEEL_MAX_PAGE)
	     " (default " CLI_STR(KEEL_DEFAULT_PAGE) ")\n"
	     "  -A, --after CURSOR the page after the one whose \"next\" is CURSOR\n"
	     CLI_HELP_JSON
	     CLI_HELP_STORE
	     "  -h, --help         this help\n"
	     "\n"
	     "Prints the tenants that have events or rows in the store (with\n"
	     "--known-at, those with something recorded by then), sorted\n"
	     "bytewise, a page at a time, and \"next\": the cursor of the next\n"
	     "page (null on the last one). A cursor keel did not give, or a bad\n"
	     "--limit, exits 2. On a terminal as a table; into a pipe or a file,\n"
	     "or with --json, as one line of JSON: {\"tenants\":[...],\"next\":...}\n"
	     "(docs/cli.md).",
    .run = tenants_run,
};
