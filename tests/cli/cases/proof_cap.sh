# prove refuses, before writing anything, a proof larger than check-proof reads: 256 MiB, or
# --max-bytes N on both (prove used to write it, and check-proof then refused it). The bound's
# paths are run with --max-bytes 1048576 (17 values of 64 KiB make a proof over it); the default
# bound is checked where that costs nothing, on a file's size. LMDB only.
p init
perl -e '$v = "x" x 65536; printf("put\tk%05d\t%s\n", $_, $v) for 1 .. 17' | prolly apply main - >/dev/null
prolly prove main k00001 --to k99999 --max-bytes 1048576 >big.proof 2>err
echo "prove --max-bytes: exit $?: $(wc -c <big.proof) bytes written: $(cat err)"
# the same proof under the default bound is written, and checks; with the lower bound
# check-proof refuses it before reading it
prolly prove main k00001 --to k99999 >big.proof
echo "prove: exit $?: over 1 MiB: $([ "$(wc -c <big.proof)" -gt 1048576 ] && echo yes)"
tree=$(prolly root main)
prolly check-proof "$tree" big.proof | head -1
pe check-proof "$tree" big.proof --max-bytes 1048576
# a range under the bound is proved and checks
prolly prove main k00001 --to k00003 --max-bytes 1048576 >small.proof
prolly check-proof --max-bytes 1048576 "$tree" small.proof >checked
echo "check-proof: exit $?: $(head -1 checked)"
# check-proof refuses input over the bound (exit 2) before it is read (a file) or once the bound
# is passed (a stream): it used to be read whole, /dev/zero until memory ran out. Here rather
# than in proof, which runs on both stores: check-proof opens no store.
truncate -s 268435457 huge.proof
pe check-proof "$tree" huge.proof
timeout 20 "$PROLLY_BIN" check-proof --max-bytes 1048576 "$tree" /dev/zero 2>err >/dev/null
echo "check-proof /dev/zero: exit $?: $(cat err)"
truncate -s 1048576 cap.proof
pe check-proof --max-bytes 1048576 "$tree" cap.proof
head -c 1048577 /dev/zero | "$PROLLY_BIN" check-proof --max-bytes 1048576 "$tree" - 2>err
echo "check-proof - <stream>: exit $?: $(cat err)"
# the bound is a positive number of bytes
pe check-proof --max-bytes 0 "$tree" small.proof
pe prove main k00001 --max-bytes 1M
rm -rf big.proof huge.proof cap.proof store
