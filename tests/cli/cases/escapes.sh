# Keys and values are escaped text: \\ \t \n \xHH in, the same out; everything else verbatim.
# Not run on PostgreSQL too: the escapes are the CLI's parsing and printing; binary keys and
# values of every byte reach that store in round_trip, which runs on both.
p init
p put main 'tab\there' 'line1\nline2'
p put main 'back\\slash' 'a\\b\\\\c'
p put main 'bin\x00\x01' '\x00\xff\x7f\x80'
p put main 'UPPER\xAB' 'hex case'
p put main 'caf'$'\xc3\xa9' 'utf-8 bytes in, escaped out'
p put main 'spaces and ~!@#$%^&*()' 'printable ASCII stays as is'
p scan main
p get main 'tab\there'
p get main 'bin\x00\x01'
p get main 'UPPER\xab'
p get main 'caf\xc3\xa9'
# --raw writes the bytes themselves
prolly get main 'bin\x00\x01' --raw | od -An -tx1
prolly get main 'tab\there' --raw | od -An -c
# a round trip: scan output fed back through apply gives the same tree
prolly scan main | sed 's/^/put\t/' >dump.txt
p branch copy main~6
p apply copy dump.txt
test "$(prolly root copy)" = "$(prolly root main)" && echo "same root after round trip"
# bad escapes are bad input
pe put main 'a\qb' v
pe put main 'trailing\' v
pe put main k 'short\x4'
pe put main k '\xzz'
pe get main '\N'
pe scan main --prefix 'x\'
