/*
 * cmd_generate.c - keel generate fleet: a deterministic synthetic fleet
 * stream as NDJSON (docs/generator.md).
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static int generate_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"events", required_argument, NULL, 'n'},
	    {"tenants", required_argument, NULL, 't'},
	    {"seed", required_argument, NULL, 'S'},
	    {"late", required_argument, NULL, 'l'},
	    {"duplicates", required_argument, NULL, 'd'},
	    {"output", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct keel_generate_options o = {.size = sizeof o, .tenants = 1, .seed = 1};
	bool have_events = false;
	const char *output = NULL;
	uint64_t v;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "n:t:S:l:d:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!cli_parse_u64(optarg, &o.events))
				return cli_usage_error(
				    cmd, "--events \"%s\": not a count", optarg);
			have_events = true;
			break;
		case 't':
			if (!cli_parse_u64(optarg, &v) || v < 1 || v > UINT32_MAX)
				return cli_usage_error(cmd,
						       "--tenants \"%s\": not a count "
						       "from 1",
						       optarg);
			o.tenants = (uint32_t)v;
			break;
		case 'S':
			if (!cli_parse_u64(optarg, &o.seed))
				return cli_usage_error(cmd,
						       "--seed \"%s\": not an unsigned "
						       "integer",
						       optarg);
			break;
		case 'l':
			if (!cli_parse_fraction(optarg, &o.late))
				return cli_usage_error(cmd,
						       "--late \"%s\": not a fraction "
						       "from 0 to 1",
						       optarg);
			break;
		case 'd':
			if (!cli_parse_fraction(optarg, &o.duplicates))
				return cli_usage_error(cmd,
						       "--duplicates \"%s\": not a "
						       "fraction from 0 to 1",
						       optarg);
			break;
		case 'o':
			output = optarg;
			break;
		case 'h':
			cli_help(cmd, stdout);
			return CLI_OK;
		default:
			return cli_unknown_option(cmd, argv, opts);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error(cmd, "expected a profile (fleet)");
	if (strcmp(argv[optind], "fleet") != 0)
		return cli_usage_error(cmd, "unknown profile \"%s\" (known: fleet)",
				       argv[optind]);
	if (!have_events)
		return cli_usage_error(cmd, "--events is required");

	FILE *out = cli_output_open(cmd, output);
	if (!out)
		return CLI_FATAL;
	static char buf[1 << 20];
	setvbuf(out, buf, _IOFBF, sizeof buf);
	int rc = keel_generate_fleet(&o, out);
	if (rc)
		rc = cli_error(cmd, "%s", keel_strerror(rc));
	return cli_output_close(cmd, out, output, rc);
}

const struct keel_cmd keel_cmd_generate = {
    .name = "generate",
    .summary = "Write a deterministic synthetic event stream (NDJSON).",
    .usage = "generate fleet --events N [--tenants K] [--seed S] [--late P]\n"
	     "                   [--duplicates P] [--output FILE]\n"
	     "\n"
	     "options:\n"
	     "  -n, --events N        how many lines to write (required)\n"
	     "  -t, --tenants K       spread the stream over K tenants (default 1)\n"
	     "  -S, --seed S          random seed (default 1)\n"
	     "  -l, --late P          fraction of events delivered out of time order\n"
	     "  -d, --duplicates P    fraction of events sent twice\n"
	     "  -o, --output FILE     write to FILE (default: standard output)\n"
	     "  -h, --help            this help\n"
	     "\n"
	     "The output depends only on the options, on every machine and in every\n"
	     "release (profile fleet, version 1).",
    .run = generate_run,
};
