#!/usr/bin/env bash
# regress-cli.sh - the prolly CLI on the pg_regress database, for the tests in sql/.
#
#   regress-cli.sh ARGS...   runs $PROLLY_CLI --store "dbname=$PROLLY_TEST_DB" ARGS...
#                            (host, port and user from PGHOST, PGPORT, PGUSER, as for psql)
#   regress-cli.sh fixture   writes the data every test reads (below); prints "fixture ok"
#   regress-cli.sh diff-rows FROM TO   `diff FROM TO` as rows of four columns for COPY (op, key,
#                            old value, new value; \N where a side has none)
#   regress-cli.sh log-ids REF         the commit ids of `log REF`, one a line
#
# The tests set PROLLY_TEST_DB with psql's \setenv; `make installcheck` sets PROLLY_CLI.
set -euo pipefail
: "${PROLLY_CLI:?PROLLY_CLI is unset (run the suite through make installcheck)}"
: "${PROLLY_TEST_DB:?PROLLY_TEST_DB is unset}"

cli() {
	"$PROLLY_CLI" --store "dbname=$PROLLY_TEST_DB" "$@"
}

case "${1:-}" in
fixture) ;;
diff-rows)
	cli diff "$2" "$3" | awk -F '\t' -v OFS='\t' '
		$1 == "+" { print $1, $2, "\\N", $3; next }
		$1 == "-" { print $1, $2, $3, "\\N"; next }
		{ print }'
	exit
	;;
log-ids)
	cli log "$2" | awk -F '\t' '$1 == "commit" { print $2 }'
	exit
	;;
*)
	cli "$@"
	exit
	;;
esac

# main: 3000 records k00001..k03000 -> v1..v3000 (several leaves, a tree of height 2 or more),
# and one binary key; dev: from main, 100 changed, 50 deleted, 20 added; then the tag v1 on
# main, and one more commit on main (so v1 is main~1).
# big: 200000 records, for the cancellation test.
{
	cli init
	seq 1 3000 | awk '{ printf "put\tk%05d\tv%d\n", $1, $1 }' | cli apply main - -m 'load 3000'
	printf 'put\tbin\\x00\\xff\t\\x01\\x02\n' | cli apply main - -m 'binary key'
	cli branch dev main
	{
		seq 1 100 | awk '{ printf "put\tk%05d\tchanged%d\n", $1 * 7, $1 }'
		seq 1 50 | awk '{ printf "del\tk%05d\n", 1000 + $1 * 3 }'
		seq 1 20 | awk '{ printf "put\tn%05d\tnew%d\n", $1, $1 }'
	} | cli apply dev - -m 'dev edits'
	cli tag v1 main
	cli put main k00002 two
	cli branch big main
	seq 1 200000 | awk '{ printf "put\tz%07d\t%d\n", $1, $1 }' | cli apply big - -m 'load 200000'
} >/dev/null
echo "fixture ok"
