/*
 * common.c - helpers shared by the subcommands (see cli.h): help and error
 * messages, store opening, option value parsing, JSON output.
 */
#include "cli.h"

#include <getopt.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void cli_help(const struct keel_cmd *cmd, FILE *f)
{
	/* The synopsis, the summary, then the rest of the usage text (which
	 * starts with its blank line). */
	const char *rest = strstr(cmd->usage, "\n\n");
	int n = rest ? (int)(rest - cmd->usage) : (int)strlen(cmd->usage);
	fprintf(f, "usage: keel %.*s\n\n%s%s\n", n, cmd->usage, cmd->summary,
		rest ? rest : "");
	cli_docs_footer(f);
}

static void cli_vmsg(const struct keel_cmd *cmd, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static void cli_vmsg(const struct keel_cmd *cmd, const char *fmt, va_list ap)
{
	fprintf(stderr, "keel %s: ", cmd->name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int cli_usage_error(const struct keel_cmd *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cli_vmsg(cmd, fmt, ap);
	va_end(ap);
	return cli_bad_option(cmd);
}

int cli_unknown_option(const struct keel_cmd *cmd, char **argv, const struct option *opts)
{
	/* getopt has said what was wrong. A long option it does not know
	 * (optopt 0, and no option begins with the name, which would make it
	 * ambiguous rather than unknown) gets the nearest one it knows. */
	const char *arg = optind > 0 ? argv[optind - 1] : NULL;
	if (optopt == 0 && arg && strncmp(arg, "--", 2) == 0 && arg[2]) {
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
		const char *names[64];
		size_t n = 0;
		bool begins = false;
		for (; opts[n].name && n < 64; n++) {
			names[n] = opts[n].name;
			begins |= strncmp(opts[n].name, name, strlen(name)) == 0;
		}
		const char *near = begins ? NULL : cli_nearest(name, names, n);
		if (near)
			fprintf(stderr, "keel %s: did you mean \"--%s\"?\n", cmd->name,
				near);
	}
	return cli_bad_option(cmd);
}

int cli_bad_option(const struct keel_cmd *cmd)
{
	/* Only the synopsis (up to the first blank line) and a hint. */
	const char *end = strstr(cmd->usage, "\n\n");
	int n = end ? (int)(end - cmd->usage) : (int)strlen(cmd->usage);
	fprintf(stderr, "usage: keel %.*s\nTry 'keel %s --help' for more information.\n",
		n, cmd->usage, cmd->name);
	return CLI_USAGE;
}

int cli_error(const struct keel_cmd *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cli_vmsg(cmd, fmt, ap);
	va_end(ap);
	return CLI_FATAL;
}

/* Prints why url could not be opened. */
static struct keel_store *cli_open_failed(const struct keel_cmd *cmd, int rc, char *err)
{
	/* The store said it is not there; the hint is the tool's. */
	cli_error(cmd, "%s%s", err ? err : keel_strerror(rc),
		  rc == KEEL_ENOTFOUND ? " (nothing to read; ingest or load creates it)" : "");
	free(err);
	return NULL;
}

int cli_check_store_url(const struct keel_cmd *cmd, const char *url)
{
	/* The library reads "" as the default store; on the command line it
	 * is a script's unset variable, which must not become ./keel.db. */
	if (url && !*url)
		return cli_error(cmd, "store \"\": empty URL (leave --store out for "
				      "$KEEL_STORE, else sqlite:keel.db)");
	return CLI_OK;
}

struct keel_store *cli_open_existing_store(const struct keel_cmd *cmd, const char *url)
{
	if (cli_check_store_url(cmd, url) != CLI_OK)
		return NULL;
	struct keel_store *s = NULL;
	char *err = NULL;
	int rc = keel_store_open_existing(url, &s, &err);
	return rc ? cli_open_failed(cmd, rc, err) : s;
}

int cli_load_cartridge(const struct keel_cmd *cmd, const char *name,
		       struct keel_cartridge **out)
{
	*out = NULL;
	if (!name)
		return CLI_OK;
	char *err = NULL;
	int rc = keel_cartridge_load(name, out, &err);
	if (rc) {
		rc = cli_error(cmd, "%s", err ? err : keel_strerror(rc));
		free(err);
	}
	return rc;
}

struct keel_store *cli_open_store(const struct keel_cmd *cmd, const char *url)
{
	if (cli_check_store_url(cmd, url) != CLI_OK)
		return NULL;
	struct keel_store *s = NULL;
	char *err = NULL;
	int rc = keel_store_open(url, &s, &err);
	return rc ? cli_open_failed(cmd, rc, err) : s;
}

bool cli_parse_u64(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return false; /* no sign, no space, not empty */
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

bool cli_parse_size(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return false;
	unsigned shift = 0;
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	default:
		return false;
	}
	if (shift && end[1] != '\0')
		return false;
	if (v > (UINT64_MAX >> shift))
		return false;
	*out = (uint64_t)v << shift;
	return true;
}

bool cli_parse_fraction(const char *s, double *out)
{
	if (!s || !*s)
		return false;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || isnan(v) || v < 0.0 || v > 1.0)
		return false;
	*out = v;
	return true;
}

int cli_finish_stdout(const struct keel_cmd *cmd, int rc)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error(cmd, "cannot write to standard output: %s", strerror(errno));
		return CLI_FATAL;
	}
	return rc;
}

