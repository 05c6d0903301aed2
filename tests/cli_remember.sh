#!/usr/bin/env bash
# cli_remember.sh - cartridges that are remembered, on SQLite: the story of
# tests/cli/remember.sh on a new store and on a store an older Keel wrote
# (docs/cartridges.md, "The recorded cartridge").
command -v curl >/dev/null || { echo "curl is needed (scripts/deps --test)"; exit 1; }
. "$(dirname "$0")/cli/lib.sh"
src=${KEEL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$(dirname "$0")/cli/remember.sh"

remember_suite "sqlite:$dir/shop.db"
cp "${KEEL_TEST_DATA:-$src/tests/data}/migrate/v1.sqlite" "$dir/old.db"
remember_migrated "sqlite:$dir/old.db"
finish
