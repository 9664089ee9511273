# merge: fast-forward, up to date, clean three-way, conflicts with each resolver.
#@ any-store
p init
printf 'put\ta\t1\nput\tb\t2\nput\tc\t3\nput\td\t4\n' | p apply main -
p branch dev main
# fast-forward: main has not moved
p put dev e 5
p merge main dev
test "$(prolly branches | grep '^main' | cut -f2)" = "$(prolly branches | grep '^dev' | cut -f2)" &&
	echo "main fast-forwarded to dev"
# up to date both ways
p merge main dev
p merge dev main
# clean three-way: different keys on each side, and one identical change on both
p put main a one
p put main same x
p put dev b two
p put dev same x
p del dev c
p merge main dev
p scan main
p log main --limit 1
# conflicts: changed differently, deleted vs changed, added differently
p branch left main
p branch right main
p put left a L
p put right a R
p del left b
p put right b R2
p put left new L
p put right new R
p put right d R4
p del left d
p put left z same
p put right z same
before=$(prolly root left)
pe merge left right
test "$(prolly root left)" = "$before" && echo "nothing committed"
p branch left2 left
p branch left3 left
p merge left right --resolve ours -m "ours wins"
p scan left
prolly log left --limit 1 | grep -E '^(message|parent)'
p merge left2 right --resolve theirs
p scan left2
prolly log left2 --limit 1 | grep message
p merge left3 right --resolve=fail
# merging from a BRANCH~N or commit id works; into one does not
p branch c1 main~1
p merge c1 main~0
pe merge main~1 dev
pe merge main dev --resolve maybe
pe merge nosuch dev
p merge main nosuch
pe merge main
# --base that names no commit is refused also when there is nothing to merge (it used to pass
# unread, exit 0)
pe merge main main --base nosuch
pe merge main main --base ''
pe merge c1 main --base 'main~99'
