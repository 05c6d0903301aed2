/*
 * cmd_load.c - keel load: restores a dump into a store (docs/dump.md).
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static int load_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	const char *url = NULL;
	int parsed = cli_store_options(cmd, argc, argv, &url);
	if (parsed != CLI_GO_ON)
		return parsed;
	if (argc - optind != 1)
		return cli_usage_error(cmd, "expected one dump file (or - for standard "
					    "input)");
	const char *path = argv[optind];
	FILE *in = stdin;
	if (strcmp(path, "-") != 0) {
		in = fopen(path, "r");
		if (!in)
			return cli_error(cmd, "cannot open \"%s\": %s", path,
					 strerror(errno));
	}
	struct keel_store *s = cli_open_store(cmd, url);
	int rc = CLI_FATAL;
	if (s) {
		rc = keel_load(s, in);
		if (rc)
			rc = cli_error(cmd, "%s%s%s", in == stdin ? "" : path,
				       in == stdin ? "" : ": ", keel_store_errmsg(s));
		keel_store_close(s);
	}
	if (in != stdin)
		fclose(in);
	return rc;
}

const struct keel_cmd keel_cmd_load = {
    .name = "load",
    .summary = "Restore a dump into a store.",
    .usage = "load FILE|- [--store URL]\n"
	     "\n"
	     "options:\n"
	     CLI_HELP_STORE
	     "  -h, --help         this help\n"
	     "\n"
	     "Reads a dump written by 'keel dump' (FILE, or standard input for -),\n"
	     "checks every record and writes it in batches of 4096 records, one\n"
	     "transaction each. The dump's tenants must not exist in the store yet.\n"
	     "A bad record stops the load with its line number; the batches before\n"
	     "it stay committed (docs/dump.md).",
    .run = load_run,
};
