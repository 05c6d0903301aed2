/*
 * cmd_entities.c - keel entities: a page of a tenant's entities, by kind
 * or subject prefix, at a time (docs/cli.md).
 */
#include "cli.h"

static int entities_find(struct keel_store *s, char **args, int nargs,
			 const struct keel_find_options *f, const struct keel_read_options *o,
			 char **json)
{
	(void)nargs;
	return keel_entities(s, args[0], f, o, json);
}

static int entities_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct cli_read read = {
	    .kind = KEEL_QUERY_ENTITIES,
	    .min_args = 1,
	    .max_args = 1,
	    .takes_at = true,
	    .takes_page = true,
	    .takes_filters = true,
	    .arity = "expected a tenant",
	    .find = entities_find,
	};
	return cli_run_read(cmd, &read, argc, argv);
}

const struct keel_cmd keel_cmd_entities = {
    .name = "entities",
    .summary = "List a tenant's entities, a page at a time.",
    .usage =
	"entities TENANT [--kind KIND] [--prefix PREFIX] [--at TIME]\n"
	"         [--known-at TIME] [--limit N] [--after CURSOR] [--json] [--store URL]\n"
	"\n"
	"options:\n"
	"  -K, --kind KIND    only entities of this kind\n"
	"  -p, --prefix PREFIX\n"
	"                     only subjects that begin with PREFIX (bytes)\n"
	"  -a, --at TIME      entities that existed at TIME: first seen at or\n"
	"                     before it (default: now)\n" CLI_HELP_KNOWN_AT
	"  -l, --limit N      entities a page, 1 to " CLI_STR(
	    KEEL_MAX_PAGE) " (default " CLI_STR(KEEL_DEFAULT_PAGE) ")\n"
								   "  -A, --after CURSOR "
								   "the page after the "
								   "one whose \"next\" "
								   "is "
								   "CURSOR"
								   "\n" CLI_HELP_JSON
								       CLI_HELP_STORE
								   "  -h, --help         "
								   "this help\n"
								   "\n"
								   "Prints the entities "
								   "in bytewise subject "
								   "order, each with its "
								   "kind,\n"
								   "first_seen and "
								   "last_seen, and "
								   "\"next\": the cursor "
								   "of the next page\n"
								   "(null on the last "
								   "one). A tenant with "
								   "none that match "
								   "prints an\n"
								   "empty page; one the "
								   "store does not know "
								   "exits 1. A cursor "
								   "keel did\n"
								   "not give, or a bad "
								   "--limit, exits 2.\n"
								   "On a terminal as "
								   "aligned text; into a "
								   "pipe or a file, or "
								   "with\n"
								   "--json, as one line "
								   "of JSON "
								   "(docs/cli.md).",
    .run = entities_run,
};
