# init on a PostgreSQL schema that older libraries made: it migrates the schema as the owner,
# and fails (exit 5) where it cannot finish: old rows whose bytes do not hash to their id, a
# role that may not migrate. It used to say "already initialized" and exit 0 in both cases,
# leaving the check unvalidated or the schema at its old version.
#@ pg-only
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -d "$PROLLY_STORE" -c "$1"; }
# The store as ROLE (the URL's user replaced).
as_role() {
	case $PROLLY_STORE in
	*://*\?*) printf '%s&user=%s' "$PROLLY_STORE" "$1" ;;
	*://*) printf '%s?user=%s' "$PROLLY_STORE" "$1" ;;
	*) printf '%s user=%s' "$PROLLY_STORE" "$1" ;;
	esac
}
# The error line, without the server's address and the role, which change from run to run.
err() { prolly "$@" 2>&1 >/dev/null | sed -E 's/on database [^ ]+ on [^ ]+ as [^ ]+/on DB/; s/(store|initialize) [^ ]+:/\1 URL:/'; }
# p as the writer role, the role's part of the URL left out of what it prints.
pw() { PROLLY_STORE=$(as_role "$role") p "$@" | sed -E 's/[?& ]user=[a-z0-9_]+//'; }
version() { sql "SELECT value FROM meta WHERE key = 'schema_version'"; }
p init
p put main k v
# A version-3 schema (no check on the node table) holding a row whose bytes are not its id's.
sql "ALTER TABLE nodes DROP CONSTRAINT nodes_id_is_sha256"
sql "UPDATE meta SET value = 3 WHERE key = 'schema_version'"
sql "INSERT INTO nodes VALUES (sha256('x'), 'junk')"
p init
err init
version
sql "SELECT convalidated FROM pg_constraint WHERE conname = 'nodes_id_is_sha256'"
sql "DELETE FROM nodes WHERE id = sha256('x')"
p init
sql "SELECT convalidated FROM pg_constraint WHERE conname = 'nodes_id_is_sha256'"
p get main k
# A version-1 schema (no prolly_write, no check) and a writer with the grants of docs/postgres.md: it
# writes, but its init cannot migrate and says so; the owner's init then does.
sql "DROP FUNCTION prolly_write(bigint, boolean, bytea[], bytea[], bytea[], bytea[], int[], bytea[], boolean[], bytea[])"
sql "ALTER TABLE nodes DROP CONSTRAINT nodes_id_is_sha256"
sql "UPDATE meta SET value = 1 WHERE key = 'schema_version'"
role=$(sql "SELECT current_database()")_w
sql "CREATE ROLE $role LOGIN"
sql "GRANT USAGE ON SCHEMA public TO $role"
sql "GRANT SELECT, INSERT ON nodes TO $role"
sql "GRANT SELECT, INSERT, UPDATE, DELETE ON refs TO $role"
sql "GRANT SELECT ON meta TO $role"
pw put main k2 v2
pw init
PROLLY_STORE=$(as_role "$role") err init
version
p init
version
pw init
pw scan main
sql "DROP OWNED BY $role"
sql "DROP ROLE $role"
# Tables the current init made holding the meta rows of an older store (a data-only dump of a
# version-1 or -3 schema restored into them, docs/postgres.md "Backups"): the version says the
# check is missing while the table has it. init migrates all the same; it used to fail for
# good with "constraint \"nodes_id_is_sha256\" for relation \"nodes\" already exists".
sql "UPDATE meta SET value = 1 WHERE key = 'schema_version'"
p init
version
p put main k3 v3
