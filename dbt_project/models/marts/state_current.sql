{{ config(materialized='external', location=mart_export_path('state_current'), format='parquet') }}
-- What holds now, for every asker at once. A claim is current for asker P when P may see it and
-- no claim closing it is visible to P (int_claim_closings_paired). One row per claim: a row is
-- dropped only when its closers together reach everyone who may see it (a public closer, or
-- closers naming every principal of a private claim); otherwise it stays, and `closed_for`
-- lists the principals for whom a closer they may see has closed it. So:
--   * may_see(P, visibility) and P not in closed_for  -> exact per-asker state;
--   * may_see alone, then the newest row per functional predicate (what query/context.py does)
--     -> the same answer, except after a retraction P may see that others may not.
-- Claims in an unresolved conflict (same valid and transaction time, different values) are all
-- kept, flagged by in_conflict: the fold does not pick a winner between them.
with claims as (
    select * from {{ ref('int_claims_joined_to_entries') }}
    where polarity = 'assert'
),

closers as (
    select
        claim_id,
        bool_or(list_contains(closer_visibility, 'public')) as closed_publicly,
        list_sort(list_distinct(flatten(list(closer_visibility)))) as closer_principals,
        list_sort(list_distinct(list(closer_claim_id))) as closed_by
    from {{ ref('int_claim_closings_paired') }}
    group by claim_id
),

unresolved as (
    select distinct unnest([claim_id_a, claim_id_b]) as claim_id
    from {{ ref('conflicts') }}
    where resolution = 'unresolved'
)

select
    c.scope,
    c.subject_id,
    c.subject,
    c.predicate,
    c.object,
    c.cardinality,
    c.valid_at as valid_from,
    c.recorded_at,
    c.visibility,
    c.claim_id,
    c.source_entry_id,
    c.source_seq,
    c.source_ref,
    c.quote,
    c.confidence,
    c.object_id,
    c.time_phrase,
    c.asserted_by,
    c.source_kind,
    coalesce(k.closer_principals, []::varchar[]) as closed_for,
    coalesce(k.closed_by, []::varchar[]) as closed_by,
    u.claim_id is not null as in_conflict
from claims as c
left join closers as k using (claim_id)
left join unresolved as u using (claim_id)
where not coalesce(
    k.closed_publicly
    or (not list_contains(c.visibility, 'public') and list_has_all(k.closer_principals, c.visibility)),
    false
)
