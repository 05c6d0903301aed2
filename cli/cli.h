/*
 * cli.h - what the subcommands of the keel tool share: the command table
 * entry every cli/cmd_*.c exports, and small helpers for options, errors
 * and output. The tool uses only the public header keel.h.
 *
 * Exit codes (docs/cli.md): 0 ok, 1 fatal error, 2 usage, 3 finished with
 * rejected events.
 */
#ifndef KEEL_CLI_H
#define KEEL_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "keel.h"

enum {
	CLI_OK = 0,
	CLI_FATAL = 1,
	CLI_USAGE = 2,
	CLI_REJECTED = 3,
	CLI_GO_ON = -1, /* not an exit status: the command goes on */
};

/* A macro's value as a string literal: help texts show the library's
 * defaults (keel.h's KEEL_DEFAULT_*) rather than copies of them. */
#define CLI_STR(x) CLI_STR_(x)
#define CLI_STR_(x) #x

/* The help lines of options that many commands take, worded once (the
 * commands whose option column is wider write their own). */
#define CLI_HELP_KNOWN_AT                                                              \
	"  -k, --known-at TIME\n"                                                      \
	"                     as the store knew it at TIME: only what it had\n"        \
	"                     recorded by then (default: everything)\n"
#define CLI_HELP_JSON                                                                    \
	"  -j, --json         print the JSON document even on a terminal\n"              \
	"      --no-pager     on a terminal, print the text without a pager\n"
#define CLI_HELP_STORE                                                                 \
	"  -s, --store URL    store (default: $KEEL_STORE, else sqlite:keel.db)\n"

struct keel_cmd {
	const char *name;
	const char *summary; /* one line, for keel --help */
	/* Synopsis and options, as printed by --help (after "usage: keel "). */
	const char *usage;
	/* argv[0] is "keel NAME"; returns the exit code. */
	int (*run)(const struct keel_cmd *cmd, int argc, char **argv);
};

/* The table (cli/main.c). */
extern const struct keel_cmd *const keel_cmds[];

/* Prints "usage: keel <usage>", the summary and the docs footer to f. */
void cli_help(const struct keel_cmd *cmd, FILE *f);
/* Names the installed man page and documentation directory (cli/docs.c). */
void cli_docs_footer(FILE *f);
/* Usage error: "keel NAME: <message>" and a hint on stderr; returns 2. */
/* An option that may be given once (--cartridge): sets *slot to value and
 * returns true, or says it was given twice (usage) and returns false. */
bool cli_option_once(const struct keel_cmd *cmd, const char **slot, const char *value,
		     const char *name);
