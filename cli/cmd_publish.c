/*
 * cmd_publish.c - keel publish: NDJSON envelopes from files or standard
 * input onto a log (docs/log.md, "Publishing"; keel_publisher_*).
 *
 * Every line is checked as keel ingest checks it (a bad one is rejected
 * with the same message, and never published), then published without
 * waiting; at each input's end the command waits until the log has
 * acknowledged everything. Standard input that is a pipe or terminal is
 * read on a thread (cli/stream.c) so that SIGINT or SIGTERM stops a run
 * waiting for input: what was read is still published and acknowledged,
 * and the report says "interrupted". The report and the exit status are
 * ingest's (docs/cli.md): 0 all published, 1 fatal, 2 usage, 3 some
 * rejected.
 */
#include "cli.h"
#include "stream.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REJECTS_SHOWN 20
#define PROGRESS_INTERVAL 0.25

static volatile sig_atomic_t publish_interrupted;

static void publish_on_signal(int sig)
{
	(void)sig;
	publish_interrupted = 1;
}

struct publish_state {
	const struct keel_cmd *cmd;
	struct keel_publisher *pub;
	FILE *rejects;
	const char *input;
	bool multi, quiet, verbose, progress, progress_drawn;
	uint64_t rejects_seen;
	double start, last_draw;
};

static void progress_clear(struct publish_state *st)
{
	if (st->progress_drawn) {
		fputs("\r\033[K", stderr);
		st->progress_drawn = false;
	}
}

static void progress_tick(struct publish_state *st)
{
	if (!st->progress)
		return;
	double now = cli_now();
	if (now - st->last_draw < PROGRESS_INTERVAL)
		return;
	const struct keel_publish_report *r = keel_publisher_report(st->pub);
	double elapsed = now - st->start;
	fprintf(stderr, "\r\033[K%llu events read, %llu acknowledged, %.0f events/s",
		(unsigned long long)r->read,
		(unsigned long long)(r->published + r->duplicates),
		elapsed > 0 ? (double)r->read / elapsed : 0);
	if (r->rejected)
		fprintf(stderr, ", %llu rejected", (unsigned long long)r->rejected);
	st->progress_drawn = true;
	st->last_draw = now;
}

static void on_reject(void *ud, uint64_t position, const char *id, const char *message,
		      const char *input, size_t input_len)
{
	struct publish_state *st = ud;
	st->rejects_seen++;
	if (st->rejects) {
		cli_reject_line(st->rejects, position, id, message, input, input_len,
				st->input);
		return;
	}
	if (st->rejects_seen > REJECTS_SHOWN)
		return;
	progress_clear(st);
	if (st->multi)
		fprintf(stderr, "keel publish: %s: %s\n", st->input, message);
	else
		fprintf(stderr, "keel publish: %s\n", message);
}

static int publish_failed(struct publish_state *st)
{
	progress_clear(st);
	if (st->multi)
		return cli_error(st->cmd, "%s: %s", st->input, keel_publisher_errmsg(st->pub));
	return cli_error(st->cmd, "%s", keel_publisher_errmsg(st->pub));
}

static int offer(struct publish_state *st, const char *line, size_t len, uint64_t lineno,
		 bool too_long)
{
	int rc = too_long ? keel_publisher_add_too_long(st->pub, lineno, line, len)
			  : keel_publisher_add(st->pub, line, len, lineno);
	return rc ? publish_failed(st) : 0;
}

/* A file: straight through, until its end or a signal. */
static int publish_file(struct publish_state *st, struct keel_reader *r)
{
	const char *line;
	size_t len;
	uint64_t lineno, n = 0;
	bool too_long;
	int rc;
	while (!publish_interrupted &&
	       (rc = keel_reader_next(r, &line, &len, &lineno, &too_long)) == 1) {
		int orc = offer(st, line, len, lineno, too_long);
		if (orc)
			return orc;
		if ((++n & 63) == 0)
			progress_tick(st);
	}
	if (keel_publisher_flush(st->pub))
		return publish_failed(st);
	if (rc < 0) {
		progress_clear(st);
		return cli_error(st->cmd, "%s", keel_reader_errmsg(r));
	}
	return 0;
}

/* A pipe or terminal: lines from a thread, so that a signal is seen while
 * a read waits. *reader_busy as ingest's (the reader must stay open). */
