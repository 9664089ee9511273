# Any bytes survive the text form: scan's lines, each after `put<TAB>`, are an apply file that
# makes the same tree in another store (docs/cli.md, apply), whatever the keys and values hold:
# every byte value, the empty key and value, a key of 2048 bytes and a value of 65536 bytes
# (the limits). get-many answers scan's keys with scan's own lines. A file's bytes go in through
# apply, written \xHH by od (an argument of 128 KiB or more is refused by the system before
# prolly runs, and \xHH takes 4 bytes per byte), and come out with get --raw.
#@ any-store
p init
awk 'BEGIN {
	for (i = 0; i < 256; i++) {
		v = ""
		for (j = 0; j < 256; j++)
			v = v sprintf("\\x%02x", (i + j) % 256)
		printf "put\t\\x%02x\t%s\n", i, v
		printf "put\tk\\x%02xk\t\\x%02x\n", i, i
	}
	printf "put\t\t\n"
	printf "put\tempty value\t\n"
	k = ""
	for (i = 0; i < 2048; i++)
		k = k "\\xff"
	printf "put\t%s\tthe longest key\n", k
	v = ""
	x = 1
	for (i = 0; i < 65536; i++) {
		x = (x * 1103515245 + 12345) % 2147483648
		v = v sprintf("\\x%02x", int(x / 65536) % 256)
	}
	printf "put\tthe largest value\t%s\n", v
}' >in.tsv
prolly apply main in.tsv >/dev/null
prolly stats main | head -1
prolly scan main | sed 's/^/put\t/' >dump.tsv
PROLLY_STORE=lmdb:copy p init
PROLLY_STORE=lmdb:copy prolly apply main dump.tsv >/dev/null
test "$(prolly root main)" = "$(PROLLY_STORE=lmdb:copy prolly root main)" && echo "same root in the copy"
prolly scan main | cut -f1 | prolly get-many main | cmp -s - <(prolly scan main) &&
	echo "get-many of scan's keys prints scan's lines"
for i in {0..255}; do
	printf -v octal '\\%03o' "$i"
	printf "$octal"
done >bytes.bin
{
	printf 'put\tfile\t'
	od -An -v -tx1 bytes.bin | tr -d ' \n' | sed 's/../\\x&/g'
	echo
} | prolly apply main - >/dev/null
prolly get main file --raw | cmp - bytes.bin && echo "get --raw gives the file's 256 bytes back"
p get main file
