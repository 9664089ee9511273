# What a user types or a store holds reaches the terminal only as text: control bytes in any
# argument, option value, key or URL come out as \xHH, UTF-8 text stays, and a message
# quoting a huge argument is one line of at most 1 KiB keeping its end. Keys longer than the
# limit are refused by every command that takes one, not reported "not found".
# Not run on PostgreSQL too: what is escaped is the CLI's printing; keys of every byte value
# reach that store in round_trip, which runs on both.
p init
esc=$'\e]0;owned\a\e[2J'
c1=$'\xc2\x9b31m'
pe get main "k$esc"
pe get "main$esc" k
pe diff main main --limit "3$esc"
pe merge main main --resolve "$c1"
# bytes that are not UTF-8 are shown as \xHH too: a lone 0x9b is CSI to a terminal in an 8-bit
# mode (a Latin-1 xterm). 0xc3 before '(', a UTF-16 surrogate (ed a0 80), overlong forms (c0 af,
# e0 80 80), a code point past U+10FFFF (f4 90 80 80), a C1 control (c2 9f) and a cut 4-byte
# character (f0 9f) are no text; the euro sign, an emoji, U+FFFD and a no-break space are
pe get $'main\x9b2J' k
pe merge main main --resolve $'\xc3(\xed\xa0\x80\xe2\x82\xac\xc0\xaf\xf4\x90\x80\x80\xf0\x9f\x98\x80\xe0\x80\x80\xef\xbf\xbd\xc2\xa0\xc2\x9f\xf0\x9f'
pe branch x main "extra$esc"
pe get $'caf\xc3\xa9' k
PROLLY_COMMIT_TIME="1$esc" pe root main
# init names the store it made on stdout: a path holding control bytes (or a newline, which
# made a second line of output) is escaped as every text on stdout is (printed_text)
p --store "lmdb:st${esc}ore" init
p --store $'lmdb:st\nore' init
p --store $'lmdb:st\nore' init
# a URL holding control bytes is not stored as a remote
pe remote add r "lmdb:/tmp/x$esc"
p remote list
# a huge argument: one line, at most 1 KiB, the reason at its end kept
huge=$(head -c 100000 /dev/zero | tr '\0' 7)
prolly diff main main --limit "${huge}x" 2>.err
echo "diff --limit of ${#huge} digits: exit $?, $(wc -l <.err) line, $(wc -c <.err) bytes, ends: $(tail -c 40 .err)"
# keys over the 2048-byte limit
long=$(head -c 3000 /dev/zero | tr '\0' k)
for cmd in get del history prove; do
	pe $cmd main "$long" | sed 's/kkkk*/<3000 k>/'
done
printf 'k\n%s\n' "$long" | prolly get-many main 2>&1 | sed 's/kkkk*/<3000 k>/'
