-- recipes: the examples of docs/sql.md, "Recipes", run as written there (on a branch of their
-- own). Commit ids hold the time they were made, so they are compared, never shown.
SELECT prolly_branch('shop', 'main') IS NOT NULL AS branched;

-- a branch as a view, joined with an ordinary table
SELECT prolly_commit('shop', ARRAY['price:apple', 'price:pear']::bytea[], ARRAY['1.20', '0.80']::bytea[],
                     'prices') IS NOT NULL AS loaded;
CREATE VIEW shop_prices AS
SELECT convert_from(substring(key FROM 7), 'UTF8') AS item,
       convert_from(value, 'UTF8')::numeric AS price
FROM prolly_scan('shop', prefix => 'price:');
CREATE TABLE orders (item text, qty int);
INSERT INTO orders VALUES ('apple', 3), ('pear', 2), ('apple', 1);
SELECT o.item, sum(o.qty * p.price) AS total
FROM orders o JOIN shop_prices p USING (item)
GROUP BY o.item ORDER BY o.item;

-- a change reviewed on a branch of its own, then merged
SELECT prolly_branch('shop-sale', 'shop') IS NOT NULL AS branched;
SELECT prolly_put('shop-sale', 'price:pear', '0.60') IS NOT NULL AS changed;
SELECT op, convert_from(key, 'UTF8') AS key, convert_from(old_value, 'UTF8') AS old,
       convert_from(new_value, 'UTF8') AS new
FROM prolly_diff('shop', 'shop-sale');
SELECT prolly_merge('shop', 'shop-sale') IS NOT NULL AS merged;
SELECT * FROM shop_prices ORDER BY item;

-- what the branch named before its last move (from its reflog), and what that move changed
SELECT convert_from(prolly_get('shop@{1}', 'price:pear'), 'UTF8') AS pear_before_merge;
SELECT op, convert_from(key, 'UTF8') AS key FROM prolly_diff('shop@{1}', 'shop');

-- the data as it was at a time: the newest commit made at or before it
SELECT prolly_tag('shop-before-sale', 'shop~1') IS NOT NULL AS tagged;
SELECT convert_from(value, 'UTF8') AS pear_then
FROM prolly_scan((SELECT commit_id FROM prolly_log('shop')
                  WHERE committed_at <= (SELECT committed_at FROM prolly_log('shop-before-sale', 1))
                  LIMIT 1),
                 prefix => 'price:pear');

-- who changed a key, and when
SELECT convert_from(value, 'UTF8') AS price, message FROM prolly_history('shop', 'price:pear');

-- undo: the sale reverted, keeping the history
SELECT prolly_revert('shop', 'shop-sale') IS NOT NULL AS reverted;
SELECT * FROM shop_prices ORDER BY item;

DROP VIEW shop_prices;
DROP TABLE orders;
SELECT prolly_delete_tag('shop-before-sale') IS NOT NULL AS untagged;
SELECT prolly_delete_branch(b) IS NOT NULL AS deleted FROM unnest(ARRAY['shop', 'shop-sale']) b;
