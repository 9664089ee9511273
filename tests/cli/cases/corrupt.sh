# A node whose bytes no longer hash to its id is corruption: exit 5, never a wrong answer.
p init
p put main secret 'CORRUPTME-0123456789'
p put main other fine
prolly verify main~1 | cut -f1
prolly verify main | cut -f1
perl -0777 -pi -e 's/CORRUPTME/CORRUPTED/g' store/data.mdb
p verify main
p verify main --history
p get main secret
p get main other
p scan main
p diff main~2 main
p stats main
# commits are intact, so listing branches still works
prolly branches | cut -f1
