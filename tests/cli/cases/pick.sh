# revert and cherry-pick: one commit's change undone or applied, three-way, merge's conflict report.
#@ any-store
p init
printf 'put\ta\t1\nput\tb\t1\nput\tc\t1\n' | p apply main -
p branch dev main
p put dev a 2 -m "a to 2"
p put dev d new -m "add d"
p put main c 3
# cherry-pick one commit of dev onto main: only its change
p cherry-pick main dev~1
p scan main
prolly log main --limit 1 | grep message
# picking it again changes nothing: no commit
p cherry-pick main dev~1
# revert a commit on main: its change undone, later changes kept
p revert main main~1
p scan main
prolly log main --limit 1 | grep message
# a conflict: main changed a since, and the revert wants it back to 1
p put main a 5
pe revert main main~2
p revert main main~2 --resolve theirs
p get main a
# merge commits need -m PARENT
p put dev e 1
p merge main dev
pe revert main main
pe revert main main -m 3
p revert main main -m 1
p scan main
pe cherry-pick main main~1 -m 0
# errors
pe revert main nosuch
pe revert main~1 main
pe cherry-pick main
# -m is --mainline here (put's -m is the message): a message after it says where it goes
pe revert main main -m 'undo it'
# a commit whose message has the most bytes a message may have (65536): the message of its pick
# or revert keeps that limit, the picked message cut (it used to be refused, exit 2)
prolly put dev g 1 -m "$(printf '%65536s' '' | tr ' ' m)" >/dev/null
p cherry-pick main dev
prolly log main --limit 1 | grep '^message' | wc -c
prolly log main --limit 1 | grep '^message' | tail -c 90
p revert main main
prolly log main --limit 1 | grep '^message' | wc -c
prolly log main --limit 1 | grep '^message' | cut -c 1-90
