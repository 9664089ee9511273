# merge --resolve delete-wins and update-wins: a key one side deleted and the other changed.
#@ any-store
p init
printf 'put\td1\tbase\nput\td2\tbase\nput\tboth\tbase\nput\tkeep\tbase\n' | p apply main -
p branch dev main
printf 'del\td1\nput\td2\tours\n' | p apply main -
printf 'put\td1\ttheirs\ndel\td2\n' | p apply dev -
p branch main2 main
p branch main3 main
pe merge main dev
pe merge main dev --resolve delete-wins
p scan main
p merge main2 dev --resolve update-wins
p scan main2
# both sides set a key differently: delete-wins and update-wins leave it a conflict
p put main3 both ours3
p put dev both theirs3
pe merge main3 dev --resolve delete-wins
pe merge main3 dev --resolve update-wins
pe merge main3 dev --resolve newest
