#!/usr/bin/env bash
# The repository stands alone: no tracked file cites a document that is not
# in it (a specification or design note kept elsewhere), and every relative
# link in the Markdown docs points at a file that exists. docs/ is the
# contract; code and docs cite it and nothing outside.
set -euo pipefail
: "${KEEL_SOURCE_DIR:?source directory}"
cd "$KEEL_SOURCE_DIR"
self=tests/docs_standalone.sh

# The files to check: what git tracks, or (in a tree without .git) every
# file outside build directories.
list_files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files -z
	else
		find . -path ./.git -prune -o -path './build*' -prune -o -type f -print0 |
			sed -z 's|^\./||'
	fi
}

# Citations of outside documents. SPEC as a word of its own (identifiers such
# as AF_UNSPEC or F_SPECVERSION do not match), "the note" but not "the notes"
# or "a note", the seed or design note, and the directory they lived in.
pattern='(^|[^A-Za-z0-9_])SPEC([^A-Za-z0-9_]|$)|SPEC\.md|[Tt]he note([^A-Za-z]|$)|[Ss]eed note|[Dd]esign note|\.\./shared([^A-Za-z]|$)'
hits=$(list_files | grep -zv "^$self\$" | xargs -0 grep -snIE "$pattern" -- || true)
if [ -n "$hits" ]; then
	printf '%s\n' "$hits"
	echo "cites a document outside the repository (cite docs/ instead)"
	exit 1
fi

# Relative links in the Markdown docs: [text](target) where target is not a
# URL or an anchor of the same page must name an existing file or directory.
fail=0
for f in README.md CHANGELOG.md bench/README.md docs/*.md; do
	[ -f "$f" ] || continue
	dir=$(dirname "$f")
	while IFS= read -r target; do
		case "$target" in
		http://* | https://* | mailto:* | '#'*) continue ;;
		esac
		path=${target%%#*}
		if [ ! -e "$dir/$path" ]; then
			echo "$f: link to \"$target\": no such file"
			fail=1
		fi
	done < <(grep -oE '\]\([^)[:space:]]+\)' "$f" | sed -E 's/^\]\((.*)\)$/\1/')
done
[ "$fail" = 0 ] || exit 1
echo "ok: nothing cites an outside document; every relative link resolves"