static int publish_live(struct publish_state *st, struct keel_reader *r, bool *reader_busy)
{
	struct cli_stream *stream = cli_stream_start(r);
	if (!stream)
		return cli_error(st->cmd, "cannot start the reading thread");
	int rc = 0, got = 0;
	while (!publish_interrupted) {
		struct cli_line line;
		got = cli_stream_next(stream, 100, &line);
		if (got == 1) {
			if ((rc = offer(st, line.text, line.len, line.lineno, line.too_long)))
				break;
		} else if (got < 0) {
			break;
		}
		progress_tick(st);
	}
	if (rc == 0 && keel_publisher_flush(st->pub))
		rc = publish_failed(st);
	if (rc == 0 && got == -2) {
		progress_clear(st);
		rc = cli_error(st->cmd, "%s", cli_stream_errmsg(stream));
	}
	*reader_busy = !cli_stream_stop(stream);
	return rc;
}

static void print_report(struct publish_state *st, bool interrupted)
{
	const struct keel_publish_report *r = keel_publisher_report(st->pub);
	double elapsed = cli_now() - st->start;
	progress_clear(st);
	if (!st->rejects && st->rejects_seen > REJECTS_SHOWN)
		fprintf(stderr,
			"keel publish: ... and %llu more rejected events (use --rejects "
			"FILE to keep them all)\n",
			(unsigned long long)(st->rejects_seen - REJECTS_SHOWN));
	if (st->quiet)
		return;
	fprintf(stderr,
		"%sread %llu events in %.2f s (%.0f events/s)\n"
		"published %llu, duplicates %llu (already in the log), rejected %llu\n",
		interrupted ? "interrupted: " : "", (unsigned long long)r->read, elapsed,
		elapsed > 0 ? (double)r->read / elapsed : 0,
		(unsigned long long)r->published, (unsigned long long)r->duplicates,
		(unsigned long long)r->rejected);
	if (st->verbose)
		fprintf(stderr, "retries %llu\n", (unsigned long long)r->retries);
}

static int publish_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"to", required_argument, NULL, 't'},
	    {"stream", required_argument, NULL, 's'},
	    {"cartridge", required_argument, NULL, 'c'},
	    {"rejects", required_argument, NULL, 'r'},
	    {"max-line", required_argument, NULL, 'm'},
	    {"max-pending", required_argument, NULL, 'p'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct keel_log_options log = {.size = sizeof log};
	struct publish_state st = {.cmd = cmd};
	const char *cartridge = NULL, *rejects = NULL;
	uint64_t max_line = KEEL_DEFAULT_MAX_LINE, max_pending = 0;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "t:s:c:r:m:p:qvh", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			log.servers = optarg;
			break;
		case 's':
			log.stream = optarg;
			break;
		case 'c':
			if (!cli_option_once(cmd, &cartridge, optarg, "--cartridge"))
				return CLI_USAGE;
			break;
		case 'r':
			rejects = optarg;
			break;
		case 'm':
			if (!cli_parse_size(optarg, &max_line) || max_line < 16 ||
			    max_line > ((uint64_t)1 << 30))
				return cli_usage_error(cmd,
						       "--max-line \"%s\": not a size from 16 "
						       "bytes to 1G",
						       optarg);
			break;
		case 'p':
			if (!cli_parse_u64(optarg, &max_pending) || max_pending < 1 ||
			    max_pending > 1000000)
				return cli_usage_error(cmd,
						       "--max-pending \"%s\": not a count from 1 "
						       "to 1000000",
						       optarg);
			break;
		case 'q':
			st.quiet = true;
			break;
		case 'v':
			st.verbose = true;
			break;
		case 'h':
			cli_help(cmd, stdout);
			return CLI_OK;
		default:
			return cli_unknown_option(cmd, argv, opts);
		}
	}
	if (!log.servers)
		return cli_usage_error(cmd, "--to nats://HOST:PORT is required");
	if (!log.stream)
		return cli_usage_error(cmd, "--stream NAME is required");
	if (st.quiet && st.verbose)
		return cli_usage_error(cmd, "--quiet and --verbose exclude each other");
	static const char *const stdin_only[] = {"-", NULL};
	const char *const *inputs =
	    optind < argc ? (const char *const *)argv + optind : stdin_only;
	int ninputs = optind < argc ? argc - optind : 1, stdin_uses = 0;
	st.multi = ninputs > 1;
	for (int i = 0; i < ninputs; i++) {
		struct stat sb;
		if (strcmp(inputs[i], "-") == 0) {
			if (++stdin_uses > 1)
				return cli_usage_error(cmd, "standard input (-) given more than "
							    "once");
			continue;
		}
		if (stat(inputs[i], &sb) != 0 || access(inputs[i], R_OK) != 0)
			return cli_error(cmd, "cannot open \"%s\": %s", inputs[i],
					 strerror(errno));
		if (S_ISDIR(sb.st_mode))
			return cli_error(cmd, "cannot open \"%s\": is a directory", inputs[i]);
	}

	struct keel_cartridge *cart = NULL;
	int rc = cli_load_cartridge(cmd, cartridge, &cart);
	if (rc)
		return rc;
	if (rejects) {
		st.rejects = strcmp(rejects, "-") == 0 ? stdout : fopen(rejects, "w");
		if (!st.rejects) {
			rc = cli_error(cmd, "cannot create \"%s\": %s", rejects,
				       strerror(errno));
			keel_cartridge_free(cart);
			return rc;
		}
	}
	struct keel_publish_options o = {
	    .size = sizeof o,
	    .log = &log,
	    .cartridge = cart,
	    .max_line = (size_t)max_line,
	    .on_reject = on_reject,
	    .reject_userdata = &st,
	    .max_pending = (unsigned)max_pending,
	    .log_file = stderr,
	};
	char *err = NULL;
	if (keel_publisher_new(&o, &st.pub, &err)) {
		rc = cli_error(cmd, "%s", err);
		free(err);
		goto out;
	}
	st.progress = !st.quiet && isatty(STDERR_FILENO);
	st.start = cli_now();
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = publish_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (int i = 0; rc == 0 && i < ninputs && !publish_interrupted; i++) {
		st.input = inputs[i];
		struct keel_reader *r = NULL;
		if (keel_reader_open(inputs[i], (size_t)max_line, &r, &err)) {
			rc = cli_error(cmd, "%s", err ? err : "cannot open the input");
			free(err);
			break;
		}
		struct stat sb;
		bool live = strcmp(inputs[i], "-") == 0 && !(fstat(STDIN_FILENO, &sb) == 0 &&
							     S_ISREG(sb.st_mode));
		bool reader_busy = false;
		rc = live ? publish_live(&st, r, &reader_busy) : publish_file(&st, r);
		if (!reader_busy)
			keel_reader_close(r);
	}
	bool interrupted = publish_interrupted != 0;
	print_report(&st, interrupted);
	if (rc == 0 && keel_publisher_report(st.pub)->rejected)
		rc = CLI_REJECTED;
