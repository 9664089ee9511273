# Inputs whose every key (and value) is empty: apply and get-many hold their decoded keys in an
# arena that then never grew, and used to add offsets to its NULL pointer (undefined behaviour,
# reported by clang's UBSan).
p init
printf 'delr\t\t\n' | p apply main -
printf 'del\t\n' | p apply main -
printf 'put\t\t\n' | p apply main -
p get main ''
printf '\n' | p get-many main
printf 'del\t\n' | p apply main -
printf '\n\n' | p get-many main
