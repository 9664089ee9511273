# Bad usage is exit 2 with one line on stderr; -- ends options.
# Not run on PostgreSQL too: the parsing is the CLI's own, and the 2 KiB key and 64 KiB value
# reach that store in round_trip, which runs on both.
p init
pe put
pe put main
pe put main k v extra
pe put main k v --bogus
pe put main k v -m
pe put main k v -x
pe scan main --reverse=yes
pe get --raw
# arguments that start with '-' come after --
pe put main -k v
p put main -- -k -v
p get main -- -k
p scan main
p put -m msg main -- -- --
p get main -- --
# a lone - is an argument
p put main - dash
p get main -
# an option the form does not take is refused, not ignored: branch -f NEW FROM did not move NEW
p branch dev main
pe branch dev main --force
pe branch -f dev2 main
pe branch --restore dev -f
p branch -d dev -f
# help has no page of its own: help help and help --help are the overview; one command only
prolly help help | head -1; echo "exit ${PIPESTATUS[0]}"
prolly help --help | head -1; echo "exit ${PIPESTATUS[0]}"
pe help put extra
# PROLLY_COMMIT_TIME must be a number
PROLLY_COMMIT_TIME=soon pe put main k v
PROLLY_COMMIT_TIME=-5 pe put main k v
# sizes: keys up to 2048 bytes, values up to 65536
long=$(head -c 2049 /dev/zero | tr '\0' k)
prolly put main "$long" v; echo "exit $?"
prolly put main "${long%k}" v | wc -l
prolly put main k "$(head -c 65537 /dev/zero | tr '\0' v)"; echo "exit $?"
prolly put main k "$(head -c 65536 /dev/zero | tr '\0' v)" | wc -l
prolly get main k | wc -c
# a bound or prefix over 2048 bytes is refused as a key is (scan and diff used to take it)
prolly scan main --from "$long" | wc -l; echo "exit ${PIPESTATUS[0]}"
prolly scan main --to "$long" --reverse | wc -l; echo "exit ${PIPESTATUS[0]}"
prolly scan main --prefix "$long" | wc -l; echo "exit ${PIPESTATUS[0]}"
prolly diff main main --from "$long" | wc -l; echo "exit ${PIPESTATUS[0]}"
prolly diff main main --to "$long" | wc -l; echo "exit ${PIPESTATUS[0]}"
prolly diff main main --prefix "$long" | wc -l; echo "exit ${PIPESTATUS[0]}"
prolly scan main --from "${long%k}" --to "${long%k}" --prefix "${long%k}"; echo "exit $?"
