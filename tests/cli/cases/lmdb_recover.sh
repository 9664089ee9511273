# LMDB: one bit flipped in the newest meta page (the main database's root page number). Every
# command reports the damage (exit 5) and writes nothing, init does not start a fresh store,
# and recover finds the previous snapshot, says what it holds, and makes it current on --apply.
flip_newest_root() {
	perl -e 'open(my $f, "+<", $ARGV[0]) or die "$!"; binmode $f;
		sysread($f, my $h, 64); my $ps = unpack("V", substr($h, 40, 4));
		sysseek($f, 0, 0); sysread($f, my $m, 2 * $ps);
		my $s = unpack("Q<", substr($m, 144, 8)) > unpack("Q<", substr($m, $ps + 144, 8)) ? 0 : 1;
		my $o = $s * $ps + 128; my $b = chr(ord(substr($m, $o, 1)) ^ 1);
		sysseek($f, $o, 0); syswrite($f, $b, 1) == 1 or die "$!"' "$1"
}
p init
p put main a 1
p branch dev main
p put dev c 3
p put main b 2
# the transaction that will be lost
p put main b 22
flip_newest_root store/data.mdb
cksum <store/data.mdb >flipped.sum
pe branches
pe verify main
pe get main b
pe put main x y
pe init
pe gc
cksum <store/data.mdb | cmp -s - flipped.sum && echo "data.mdb unchanged"
pe recover
cksum <store/data.mdb | cmp -s - flipped.sum && echo "data.mdb unchanged"
p recover --apply
p branches
p get main b
p get dev c
p verify main --history
p recover
# Output that cannot be written is no damage: one line, exit 5, no snapshot called damaged, and
# nothing restored (the checker's failed write passed for a damaged current snapshot; the
# previous one was then checked on a copy of data.mdb, and called damaged too, in three lines)
prolly recover --apply >/dev/full 2>.err
echo "recover --apply >/dev/full: exit $?, $(wc -l <.err) line: $(cat .err)"
p recover
p put main b 23
p log main --limit 1
ls -A store
# A store that cannot be opened for a reason other than damage (here lock.mdb is a directory;
# as often a lock.mdb or directory this user may not write) is not called damaged: recover
# says it cannot check it, looks no further and restores nothing.
rm store/lock.mdb
mkdir store/lock.mdb
pe recover
pe recover --apply
rmdir store/lock.mdb
p get main b
# recover's own checker killed by SIGKILL (kill -9 of its pid, the out-of-memory killer) is no
# sign of damage: the snapshot is unchecked and nothing is restored (it was called damaged, and
# --apply went on to make the older snapshot current over a sound store). The checker is held
# at liblmdb's lock (another process holds byte 0 of lock.mdb exclusively) until it is killed.
: >locked # there before the holder writes to it: the wait below never reads a missing file
perl -e 'use Fcntl; open(my $f, "+<", $ARGV[0]) or die "$!"; $| = 1;
	fcntl($f, F_SETLK, pack("s s x4 q q i x4", F_WRLCK, SEEK_SET, 0, 1, 0)) or die "$!";
	print "locked\n"; sleep 60' store/lock.mdb >locked &
holder=$!
i=0
while ! grep -q locked locked && [ $i -lt 500 ]; do
	sleep 0.01
	i=$((i + 1))
done
"$PROLLY_BIN" recover --apply >recover.out 2>recover.err &
pid=$!
child=
i=0
while [ -z "$child" ] && [ $i -lt 500 ]; do
	child=$(cat /proc/$pid/task/$pid/children 2>/dev/null)
	sleep 0.01
	i=$((i + 1))
done
[ -n "$child" ] && kill -9 $child
kill $holder
wait $holder 2>/dev/null
wait $pid
echo "recover --apply, its checker killed: exit $?"
cat recover.out recover.err
p get main b
p log main --limit 1
