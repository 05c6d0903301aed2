/*
 * cmd_migrate.c - keel migrate: bring a store written by an earlier Keel
 * to the schema this one reads, in place (docs/cli.md, and the stores'
 * pages for what each step does).
 *
 * Opening a store already migrates it (every command does so on its
 * first open); this command does only that, and says what it did, so that
 * an operator can migrate at a moment of their choosing rather than on
 * the next ingest or read.
 */
#include "cli.h"

#include <getopt.h>
#include <unistd.h>

/* On a terminal, what the migration is doing, on one line of stderr
 * drawn over and over (a long migration copies tables and builds indexes
 * for minutes); cleared when it ends. Piped, nothing. */
static bool migrate_drawn;

static void migrate_progress(void *ud, const char *what)
{
	(void)ud;
	fprintf(stderr, "\r\033[K%.*s", 150, what);
	fflush(stderr);
	migrate_drawn = true;
}

static void migrate_progress_clear(void)
{
	if (migrate_drawn)
		fputs("\r\033[K", stderr);
	migrate_drawn = false;
}

static int migrate_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	const char *url = NULL;
	int parsed = cli_store_options(cmd, argc, argv, &url);
	if (parsed != CLI_GO_ON)
		return parsed;
	if (optind != argc)
		return cli_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);
	if (cli_check_store_url(cmd, url) != CLI_OK)
		return CLI_FATAL;
	if (!url)
		url = keel_store_default_url();

	/* A mistyped path must not become a new, empty store. */
	if (isatty(STDERR_FILENO))
		keel_store_migrate_progress(migrate_progress, NULL);
	struct keel_store *s = cli_open_existing_store(cmd, url);
	keel_store_migrate_progress(NULL, NULL);
	migrate_progress_clear();
	if (!s)
		return CLI_FATAL;
	int was = 0, now = 0, rc = keel_store_schema_versions(s, &was, &now);
	if (rc)
		rc = cli_error(cmd, "%s", keel_store_errmsg(s));
	else if (was == now)
		printf("%s: already at schema %d\n", url, now);
	else if (was == 0)
		printf("%s: created at schema %d\n", url, now);
	else
		printf("migrated %s from schema %d to %d\n", url, was, now);
	keel_store_close(s);
	return cli_finish_stdout(cmd, rc ? CLI_FATAL : CLI_OK);
}

const struct keel_cmd keel_cmd_migrate = {
    .name = "migrate",
    .summary = "Bring a store written by an earlier Keel to this one's schema.",
    .usage = "migrate [--store URL]\n"
	     "\n"
	     "options:\n"
	     CLI_HELP_STORE
	     "  -h, --help         this help\n"
	     "\n"
	     "Migrates the store in place, keeping every row and its provenance,\n"
	     "and prints what it did: \"migrated URL from schema 1 to 2\", or\n"
	     "\"URL: already at schema 2\". Any command migrates a store the first\n"
	     "time it opens it; this one does only that. The store must exist.",
    .run = migrate_run,
};
