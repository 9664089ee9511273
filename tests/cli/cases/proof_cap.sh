# prove refuses, before writing anything, a proof larger than the 256 MiB that check-proof reads
# (it used to write it, and check-proof then refused it). LMDB only: 4,097 values of 64 KiB
# (256 MiB and a bit) are about 4 s and 270 MB of disk here, and far longer on a server.
#@ slow
p init
perl -e '$v = "x" x 65536; printf("put\tk%05d\t%s\n", $_, $v) for 1 .. 4097' | prolly apply main - >/dev/null
prolly prove main k00001 --to k99999 >big.proof 2>err
echo "prove: exit $?: $(wc -c <big.proof) bytes written: $(cat err)"
# a range under the cap is proved and checks
tree=$(prolly root main)
prolly prove main k00001 --to k00003 >small.proof
prolly check-proof "$tree" small.proof >checked
echo "check-proof: exit $?: $(head -1 checked)"
# check-proof refuses input over the cap (exit 2) before it is read (a file) or once the cap is
# passed (a stream): it used to be read whole, /dev/zero until memory ran out. Here rather than in
# proof, which runs on both stores: check-proof opens no store, and each of these reads 256 MiB.
truncate -s 268435457 huge.proof
pe check-proof "$tree" huge.proof
timeout 20 "$PROLLY_BIN" check-proof "$tree" /dev/zero 2>err >/dev/null
echo "check-proof /dev/zero: exit $?: $(cat err)"
truncate -s 268435456 cap.proof
pe check-proof "$tree" cap.proof
head -c 268435457 /dev/zero | "$PROLLY_BIN" check-proof "$tree" - 2>err
echo "check-proof - <stream>: exit $?: $(cat err)"
rm -rf big.proof huge.proof cap.proof store
