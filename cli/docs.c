/*
 * docs.c - where the installed manual and documentation are, for the help
 * texts: `keel --help` and every `keel COMMAND --help` end by naming them,
 * so a user of an installed keel is pointed at files on their machine, not
 * at a repository they may not have (docs/building.md, "What gets
 * installed").
 *
 * The install is relocatable (`cmake --install --prefix DIR`), so the
 * prefix is found from the running executable: when it sits in PREFIX/bin
 * and PREFIX holds the documentation, that PREFIX is named; otherwise (a
 * build directory, a copied binary) the prefix the build was configured
 * with is.
 */
#include "cli.h"

#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef KEEL_INSTALL_FULL_DOCDIR
#error "the build defines KEEL_INSTALL_{BINDIR,DOCDIR,MANDIR} and their _FULL_ forms"
#endif

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The prefix of the install this keel runs from, into buf (PATH_MAX
 * bytes); false when it does not run from one. */
static bool running_prefix(char *buf)
{
	if (KEEL_INSTALL_DOCDIR[0] == '/' || KEEL_INSTALL_MANDIR[0] == '/')
		return false; /* absolute: the same wherever the prefix is */
	ssize_t n = readlink("/proc/self/exe", buf, PATH_MAX - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	char *slash = strrchr(buf, '/'); /* buf is PREFIX/BINDIR/keel? */
	if (!slash)
		return false;
	*slash = '\0';
	size_t bindir = strlen(KEEL_INSTALL_BINDIR);
	size_t len = strlen(buf);
	if (len <= bindir || buf[len - bindir - 1] != '/' ||
	    strcmp(buf + len - bindir, KEEL_INSTALL_BINDIR) != 0)
		return false;
	buf[len - bindir - 1] = '\0';
	char docs[PATH_MAX + sizeof KEEL_INSTALL_DOCDIR + 1];
	snprintf(docs, sizeof docs, "%s/%s", buf, KEEL_INSTALL_DOCDIR);
	return is_dir(docs);
}

void cli_docs_footer(FILE *f)
{
	char prefix[PATH_MAX];
	bool here = running_prefix(prefix);
	fprintf(f, "The manual: man keel (%s%s%s/man1/keel.1); the documentation,\n",
		here ? prefix : "", here ? "/" : "",
		here ? KEEL_INSTALL_MANDIR : KEEL_INSTALL_FULL_MANDIR);
	fprintf(f, "README.md and the docs/ pages named here: %s%s%s/\n", here ? prefix : "",
		here ? "/" : "", here ? KEEL_INSTALL_DOCDIR : KEEL_INSTALL_FULL_DOCDIR);
}
