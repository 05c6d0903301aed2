#!/usr/bin/env python3
"""The house in wings (docs/architecture.md): includes flow downward only.

  level 0  src/*.[ch]            util, options, version, sha256
  level 1  src/event/            lines, JSON, UTF-8, time, envelopes, batches
  level 2  src/store/            the registry, scans with derived ends,
                                 tombstones; engines in src/store/ENGINE/,
                                 reached only through the registry
  level 3  src/cartridge/        cartridges and each tenant's recorded one
  level 4  src/write/ src/read/  siblings: neither includes the other
  level 5  src/log/              the NATS JetStream log
  level 6  src/http/             the server (which may forward to the log)
  cli/                           the public header and its own files only

A file may include its own folder's headers and those of lower levels.
Only an engine's own folder includes its headers or its client library's
(sqlite3.h, mysql.h, libpq-fe.h); only src/log/ includes nats.h.

With a directory argument it checks that tree and exits 1 on a wrong
include; without, it first runs itself on copies of the source tree with
one wrong include each (so it is known to fail when it should), then
checks the source tree.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

LEVELS = [("src/event/", 1), ("src/store/", 2), ("src/cartridge/", 3),
          ("src/write/", 4), ("src/read/", 4), ("src/log/", 5), ("src/http/", 6)]
# the engines' client libraries: SQLite; MariaDB Connector/C (mysql.h and
# the headers beside it, errmsg.h, mysqld_error.h, ma_*.h, also under
# mysql/ or mariadb/); libpq
CLIENTS = re.compile(r"<(sqlite3\.h|(mysql/|mariadb/)?(mysql.*|mariadb.*|errmsg|mysqld_error|ma_.*)\.h"
                     r"|mysql/.*|mariadb/.*|libpq-fe\.h|postgresql/.*)>")
NATS = re.compile(r"<(nats\.h|nats/.*)>")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"][^>"]*[>"])', re.M)


def level_of(path):
    for prefix, level in LEVELS:
        if path.startswith(prefix):
            return level
    return 0 if path.count("/") == 1 and path.startswith("src/") else None


def engine_of(path):
    parts = path.split("/")
    return parts[2] if len(parts) > 3 and parts[:2] == ["src", "store"] else None


def check_tree(root):
    bad = []
    files = sorted(os.path.relpath(os.path.join(d, f), root)
                   for top in ("src", "cli", "include")
                   for d, _, fs in os.walk(os.path.join(root, top))
                   for f in fs if f.endswith((".c", ".h")))
    for path in files:
        here = level_of(path)
        if path.startswith("include/"):
            here = -1  # the public header: the C library's headers only
        if path.startswith("src/") and here is None:
            bad.append(f"{path} is in no wing")
            continue
        with open(os.path.join(root, path), encoding="utf-8") as f:
            includes = INCLUDE.findall(f.read())
        for inc in includes:
            if CLIENTS.fullmatch(inc):
                if engine_of(path) is None:
                    bad.append(f"{path} includes {inc}: only a store engine's folder may")
                continue
            if NATS.fullmatch(inc):
                if not path.startswith("src/log/"):
                    bad.append(f"{path} includes {inc}: only src/log/ may")
                continue
            if inc.startswith("<"):
                continue
            name = inc.strip('"')
            beside = os.path.normpath(os.path.join(os.path.dirname(path), name))
            if os.path.exists(os.path.join(root, beside)):
                target = beside
            elif os.path.exists(os.path.join(root, "src", name)):
                target = os.path.normpath(os.path.join("src", name))
            elif os.path.exists(os.path.join(root, "include", name)):
                continue  # the public header
            else:
                bad.append(f'{path} includes "{name}", which is in neither src/ nor include/')
                continue
            if os.path.dirname(target) == os.path.dirname(path):
                continue
            if path.startswith("include/"):
                bad.append(f"{path} includes {target}: the public header stands alone")
                continue
            if path.startswith("cli/"):
                bad.append(f"{path} includes {target}: cli/ uses only include/keel.h")
                continue
            if engine_of(target) is not None and engine_of(target) != engine_of(path):
                bad.append(f"{path} includes {target}: an engine is reached only through the registry")
                continue
            there = level_of(target)
            if there > here or (there == here and here != 2):
                bad.append(f"{path} (level {here}) includes {target} (level {there}): "
                           "wings depend downward only")
    return bad


def expect_failure(source, scratch, path, line, what):
    tree = os.path.join(scratch, "tree")
    shutil.rmtree(tree, ignore_errors=True)
    for top in ("src", "cli", "include"):
        shutil.copytree(os.path.join(source, top), os.path.join(tree, top))
    os.makedirs(os.path.dirname(os.path.join(tree, path)), exist_ok=True)
    with open(os.path.join(tree, path), "a", encoding="utf-8") as f:
        f.write(line + "\n")
    run = subprocess.run([sys.executable, __file__, tree], capture_output=True, text=True)
    if run.returncode == 0:
        sys.exit(f"FAIL: the check passed with {what} ({path}: {line})")
    print(f"ok: refused {what}: {run.stdout.splitlines()[0]}")


def main():
    if len(sys.argv) == 2:
        bad = check_tree(sys.argv[1])
        for b in bad:
            print("FAIL: " + b)
        sys.exit(1 if bad else 0)
    source = os.environ["KEEL_SOURCE_DIR"]
    with tempfile.TemporaryDirectory(prefix="keel-wings-") as scratch:
        for path, line, what in [
            ("src/event/json.c", '#include "cartridge/cartridge.h"', "a lower wing including a higher one"),
            ("src/read/query.c", '#include "write/ingest.h"', "read including write"),
            ("src/write/ingest.c", '#include "read/query.h"', "write including read"),
            ("src/write/ingest.c", '#include "store/sqlite/parts.h"', "an engine's header outside its folder"),
            ("src/store/mysql/store.c", '#include "store/sqlite/parts.h"', "one engine reaching into another"),
            ("src/read/dump.c", "#include <sqlite3.h>", "a client library outside the engines"),
            ("src/store/store.c", "#include <libpq-fe.h>", "libpq in the registry"),
            ("src/http/server.c", "#include <nats.h>", "nats.h outside src/log/"),
            ("include/keel.h", "#include <nats.h>", "nats.h in the public header"),
            ("src/store/store.c", "#include <mysql/mysql.h>", "Connector/C in the registry"),
            ("src/http/server.c", "#include <errmsg.h>", "a Connector/C header outside the engines"),
            ("src/store/tombstone.c", "#include <mysqld_error.h>", "MariaDB's error codes in the registry"),
            ("include/keel.h", '#include "util.h"', "the public header reaching into src/"),
            ("cli/main.c", '#include "util.h"', "cli/ reaching into src/"),
            ("src/misc/new.c", '#include "util.h"', "a folder that is no wing"),
        ]:
            expect_failure(source, scratch, path, line, what)
    bad = check_tree(source)
    for b in bad:
        print("FAIL: " + b)
    if bad:
        sys.exit(1)
    print("ok: includes flow downward through the wings")


if __name__ == "__main__":
    main()
