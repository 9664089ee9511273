# How prolly prints text (docs/cli.md, "How prolly prints text"): standard output is data, and
# every text a user or a store gave (messages, keys, values, names, URLs) is written in the one
# reversible escaped form, to a terminal as to a pipe: a backslash is always \\, so \x1b in
# output is always the byte and the text "\x1b" typed as it is prints as \\x1b. The error line
# on standard error is for people: text kept, backslashes as typed, control bytes as \xHH.
# Not run on PostgreSQL too: the escaping is the CLI's printing, and messages, keys, values
# and remote URLs are bytes to the store (round_trip, log and remote run on both stores).
p init
p put main k 1 -m 'back\slash'
p put main k 2 -m $'new\nline and\ttab'
p put main k 3 -m $'esc \e[2J'
p put main k 4 -m $'not UTF-8: \xff \xc3( \xed\xa0\x80; UTF-8: caf\xc3\xa9'
p put main k 5 -m 'the text of escapes: \x1b[2J \n \t \\'
p log main
# keys and values: the byte and the text of its escape print apart
p put main 'esc\x1b' 'v\x1b'
p put main 'lit\\x1b' 'v\\x1b'
p scan main --prefix esc
p scan main --prefix lit
# store and remote URLs on standard output follow the same rule
p --store 'lmdb:lit\x1b' init
p --store $'lmdb:esc\x1b' init
p remote add lit 'lmdb:/tmp/lit\x1b'
p remote add bs 'lmdb:/tmp/a\b'
p remote list
# standard error quotes what was typed, for people: the byte as \x1b, the text as it is
pe get $'esc\x1b' k
pe get 'lit\x1b' k
