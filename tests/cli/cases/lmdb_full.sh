# LMDB: a store that cannot grow (here the file size limit, ulimit -f, which makes writes fail
# the way a full disk does) is "full", exit 5, and the store stays usable. An init that runs out
# of room removes what it created, so that the next init (with room) works.
# (lock.mdb is made first, so that the limit hits data.mdb.)
mkdir s
head -c 65664 /dev/zero >s/lock.mdb
(
	trap '' XFSZ
	ulimit -f 4
	pe --store lmdb:s init
)
ls -A s
pe --store lmdb:s init
p --store lmdb:s put main k v
for i in $(seq 1 60); do printf 'put\tkey%02d\t%03000d\n' "$i" "$i"; done >big.txt
(
	trap '' XFSZ
	ulimit -f 128
	pe --store lmdb:s apply main big.txt
)
p --store lmdb:s get main k
p --store lmdb:s apply main big.txt >/dev/null && echo "applied with room"
p --store lmdb:s verify main | cut -f1
