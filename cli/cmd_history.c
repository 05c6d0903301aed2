/*
 * cmd_history.c - keel history: every row of a subject's timelines with
 * its provenance, as one JSON document (docs/cli.md).
 */
#include "cli.h"

static int history_query(struct keel_store *s, char **args, int nargs,
			 const struct keel_read_options *o, char **json)
{
	return keel_history(s, args[0], args[1], nargs == 3 ? args[2] : NULL, o, json);
}

static int history_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct cli_read read = {
	    .kind = KEEL_QUERY_HISTORY,
	    .changes_kind = KEEL_QUERY_HISTORY_CHANGES,
	    .min_args = 2,
	    .max_args = 3,
	    .takes_at = false,
	    .takes_changes = true,
	    .takes_range = true,
	    .arity = "expected a tenant, a subject and optionally a predicate",
	    .query = history_query,
	};
	return cli_run_read(cmd, &read, argc, argv);
}

const struct keel_cmd keel_cmd_history = {
    .name = "history",
    .summary = "Print every row of a subject's timelines with provenance.",
    .usage = "history TENANT SUBJECT [PREDICATE] [--changes] [--from TIME] [--to TIME]\n"
	     "                [--limit N] [--known-at TIME] [--json] [--store URL]\n"
	     "\n"
	     "options:\n"
	     "  -c, --changes      how the belief about each timeline changed, and\n"
	     "                     when each change was recorded\n"
	     "      --from TIME    only rows still valid at or after TIME\n"
	     "      --to TIME      only rows valid before TIME\n"
	     "  -l, --limit N      only the latest N rows of each timeline (with\n"
	     "                     --changes: the N last recorded)\n" CLI_HELP_KNOWN_AT
		 CLI_HELP_JSON CLI_HELP_STORE "  -h, --help         this help\n"
	     "\n"
	     "Prints the fact rows and the outgoing relation rows of SUBJECT, closed\n"
	     "and emptied rows included, each with valid_from, valid_to, asserted_by\n"
	     "and closed_by. PREDICATE narrows both lists to one predicate or\n"
	     "relation name. --from and --to keep the rows valid at some moment\n"
	     "between them (a row emptied at a moment counts at it); the document\n"
	     "then says from, to and limit, and what the limit left out (omitted).\n"
	     "Exits 1 when the entity does not exist.\n"
	     "With --changes, every assertion of those timelines instead, in the\n"
	     "order the store recorded them: when (recorded_at), the row it created\n"
	     "(as derived then) and the row it shortened, if any.\n"
	     "On a terminal it is printed as aligned text; into a pipe or a\n"
	     "file, or with --json, as one line of JSON (docs/cli.md).",
    .run = history_run,
};
