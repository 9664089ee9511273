# prove REF KEY [--to KEY2] and check-proof TREE_ID FILE: valid proofs print what they prove,
# invalid ones exit 3 with the reason.
#@ any-store
p init
for i in 1 2 3 4 5 6 7 8 9; do echo "put	k$i	v$i"; done | prolly apply main - >/dev/null
tree=$(prolly root main)
prolly prove main k3 >k3.proof
p check-proof "$tree" k3.proof
prolly prove main k0 >k0.proof
p check-proof "$tree" k0.proof
prolly prove main k2 --to k5 >range.proof
p check-proof "$tree" - <range.proof
prolly prove main k5 --to k5 >empty.proof
p check-proof "$tree" empty.proof
# another tree: the proof is not of it (exit 3)
p put main k3 changed
pe check-proof "$(prolly root main)" k3.proof
# a changed value, a truncated proof
sed 's/v3/v8/' k3.proof >bad.proof
pe check-proof "$tree" bad.proof
head -c 40 k3.proof >short.proof
pe check-proof "$tree" short.proof
pe check-proof nothex k3.proof
pe check-proof "$tree" nosuch.proof
# an input that cannot be opened or read for another reason is bad input (exit 2), as for apply;
# a directory was exit 5, a store error, though check-proof opens no store
pe check-proof "$tree" k3.proof/x
pe check-proof "$tree" .
pe prove main k5 --to k1
# a proof that cannot be written: exit 5 and one error line (it used to print two)
prolly put main big "$(head -c 10000 /dev/zero | tr '\0' x)" >/dev/null
prolly prove main big >/dev/full 2>err
echo "prove >/dev/full: exit $?: $(wc -l <err) line(s): $(cat err)"
