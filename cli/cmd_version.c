/*
 * cmd_version.c - keel version.
 */
#include "cli.h"

#include <getopt.h>

static int version_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c != 'h')
			return cli_unknown_option(cmd, argv, opts);
		cli_help(cmd, stdout);
		return CLI_OK;
	}
	if (optind != argc)
		return cli_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);
	printf("keel %s\n", keel_version());
	return cli_finish_stdout(cmd, CLI_OK);
}

const struct keel_cmd keel_cmd_version = {
    .name = "version",
    .summary = "Print the version of keel.",
    .usage = "version\n"
	     "\n"
	     "options:\n"
	     "  -h, --help         this help",
    .run = version_run,
};
