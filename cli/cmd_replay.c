/*
 * cmd_replay.c - keel replay: rebuild a tenant's entities, facts and
 * relations from its event log with the current cartridge, and report what
 * changed per predicate and relation (docs/replay.md).
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define REPLAY_REJECTS_SHOWN 20

struct replay_state {
	FILE *rejects;
	uint64_t seen;
};

static void replay_on_reject(void *ud, uint64_t position, const char *id,
			     const char *message, const char *input, size_t input_len)
{
	struct replay_state *st = ud;
	st->seen++;
	if (st->rejects) {
		cli_reject_line(st->rejects, position, id, message, input, input_len, NULL);
		return;
	}
	if (st->seen <= REPLAY_REJECTS_SHOWN)
		fprintf(stderr, "keel replay: %s\n", message);
}

static void replay_print(const char *tenant, const struct keel_replay_report *r,
			 bool dry_run, bool all)
{
	printf("%s tenant \"%s\": %llu events (unhandled %llu, rejected %llu)\n",
	       dry_run ? "dry run of a replay of" : "replayed", tenant,
	       (unsigned long long)r->events, (unsigned long long)r->unhandled,
	       (unsigned long long)r->rejected);
	printf("%-10s %-24s %10s %10s %10s %10s\n", "table", "name", "before", "after",
	       "added", "removed");
	size_t shown = 0;
	for (size_t i = 0; i < r->nchanges; i++) {
		const struct keel_replay_change *c = &r->changes[i];
		if (!all && !c->added && !c->removed)
			continue;
		shown++;
		printf("%-10s %-24s %10llu %10llu %10llu %10llu\n", c->table,
		       *c->name ? c->name : "-", (unsigned long long)c->before,
		       (unsigned long long)c->after, (unsigned long long)c->added,
		       (unsigned long long)c->removed);
	}
	if (!shown)
		printf("(no changes)\n");
	printf("%-10s %-24s %10llu %10llu %10llu %10llu\n", "total", "",
	       (unsigned long long)r->rows_before, (unsigned long long)r->rows_after,
	       (unsigned long long)r->added, (unsigned long long)r->removed);
	printf("%s\n", r->method);
	printf("log read %.2f s, rows read beside the preparing %.2f s, compare %.2f s, "
	       "write %.2f s\n",
	       r->read_seconds, r->build_seconds - r->read_seconds, r->compare_seconds,
	       r->write_seconds);
}

static int replay_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"tenant", required_argument, NULL, 't'},
	    {"store", required_argument, NULL, 's'},
	    {"cartridge", required_argument, NULL, 'c'},
	    {"dry-run", no_argument, NULL, 'n'},
	    {"change-cartridge", no_argument, NULL, 'C'},
	    {"rejects", required_argument, NULL, 'r'},
	    {"all", no_argument, NULL, 'a'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *url = NULL, *tenant = NULL, *cartridge = NULL, *rejects = NULL;
	bool dry_run = false, all = false, change = false;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "t:s:c:nCr:ah", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			tenant = optarg;
			break;
		case 's':
			url = optarg;
			break;
		case 'c':
			if (!cli_option_once(cmd, &cartridge, optarg, "--cartridge"))
				return CLI_USAGE;
			break;
		case 'n':
			dry_run = true;
			break;
		case 'C':
			change = true;
			break;
		case 'r':
			rejects = optarg;
			break;
		case 'a':
			all = true;
			break;
		case 'h':
			cli_help(cmd, stdout);
			return CLI_OK;
		default:
			return cli_unknown_option(cmd, argv, opts);
		}
	}
	if (optind != argc)
		return cli_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);
	if (!tenant)
		return cli_usage_error(cmd, "--tenant is required");
	if (change && !cartridge)
		return cli_usage_error(cmd, "--change-cartridge needs --cartridge");

	/* Without --cartridge the tenant's recorded one (keel_replay's
	 * choice). */
	struct keel_cartridge *cart = NULL;
	int rc = cli_load_cartridge(cmd, cartridge, &cart);
	if (rc)
		return rc;
	struct keel_store *s = cli_open_existing_store(cmd, url);
	if (!s) {
		keel_cartridge_free(cart);
		return CLI_FATAL;
	}
	struct replay_state st = {0};
	if (rejects) {
		st.rejects = fopen(rejects, "w");
		if (!st.rejects) {
			rc = cli_error(cmd, "cannot create \"%s\": %s", rejects,
				       strerror(errno));
			goto out;
		}
	}
	struct keel_replay_options o = {
	    .size = sizeof o,
	    .cartridge = cart,
	    .dry_run = dry_run,
	    .on_reject = replay_on_reject,
	    .reject_userdata = &st,
	    .change_cartridge = change,
	};
	struct keel_replay_report *rep = NULL;
	rc = keel_replay(s, tenant, &o, &rep);
	if (rc) {
		/* no cartridge for the tenant: a matter of the flags */
		int code = rc == KEEL_ECARTRIDGE ? CLI_USAGE : CLI_FATAL;
		cli_error(cmd, "%s", keel_store_errmsg(s));
		rc = code;
		goto out;
	}
	if (!st.rejects && st.seen > REPLAY_REJECTS_SHOWN)
		fprintf(
		    stderr,
		    "keel replay: ... and %llu more rejected events (use --rejects FILE "
		    "to keep them all)\n",
		    (unsigned long long)(st.seen - REPLAY_REJECTS_SHOWN));
	replay_print(tenant, rep, dry_run, all);
	rc = rep->rejected ? CLI_REJECTED : CLI_OK;
	keel_replay_report_free(rep);
	rc = cli_finish_stdout(cmd, rc);
