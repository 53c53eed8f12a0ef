#!/bin/sh
# Fails, listing the files, when any C source differs from .clang-format.
# Usage: check-format.sh SOURCE_ROOT
set -eu
cd "$1"
cf=${CLANG_FORMAT:-clang-format}
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git ls-files --cached --others --exclude-standard '*.c' '*.h')
else
	files=$(find . -name '*.[ch]' -not -path './build*')
fi
bad=0
for f in $files; do
	[ -f "$f" ] || continue
	if ! "$cf" --dry-run --Werror "$f" >/dev/null 2>&1; then
		echo "not formatted: $f (fix: $cf -i $f)"
		bad=1
	fi
done
[ "$bad" -eq 0 ] && echo "all C sources formatted"
exit "$bad"
