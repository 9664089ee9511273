# A password file that others can read: libpq ignores it and prints its own WARNING on stderr,
# once for each connection a command opens, naming the file it was given and nothing of what is
# in it; the command's output on stdout is as ever, and nothing else is added to stderr. The
# case's database trusts its user, so every command still connects. (The store opens its
# connections with libpq, which writes that WARNING itself: no notice processor sees it.)
#@ pg-only
printf '*:*:*:*:never-shown-pw\n' >pgpass
chmod 644 pgpass
export PGPASSFILE=pgpass
p init
p put main k v
p get main k
p scan main
# a failure still has its one line of reason after libpq's WARNING
pe get main nope
# nothing of the file's content, on any stream
prolly get main k 2>&1 | grep -c never-shown-pw
