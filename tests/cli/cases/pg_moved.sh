# merge, revert and cherry-pick read the branch's head, merge three ways on it, then move the
# branch by compare-and-swap. When another writer moves the branch in between, nothing is
# committed and the command runs again on the moved head (up to 8 times in all), so it lands on
# top of the other writer's commit (the log shows it as the merge's first parent); a key that
# both changed is then a conflict of the new merge (exit 3), never a lost update. del-range goes
# onto the moved head unless a key in its range was written there (exit 4). The race is made
# certain: a session moves main (to the head of another branch) and keeps its row locked for
# 1.5 s, after the command has read main's head; the command's compare-and-swap waits for the
# row, then finds main moved.
#@ pg-only
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -d "$PROLLY_STORE" -c "$1"; }
# racing TO ARGS...: prolly ARGS while a session moves main to branch TO's head
racing() {
	local to=$1
	shift
	PGAPPNAME=mover psql -X -q -tA -d "$PROLLY_STORE" -c "BEGIN" \
		-c "UPDATE refs SET value = (SELECT value FROM refs WHERE name = convert_to('refs/heads/$to', 'UTF8'))
			WHERE name = convert_to('refs/heads/main', 'UTF8')" \
		-c "SELECT pg_sleep(1.5)" -c "COMMIT" >/dev/null 2>&1 &
	local mover=$!
	for _ in $(seq 100); do
		[ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'mover'
			AND state = 'active' AND query LIKE '%pg_sleep%'")" = 1 ] && break
		sleep 0.05
	done
	pe "$@"
	wait $mover
}
p init
p put main a 1
p branch side main
p put side s 1
p branch other main
p put other o 1
racing other merge main side
p scan main
p log main --limit 3
# cherry-pick and revert the same way
p branch other2 main
p put other2 o 2
p branch pick main
p put pick q 1
racing other2 cherry-pick main pick
p scan main
p branch other3 main
p put other3 o 3
racing other3 revert main pick
p scan main
# the other writer changed the key the merge brings: a conflict of the new merge, nothing lost
p branch side2 main
p put side2 o from-side
p branch other4 main
p put other4 o from-other
racing other4 merge main side2
p get main o
# del-range goes onto the moved head unless the other writer wrote inside its range (exit 4)
p put main r1 1
p branch other5 main
p put other5 z 1
racing other5 del-range main r1 r9
p scan main
p put main r2 2
p branch other6 main
p put other6 r3 3
racing other6 del-range main r1 r9
p scan main
