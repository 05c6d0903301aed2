/*
 * cmd_show.c - keel show: an entity with its facts and relations (both
 * directions) valid at a time, as one JSON document (docs/cli.md).
 */
#include "cli.h"

static int show_query(struct keel_store *s, char **args, int nargs,
		      const struct keel_read_options *o, char **json)
{
	(void)nargs;
	return keel_show(s, args[0], args[1], o, json);
}

static int show_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct cli_read read = {
	    .kind = KEEL_QUERY_SHOW,
	    .min_args = 2,
	    .max_args = 2,
	    .takes_at = true,
	    .arity = "expected a tenant and a subject",
	    .query = show_query,
	};
	return cli_run_read(cmd, &read, argc, argv);
}

const struct keel_cmd keel_cmd_show = {
    .name = "show",
    .summary = "Print an entity, its facts and its relations at a time.",
    .usage = "show TENANT SUBJECT [--at TIME] [--known-at TIME] [--json] [--store URL]\n"
	     "\n"
	     "options:\n"
	     "  -a, --at TIME      RFC 3339 time to look at (default: now)\n"
	     CLI_HELP_KNOWN_AT
	     CLI_HELP_JSON
	     CLI_HELP_STORE
	     "  -h, --help         this help\n"
	     "\n"
	     "Prints the entity's kind, first_seen and last_seen, the facts valid\n"
	     "at TIME (predicate -> value), and the links valid at TIME, outgoing\n"
	     "(SUBJECT is the subject) and incoming (SUBJECT is the object). Exits 1\n"
	     "when the entity does not exist, or did not yet exist at TIME (before\n"
	     "its first event), or was not yet recorded at the --known-at TIME.\n"
	     "On a terminal it is printed as aligned text; into a pipe or a\n"
	     "file, or with --json, as one line of JSON (docs/cli.md).",
    .run = show_run,
};
