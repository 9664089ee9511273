# diff FROM TO: + added, - removed, ~ changed, in key order; FROM and TO are any specs.
#@ any-store
p init
printf 'put\ta\t1\nput\tb\t2\nput\tc\t3\nput\td\t4\n' | p apply main -
p branch old main
printf 'del\tb\nput\tc\tthree\nput\te\t5\nput\ta\t1\n' | p apply main -
p diff old main
p diff main old
p diff main main
p diff main~1 main
p diff main~2 main
p diff "$(prolly log main --limit 1 | head -1 | cut -f2)" old
p put main 'x\ty' 'a\nb'
p diff main~1 main
p diff main nosuch
pe diff main
