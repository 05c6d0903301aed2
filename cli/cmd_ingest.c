/*
 * cmd_ingest.c - keel ingest: NDJSON envelopes from files or standard input
 * into a store (docs/cli.md, docs/semantics.md).
 *
 * Files are read straight through: lines go to keel_ingest_add, which
 * commits a batch whenever it is full; each input's last batch is committed
 * at its end, so no batch spans two inputs and a store error names lines of
 * one input. Live input (a pipe or terminal on standard input, or a file
 * under --follow) is read on a thread (cli/stream.c) so that the open batch
 * can be committed when the input goes quiet: at once with --linger 0, or
 * once its first event has waited MS milliseconds with --linger MS.
 *
 * The progress line is drawn on stderr only when stderr is a terminal, at
 * most four times a second; the final report always goes to stderr (unless
 * --quiet), so stdout stays free for pipelines.
 *
 * Every mode goes through one keel_ingest handle; the flags only choose
 * its mode (ingest_mode): streaming, --replay (bulk, written at the end)
 * or --workers N (MySQL: N connections, tenants partitioned onto them;
 * docs/replay.md). The last two read their inputs straight through, never
 * as live input. Workers report rejections from their threads, so
 * rejections and the progress line share a lock.
 *
 * SIGINT and SIGTERM stop the reading of any input: what was offered is
 * committed (a bulk load, which writes only at its end, writes nothing)
 * and the report starts with "interrupted: ".
 */
#include "cli.h"
#include "stream.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Rejections printed on stderr when there is no --rejects file. */
#define REJECTS_SHOWN 20
#define PROGRESS_INTERVAL 0.25

static volatile sig_atomic_t ingest_interrupted;

/* stderr's progress line and rejections: workers report rejections
 * while this thread draws progress. */
static pthread_mutex_t ingest_output_lock = PTHREAD_MUTEX_INITIALIZER;

static void ingest_on_signal(int sig)
{
	(void)sig;
	ingest_interrupted = 1;
}

struct ingest_state {
	const struct keel_cmd *cmd;
	struct keel_ingest *ing;
	FILE *rejects;		      /* NULL: rejections go to stderr */
	const char *input;	      /* current input's name, for messages */
	bool multi;		      /* more than one input */
	uint64_t rejects_seen;
	uint64_t conflicts_seen;
	bool quiet, verbose;
	size_t linger_ms;
	/* progress */
	bool progress;
	bool progress_drawn;
	double start, last_draw;
	uint64_t bytes_before;	    /* of the inputs already read */
	uint64_t bytes_total;	    /* of all inputs, 0 if unknown */
	struct keel_reader *reader; /* read on this thread, for progress */
};

static void progress_clear(struct ingest_state *st)
{
	if (st->progress_drawn) {
		fputs("\r\033[K", stderr);
		st->progress_drawn = false;
	}
}

