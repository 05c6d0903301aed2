/*
 * cmd_consume.c - keel consume: projects a log's partitions into a store
 * (or the stores of a store map) until stopped, sharing the partitions
 * with every other keel consume of the same log (docs/log.md,
 * "Consuming"; keel_consume). With --status it prints, once, each
 * partition's owner, stored position, the stream's last sequence and the
 * lag.
 *
 * What happens (partitions taken and let go, commits refused, retries)
 * goes to stderr, one line each; rejected events too, as keel ingest
 * reports them (or to --rejects FILE). SIGINT and SIGTERM stop it: what
 * was taken is committed and the leases are handed back.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t consume_stop;

static void consume_on_signal(int sig)
{
	(void)sig;
	consume_stop = 1;
}

static bool consume_should_stop(void *ud)
{
	(void)ud;
	return consume_stop != 0;
}

struct consume_state {
	FILE *rejects;
	uint64_t rejected;
};

static void consume_on_reject(void *ud, uint64_t position, const char *id,
			      const char *message, const char *input, size_t input_len)
{
	struct consume_state *st = ud;
	st->rejected++;
	if (st->rejects) {
		cli_reject_line(st->rejects, position, id, message, input, input_len, NULL);
		fflush(st->rejects);
	} else {
		fprintf(stderr, "keel consume: %s\n", message);
	}
}

static int consume_number(const struct keel_cmd *cmd, const char *name, const char *arg,
			  uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (!cli_parse_u64(arg, out) || *out < lo || *out > hi)
		return cli_usage_error(cmd, "%s \"%s\": not a number from %llu to %llu", name,
				       arg, (unsigned long long)lo, (unsigned long long)hi);
	return CLI_OK;
}

static int consume_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"stream", required_argument, NULL, 'S'},
	    {"store", required_argument, NULL, 's'},
	    {"store-map", required_argument, NULL, 'M'},
	    {"name", required_argument, NULL, 'n'},
	    {"cartridge", required_argument, NULL, 'c'},
	    {"batch", required_argument, NULL, 'b'},
	    {"commit-interval", required_argument, NULL, 'C'},
	    {"ack-wait", required_argument, NULL, 'a'},
	    {"linger", required_argument, NULL, 'l'},
	    {"rejects", required_argument, NULL, 'r'},
	    {"status", no_argument, NULL, 't'},
	    {"prometheus", no_argument, NULL, 'P'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct keel_log_options log = {.size = sizeof log};
	struct keel_consume_options o = {.size = sizeof o, .log = &log};
	const char *cartridge = NULL, *rejects = NULL;
	bool status = false, prometheus = false;
	uint64_t v;
	int c, rc;
	optind = 0;
	while ((c = getopt_long(argc, argv, "S:s:M:n:c:b:C:a:l:r:tPh", opts, NULL)) != -1) {
		switch (c) {
		case 'S':
			log.stream = optarg;
			break;
		case 's':
			o.store_url = optarg;
			break;
		case 'M':
			o.store_map = optarg;
			break;
		case 'n':
			o.name = optarg;
			break;
		case 'c':
			if (!cli_option_once(cmd, &cartridge, optarg, "--cartridge"))
				return CLI_USAGE;
			break;
		case 'b':
			if ((rc = consume_number(cmd, "--batch", optarg, 1, 100000, &v)))
				return rc;
			o.batch = (size_t)v;
			break;
		case 'C':
			if ((rc = consume_number(cmd, "--commit-interval", optarg, 1, 3600000, &v)))
				return rc;
			o.commit_interval_ms = (uint32_t)v;
			break;
		case 'a':
			if ((rc = consume_number(cmd, "--ack-wait", optarg, 100, 3600000, &v)))
				return rc;
			o.ack_wait_ms = (uint32_t)v;
			break;
		case 'l':
			if ((rc = consume_number(cmd, "--linger", optarg, 0, 3600000, &v)))
				return rc;
			o.linger_ms = (uint32_t)v;
			break;
		case 'r':
			rejects = optarg;
			break;
		case 't':
			status = true;
			break;
		case 'P':
			prometheus = true;
			break;
		case 'h':
			cli_help(cmd, stdout);
			return CLI_OK;
		default:
			return cli_unknown_option(cmd, argv, opts);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error(cmd, "the log's servers are required: nats://HOST:PORT");
	log.servers = argv[optind];
	if (!log.stream)
		return cli_usage_error(cmd, "--stream NAME is required");
	if (!o.store_url && !o.store_map)
		o.store_url = keel_store_default_url();
	if (o.store_url && o.store_map)
		return cli_usage_error(cmd, "--store and --store-map exclude each other");
	if (o.store_url && (rc = cli_check_store_url(cmd, o.store_url)))
		return rc;
	if (prometheus && !status)
		return cli_usage_error(cmd, "--prometheus goes with --status");
	char *err = NULL;
	if (status) {
		rc = keel_consume_status(&o, prometheus, stdout, &err);
		if (rc) {
			rc = cli_error(cmd, "%s", err);
			free(err);
			return rc;
		}
		return cli_finish_stdout(cmd, CLI_OK);
	}

	struct keel_cartridge *cart = NULL;
	if ((rc = cli_load_cartridge(cmd, cartridge, &cart)))
		return rc;
	struct consume_state st = {0};
	if (rejects) {
		st.rejects = strcmp(rejects, "-") == 0 ? stdout : fopen(rejects, "a");
		if (!st.rejects) {
			rc = cli_error(cmd, "cannot open \"%s\": %s", rejects, strerror(errno));
			keel_cartridge_free(cart);
			return rc;
		}
	}
	o.cartridge = cart;
	o.on_reject = consume_on_reject;
	o.reject_userdata = &st;
	o.should_stop = consume_should_stop;
	o.log_file = stderr;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = consume_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	rc = keel_consume(&o, &err);
	if (rc) {
		rc = cli_error(cmd, "%s", err ? err : keel_strerror(rc));
		free(err);
	}
	if (st.rejects && st.rejects != stdout)
		fclose(st.rejects);
	keel_cartridge_free(cart);
	return rc;
}

const struct keel_cmd keel_cmd_consume = {
    .name = "consume",
    .summary = "Project a log's partitions into a store, shared with other consumers.",
    .usage =
	"consume nats://HOST:PORT[,HOST:PORT...] --stream NAME\n"
	"                 [--store URL | --store-map FILE] [--name NAME]\n"
	"                 [--cartridge NAME|PATH] [--batch N] [--commit-interval MS]\n"
	"                 [--ack-wait MS] [--linger MS] [--rejects FILE]\n"
	"       keel consume nats://... --stream NAME [--store URL | --store-map FILE]\n"
	"                 --status [--prometheus]\n"
	"\n"
	"options:\n"
	"  -S, --stream NAME          the log (made by keel stream create)\n"
	"  -s, --store URL            the store (default: $KEEL_STORE, else\n"
	"                             sqlite:keel.db); it must take concurrent\n"
	"                             writers (mysql)\n"
	"  -M, --store-map FILE       partition ranges to stores (docs/log.md)\n"
	"  -n, --name NAME            this consumer's name among the others\n"
	"                             (default: host name and process id)\n"
	"  -c, --cartridge NAME       the cartridge for tenants without a recorded one\n"
	"                             (default: each tenant's recorded one only)\n"
	"  -b, --batch N              events a batch (default " CLI_STR(KEEL_DEFAULT_BATCH) "); a fetch asks for\n"
	"                             four batches' messages\n"
	"  -C, --commit-interval MS   a commit holds at most MS ms of messages\n"
	"                             (default " CLI_STR(KEEL_DEFAULT_COMMIT_INTERVAL_MS) ")\n"
	"  -a, --ack-wait MS          before the log delivers an unacknowledged\n"
	"                             message again (default 30000)\n"
	"  -l, --linger MS            a quiet log's messages are committed once the\n"
	"                             first has waited MS ms (default 0: at once)\n"
	"  -r, --rejects FILE         append each rejected event to FILE as one JSON\n"
	"                             line (- for standard output)\n"
	"  -t, --status               print each partition's owner, stored position,\n"
	"                             last sequence and lag, then exit\n"
	"  -P, --prometheus           with --status: in Prometheus text format\n"
	"  -h, --help                 this help\n"
	"\n"
	"Consumers of one log share its partitions evenly through leases; one that\n"
	"dies or stops answering loses its partitions to the others within the\n"
	"lease time (keel stream create --lease). Each commit writes the rows and\n"
	"each partition's position with the lease's fencing token in one\n"
	"transaction: a consumer that lost a partition cannot write to it. A log or\n"
	"store that cannot be reached is retried. SIGINT or SIGTERM stops it.\n"
	"Exit status: 0 stopped; 1 fatal error (no such log, a store that cannot\n"
	"keep positions, a bad store map); 2 usage.",
    .run = consume_run,
};
