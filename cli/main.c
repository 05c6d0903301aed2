/*
 * main.c - the keel tool: finds the subcommand in the command table and
 * runs it (tmux's cmd_table, git's commands[]). Each subcommand lives in
 * its own cli/cmd_*.c and exports one const struct keel_cmd; adding a
 * command is one line here.
 */
#include "cli.h"

#include <string.h>

extern const struct keel_cmd keel_cmd_ingest;
extern const struct keel_cmd keel_cmd_generate;
extern const struct keel_cmd keel_cmd_dump;
extern const struct keel_cmd keel_cmd_load;
extern const struct keel_cmd keel_cmd_show;
extern const struct keel_cmd keel_cmd_history;
extern const struct keel_cmd keel_cmd_why;
extern const struct keel_cmd keel_cmd_stats;
extern const struct keel_cmd keel_cmd_version;
extern const struct keel_cmd keel_cmd_serve;
extern const struct keel_cmd keel_cmd_token;
extern const struct keel_cmd keel_cmd_replay;
extern const struct keel_cmd keel_cmd_export;
extern const struct keel_cmd keel_cmd_migrate;
extern const struct keel_cmd keel_cmd_tenants;
extern const struct keel_cmd keel_cmd_entities;
extern const struct keel_cmd keel_cmd_search;
extern const struct keel_cmd keel_cmd_forget;
extern const struct keel_cmd keel_cmd_stream;
extern const struct keel_cmd keel_cmd_publish;
extern const struct keel_cmd keel_cmd_consume;

const struct keel_cmd *const keel_cmds[] = {
    &keel_cmd_ingest,  &keel_cmd_generate, &keel_cmd_dump,  &keel_cmd_load,
    &keel_cmd_show,    &keel_cmd_history,  &keel_cmd_why,   &keel_cmd_stats,
    &keel_cmd_version, &keel_cmd_serve,	   &keel_cmd_token, &keel_cmd_replay,
    &keel_cmd_export,  &keel_cmd_migrate, &keel_cmd_forget, &keel_cmd_tenants,
    &keel_cmd_entities, &keel_cmd_search, &keel_cmd_stream, &keel_cmd_publish, &keel_cmd_consume, NULL,
};

static const struct keel_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; keel_cmds[i]; i++)
		if (strcmp(keel_cmds[i]->name, name) == 0)
			return keel_cmds[i];
	return NULL;
}

/* "unknown command", and the nearest one when a command is near. */
static int unknown_command(const char *name)
{
	const char *names[sizeof keel_cmds / sizeof keel_cmds[0]];
	size_t n = 0;
	for (; keel_cmds[n]; n++)
		names[n] = keel_cmds[n]->name;
	const char *near = cli_nearest(name, names, n);
	if (near)
		fprintf(stderr, "keel: unknown command \"%s\" (did you mean \"%s\"?)\n",
			name, near);
	else
		fprintf(stderr, "keel: unknown command \"%s\" (see 'keel --help')\n",
			name);
	return CLI_USAGE;
}

static void main_help(FILE *f)
{
	fputs("usage: keel [-h|--help] [-V|--version] [--no-pager] COMMAND [ARGS]\n\n"
	      "Keel turns streams of domain events into a temporal graph.\n\n"
	      "commands:\n",
	      f);
	for (size_t i = 0; keel_cmds[i]; i++)
		fprintf(f, "  %-10s %s\n", keel_cmds[i]->name, keel_cmds[i]->summary);
	fputs("\nStore-using commands take --store URL (memory:, sqlite:PATH, "
	      "mysql://...);\nthe default is $KEEL_STORE, else sqlite:keel.db.\n"
	      "On a terminal the reads print text that fits its width, through\n"
	      "$KEEL_PAGER, else $PAGER, else 'less -FRX' when it is longer than the\n"
	      "screen (--no-pager: never); piped, or with -j/--json, one line of JSON.\n"
	      "'keel help COMMAND' (or 'keel COMMAND --help') describes a command.\n"
	      "Exit status: 0 ok, 1 fatal error, 2 usage, 3 finished with rejected "
	      "events.\n",
	      f);
	cli_docs_footer(f);
}

int main(int argc, char **argv)
{
	/* keel --no-pager COMMAND, as git --no-pager COMMAND */
	if (argc >= 2 && strcmp(argv[1], "--no-pager") == 0) {
		cli_no_pager = true;
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	if (argc < 2) {
		main_help(stderr);
		return CLI_USAGE;
	}
	const char *name = argv[1];
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
		main_help(stdout);
		return CLI_OK;
	}
	if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0)
		name = "version";
	if (strcmp(name, "help") == 0) {
		if (argc < 3) {
			main_help(stdout);
			return CLI_OK;
		}
		const struct keel_cmd *cmd = find_cmd(argv[2]);
		if (!cmd)
			return unknown_command(argv[2]);
		cli_help(cmd, stdout);
		return CLI_OK;
	}
	const struct keel_cmd *cmd = find_cmd(name);
	if (!cmd)
		return unknown_command(name);

	/* argv[0] becomes "keel NAME" so getopt's messages name the command. */
	char prog[64];
	snprintf(prog, sizeof prog, "keel %s", cmd->name);
	argv[1] = prog;
	return cmd->run(cmd, argc - 1, argv + 1);
}