out:
	if (st.rejects && fclose(st.rejects) != 0 && rc == CLI_OK)
		rc = cli_error(cmd, "cannot write \"%s\": %s", rejects, strerror(errno));
	keel_store_close(s);
	keel_cartridge_free(cart);
	return rc;
}

const struct keel_cmd keel_cmd_replay = {
    .name = "replay",
    .summary = "Rebuild a tenant's graph from its event log.",
    .usage =
	"replay --tenant T [--dry-run] [--store URL] [--rejects FILE] [--all]\n"
	"                 [--cartridge NAME|PATH [--change-cartridge]]\n"
	"\n"
	"options:\n"
	"  -t, --tenant T           the tenant to rebuild (required)\n"
	"  -n, --dry-run            report what would change, write nothing\n"
	"  -c, --cartridge NAME     built-in cartridge name (" KEEL_BUILTIN_CARTRIDGE ") or path to a\n"
	"                           JSON or .so cartridge (default: the tenant's\n"
	"                           recorded one)\n"
	"  -C, --change-cartridge   rebuild with --cartridge although the tenant is\n"
	"                           recorded with another, and record it\n"
	"  -s, --store URL          store (default: $KEEL_STORE, else sqlite:keel.db)\n"
	"  -r, --rejects FILE       write each logged event the cartridge now\n"
	"                           rejects to FILE as one JSON line\n"
	"  -a, --all                list unchanged predicates and relations too\n"
	"  -h, --help               this help\n"
	"\n"
	"Runs the tenant's logged events through the cartridge in arrival order,\n"
	"builds the tenant in memory and, in one transaction, replaces the\n"
	"entities, and each predicate's facts and relation's relations, that came\n"
	"out different; the rest and the log are kept as they are. Prints the\n"
	"rows before and after, added and removed, per predicate and relation.\n"
	"A cartridge other than the tenant's recorded one needs --change-cartridge\n"
	"(or --dry-run, which compares without recording anything).\n"
	"Exit status: 0 replayed; 1 fatal error (nothing changed); 2 usage (also:\n"
	"no cartridge for the tenant); 3 replayed, but the cartridge rejected some\n"
	"logged events.",
    .run = replay_run,
};
