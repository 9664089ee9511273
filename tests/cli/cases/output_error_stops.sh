# Output that cannot be written stops the command at once (exit 5, "cannot write the output"):
# it used to read on to the end (a whole tree, a whole history) writing nowhere, so that a damaged
# node far past the failed write was read, and reported, too. SIGPIPE ignored (a service, a
# parent that ignores it) makes a closed pipe the same case as a full disk.
p init
awk 'BEGIN { for (i = 0; i < 20000; i++) printf "put\tkey%05d\tvalue %d\n", i, i }' |
	prolly apply main - >/dev/null
p put main zzz 'CORRUPTME-0123456789'
perl -0777 -pi -e 's/CORRUPTME/CORRUPTED/g' store/data.mdb
pe get main zzz
# (diff and log read a level of nodes, or 256 commits, ahead of what they print: a damaged one
# there is found before the output fails, so they are not shown here)
for cmd in "scan main" "scan main --prefix key"; do
	prolly $cmd >/dev/full 2>.err
	echo "$cmd >/dev/full: exit $?: $(cat .err)"
	(
		trap '' PIPE
		prolly $cmd 2>.err | head -c 1 >/dev/null
		echo "$cmd | head -c 1, SIGPIPE ignored: exit ${PIPESTATUS[0]}: $(cat .err)"
	)
done
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "key%05d\n", i; print "zzz" }' |
	prolly get-many main >/dev/full 2>.err
echo "get-many >/dev/full: exit $?: $(cat .err)"
