{{ config(materialized='external', location=mart_export_path('state_current'), format='parquet') }}
-- What holds now. A functional predicate keeps its newest claim (valid time, then transaction
-- time); multi-valued predicates accumulate. The fold runs per visibility set, because what is
-- current depends on who asks: a claim superseded only by one the asker may not see is still
-- current for that asker. The query module takes, per subject and predicate, the newest row
-- among those the asker may see.
with claims as (
    select *, array_to_string(list_sort(visibility), ',') as visibility_key
    from {{ ref('stg_memc__claims') }}
),

ranked as (
    select
        *,
        row_number() over (
            partition by scope, subject_id, predicate, visibility_key
            order by valid_at desc, recorded_at desc, claim_id desc
        ) as recency_rank
    from claims
)

select
    scope,
    subject_id,
    subject,
    predicate,
    object,
    cardinality,
    valid_at as valid_from,
    recorded_at,
    visibility,
    claim_id,
    source_entry_id,
    source_seq,
    source_ref,
    quote,
    confidence
from ranked
where cardinality = 'multi' or recency_rank = 1
