# Retention never changes a merge: gc keeps the merge base of branches (and tags), and a merge
# whose base is gone anyway refuses (exit 2) unless --base REF or --allow-unrelated.
#@ any-store
p init
printf 'put\ta\t1\nput\tb\t2\n' | p apply main -
p branch dev main
p del dev a
for i in 1 2 3; do prolly put main "k$i" v >/dev/null; done
for i in 1 2 3; do prolly put dev "d$i" v >/dev/null; done
# what the merge gives before any gc (on a copy of main)
p branch probe main
p merge probe dev --resolve theirs >/dev/null
prolly scan probe >before.txt
p branch -d probe >/dev/null
prolly gc --keep 2 --reflog-days 0 | grep -v bytes | cut -f1
prolly log dev | grep -c '^commit'
prolly verify dev --history | cut -f1
p merge main dev --resolve theirs >/dev/null
prolly scan main >after.txt
cmp -s before.txt after.txt && echo "after gc --keep 2 the merge gives what it gave before"
p get main a
# merged: a merge again is a no-op, not a conflict
before=$(prolly root main)
p merge main dev >/dev/null
[ "$(prolly root main)" = "$before" ] && echo "merging again changes nothing"

# A deleted branch whose history gc cut: the reflog keeps its head, not its merge base.
p branch -d dev
day=$((86400 * 1000000))
t0=1700000000000000
p branch side main
p put side s 1
p put side s 2
p put main m 1
PROLLY_COMMIT_TIME=$((t0 + 30 * day)) p branch -d side
PROLLY_COMMIT_TIME=$((t0 + 30 * day + 1000000)) prolly gc --keep 1 | grep reflog_expired
side=$(prolly reflog side | head -1 | cut -f4)
pe merge main "$side"
PROLLY_COMMIT_TIME=$((t0 + 30 * day + 2000000)) p branch --restore side
pe merge main side
pe merge main side --base nosuch
p branch main2 main
PROLLY_COMMIT_TIME=$((t0 + 30 * day + 3000000)) p merge main side --allow-unrelated
p scan main
# --base: a three-way merge against that commit (here main2's head: side's changes apply)
PROLLY_COMMIT_TIME=$((t0 + 30 * day + 5000000)) p merge main2 side --base main2 --resolve theirs
p scan main2
