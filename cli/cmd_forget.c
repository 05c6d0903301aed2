/*
 * cmd_forget.c - keel forget: erase a subject from a tenant, leaving a
 * tombstone (docs/semantics.md, "Forgetting"; docs/cli.md).
 */
#include "cli.h"

#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Who forgets: the user the command runs as (its effective uid), which the
 * tombstone records as "user:NAME". */
static void forget_by(char *out, size_t size)
{
	const struct passwd *pw = getpwuid(geteuid());
	if (pw && pw->pw_name && *pw->pw_name)
		snprintf(out, size, "user:%s", pw->pw_name);
	else
		snprintf(out, size, "user:uid %u", (unsigned)geteuid());
}

static int forget_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"store", required_argument, NULL, 's'},
	    {"cartridge", required_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *url = NULL, *cartridge = NULL;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "s:c:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			url = optarg;
			break;
		case 'c':
			if (!cli_option_once(cmd, &cartridge, optarg, "--cartridge"))
				return CLI_USAGE;
			break;
		case 'h':
			cli_help(cmd, stdout);
			return CLI_OK;
		default:
			return cli_unknown_option(cmd, argv, opts);
		}
	}
	if (argc - optind != 2)
		return cli_usage_error(cmd, "expected a tenant and a subject");
	const char *tenant = argv[optind], *subject = argv[optind + 1];

	struct keel_cartridge *cart = NULL;
	int rc = cli_load_cartridge(cmd, cartridge, &cart);
	if (rc)
		return rc;
	struct keel_store *s = cli_open_existing_store(cmd, url);
	if (!s) {
		keel_cartridge_free(cart);
		return CLI_FATAL;
	}
	char by[300];
	forget_by(by, sizeof by);
	struct keel_forget_options o = {.size = sizeof o, .cartridge = cart, .by = by};
	struct keel_forget_report rep;
	rc = keel_forget(s, tenant, subject, &o, &rep);
	if (rc) {
		/* no cartridge, or not the tenant's: a matter of the flags */
		int code = rc == KEEL_ECARTRIDGE ? CLI_USAGE : CLI_FATAL;
		cli_error(cmd, "%s", keel_store_errmsg(s));
		rc = code;
	} else {
		char tb[KEEL_TIME_BUFSZ];
		keel_time_format(rep.forgotten_at, tb);
		printf("forgot \"%s\" in tenant \"%s\": %llu events redacted, %llu rows "
		       "removed\n"
		       "tombstone: sha256 %s, at %s by %s\n",
		       subject, tenant, (unsigned long long)rep.events,
		       (unsigned long long)rep.rows, rep.subject_sha256, tb, by);
		rc = cli_finish_stdout(cmd, CLI_OK);
	}
	keel_store_close(s);
	keel_cartridge_free(cart);
	return rc;
}

const struct keel_cmd keel_cmd_forget = {
    .name = "forget",
    .summary = "Erase a subject from a tenant, leaving a tombstone.",
    .usage =
	"forget TENANT SUBJECT [--cartridge NAME|PATH] [--store URL]\n"
	"\n"
	"options:\n"
	"  -c, --cartridge NAME     built-in cartridge name or path to a JSON or\n"
	"                           .so cartridge: the tenant's (default: the\n"
	"                           one the store recorded for the tenant)\n"
	"  -s, --store URL          store (default: $KEEL_STORE, else sqlite:keel.db)\n"
	"  -h, --help               this help\n"
	"\n"
	"In one transaction: removes from every logged event that mentions\n"
	"SUBJECT the fields that only it needs (the fields the event's other\n"
	"operations read are kept), deletes the rows naming SUBJECT (the\n"
	"subject's rows and the relations naming it; the other rows stay, as\n"
	"keel replay would give them), and records a tombstone: the subject's SHA-256, when, and the\n"
	"user who ran the command. show, history and why on the subject then\n"
	"say it was forgotten. On SQLite the old bytes are overwritten and the\n"
	"WAL emptied before the command returns (docs/semantics.md).\n"
	"Exit status: 0 forgotten; 1 nothing names SUBJECT, it was forgotten\n"
	"before, or another error (nothing changed); 2 usage, or a cartridge\n"
	"that is not the tenant's recorded one (or none given and none recorded).",
    .run = forget_run,
};
