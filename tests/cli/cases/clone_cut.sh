# LMDB: a clone cut off anywhere (here by the file size limit, ulimit -f, which fails a write as
# a full disk does, at every page of the destination's growth in turn) leaves either no branch,
# and running it again finishes it, or the whole clone: never branches without remote 'origin'
# and its remote-tracking branches, which a second clone would refuse ("already has branches").
# (lock.mdb is made first, so that the limit hits data.mdb.)
#@ slow
p init
for i in $(seq 1 1500); do printf 'put\tkey%05d\tvalue %d\n' "$i" "$i"; done >big.txt
p apply main big.txt
p tag v1 main
prolly clone lmdb:store lmdb:whole >/dev/null
size=$(($(stat -c %s whole/data.mdb) / 1024 + 8))
cut_short=0
for kb in $(seq 68 4 $size); do
	rm -rf d
	mkdir d
	head -c 65664 /dev/zero >d/lock.mdb
	(
		trap '' XFSZ
		ulimit -f $kb
		prolly clone lmdb:store lmdb:d >/dev/null 2>cut.err
	) && continue
	cut_short=1
	if [ -n "$(prolly --store lmdb:d branches 2>&1)" ]; then
		echo "limit $kb KiB: the cut clone left branches: $(cat cut.err)"
	fi
	prolly clone lmdb:store lmdb:d >/dev/null 2>rerun.err ||
		echo "limit $kb KiB: running the clone again failed: $(cat rerun.err)"
done
echo "some clone was cut short: $cut_short"
# the last one run again is whole
p --store lmdb:d branches
p --store lmdb:d tags
p --store lmdb:d remote list
p --store lmdb:d log origin/main --limit 1
p --store lmdb:d verify main
# a store without branches whose remote 'origin' is another store was not cut short by this clone
p --store lmdb:other init
p --store lmdb:other branch -d main --force
p --store lmdb:other remote add origin lmdb:elsewhere
pe clone lmdb:store lmdb:other
p --store lmdb:other branches
