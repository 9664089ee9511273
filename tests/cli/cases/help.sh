# --help, COMMAND --help, help COMMAND, --version, and usage errors before any store is touched.
p --version
p --help
p put --help
p help merge
p scan -h
pe
pe nosuchcommand
pe --bogus init
pe --store
pe help nosuchcommand
# nothing was created by any of these
ls
