#!/usr/bin/env bash
# Stores own what is theirs (docs/architecture.md, "Stores"): outside
# src/store/ (the registry, src/store/store.c, and the engines' folders), no code compares a string
# with a store's URL scheme, calls a store's client library (SQLite,
# MariaDB), reads a backend's ops table or decides the default store
# (KEEL_STORE); the core asks the store through store.c's wrappers. (The
# registry itself is checked by tests/wings.py, which also keeps nats.h in
# src/log/.) The schemes are read off the registered ops tables,
# so a new store is covered without editing this test.
set -euo pipefail
: "${KEEL_SOURCE_DIR:?source directory}"
cd "$KEEL_SOURCE_DIR"

schemes=$(sed -n 's/^[[:space:]]*\.scheme = "\([a-z0-9]*\)",.*/\1/p' src/store/*/*.c | sort -u | paste -sd'|' -)
[ -n "$schemes" ] || { echo "FAIL: no .scheme in src/store/*/*.c"; exit 1; }
case "|$schemes|" in *"|sqlite|"*) ;; *) echo "FAIL: schemes read: $schemes"; exit 1 ;; esac

# A string comparison with a scheme literal ("sqlite:", "memory", ...).
scheme_test="\\b(strn?cmp|strn?casecmp|memcmp|strstr|strncasecmp)[[:space:]]*\\([^;]*\"($schemes)[:\"]"
# The stores' client libraries.
client_call='\b(sqlite3_[a-z0-9_]+|mysql_[a-z0-9_]+|PQ[a-zA-Z]+)[[:space:]]*\(|#include[[:space:]]*<(sqlite3|mysql|mariadb|errmsg|mysqld_error|libpq-fe)'
# A backend's ops table read directly.
ops_read='(->|\.)ops(->|\.)'
# The default store decided again (keel_store_default_url decides it).
default_url='getenv[[:space:]]*\([[:space:]]*"KEEL_STORE"'

# The patterns find what they are for (else this test could pass on
# anything): lines the code held before the stores owned them.
self_check() {
	local pattern=$1 line=$2
	printf '%s\n' "$line" | grep -qE "$pattern" || {
		echo "FAIL: pattern does not find: $line"
		exit 1
	}
}
self_check "$scheme_test" 'if (strncmp(u, "sqlite:", 7) == 0 && strcmp(u, "sqlite::memory:") != 0'
self_check "$scheme_test" 'srv->shared_store = strncmp(srv->store_url, "memory:", 7) == 0;'
self_check "$client_call" '	if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE, NULL) !='
self_check "$client_call" '#include <sqlite3.h>'
self_check "$client_call" '	PGresult *res = PQexec(g->conn, sql);'
self_check "$client_call" '#include <libpq-fe.h>'
self_check "$client_call" '#include <mysql.h>'
self_check "$client_call" '#include <mysql/mysql.h>'
self_check "$client_call" '#include <mysqld_error.h>'
self_check "$ops_read" '		mode = first->ops->concurrent_writers ? KEEL_WORKERS_TENANTS'
self_check "$default_url" '		url = getenv("KEEL_STORE");'

files=$(find src cli include -name '*.[ch]' ! -path 'src/store/*' | sort)
status=0
for what in scheme_test client_call ops_read default_url; do
	if hits=$(grep -nE "${!what}" $files); then
		echo "FAIL ($what) outside src/store/:"
		echo "$hits"
		status=1
	fi
done
[ "$status" -eq 0 ] && echo "ok: schemes ($schemes), client libraries and ops tables stay in src/store/"
exit "$status"