FILE *cli_output_open(const struct keel_cmd *cmd, const char *path)
{
	if (!path || strcmp(path, "-") == 0)
		return stdout;
	FILE *out = fopen(path, "w");
	if (!out)
		cli_error(cmd, "cannot create \"%s\": %s", path, strerror(errno));
	return out;
}

int cli_output_close(const struct keel_cmd *cmd, FILE *out, const char *path, int rc)
{
	if (out == stdout)
		return cli_finish_stdout(cmd, rc);
	if (fclose(out) != 0 && rc == CLI_OK)
		rc = cli_error(cmd, "cannot write \"%s\": %s", path, strerror(errno));
	return rc;
}

bool cli_option_once(const struct keel_cmd *cmd, const char **slot, const char *value,
		     const char *name)
{
	if (*slot) {
		cli_usage_error(cmd, "%s given twice", name);
		return false;
	}
	*slot = value;
	return true;
}

int cli_store_options(const struct keel_cmd *cmd, int argc, char **argv, const char **url)
{
	static const struct option opts[] = {
	    {"store", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			*url = optarg;
			break;
		case 'h':
			cli_help(cmd, stdout);
			return CLI_OK;
		default:
			return cli_unknown_option(cmd, argv, opts);
		}
	}
	return CLI_GO_ON;
}

int cli_time_option(const struct keel_cmd *cmd, const char *option, const char *arg,
		    int64_t *out)
{
	const char *why = NULL;
	if (keel_time_parse_at(arg, strlen(arg), out, &why))
		return cli_usage_error(cmd, "%s \"%s\": %s", option, arg, why);
	return CLI_OK;
}