int cli_usage_error(const struct keel_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* For getopt's '?' (getopt has printed the message); returns 2. */
int cli_bad_option(const struct keel_cmd *cmd);
/* The same, after the nearest option when the one refused is a long
 * option the command does not know (opts is getopt's table). */
struct option;
int cli_unknown_option(const struct keel_cmd *cmd, char **argv,
		       const struct option *opts);

/* The one of names[0..n) nearest to a mistyped word, or NULL when none is
 * near enough to suggest (cli/suggest.c). */
const char *cli_nearest(const char *word, const char *const *names, size_t n);

/* Text for a person on a terminal (cli/pager.c). The terminal's columns
 * and rows (stdout's, else $COLUMNS and $LINES; else 80 columns and rows
 * unknown: 0). */
void cli_term_size(size_t *cols, size_t *rows);
/* Prints text on stdout, through the pager when it has more lines than
 * the screen rows (docs/cli.md, "On a terminal"), unless cli_no_pager. */
void cli_show_text(const char *text, size_t rows);
/* --no-pager, given before the command or to it. */
extern bool cli_no_pager;
/* Fatal error: "keel NAME: <message>" on stderr; returns 1. */
int cli_error(const struct keel_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* CLI_OK unless url is "" (an empty --store): then prints why and
 * returns CLI_FATAL. NULL (no --store) is fine. */
int cli_check_store_url(const struct keel_cmd *cmd, const char *url);
/* Opens the store (url NULL: keel_store_default_url(); "" refused);
 * prints the reason and returns NULL on failure. */
struct keel_store *cli_open_store(const struct keel_cmd *cmd, const char *url);
/* The same for commands that only read (or rewrite what is there): a
 * store that does not exist yet (a SQLite file) is an error, not created
 * (keel_store_open_existing). */
struct keel_store *cli_open_existing_store(const struct keel_cmd *cmd, const char *url);

/* The cartridge a --cartridge option names (keel_cartridge_load): CLI_OK
 * with *out set (NULL when name is NULL: none was given), or the reason
 * printed and CLI_FATAL. */
int cli_load_cartridge(const struct keel_cmd *cmd, const char *name,
		       struct keel_cartridge **out);

/* Option values. Each returns false on a malformed value. */
bool cli_parse_u64(const char *s, uint64_t *out);
/* A byte count with an optional K, M or G suffix (powers of 1024). */
bool cli_parse_size(const char *s, uint64_t *out);
/* A fraction in [0, 1]. */
bool cli_parse_fraction(const char *s, double *out);

/* The options of a command that takes only --store URL and --help: sets
 * *url and returns CLI_GO_ON (the operands start at optind), or the exit
 * status once help is printed or an option is refused. */
int cli_store_options(const struct keel_cmd *cmd, int argc, char **argv, const char **url);

/* A time option's value (--at, --known-at): RFC 3339 or "now". CLI_OK, or
 * the usage error printed and CLI_USAGE. */
int cli_time_option(const struct keel_cmd *cmd, const char *option, const char *arg,
		    int64_t *out);

/* The read commands (show, history, why, stats) share one shape: options
 * --at (when the command takes a time; default now), --known-at (the graph
 * as the store had recorded it then; default everything), --changes (when
 * the command takes it), --json, --store and --help, then between
 * min_args and max_args positional arguments, then one query that returns
 * a JSON document, printed as cli_print_doc does. */
struct cli_read {
	enum keel_query_kind kind;
	enum keel_query_kind changes_kind; /* the document with --changes */
	int min_args;
	int max_args;
	bool takes_at;
	bool takes_changes;
	/* The usage error when the count is wrong; NULL: the command takes
	 * no more than max_args, and the first extra one is named. */
	const char *arity;
	int (*query)(struct keel_store *s, char **args, int nargs,
		     const struct keel_read_options *o, char **json);
	/* The finding reads (tenants, entities, search) instead of query:
	 * with takes_page, --limit N and --after CURSOR; with takes_filters,
	 * --kind K and --prefix P. An option or cursor the library refuses
	 * (KEEL_EINVAL) is a usage error. */
	int (*find)(struct keel_store *s, char **args, int nargs,
		    const struct keel_find_options *f, const struct keel_read_options *o,
		    char **json);
	bool takes_page;
	bool takes_filters;
	/* keel stats: --tenant T, handed to query as its one argument (the
	 * command takes no positional ones); without it, none. */
	bool takes_tenant;
	/* keel history: --from T, --to T and --limit N (rows of each
	 * timeline); a range the library refuses is a usage error. */
	bool takes_range;
};
int cli_run_read(const struct keel_cmd *cmd, const struct cli_read *r, int argc,
		 char **argv);

/* Prints a query's document on stdout and frees it: the JSON on one line
 * when as_json is set or stdout is not a terminal (a pipe, a file), else
 * the aligned text a person reads (keel_query_text_fit, fitted to the
 * terminal's width and paged when long: cli_show_text). */
int cli_print_doc(const struct keel_cmd *cmd, enum keel_query_kind kind, char *json,
		  bool as_json);
/* Flushes stdout; on a write error reports it and returns 1. */
int cli_finish_stdout(const struct keel_cmd *cmd, int rc);
/* The output a command's --output names: NULL or "-" is standard output.
 * Returns NULL, with the error printed, when the file cannot be created. */
FILE *cli_output_open(const struct keel_cmd *cmd, const char *path);
/* Closes (or, for standard output, flushes) it; a write error becomes the
 * command's error unless rc already is one. Returns the final exit code. */
int cli_output_close(const struct keel_cmd *cmd, FILE *out, const char *path, int rc);

/* Writes one line of a --rejects file (docs/cli.md): position, id (null
 * when the event had none), error, input and, when file is not NULL, the
 * input file's name. */
void cli_reject_line(FILE *f, uint64_t position, const char *id, const char *message,
		     const char *input, size_t input_len, const char *file);
/* A conflicting duplicate's line in the rejects file: as a rejection's,
 * with the event's source; input is its envelope. */
void cli_conflict_line(FILE *f, uint64_t position, const char *source, const char *id,
		       const char *message, const char *input, size_t input_len,
		       const char *file);

/* Seconds on a monotonic clock. */
double cli_now(void);

#endif
