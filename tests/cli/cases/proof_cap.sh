# prove refuses, before writing anything, a proof larger than the 256 MiB that check-proof reads
# (it used to write it, and check-proof then refused it). LMDB only: 4,097 values of 64 KiB
# (256 MiB and a bit) are about 4 s and 270 MB of disk here, and far longer on a server.
#@ slow
p init
perl -e '$v = "x" x 65536; printf("put\tk%05d\t%s\n", $_, $v) for 1 .. 4097' | prolly apply main - >/dev/null
prolly prove main k00001 --to k99999 >big.proof 2>err
echo "prove: exit $?: $(wc -c <big.proof) bytes written: $(cat err)"
# a range under the cap is proved and checks
prolly prove main k00001 --to k00003 >small.proof
prolly check-proof "$(prolly root main)" small.proof >checked
echo "check-proof: exit $?: $(head -1 checked)"
rm -rf big.proof store
