# LMDB: the tool runs the command in a child process (a crash in liblmdb is reported, not
# suffered). A kill of the tool's pid alone (kill -9 PID, a supervisor's timeout) reaches only
# the parent; the child must die with it, not commit the stopped write later behind the user's
# back. Here an apply is killed while it waits for its input, and the input then ends.
p init
p put main a 1
mkfifo fifo
( # (stderr: the shell's note that a job was killed)
	PROLLY_COMMIT_TIME=1800000000000000 "$PROLLY_BIN" apply main fifo >apply.out 2>&1 &
	pid=$!
	exec 3>fifo # returns once the child has opened its input
	child=$(cat /proc/$pid/task/$pid/children 2>/dev/null)
	printf 'put\tk\tv\n' >&3
	kill -9 $pid
	wait $pid
	echo "apply killed: exit $?"
	exec 3>&-
	# an orphaned child would now read the end of its input and commit
	i=0
	while [ -n "$child" ] && kill -0 $child 2>/dev/null && [ $i -lt 250 ]; do
		sleep 0.02
		i=$((i + 1))
	done
) 2>/dev/null
pe get main k
p scan main
p log main --limit 1
# The child doing the work killed alone (kill -9 of its pid; the kernel's out-of-memory killer
# picks the process that holds the memory): nothing is committed, and it is not reported as
# damage, which no SIGKILL is.
(
	"$PROLLY_BIN" apply main fifo >apply2.out 2>&1 &
	pid=$!
	exec 3>fifo
	child=$(cat /proc/$pid/task/$pid/children 2>/dev/null)
	[ -n "$child" ] && kill -9 $child
	wait $pid
	echo "apply's child killed: exit $?"
	exec 3>&-
) 2>/dev/null
cat apply2.out
pe get main k
