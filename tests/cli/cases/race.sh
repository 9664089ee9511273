# A branch that moves between the read of its head and the commit (apply reads the head first,
# then its input; a put lands in between):
#  - the edits land on the moved head when none of their keys was written meanwhile (exit 0);
#  - a key they change was written meanwhile: nothing is committed (exit 4), nothing is lost;
#  - with a delr line (a range) they land on the moved head unless a key inside the range, or one
#    a put or del line writes, was written meanwhile (exit 4).
#@ any-store
p init
p put main a 1
# apply_racing INPUT KEY VALUE: apply INPUT while `put main KEY VALUE` lands after its head read
apply_racing() {
	rm -f fifo
	mkfifo fifo
	PROLLY_COMMIT_TIME=1800000000000000 "$PROLLY_BIN" apply main - <fifo >apply.out 2>apply.err &
	local pid=$! i=0
	exec 3>fifo
	# wait until apply is blocked reading its input (it has read the head by then); on an lmdb:
	# store the reading process is the tool's child (src/cli/isolate.c), the parent only waits
	while [ $i -lt 250 ]; do
		case $(cat /proc/$pid/wchan $(pgrep -P $pid | sed 's|.*|/proc/&/wchan|') 2>/dev/null) in
		*pipe*) break ;;
		esac
		sleep 0.02
		i=$((i + 1))
	done
	p put main "$2" "$3"
	printf '%b' "$1" >&3
	exec 3>&-
	wait $pid
	echo "apply exit $?"
	cat apply.out
	sed 's/^/stderr: /' apply.err
	p scan main
}
# another key: both land, the apply's commit on top of the put's
apply_racing 'put\tc\t3\n' b 2
p log main --limit 2
# the same key: the apply commits nothing
apply_racing 'put\tc\tmine\n' c theirs
# a range: lands on the moved head when the key written meanwhile is outside it
apply_racing 'delr\ta\tb\n' d 4
# ... and commits nothing when it is inside (here the put's new key 'bb' in [b, c))
apply_racing 'delr\tb\tc\n' bb 5
# a put line and a range: the put's key written meanwhile is a conflict too
apply_racing 'put\te\tmine\ndelr\tx\ty\n' e theirs
# run again, it succeeds
printf 'delr\tb\tc\n' | p apply main -
p scan main