int cli_run_read(const struct keel_cmd *cmd, const struct cli_read *r, int argc,
		 char **argv)
{
	/* The options a read command takes, those it does not left out. */
	enum { OPT_FROM = 256, OPT_TO, OPT_NO_PAGER };
	static const struct option all[] = {
	    {"at", required_argument, NULL, 'a'},
	    {"from", required_argument, NULL, OPT_FROM},
	    {"to", required_argument, NULL, OPT_TO},
	    {"known-at", required_argument, NULL, 'k'},
	    {"changes", no_argument, NULL, 'c'},
	    {"kind", required_argument, NULL, 'K'},
	    {"prefix", required_argument, NULL, 'p'},
	    {"limit", required_argument, NULL, 'l'},
	    {"after", required_argument, NULL, 'A'},
	    {"tenant", required_argument, NULL, 't'},
	    {"json", no_argument, NULL, 'j'},
	    {"no-pager", no_argument, NULL, OPT_NO_PAGER},
	    {"store", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	};
	struct option opts[sizeof all / sizeof all[0] + 1];
	char shorts[48];
	size_t n_opts = 0, n_shorts = 0;
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
		int v = all[i].val;
		if ((v == 'a' && !r->takes_at) || (v == 'c' && !r->takes_changes) ||
		    (v == 'l' && !r->takes_page && !r->takes_range) ||
		    (v == 'A' && !r->takes_page) ||
		    ((v == OPT_FROM || v == OPT_TO) && !r->takes_range) ||
		    ((v == 'K' || v == 'p') && !r->takes_filters) ||
		    (v == 't' && !r->takes_tenant))
			continue;
		opts[n_opts++] = all[i];
		if (v >= 256)
			continue; /* long only */
		shorts[n_shorts++] = (char)all[i].val;
		if (all[i].has_arg == required_argument)
			shorts[n_shorts++] = ':';
	}
	opts[n_opts] = (struct option){NULL, 0, NULL, 0};
	shorts[n_shorts] = 0;

	const char *url = NULL;
	char *tenant = NULL;
	struct keel_read_options o = {.size = sizeof o};
	struct keel_find_options f = {.size = sizeof f};
	bool as_json = false;
	int c, rc;
	optind = 0;
	while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			as_json = true;
			break;
		case OPT_NO_PAGER:
			cli_no_pager = true;
			break;
		case OPT_FROM:
			if ((rc = cli_time_option(cmd, "--from", optarg, &o.from)))
				return rc;
			o.from_set = true;
			break;
		case OPT_TO:
			if ((rc = cli_time_option(cmd, "--to", optarg, &o.to)))
				return rc;
			o.to_set = true;
			break;
		case 'a':
			if ((rc = cli_time_option(cmd, "--at", optarg, &o.at)))
				return rc;
			o.at_set = true;
			break;
		case 'k':
			if ((rc = cli_time_option(cmd, "--known-at", optarg, &o.known_at)))
				return rc;
			o.known_at_set = true;
			break;
		case 'c':
			o.changes = true;
			break;
		case 'K':
			f.kind = optarg;
			break;
		case 'p':
			f.prefix = optarg;
			break;
		case 'l': {
			uint64_t v;
			if (r->takes_range) { /* history: rows of each timeline */
				if (!cli_parse_u64(optarg, &v) || v == 0 || v > SIZE_MAX)
					return cli_usage_error(
					    cmd,
					    "--limit \"%s\": not a number "
					    "from 1",
					    optarg);
				o.limit = (size_t)v;
				break;
			}
			if (!cli_parse_u64(optarg, &v) || v == 0 || v > KEEL_MAX_PAGE)
				return cli_usage_error(cmd,
						       "--limit \"%s\": not a number from 1 "
						       "to %d",
						       optarg, KEEL_MAX_PAGE);
			f.limit = (size_t)v;
			break;
		}
		case 'A':
			f.cursor = optarg;
			break;
		case 't':
			tenant = optarg;
			break;
		case 's':
			url = optarg;
			break;
		case 'h':
			cli_help(cmd, stdout);
			return CLI_OK;
		default:
			return cli_unknown_option(cmd, argv, opts);
		}
	}
	int n = argc - optind;
	if (n > r->max_args && !r->arity)
		return cli_usage_error(cmd, "unexpected argument \"%s\"",
				       argv[optind + r->max_args]);
	if (n < r->min_args || n > r->max_args)
		return cli_usage_error(cmd, "%s", r->arity);
	/* --tenant T is the query's one argument (the command takes no other). */
	char **args = tenant ? &tenant : argv + optind;
	if (tenant)
		n = 1;

	struct keel_store *s = cli_open_existing_store(cmd, url);
	if (!s)
		return CLI_FATAL;
	char *json = NULL;
	rc = r->find ? r->find(s, args, n, &f, &o, &json) : r->query(s, args, n, &o, &json);
	if (rc == KEEL_EINVAL && (r->find || r->takes_range))
		rc = cli_usage_error(cmd, "%s", keel_store_errmsg(s));
	else if (rc)
		rc = cli_error(cmd, "%s", keel_store_errmsg(s));
	else
		rc = cli_print_doc(cmd, o.changes ? r->changes_kind : r->kind, json, as_json);
	keel_store_close(s);
	return rc;
}

int cli_print_doc(const struct keel_cmd *cmd, enum keel_query_kind kind, char *json,
		  bool as_json)
{
	char *text = NULL;
	size_t cols = 0, rows = 0;
	if (!as_json && isatty(STDOUT_FILENO))
		cli_term_size(&cols, &rows);
	if (cols && keel_query_text_fit(kind, json, strlen(json), cols, &text) == 0) {
		cli_show_text(text, rows);
	} else {
		fputs(json, stdout);
		fputc('\n', stdout);
	}
	free(text);
	free(json);
	return cli_finish_stdout(cmd, CLI_OK);
}

/* What every line of --rejects ends with: the error, the input as read,
 * and its file when there are several. */
static void reject_line_end(FILE *f, const char *message, const char *input,
			    size_t input_len, const char *file)
{
	fputs(",\"error\":", f);
	keel_json_write_string(f, message, strlen(message));
	fputs(",\"input\":", f);
	keel_json_write_string(f, input, input_len);
	if (file) {
		fputs(",\"file\":", f);
		keel_json_write_string(f, file, strlen(file));
	}
	fputs("}\n", f);
}

void cli_reject_line(FILE *f, uint64_t position, const char *id, const char *message,
		     const char *input, size_t input_len, const char *file)
{
	fprintf(f, "{\"position\":%llu,\"id\":", (unsigned long long)position);
	if (id)
		keel_json_write_string(f, id, strlen(id));
	else
		fputs("null", f);
	reject_line_end(f, message, input, input_len, file);
}

void cli_conflict_line(FILE *f, uint64_t position, const char *source, const char *id,
		       const char *message, const char *input, size_t input_len,
		       const char *file)
{
	fprintf(f, "{\"position\":%llu,\"source\":", (unsigned long long)position);
	keel_json_write_string(f, source, strlen(source));
	fputs(",\"id\":", f);
	keel_json_write_string(f, id, strlen(id));
	reject_line_end(f, message, input, input_len, file);
}

double cli_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
