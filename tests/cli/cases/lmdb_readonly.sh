# LMDB: commands that only read open the store read-only; only init creates. Nothing is written
# by reading, and a missing or empty directory stays as it was (no data.mdb, no lock.mdb).
mkdir empty
pe --store lmdb:empty branches
pe --store lmdb:empty get main k
pe --store lmdb:empty verify main
pe --store lmdb:empty log main
pe --store lmdb:empty put main k v
pe --store lmdb:empty gc
pe --store lmdb:empty recover
echo "files in empty: $(ls -A empty | wc -l)"
pe --store lmdb:missing/deeper scan main
pe --store lmdb:missing/deeper branch dev main
ls -d missing 2>/dev/null || echo "missing was not created"
# a store: reads change no byte of it
p init
p put main k v
cksum <store/data.mdb >before.sum
p branches
p get main k
p scan main
p log main
p root main
p stats main
p verify main --history
p diff main~1 main
pe get main absent
pe recover
cksum <store/data.mdb | cmp -s - before.sum && echo "data.mdb unchanged by the reads"
# writes to an existing store still work (and init on it changes nothing)
p put main k2 v2
p init
p get main k2
