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
	(void)f;
	return keel_tenants(s, NULL, NULL, o, json);
}

static int tenants_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct cli_read read = {
	    .kind = KEEL_QUERY_TENANTS,
	    .min_args = 0,
	    .max_args = 0,
	    .arity = "expected no arguments",
	    .find = tenants_find,
	};
	return cli_run_read(cmd, &read, argc, argv);
}

const struct keel_cmd keel_cmd_tenants = {
    .name = "tenants",
    .summary = "List the store's tenants.",
    .usage = "tenants [--known-at TIME] [--json] [--store URL]\n"
	     "\n"
	     "options:\n"
	     CLI_HELP_KNOWN_AT
	     CLI_HELP_JSON
	     CLI_HELP_STORE
	     "  -h, --help         this help\n"
	     "\n"
	     "Prints every tenant that has events or rows in the store (with\n"
	     "--known-at, those with something recorded by then), sorted\n"
	     "bytewise. On a terminal as a table; into a pipe or a file, or with\n"
	     "--json, as one line of JSON: {\"tenants\":[...]} (docs/cli.md).",
    .run = tenants_run,
};
