# merge --dry-run: what a merge would do, with nothing done: up to date, a fast-forward, a
# three-way merge (with a change made alike on both sides, and with a conflict a resolver
# settles), conflicts left (exit 3); the branches and the store unchanged after each.
#@ any-store
p init
printf 'put\ta\t1\nput\tb\t2\nput\tc\t3\n' | p apply main -
p branch dev main
p put dev d 4
state() { prolly branches; prolly reflog main | wc -l; }
before=$(state)
p merge main dev --dry-run
p merge dev main --dry-run
p merge main main --dry-run
test "$(state)" = "$before" && echo "nothing changed"
p put main e 5
p put main same x
p put dev same x
p put dev a one
before=$(state)
p merge main dev --dry-run
test "$(state)" = "$before" && echo "nothing changed"
p put main a uno
before=$(state)
pe merge main dev --dry-run
p merge main dev --dry-run --resolve theirs
test "$(state)" = "$before" && echo "nothing changed"
# and the merge itself then does what the dry run said
p merge main dev --resolve theirs
p scan main
pe merge main dev --dry-run --resolve maybe
