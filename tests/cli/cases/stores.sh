# Store URLs: lmdb: and mem:, $PROLLY_STORE, the default, and unreachable stores (exit 5).
pe get main k
pe branches
ls
# mem: is a fresh empty store at each invocation
p --store mem: init
p --store mem: branches
p --store mem: get main k
p --store=mem: scan main
# bad URLs and unreachable stores
p --store bogus:thing init
pe --store= init
echo hello >file.txt
p --store lmdb:file.txt init
p --store lmdb:file.txt get main k
pe --store lmdb:/proc/no/such/dir get main k
p --store lmdb:/proc/no/such/dir init
# $PROLLY_STORE, overridden by --store
PROLLY_STORE=lmdb:envstore p init
prolly --store lmdb:envstore branches | cut -f1
p --store=lmdb:envstore put main k v
PROLLY_STORE=lmdb:envstore p get main k
PROLLY_STORE=lmdb:envstore pe --store lmdb:nostore get main k
# the default store is ./.prolly
unset PROLLY_STORE
p init
p put main where default
ls -d .prolly
p --store lmdb:./.prolly get main where