static void format_duration(char *buf, size_t n, double secs)
{
	unsigned long s = secs < 0 ? 0 : (unsigned long)(secs + 0.5);
	if (s >= 3600)
		snprintf(buf, n, "%lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(buf, n, "%lu:%02lu", s / 60, s % 60);
}

static void progress_draw(struct ingest_state *st, double now)
{
	const struct keel_report *rep = keel_ingest_report(st->ing);
	double elapsed = now - st->start;
	double rate = elapsed > 0 ? (double)rep->read / elapsed : 0;
	/* Read is what was offered; committed is what the store holds now
	 * (docs/semantics.md: nothing counts as accepted before its commit). */
	fprintf(stderr, "\r\033[K%llu events read, %llu committed, %.0f events/s",
		(unsigned long long)rep->read,
		(unsigned long long)(rep->accepted + rep->duplicates), rate);
	if (st->bytes_total && st->reader) {
		uint64_t done, total;
		keel_reader_progress(st->reader, &done, &total);
		done += st->bytes_before;
		if (done > st->bytes_total)
			done = st->bytes_total;
		double frac = (double)done / (double)st->bytes_total;
		fprintf(stderr, ", %.0f%%", frac * 100);
		if (frac > 0.01) {
			char eta[32];
			format_duration(eta, sizeof eta, elapsed * (1 - frac) / frac);
			fprintf(stderr, ", ETA %s", eta);
		}
	}
	if (rep->rejected)
		fprintf(stderr, ", %llu rejected", (unsigned long long)rep->rejected);
	st->progress_drawn = true;
	st->last_draw = now;
}

static void progress_tick(struct ingest_state *st)
{
	if (!st->progress)
		return;
	double now = cli_now();
	if (now - st->last_draw >= PROGRESS_INTERVAL) {
		pthread_mutex_lock(&ingest_output_lock);
		progress_draw(st, now);
		pthread_mutex_unlock(&ingest_output_lock);
	}
}

static void report_reject(struct ingest_state *st, uint64_t position, const char *id,
			  const char *message, const char *input, size_t input_len)
{
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
		fprintf(stderr, "keel ingest: %s: %s\n", st->input, message);
	else
		fprintf(stderr, "keel ingest: %s\n", message);
}

static void on_reject(void *ud, uint64_t position, const char *id, const char *message,
		      const char *input, size_t input_len)
{
	pthread_mutex_lock(&ingest_output_lock);
	report_reject(ud, position, id, message, input, input_len);
	pthread_mutex_unlock(&ingest_output_lock);
}

/* A conflicting duplicate: always on stderr (the first REJECTS_SHOWN),
 * and in the rejects file too, with its source. */
static void on_conflict(void *ud, uint64_t position, const char *source, const char *id,
			const char *message, const char *envelope, size_t envelope_len)
{
	struct ingest_state *st = ud;
	pthread_mutex_lock(&ingest_output_lock);
	if (st->rejects)
		cli_conflict_line(st->rejects, position, source, id, message, envelope,
				  envelope_len, st->input);
	if (++st->conflicts_seen <= REJECTS_SHOWN) {
		progress_clear(st);
		if (st->multi)
			fprintf(stderr, "keel ingest: %s: %s\n", st->input, message);
		else
			fprintf(stderr, "keel ingest: %s\n", message);
	}
	pthread_mutex_unlock(&ingest_output_lock);
}

/* A tenant the store has no cartridge for, or another one than given:
 * its events would all be refused, so the run stops (exit 2, as for a
 * wrong flag). The refused event was reported as a rejection; its message
 * is repeated here unless that went to stderr already. */
static int cartridge_refused(struct ingest_state *st)
{
	pthread_mutex_lock(&ingest_output_lock);
	progress_clear(st);
	bool shown = !st->rejects && st->rejects_seen <= REJECTS_SHOWN;
	pthread_mutex_unlock(&ingest_output_lock);
	if (!shown)
		fprintf(stderr, "keel ingest: %s\n", keel_ingest_errmsg(st->ing));
	return CLI_USAGE;
}

/* A failure of the ingester (rc): a store's names the batch's range of
 * lines. */
static int store_failed(struct ingest_state *st, int rc)
{
	if (rc == KEEL_ECARTRIDGE)
		return cartridge_refused(st);
	pthread_mutex_lock(&ingest_output_lock);
	progress_clear(st);
	pthread_mutex_unlock(&ingest_output_lock);
	/* Whether the last commit went in is unknown: the way out is the
	 * same as after any failure, and safe for the same reason. */
	const char *again = rc == KEEL_EUNCERTAIN
				? "; run the same input again: what was logged is "
				  "skipped as duplicates"
				: "";
	if (st->multi)
		return cli_error(st->cmd, "%s: %s%s", st->input, keel_ingest_errmsg(st->ing),
				 again);
	return cli_error(st->cmd, "%s%s", keel_ingest_errmsg(st->ing), again);
}

static int offer(struct ingest_state *st, const char *line, size_t len, uint64_t lineno,
		 bool too_long)
{
	int rc = too_long ? keel_ingest_add_too_long(st->ing, lineno, line, len)
			  : keel_ingest_add(st->ing, line, len, lineno);
	return rc ? store_failed(st, rc) : 0;
}

/* A file (or redirected stdin): straight through, until the end or a
 * signal. */
static int ingest_file(struct ingest_state *st, struct keel_reader *r)
{
	const char *line;
	size_t len;
	uint64_t lineno, n = 0;
	bool too_long;
	int rc = 0;
	st->reader = r;
	while (!ingest_interrupted &&
	       (rc = keel_reader_next(r, &line, &len, &lineno, &too_long)) == 1) {
		int orc = offer(st, line, len, lineno, too_long);
		if (orc)
			return orc;
		if ((++n & 63) == 0)
			progress_tick(st);
	}
	st->reader = NULL;
	/* What was read before a read error or a signal is good: commit it
	 * first. */
	int frc = keel_ingest_flush(st->ing);
	if (frc)
		return store_failed(st, frc);
	if (rc < 0) {
		progress_clear(st);
		return cli_error(st->cmd, "%s", keel_reader_errmsg(r));
	}
	return 0;
}

/* Live input: commit when the input goes quiet (see the file comment).
 * Without quiet_commits, input that is read straight through but may block
 * (a pipe under --replay or --workers, a FILE that is a FIFO): batches are
 * committed only when full, as ingest_file does, but the reading is on a
 * thread, so that a signal stops the run while a read waits for input.
 * *reader_busy is set when the reading thread is still inside the reader
 * (interrupted while waiting for input): the reader must then stay open. */
static int ingest_live(struct ingest_state *st, struct keel_reader *r, bool quiet_commits,
		       bool *reader_busy)
{
	struct cli_stream *stream = cli_stream_start(r);
	if (!stream)
		return cli_error(st->cmd, "cannot start the reading thread");
	double linger = (double)st->linger_ms / 1000.0;
	double deadline = 0;
	int rc = 0, got = 0;
	while (!ingest_interrupted) {
		bool pending = quiet_commits && keel_ingest_pending(st->ing) > 0;
		int timeout = 100; /* wake up now and then to notice a signal */
		if (pending) {
			double left = deadline - cli_now();
			timeout = left <= 0    ? 0
				  : left < 0.1 ? (int)(left * 1000) + 1
					       : 100;
		}
		struct cli_line line;
		got = cli_stream_next(stream, timeout, &line);
		if (got == 1) {
			if ((rc = offer(st, line.text, line.len, line.lineno,
					line.too_long)))
				break;
			double now = cli_now();
			if (!pending && keel_ingest_pending(st->ing))
				deadline = now + linger;
			if (quiet_commits && linger > 0 && keel_ingest_pending(st->ing) &&
			    now >= deadline && (rc = keel_ingest_flush(st->ing))) {
				rc = store_failed(st, rc);
				break;
			}
			progress_tick(st);
		} else if (got == 0) {
			if (pending && cli_now() >= deadline &&
			    (rc = keel_ingest_flush(st->ing))) {
				rc = store_failed(st, rc);
				break;
			}
			progress_tick(st);
		} else {
			break;
		}
	}
	if (rc == 0 && (rc = keel_ingest_flush(st->ing)))
		rc = store_failed(st, rc);
	if (rc == 0 && got == -2) {
		progress_clear(st);
		rc = cli_error(st->cmd, "%s", cli_stream_errmsg(stream));
	}
	*reader_busy = !cli_stream_stop(stream);
	return rc;
}

static void print_report(struct ingest_state *st, double elapsed, bool interrupted)
{
	const struct keel_report *r = keel_ingest_report(st->ing);
	progress_clear(st);
	if (!st->rejects && st->rejects_seen > REJECTS_SHOWN)
		fprintf(stderr,
			"keel ingest: ... and %llu more rejected events (use "
			"--rejects FILE to keep them all)\n",
			(unsigned long long)(st->rejects_seen - REJECTS_SHOWN));
	if (st->conflicts_seen > REJECTS_SHOWN)
		fprintf(stderr, "keel ingest: ... and %llu more conflicting duplicates\n",
			(unsigned long long)(st->conflicts_seen - REJECTS_SHOWN));
	if (st->quiet)
		return;
	double rate = elapsed > 0 ? (double)r->read / elapsed : 0;
	fprintf(stderr,
		"%sread %llu events in %.2f s (%.0f events/s)\n"
		"accepted %llu, duplicates %llu (conflicting %llu), unhandled %llu, "
		"rejected %llu\n"
		"rows inserted %llu\n",
		interrupted ? "interrupted: " : "", (unsigned long long)r->read, elapsed,
		rate, (unsigned long long)r->accepted, (unsigned long long)r->duplicates,
		(unsigned long long)r->conflicting, (unsigned long long)r->unhandled,
		(unsigned long long)r->rejected, (unsigned long long)r->rows_inserted);
	const char *method = keel_ingest_method(st->ing);
	if (*method) /* empty: streaming, or nothing was written */
		fprintf(stderr, "written by %s\n", method);
	if (st->verbose)
		fprintf(stderr, "batches %llu, commits %llu, statements %llu\n",
			(unsigned long long)r->batches, (unsigned long long)r->commits,
			(unsigned long long)r->statements);
}

struct ingest_args {
	const char *url, *cartridge, *rejects;
	uint64_t batch, max_line;
	bool linger_set, follow, replay;
	uint64_t linger, workers;
	uint64_t commit_interval; /* ms; 0: every batch */
};

static int parse_args(const struct keel_cmd *cmd, int argc, char **argv,
		      struct ingest_args *a, struct ingest_state *st)
{
	static const struct option opts[] = {
	    {"store", required_argument, NULL, 's'},
	    {"cartridge", required_argument, NULL, 'c'},
	    {"batch", required_argument, NULL, 'b'},
	    {"linger", required_argument, NULL, 'l'},
	    {"commit-interval", required_argument, NULL, 'C'},
	    {"rejects", required_argument, NULL, 'r'},
	    {"follow", no_argument, NULL, 'f'},
	    {"replay", no_argument, NULL, 'R'},
	    {"workers", required_argument, NULL, 'w'},
	    {"max-line", required_argument, NULL, 'm'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "s:c:b:l:C:r:fm:qvhRw:", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			a->url = optarg;
			break;
		case 'c':
			if (!cli_option_once(cmd, &a->cartridge, optarg, "--cartridge"))
				return CLI_USAGE;
			break;
		case 'b':
			if (!cli_parse_u64(optarg, &a->batch) || a->batch < 1 ||
			    a->batch > 1000000)
				return cli_usage_error(cmd,
						       "--batch \"%s\": not a count from "
						       "1 to 1000000",
						       optarg);
			break;
		case 'l':
			if (!cli_parse_u64(optarg, &a->linger) || a->linger > 3600000)
				return cli_usage_error(cmd,
						       "--linger \"%s\": not a number of "
						       "milliseconds (0-3600000)",
						       optarg);
			a->linger_set = true;
			break;
		case 'C':
			if (!cli_parse_u64(optarg, &a->commit_interval) ||
			    a->commit_interval > 3600000)
				return cli_usage_error(cmd,
						       "--commit-interval \"%s\": not a number "
						       "of milliseconds (0-3600000)",
						       optarg);
			break;
		case 'r':
			a->rejects = optarg;
			break;
		case 'f':
			a->follow = true;
			break;
		case 'R':
			a->replay = true;
			break;
		case 'w':
			if (!cli_parse_u64(optarg, &a->workers) || a->workers < 1 ||
			    a->workers > 64)
				return cli_usage_error(
				    cmd,
				    "--workers \"%s\": not a count from "
				    "1 to 64",
				    optarg);
			break;
		case 'm':
			if (!cli_parse_size(optarg, &a->max_line) || a->max_line < 16 ||
			    a->max_line > ((uint64_t)1 << 30))
				return cli_usage_error(cmd,
						       "--max-line \"%s\": not a size "
						       "from 16 bytes to 1G",
						       optarg);
			break;
		case 'q':
			st->quiet = true;
			break;
		case 'v':
			st->verbose = true;
			break;
		case 'h':
			cli_help(cmd, stdout);
			return -1;
		default:
			return cli_unknown_option(cmd, argv, opts);
		}
	}
	if (st->quiet && st->verbose)
		return cli_usage_error(cmd, "--quiet and --verbose exclude each other");
	int n = argc - optind;
	if (a->follow && (n != 1 || strcmp(argv[optind], "-") == 0))
		return cli_usage_error(cmd, "--follow takes exactly one file");
	int stdin_uses = 0;
	for (int i = optind; i < argc; i++)
		stdin_uses += strcmp(argv[i], "-") == 0;
	if (stdin_uses > 1)
		return cli_usage_error(cmd, "standard input (-) given more than once");
	if (a->replay && a->workers > 1)
		return cli_usage_error(cmd, "--replay and --workers exclude each other");
	if ((a->replay || a->workers > 1) && (a->follow || a->linger_set))
		return cli_usage_error(cmd,
				       "--%s reads files straight through: no "
				       "--follow or --linger",
				       a->replay ? "replay" : "workers");
	return 0;
}

/* The one place the flags choose how events are written. */
static enum keel_ingest_mode ingest_mode(const struct ingest_args *a)
{
	if (a->replay)
		return KEEL_INGEST_BULK;
	return a->workers > 1 ? KEEL_INGEST_WORKERS : KEEL_INGEST_STREAMING;
}

static void install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = ingest_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static int ingest_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	struct ingest_args a = {.batch = KEEL_DEFAULT_BATCH,
				.max_line = KEEL_DEFAULT_MAX_LINE,
				.commit_interval = KEEL_DEFAULT_COMMIT_INTERVAL_MS};
	struct ingest_state st = {.cmd = cmd};
	int rc = parse_args(cmd, argc, argv, &a, &st);
	if (rc)
		return rc < 0 ? CLI_OK : rc;

	static const char *const stdin_only[] = {"-", NULL};
	const char *const *inputs =
	    optind < argc ? (const char *const *)argv + optind : stdin_only;
	int ninputs = optind < argc ? argc - optind : 1;
	st.multi = ninputs > 1;
	st.linger_ms = (size_t)a.linger;

	/* Fail before any work on an input that cannot be read. */
	for (int i = 0; i < ninputs; i++) {
		struct stat sb;
		if (strcmp(inputs[i], "-") == 0)
			continue;
		if (stat(inputs[i], &sb) != 0 || access(inputs[i], R_OK) != 0)
			return cli_error(cmd, "cannot open \"%s\": %s", inputs[i],
					 strerror(errno));
		if (S_ISDIR(sb.st_mode))
			return cli_error(cmd, "cannot open \"%s\": is a directory",
					 inputs[i]);
		if (S_ISREG(sb.st_mode) && !a.follow)
			st.bytes_total += (uint64_t)sb.st_size;
	}

	/* Without --cartridge each tenant's recorded one runs (the
	 * ingester's choice). */
	struct keel_cartridge *cart = NULL;
	char *err = NULL;
	if ((rc = cli_load_cartridge(cmd, a.cartridge, &cart)))
		return rc;
	struct keel_store *s = cli_open_store(cmd, a.url);
	if (!s) {
		keel_cartridge_free(cart);
		return CLI_FATAL;
	}
	if (a.rejects) {
		st.rejects = strcmp(a.rejects, "-") == 0 ? stdout : fopen(a.rejects, "w");
		if (!st.rejects) {
			rc = cli_error(cmd, "cannot create \"%s\": %s", a.rejects,
				       strerror(errno));
			keel_store_close(s);
			keel_cartridge_free(cart);
			return rc;
		}
	}
	struct keel_ingest_options o = {
	    .size = sizeof o,
	    .cartridge = cart,
	    .batch = (size_t)a.batch,
	    .max_line = (size_t)a.max_line,
	    .on_reject = on_reject,
	    .on_conflict = on_conflict,
	    .conflict_userdata = &st,
	    .reject_userdata = &st,
	    .mode = ingest_mode(&a),
	    .workers = (unsigned)a.workers,
	    .commit_interval_ms = a.commit_interval ? (uint32_t)a.commit_interval
						    : KEEL_COMMIT_EVERY_BATCH,
	};
	if (keel_ingest_new(s, &o, &st.ing)) {
		rc = cli_error(cmd, "%s", keel_store_errmsg(s));
		goto out;
	}
	st.progress = !st.quiet && isatty(STDERR_FILENO);
	st.start = cli_now();

	install_signals();
	for (int i = 0; rc == 0 && i < ninputs && !ingest_interrupted; i++) {
		const char *path = inputs[i];
		st.input = path;
		struct cli_follow *follow = NULL;
		char fdpath[32];
		int pipe_fd = -1;
		bool live = a.follow;
		bool blocking = false; /* not live, but a read may wait */
		struct stat sb;
		if (a.follow) {
			follow = cli_follow_start(path, &pipe_fd, &err);
			if (!follow) {
				rc = cli_error(cmd, "%s", err);
				free(err);
				break;
			}
			snprintf(fdpath, sizeof fdpath, "/dev/fd/%d", pipe_fd);
		} else if (strcmp(path, "-") == 0) {
			bool reg = fstat(STDIN_FILENO, &sb) == 0 && S_ISREG(sb.st_mode);
			if (o.mode == KEEL_INGEST_STREAMING)
				live = a.linger_set || !reg;
			else
				blocking = !reg;
		} else {
			blocking = stat(path, &sb) == 0 && !S_ISREG(sb.st_mode);
		}

		struct keel_reader *r = NULL;
		rc = keel_reader_open(follow ? fdpath : path, o.max_line, &r, &err);
		if (pipe_fd >= 0)
			close(pipe_fd); /* the reader has its own descriptor */
		if (rc) {
			rc = cli_error(cmd, "%s", err ? err : keel_strerror(rc));
			free(err);
			cli_follow_stop(follow);
			break;
		}
		bool reader_busy = false;
		rc = live || blocking ? ingest_live(&st, r, live, &reader_busy)
				      : ingest_file(&st, r);
		cli_follow_stop(follow);
		if (!reader_busy) {
			uint64_t done, total;
			keel_reader_progress(r, &done, &total);
			st.bytes_before += total ? total : done;
			keel_reader_close(r);
		}
	}
	/* Each input's end committed what it offered. Interrupted, that is
	 * all: a bulk load, whose rows would be half a tenant's, writes
	 * nothing, so that running the command again loads them whole. After
	 * a failure the flush commits nothing more; it lets workers stop and
	 * settle their counts. */
	bool interrupted = ingest_interrupted != 0;
	int end = rc == 0 && !interrupted ? keel_ingest_finish(st.ing)
					  : keel_ingest_flush(st.ing);
	if (end && rc == 0)
		rc = store_failed(&st, end);
	print_report(&st, cli_now() - st.start, interrupted);
	/* A conflicting duplicate is data that did not go in, as a
	 * rejection is (docs/cli.md, "Exit status"). */
	if (rc == 0 && (keel_ingest_report(st.ing)->rejected ||
			keel_ingest_report(st.ing)->conflicting))
		rc = CLI_REJECTED;

out:
	keel_ingest_free(st.ing);
	if (st.rejects && st.rejects != stdout && fclose(st.rejects) != 0 &&
	    rc != CLI_FATAL)
		rc =
		    cli_error(cmd, "cannot write \"%s\": %s", a.rejects, strerror(errno));
	else if (st.rejects == stdout)
		rc = cli_finish_stdout(cmd, rc);
	keel_store_close(s);
	keel_cartridge_free(cart);
	return rc;
}

