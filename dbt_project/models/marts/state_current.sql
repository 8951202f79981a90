{{ config(materialized='mart_export', location=mart_export_path('state_current'), format='parquet') }}
-- What holds now, for every asker at once. A claim is current for asker P when P may see it and
-- no claim closing it is visible to P (int_claim_closings_paired). One row per claim: a row is
-- dropped only when its closers together reach everyone who may see it (a public closer, or
-- closers naming every principal of a private claim); otherwise it stays, and `closed_for`
-- lists the principals for whom a closer they may see has closed it. So:
--   * may_see(P, visibility) and P not in closed_for  -> exact per-asker state;
--   * may_see alone, then the newest value per functional predicate (what query/facts.py does)
--     -> the same answer, except after a retraction P may see that others may not.
-- Claims in an unresolved conflict (same valid and transaction time, different values) are all
-- kept, flagged by in_conflict: the fold does not pick a winner between them.
-- A restatement of the current value is a row of its own beside the claim that first stated it
-- (its valid_from is the move's; int_claim_closings_paired): readers show one line per value,
-- since the earliest valid_from among the rows they may see (query/facts.py).
-- Dreaming's derived analytics (centrality, community) are not facts: they are in entity_analytics.
{{ current_claims(analytics=false) }}
