# A push whose remote head retention (gc --keep) removed here, or whose path to this store's
# head it cut: nothing here shows the remote's head to be an ancestor, and the refusal says so
# (not "not an ancestor"); a fetch and a merge naming the remote's head as its base settle it.
#@ any-store
p init >/dev/null
prolly clone "$PROLLY_STORE" lmdb:mirror >/dev/null
p remote add mirror lmdb:mirror
for i in 1 2 3 4; do prolly put main "k$i" x >/dev/null; done
prolly gc --keep 2 --reflog-days 0 | grep nodes_removed | cut -f1
# the remote's head (the init commit) is gone from this store
pe push mirror main
p fetch mirror | cut -f1
pe merge main mirror/main
p merge main mirror/main --base mirror/main >/dev/null
p push mirror main | cut -f1
p --store lmdb:mirror scan main
# a remote head kept here by a tag, with this store's history of main cut: nothing here
# shows it to be an ancestor (here it is not one: the other store's history is its own)
prolly --store lmdb:other init >/dev/null
prolly --store lmdb:other put main o x >/dev/null
p remote add other lmdb:other
p fetch other | cut -f1
p tag theirs other/main >/dev/null
p remote remove other
p remote add other lmdb:other
for i in 5 6 7; do prolly put main "k$i" x >/dev/null; done
prolly gc --keep 2 --reflog-days 0 | grep nodes_removed | cut -f1
pe push other main
