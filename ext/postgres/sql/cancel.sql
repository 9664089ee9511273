-- cancel: statement_timeout stops a long scan or diff inside the engine's loops, and the
-- backend's handle goes on working afterwards.
SELECT prolly_count('big') AS big;
SET statement_timeout = '200ms';
-- 100 scans of 200,000 records
SELECT count(*) FROM generate_series(1, 100) g, LATERAL prolly_scan('big') s;
-- a diff of 200,000 changes, the cache off so that every node is read
SET prolly.cache_size = 0;
SELECT count(*) FROM generate_series(1, 20) g, LATERAL prolly_diff('main', 'big') d;
RESET prolly.cache_size;
SELECT count(*) FROM generate_series(1, 20) g, LATERAL prolly_diff('main', 'big') d;
RESET statement_timeout;
SELECT prolly_count('big') AS big, (SELECT count(*) FROM prolly_scan('big', prefix => 'z00001')) AS prefix_rows;
