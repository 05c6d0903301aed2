/*
 * cmd_token.c - keel token: makes bearer tokens for keel serve.
 *
 *   keel token new  (--tenant T ... | --all)   a fresh random token
 *   keel token hash (--tenant T ... | --all)   the line for a token read
 *                                              from stdin
 *
 * Both print the token-file line (docs/http.md); the server keeps only
 * that hash, so the token itself is shown once and nowhere stored.
 */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static bool tenant_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
			    s[i]))
			return false;
	return true;
}

static void print_line(const char *hash, bool all, char **tenants, size_t n,
		       bool forget)
{
	printf("%s ", hash);
	if (all)
		fputs("*", stdout);
	for (size_t i = 0; i < n; i++)
		printf("%s%s", i ? "," : "", tenants[i]);
	if (forget)
		fputs(" forget", stdout);
	putchar('\n');
}

static int token_run(const struct keel_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{"tenant", required_argument, NULL, 't'},
		{"all", no_argument, NULL, 'a'},
		{"forget", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char **tenants = NULL;
	size_t n = 0;
	bool all = false, forget = false;
	int c, rc = CLI_OK;
	optind = 0;
	while ((c = getopt_long(argc, argv, "t:afh", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (!tenant_ok(optarg)) {
				rc = cli_usage_error(cmd,
						     "--tenant \"%s\": not 1-64 bytes of "
						     "[A-Za-z0-9._-]",
						     optarg);
				goto out;
			}
			tenants = realloc(tenants, (n + 1) * sizeof *tenants);
			if (!tenants)
				abort();
			tenants[n++] = optarg;
			break;
		case 'a':
			all = true;
			break;
		case 'f':
			forget = true;
			break;
		case 'h':
			cli_help(cmd, stdout);
			goto out;
		default:
			rc = cli_unknown_option(cmd, argv, opts);
			goto out;
		}
	}
	if (optind >= argc) {
		rc = cli_usage_error(cmd, "missing action (new or hash)");
		goto out;
	}
	const char *action = argv[optind];
	if (optind + 1 != argc) {
		rc = cli_usage_error(cmd, "unexpected argument \"%s\"", argv[optind + 1]);
		goto out;
	}
	if (all == (n > 0)) {
		rc = cli_usage_error(cmd, "give --tenant T (one or more) or --all");
		goto out;
	}
	char token[KEEL_TOKEN_BUFSZ], hash[KEEL_TOKEN_BUFSZ];
	if (strcmp(action, "new") == 0) {
		if (keel_token_new(token, hash) != 0) {
			rc = cli_error(cmd, "no randomness available from the system");
			goto out;
		}
		printf("%s\n", token);
		print_line(hash, all, tenants, n, forget);
		memset(token, 0, sizeof token);
		fputs("keel token: the first line is the token (shown once; give it to the "
		      "client),\nthe second goes into the token file of keel serve --tokens\n",
		      stderr);
	} else if (strcmp(action, "hash") == 0) {
		char line[1024];
		if (!fgets(line, sizeof line, stdin)) {
			rc = cli_error(cmd, "no token on standard input");
			goto out;
		}
		size_t len = strcspn(line, "\r\n");
		if (len == 0) {
			rc = cli_error(cmd, "no token on standard input");
			goto out;
		}
		keel_token_hash(line, len, hash);
		memset(line, 0, sizeof line);
		print_line(hash, all, tenants, n, forget);
	} else {
		rc = cli_usage_error(cmd, "unknown action \"%s\" (new or hash)", action);
		goto out;
	}
	rc = cli_finish_stdout(cmd, CLI_OK);
out:
	free(tenants);
	return rc;
}

const struct keel_cmd keel_cmd_token = {
	.name = "token",
	.summary = "Make bearer tokens for keel serve.",
	.usage = "token new|hash (--tenant T [--tenant U ...] | --all) [--forget]\n"
		 "\n"
		 "actions:\n"
		 "  new    print a fresh random token, then its token-file line\n"
		 "  hash   print the token-file line of a token read from stdin\n"
		 "\n"
		 "options:\n"
		 "  -t, --tenant T   the token may read and write tenant T (repeatable)\n"
		 "  -a, --all        the token may read and write every tenant\n"
		 "  -f, --forget     a tenant token may also forget its tenants'\n"
		 "                   entities (DELETE; a --all token always may)\n"
		 "  -h, --help       this help\n"
		 "\n"
		 "Example:  keel token new --tenant acme | tail -n 1 >> tokens\n"
		 "The token file format is in docs/http.md.",
	.run = token_run,
};
