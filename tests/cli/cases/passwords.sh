# Passwords are never printed back: store URLs and connection strings that fail (the server is
# never reached: /nonexistent has no socket), a URL given where a command or an argument goes,
# a misspelled password keyword that libpq refuses by name, sslpassword, and libpq's own
# complaints that quote a piece of the connection string.
unset PGHOST PGPORT PGDATABASE PGUSER PGPASSWORD PGSERVICE
pe --store 'postgresql://u:Sekr1t@/db?host=/nonexistent' branches
pe branches --store=postgresql://u:Sekr1t@h/db
pe branches --store postgresql://u:Sekr1t@h/db
pe --Store=postgresql://u:Sekr1t@h/db branches
pe init postgresql://u:Sekr1t@h/db
pe postgresql://u:Sekr1t@h/db
pe --store 'POSTGRESQL://u:Sekr1t@h/db' branches
pe --store 'host=/nonexistent PASSWORD=Sekr1t' branches
pe --store 'host=/nonexistent passwd=Sekr1t' branches
pe --store 'host=/nonexistent sslpassword=Sekr1t' branches
pe --store 'postgresql:///db?host=/nonexistent&passwd=Sekr1t' branches
pe --store 'postgresql://u:Sekr1t%zz@/db' branches
pe --store 'host=/nonexistent password=Sekr 1t' branches
pe --store 'host=/nonexistent password Sekr1t' branches
PROLLY_STORE='host=/nonexistent password=Sekr1t' pe log main
# and nowhere in any of it
{
	prolly --store 'postgresql://u:Sekr1t@/db?host=/nonexistent' branches
	prolly branches --store=postgresql://u:Sekr1t@h/db
	prolly --Store=postgresql://u:Sekr1t@h/db branches
	prolly --store 'host=/nonexistent PASSWORD=Sekr1t' branches
	prolly --store 'host=/nonexistent sslpassword=Sekr1t' branches
	prolly --store 'postgresql://u:Sekr1t%zz@/db' branches
	prolly --store 'host=/nonexistent password=Sekr 1t' branches
} 2>&1 | grep -c Sekr
# a URL typed where a branch, remote, key or value goes (the --store forgotten): the library's
# message quotes the argument, and it was printed with its password
p init
u=postgresql://u:Sekr1t@h/db
pe scan "$u"
pe log "$u~1"
pe put "$u" k v
pe fetch "$u"
pe push "$u" main
pe remote remove "$u"
pe get main "$u"
pe reflog "refs/heads/$u"
pe scan main --limit "$u"
pe gc --keep "$u"
pe scan 'host=h password=Sekr1t'
{
	for cmd in scan log root stats verify get-many branch merge-base; do
		prolly $cmd "$u" main </dev/null
	done
	prolly pull "$u" main
	prolly merge main "$u"
	prolly revert main main -m "$u"
	prolly merge main main --resolve "$u"
	prolly diff "$u" main
	prolly history "$u" k
	prolly prove "$u" k
	prolly tag "$u"
} 2>&1 | grep -c Sekr
# a long URL where a remote name or a tag goes: the library quotes a name by its first 40
# bytes, which cut the password before its '@', and the cut password was printed
long=postgresql://u:Sekr1tSekr1tSekr1tSekr1tSekr1tSekr1t@h/db
pe fetch "$long"
pe tag "$long$long$long$long"
