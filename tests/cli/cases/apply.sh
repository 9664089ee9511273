# apply: a whole file in one commit; a malformed line rejects everything and names the line.
#@ any-store
p init
printf 'put\ta\t1\nput\tb\t2\n\n# a comment\nput\tc\tx\\ty\ndel\tb\nput\td\t4' >edits.txt
p apply main edits.txt
p scan main
prolly log main --limit 1 | grep message
# stdin, with -m
printf 'put\te\t5\ndel\ta\n' | p apply main - -m "from stdin"
p scan main
prolly log main --limit 1 | grep message
# the same key twice: the last one wins
printf 'put\tk\tfirst\nput\tk\tsecond\n' | p apply main -
p get main k
# an empty file (or one that changes nothing) makes no commit: the head is printed
: >empty.txt
p apply main empty.txt
printf 'put\tk\tsecond\n' | p apply main -
prolly log main --limit 1 | grep message
# unless --allow-empty
p apply main empty.txt --allow-empty
prolly log main --limit 1 | grep message
p diff main~1 main
# Windows line ends are refused with the line number
printf 'put\tcr\t1\nput\tcr2\t2\r\n' | pe apply main -
before=$(prolly log main | grep -c '^commit')
# malformed files: nothing is committed, the line is named
printf 'put\tx\t1\nput\ty\t2\nupsert\tz\t3\nput\tw\t4\n' >bad1.txt
pe apply main bad1.txt
printf 'put\tx\t1\ndel\tx\textra\n' >bad2.txt
pe apply main bad2.txt
printf 'put\tx\n' >bad3.txt
pe apply main bad3.txt
printf 'put\tx\t1\n\nput\tx\\q\t2\n' >bad4.txt
pe apply main bad4.txt
printf 'put\tx\t1\tmore\n' >bad5.txt
pe apply main bad5.txt
printf 'del\tx\n\nput\tok\tok\nput\tk\t\\x1\n' | pe apply main -
after=$(prolly log main | grep -c '^commit')
echo "commits before $before, after $after"
p get main x
# missing file, missing branch, read-only spec
pe apply main nosuchfile.txt
pe apply nosuchbranch edits.txt
pe apply main~1 edits.txt
# a line longer than any valid one (put, a 2048-byte key and a 65536-byte value, all as \xHH) is
# refused once that much is read: /dev/zero, a file with no newline, used to be read until memory
# ran out
timeout 20 "$PROLLY_BIN" apply main /dev/zero 2>.err
echo "apply /dev/zero: exit $?: $(cat .err)"
{
	printf 'put\t%s\t' "$(head -c 2048 /dev/zero | tr '\0' k | sed 's/k/\\x6b/g')"
	head -c 65536 /dev/zero | tr '\0' v | sed 's/v/\\x76/g'
	printf '\n'
} >longest.tsv
p apply main longest.tsv
prolly get main "$(head -c 2048 /dev/zero | tr "\0" k)" --raw | wc -c
