# The README's section "From psql", run as written on this run's fresh database: the commands of
# its sh blocks in order, $PROLLY_PG_URL this run's store, the extension's install left out (the
# suite installed it). The transcript is what they print, psql's tables included; dates masked.
#@ pg-only
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
export PROLLY_PG_URL=$PROLLY_STORE PSQLRC=/dev/null
awk '/^### From psql/ { on = 1; next } on && /^##/ { exit }
	on && /^```sh$/ { block = 1; next } block && /^```$/ { block = 0; next }
	block && !/^sudo / { print }' "$top/README.md" >tour.sh
echo "$(grep -c "" tour.sh) lines of the README run"
# shellcheck disable=SC1091
. ./tour.sh 2>&1 | sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z/<date>/g'
