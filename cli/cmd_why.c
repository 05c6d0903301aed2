/*
 * cmd_why.c - keel why: the row holding a fact's value at a time and the
 * logged envelope of the event that asserted it (docs/cli.md).
 */
#include "cli.h"

static int why_query(struct keel_store *s, char **args, int nargs,
		     const struct keel_read_options *o, char **json)
{
	(void)nargs;
	return keel_why(s, args[0], args[1], args[2], o, json);
}

static int why_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct cli_read read = {
	    .kind = KEEL_QUERY_WHY,
	    .min_args = 3,
	    .max_args = 3,
	    .takes_at = true,
	    .arity = "expected a tenant, a subject and a predicate",
	    .query = why_query,
	};
	return cli_run_read(cmd, &read, argc, argv);
}

const struct keel_cmd keel_cmd_why = {
    .name = "why",
    .summary = "Print the event behind a fact's value at a time.",
    .usage = "why TENANT SUBJECT PREDICATE [--at TIME] [--known-at TIME] [--json]\n"
	     "              [--store URL]\n"
	     "\n"
	     "options:\n"
	     "  -a, --at TIME      RFC 3339 time to look at (default: now)\n"
	     CLI_HELP_KNOWN_AT
	     CLI_HELP_JSON
	     CLI_HELP_STORE
	     "  -h, --help         this help\n"
	     "\n"
	     "Prints the row of PREDICATE that contains TIME (its value, which is\n"
	     "null after an unset, its interval and provenance) and the logged\n"
	     "envelope of the event that asserted it. Exits 1 when the entity does\n"
	     "not exist or no row of PREDICATE contains TIME.\n"
	     "On a terminal it is printed as aligned text; into a pipe or a\n"
	     "file, or with --json, as one line of JSON (docs/cli.md).",
    .run = why_run,
};
