# remote, clone, fetch, push, pull between this store and LMDB stores, in both directions (the
# pg/ run: PostgreSQL to LMDB and back).
#@ any-store
#@ slow
p init
p put main a 1
p branch dev main
p put dev b 2
p tag v1 main
# clone: every branch and tag with its history; the source becomes remote origin
# (run without p: p would print this store's URL quoted, which differs between the runs)
echo '$ prolly clone STORE lmdb:copy'
prolly clone "$PROLLY_STORE" lmdb:copy
p --store lmdb:copy remote list
p --store lmdb:copy branches | cut -f1
p --store lmdb:copy tags
prolly --store lmdb:copy log dev | grep -c "^commit"
p --store lmdb:copy get origin/dev b
echo '$ prolly clone STORE lmdb:copy'
prolly clone "$PROLLY_STORE" lmdb:copy 2>&1
echo "[exit $?]"
pe clone lmdb:nosuch lmdb:other
pe clone lmdb:copy lmdb:copy
# push a fast-forward back
p --store lmdb:copy put main c 3
p --store lmdb:copy push origin main
p get main c
prolly reflog main | cut -f3 | head -1
# fetch: a branch that moved, a new one, one deleted
p put dev b 3
p branch feature main
p --store lmdb:copy fetch origin
p --store lmdb:copy get origin/dev b
p --store lmdb:copy fetch origin
p branch -d feature
p --store lmdb:copy fetch origin
pe --store lmdb:copy get origin/feature b
# a push that is not a fast-forward changes nothing (exit 4)
p put main d here
p --store lmdb:copy put main d there
pe --store lmdb:copy push origin main
p get main d
# pull: the conflict is reported (exit 3), then settled
pe --store lmdb:copy pull origin main
p --store lmdb:copy get main d
p --store lmdb:copy pull origin main --resolve theirs -m 'take theirs'
p --store lmdb:copy push origin main
p get main d
# pull without a conflict: a fast-forward, and a branch new here
p put main e 5
p --store lmdb:copy pull origin main
p --store lmdb:copy get main e
p --store lmdb:copy pull origin dev
p --store lmdb:copy get dev b
pe --store lmdb:copy pull origin nosuch
# remote-tracking branches are read-only: no branch may hide one, and put does not write one
pe --store lmdb:copy branch origin/main main
pe --store lmdb:copy put origin/main k v
p --store lmdb:copy branch origin2/main main
# --force drops the remote's commits
p --store lmdb:copy reset main main~1 | cut -f1
pe --store lmdb:copy push origin main
p --store lmdb:copy push origin main --force
p get main e
# this store's remotes: add, fetch, read, remove
p remote add copy lmdb:copy
pe remote add copy lmdb:elsewhere
# a remote URL never stores a password (it would travel with every copy of the store): refused,
# without quoting it; the password belongs in ~/.pgpass, PGPASSFILE or PGPASSWORD
pe remote add secret 'postgresql://me:hunter2@/db?host=/nonexistent'
pe remote add secret 'host=/nonexistent dbname=db PassWord=hunter2'
# nor one libpq refuses (a misspelled key may hold a password): libpq's reason, redacted
pe remote add typo 'host=/nonexistent dbname=db passwd=hunter2'
pe remote add typo 'host=/nonexistent dbname=db hunter2'
pe clone 'postgresql://me:hunter2@/db?host=/nonexistent' lmdb:copy2
p remote add secret 'postgresql://me@/db?host=/nonexistent'
p remote list
pe fetch secret
# a clone does not carry the source's remotes: they are the source's configuration
echo '$ prolly clone STORE lmdb:copy3'
prolly clone "$PROLLY_STORE" lmdb:copy3 | grep -v '^copied'
p --store lmdb:copy3 remote list
p fetch copy
prolly log copy/main | grep -c "^commit"
p remote remove copy
pe get copy/main e
pe remote remove copy
pe remote add bad/name lmdb:x
pe remote frob
pe fetch nosuch
# a remote name leaves room for every branch name in remotes/NAME/BRANCH (255 bytes): 46 bytes
pe remote add $(printf '%047d' 0) lmdb:x
p remote add $(printf '%046d' 0) lmdb:x
