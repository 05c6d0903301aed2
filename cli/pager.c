/*
 * pager.c - text for a person on a terminal: its size, and a pager for
 * text longer than the screen, as git does (docs/cli.md, "On a terminal").
 *
 * The pager is $KEEL_PAGER, else $PAGER, else "less -FRX"; "" or "cat"
 * means none. It runs through /bin/sh -c (so it may carry options), reads
 * the text on its standard input and writes to the terminal keel was
 * given. As git does, LESS defaults to FRX (quit when the text fits,
 * keep colours, leave the screen as it was) and LV to -c. keel renders
 * the whole text first and starts the pager only when the text has as
 * many lines as the screen has rows or more (one row is the prompt's), so
 * a short answer prints as it is; a terminal that does not know its rows
 * gets no pager.
 */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

bool cli_no_pager;

/* A positive number in the environment variable name, else 0. */
static size_t env_size(const char *name)
{
	const char *v = getenv(name);
	uint64_t n;
	return v && cli_parse_u64(v, &n) && n > 0 && n < 100000 ? (size_t)n : 0;
}

void cli_term_size(size_t *cols, size_t *rows)
{
	struct winsize ws;
	memset(&ws, 0, sizeof ws);
	/* The terminal's own answer first; a terminal that has no size (a
	 * pseudo-terminal nobody sized, as script(1) makes without one)
	 * falls back on $COLUMNS and $LINES, then on 80 columns, as git's
	 * term_columns does. Its rows stay unknown (0): nobody can say the
	 * text is longer than the screen, and no pager starts. */
	(void)ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
	*cols = ws.ws_col ? ws.ws_col : env_size("COLUMNS");
	*rows = ws.ws_row ? ws.ws_row : env_size("LINES");
	if (!*cols)
		*cols = 80;
}

/* The pager to use: NULL for none. */
static const char *pager_command(void)
{
	const char *p = getenv("KEEL_PAGER");
	if (!p)
		p = getenv("PAGER");
	if (!p)
		p = "less -FRX";
	if (!*p || strcmp(p, "cat") == 0)
		return NULL;
	return p;
}

/* Writes all of text[0..len) to fd; false when the reader went away. */
static bool write_all(int fd, const char *text, size_t len)
{
	while (len) {
		ssize_t n = write(fd, text, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		text += n;
		len -= (size_t)n;
	}
	return true;
}

/* Runs the pager on text; false when it could not be started at all (the
 * caller prints the text itself). */
static bool page(const char *pager, const char *text, size_t len)
{
	int fds[2];
	if (pipe(fds) != 0)
		return false;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return false;
	}
	if (pid == 0) {
		dup2(fds[0], STDIN_FILENO);
		close(fds[0]);
		close(fds[1]);
		setenv("LESS", getenv("LESS") ? getenv("LESS") : "FRX", 1);
		setenv("LV", getenv("LV") ? getenv("LV") : "-c", 1);
		execl("/bin/sh", "sh", "-c", pager, (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	/* The pager owns the terminal until it quits: Ctrl-C is its to
	 * handle (less ignores it), and a pager quit before the end of the
	 * text is no error (the pipe's reader is gone). */
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit, old_pipe;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	sigaction(SIGPIPE, &ign, &old_pipe);
	(void)write_all(fds[1], text, len);
	close(fds[1]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	/* sh's "command not found": nothing was shown */
	return !(WIFEXITED(status) && WEXITSTATUS(status) == 127);
}

void cli_show_text(const char *text, size_t rows)
{
	size_t len = strlen(text), lines = 0;
	for (const char *p = text; (p = memchr(p, '\n', len - (size_t)(p - text))); p++)
		lines++;
	const char *pager = cli_no_pager ? NULL : pager_command();
	/* One row stays for the prompt (or less's status line). */
	if (pager && rows && lines >= rows && page(pager, text, len))
		return;
	fputs(text, stdout);
}