/* The help's "(default 1M)": a new default must change the text too. */
_Static_assert(KEEL_DEFAULT_MAX_LINE == 1 << 20, "--max-line's default in the help");

const struct keel_cmd keel_cmd_ingest = {
    .name = "ingest",
    .summary = "Read NDJSON events into the store.",
    .usage =
	"ingest [FILE...|-] [--store URL] [--cartridge NAME|PATH] [--batch N]\n"
	"                 [--commit-interval MS] [--linger MS] [--rejects FILE]\n"
	"                 [--follow]\n"
	"                 [--max-line BYTES] [--quiet] [--verbose]\n"
	"                 [--replay | --workers N]\n"
	"\n"
	"options:\n"
	"  -s, --store URL          store (default: $KEEL_STORE, else sqlite:keel.db)\n"
	"  -c, --cartridge NAME     built-in cartridge name (" KEEL_BUILTIN_CARTRIDGE ") or path to a\n"
	"                           JSON or .so cartridge; without it each tenant's\n"
	"                           recorded cartridge (a new tenant needs one)\n"
	"  -b, --batch N            events per batch, each atomic (default " CLI_STR(KEEL_DEFAULT_BATCH) ")\n"
	"  -C, --commit-interval MS a commit holds the batches of at most MS ms\n"
	"                           (default " CLI_STR(KEEL_DEFAULT_COMMIT_INTERVAL_MS) "; 0: one commit a batch);\n"
	"                           live input is committed when it goes quiet\n"
	"  -l, --linger MS          live input: commit a batch once its first event\n"
	"                           has waited MS ms (default 0: as soon as the\n"
	"                           input is quiet)\n"
	"  -r, --rejects FILE       write each rejected event and each conflicting\n"
	"                           duplicate to FILE as one JSON line (- for\n"
	"                           standard output)\n"
	"  -f, --follow             keep reading FILE as it grows (stop with\n"
	"                           Ctrl-C or SIGTERM: the open batch is committed)\n"
	"  -m, --max-line BYTES     longest accepted line, K/M/G suffixes\n"
	"                           (default 1M)\n"
	"  -q, --quiet              no progress line and no report\n"
	"  -v, --verbose            report batches and SQL statements too\n"
	"  -R, --replay             tenants new to the store: build them in memory\n"
	"                           and write them in bulk, in one transaction\n"
	"  -w, --workers N          N writers, each with its own connection, each\n"
	"                           tenant always on the same one (default 1; more\n"
	"                           only on stores that take concurrent writers:\n"
	"                           mysql)\n"
	"  -h, --help               this help\n"
	"\n"
	"Inputs are NDJSON files, plain, .gz or .zst; - (or nothing) is standard\n"
	"input, whose compression is detected. A pipe or terminal on standard\n"
	"input and --follow are live input: events are committed as they arrive.\n"
	"SIGINT or SIGTERM stops the reading: what was read is committed (with\n"
	"--replay: nothing is written) and the report says \"interrupted\".\n"
	"A store records each tenant's cartridge with its first events; a tenant\n"
	"recorded with another cartridge than --cartridge, or with none when\n"
	"--cartridge is left out, stops the run at its first event.\n"
	"An event is (tenant, source, id): one whose identity is logged already\n"
	"is skipped as a duplicate, and reported on stderr with both positions\n"
	"when its envelope differs (a conflicting duplicate).\n"
	"Exit status: 0 all ingested (or interrupted); 1 fatal error; 2 usage\n"
	"(also: no cartridge for a tenant); 3 finished with rejected events or\n"
	"conflicting duplicates.",
    .run = ingest_run,
};
