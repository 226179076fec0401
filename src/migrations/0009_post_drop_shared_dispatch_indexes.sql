-- The second half of 0008_pre_keyless_dispatch_indexes: the claim statements read the split
-- dispatch indexes, so the two that held every pending job go (an entry less per insert).
-- A `post` migration: workers of the previous release still claim through these.
DROP INDEX {schema}.jobs_dispatch_idx;
DROP INDEX {schema}.jobs_fair_dispatch_idx;
