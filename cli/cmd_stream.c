/*
 * cmd_stream.c - keel stream create: makes a log of P partitions on a
 * NATS JetStream cluster, or checks that the existing one matches
 * (docs/log.md, "Making a log"; keel_log_create).
 */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/* A number option: CLI_OK, or the usage error printed. */
static int stream_number(const struct keel_cmd *cmd, const char *name, const char *arg,
			 uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (!cli_parse_u64(arg, out) || *out < lo || *out > hi)
		return cli_usage_error(cmd, "%s \"%s\": not a number from %llu to %llu", name,
				       arg, (unsigned long long)lo, (unsigned long long)hi);
	return CLI_OK;
}

static int stream_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"stream", required_argument, NULL, 's'},
	    {"partitions", required_argument, NULL, 'p'},
	    {"replicas", required_argument, NULL, 'r'},
	    {"lease", required_argument, NULL, 'l'},
	    {"duplicate-window", required_argument, NULL, 'd'},
	    {"max-age", required_argument, NULL, 'a'},
	    {"max-bytes", required_argument, NULL, 'b'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct keel_log_options o = {.size = sizeof o};
	uint64_t v;
	int c, rc;
	optind = 0;
	while ((c = getopt_long(argc, argv, "s:p:r:l:d:a:b:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			o.stream = optarg;
			break;
		case 'p':
			if ((rc = stream_number(cmd, "--partitions", optarg, 1,
						KEEL_LOG_MAX_PARTITIONS, &v)))
				return rc;
			o.partitions = (uint32_t)v;
			break;
		case 'r':
			if ((rc = stream_number(cmd, "--replicas", optarg, 1, 5, &v)))
				return rc;
			o.replicas = (unsigned)v;
			break;
		case 'l':
			if ((rc = stream_number(cmd, "--lease", optarg, 500, 3600000, &v)))
				return rc;
			o.lease_ms = (uint32_t)v;
			break;
		case 'd':
			if ((rc = stream_number(cmd, "--duplicate-window", optarg, 1000,
						86400000, &v)))
				return rc;
			o.duplicate_window_ms = (uint32_t)v;
			break;
		case 'a':
			if ((rc = stream_number(cmd, "--max-age", optarg, 1000,
						UINT64_C(1) << 50, &v)))
				return rc;
			o.max_age_ms = v;
			break;
		case 'b':
			if (!cli_parse_size(optarg, &v) || v < 4096 || v > (UINT64_C(1) << 60))
				return cli_usage_error(cmd,
						       "--max-bytes \"%s\": not a size from 4K",
						       optarg);
			o.max_bytes = (int64_t)v;
			break;
		case 'h':
			cli_help(cmd, stdout);
			return CLI_OK;
		default:
			return cli_unknown_option(cmd, argv, opts);
		}
	}
	if (optind >= argc || strcmp(argv[optind], "create") != 0)
		return cli_usage_error(cmd, optind < argc ? "unknown action \"%s\" (create)"
							  : "no action given (create)%s",
				       optind < argc ? argv[optind] : "");
	if (argc - optind != 2)
		return cli_usage_error(cmd, "create takes the servers: nats://host:port[,...]");
	o.servers = argv[optind + 1];
	if (!o.stream)
		return cli_usage_error(cmd, "--stream NAME is required");
	if (!o.partitions)
		return cli_usage_error(cmd, "--partitions N is required");
	char *report = NULL, *err = NULL;
	rc = keel_log_create(&o, &report, &err);
	if (rc) {
		rc = cli_error(cmd, "%s", err ? err : keel_strerror(rc));
		free(err);
		return rc;
	}
	fputs(report, stdout);
	free(report);
	return cli_finish_stdout(cmd, CLI_OK);
}

const struct keel_cmd keel_cmd_stream = {
    .name = "stream",
    .summary = "Make a partitioned log on NATS JetStream.",
    .usage =
	"stream create nats://HOST:PORT[,HOST:PORT...] --stream NAME --partitions N\n"
	"                 [--replicas R] [--lease MS] [--duplicate-window MS]\n"
	"                 [--max-age MS] [--max-bytes SIZE]\n"
	"\n"
	"options:\n"
	"  -s, --stream NAME          the log's name: letters, digits, - and _\n"
	"  -p, --partitions N         partitions, fixed for the log's life (1-" CLI_STR(
	    KEEL_LOG_MAX_PARTITIONS) ")\n"
	"  -r, --replicas R           copies of each message (default 1; 3 or 5\n"
	"                             on a cluster)\n"
	"  -l, --lease MS             how long a consumer holds a partition\n"
	"                             without renewing it (default " CLI_STR(
		KEEL_LOG_DEFAULT_LEASE_MS) ")\n"
	"  -d, --duplicate-window MS  a message id seen within MS is stored once\n"
	"                             (default " CLI_STR(KEEL_LOG_DEFAULT_DUPLICATE_WINDOW_MS) ")\n"
	"  -a, --max-age MS           drop messages older than MS (default: keep)\n"
	"  -b, --max-bytes SIZE       at most SIZE bytes a partition, K/M/G\n"
	"                             suffixes (default: no limit)\n"
	"  -h, --help                 this help\n"
	"\n"
	"The log NAME of N partitions is the streams NAME-0 ... NAME-<N-1> (subjects\n"
	"NAME.0 ... NAME.<N-1>), on file, and the key-value bucket NAME-leases. A\n"
	"tenant's events go to partition fnv1a32(tenant) mod N (docs/log.md). A log\n"
	"that exists already is checked: the same partitions and replicas.\n"
	"Exit status: 0 made or found; 1 the servers cannot be reached, JetStream\n"
	"refused, or the existing log differs; 2 usage.",
    .run = stream_run,
};
