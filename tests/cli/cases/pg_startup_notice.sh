# A WARNING the server sends while a session starts (here: the database's own setting is invalid)
# never reaches stderr. Every command on such a database printed
# "WARNING:  invalid value for parameter ..." before, even a successful init. A connection that
# then fails names it in its one error line.
#@ pg-only
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -d "$PROLLY_STORE" -c "$1" 2>/dev/null; }
# The store with one more keyword.
plus() {
	case $PROLLY_STORE in
	*://*\?*) printf '%s&%s' "$PROLLY_STORE" "$1" ;;
	*://*) printf '%s?%s' "$PROLLY_STORE" "$1" ;;
	*) printf '%s %s' "$PROLLY_STORE" "$1" ;;
	esac
}
sql "ALTER DATABASE \"$(sql 'SELECT current_database()')\" SET default_text_search_config = 'nosuch'"
p init
p put main k v
p get main k
p branch dev main
p scan dev
# The reason, without the server's address, which changes from run to run.
PROLLY_STORE=$(plus target_session_attrs=standby) prolly get main k 2>&1 >/dev/null | sed -E 's/.*failed: //'