out:
	keel_publisher_free(st.pub);
	if (st.rejects && st.rejects != stdout && fclose(st.rejects) != 0 && rc != CLI_FATAL)
		rc = cli_error(cmd, "cannot write \"%s\": %s", rejects, strerror(errno));
	else if (st.rejects == stdout)
		rc = cli_finish_stdout(cmd, rc);
	keel_cartridge_free(cart);
	return rc;
}

const struct keel_cmd keel_cmd_publish = {
    .name = "publish",
    .summary = "Publish NDJSON events onto a log (NATS JetStream).",
    .usage =
	"publish [FILE...|-] --to nats://HOST:PORT[,HOST:PORT...] --stream NAME\n"
	"                 [--cartridge NAME|PATH] [--rejects FILE] [--max-line BYTES]\n"
	"                 [--max-pending N] [--quiet] [--verbose]\n"
	"\n"
	"options:\n"
	"  -t, --to SERVERS         the log's servers\n"
	"  -s, --stream NAME        the log (made by keel stream create)\n"
	"  -c, --cartridge NAME     also run this cartridge on each event and reject\n"
	"                           what it rejects (default: the envelope rules only;\n"
	"                           a tenant's cartridge is its store's)\n"
	"  -r, --rejects FILE       write each rejected event to FILE as one JSON line\n"
	"                           (- for standard output)\n"
	"  -m, --max-line BYTES     longest accepted line, K/M/G suffixes (default 1M)\n"
	"  -p, --max-pending N      publishes waiting for the log's acknowledgement\n"
	"                           at once (default 4096)\n"
	"  -q, --quiet              no progress line and no report\n"
	"  -v, --verbose            report retries too\n"
	"  -h, --help               this help\n"
	"\n"
	"Inputs are NDJSON files, plain, .gz or .zst; - (or nothing) is standard\n"
	"input. Each event goes to its tenant's partition (docs/log.md) as a\n"
	"CloudEvent in structured content mode, with a Nats-Msg-Id made of its\n"
	"identity, so a publish retried within the log's duplicate window is\n"
	"stored once. The command ends once the log acknowledged every event.\n"
	"Exit status: 0 all published (or interrupted); 1 fatal error (the log\n"
	"cannot be reached or did not acknowledge in time); 2 usage; 3 finished\n"
	"with rejected events.",
    .run = publish_run,
};
