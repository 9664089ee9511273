# Exit 4: apply reads the branch head first, then its input; a commit landing in between wins
#@ any-store
# the compare-and-swap and apply commits nothing.
p init
p put main a 1
mkfifo fifo
PROLLY_COMMIT_TIME=1800000000000000 "$PROLLY_BIN" apply main - <fifo >apply.out 2>apply.err &
pid=$!
exec 3>fifo
# wait until apply is blocked reading its input (it has read the head by then)
i=0
while [ $i -lt 250 ]; do
	case $(cat /proc/$pid/wchan 2>/dev/null) in
	*pipe*) break ;;
	esac
	sleep 0.02
	i=$((i + 1))
done
p put main b 2
printf 'put\tc\t3\n' >&3
exec 3>&-
wait $pid
echo "apply exit $?"
cat apply.out
sed 's/^/stderr: /' apply.err
p scan main
# run again, it succeeds
printf 'put\tc\t3\n' | p apply main -
p scan main
