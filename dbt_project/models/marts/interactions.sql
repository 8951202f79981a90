{{ config(materialized='external', location=mart_export_path('interactions'), format='parquet') }}
-- Who talked with whom: a turn answering another speaker's turn in the same session counts
-- one interaction for the (unordered) pair.
with turns as (
    select
        scope,
        session_id,
        actor,
        entry_id,
        valid_at,
        visibility,
        lag(actor) over (partition by scope, session_id order by valid_at, seq) as previous_actor
    from {{ ref('stg_memc__ledger_entries') }}
    where kind = 'message' and actor is not null and session_id is not null
),

pairs as (
    select
        scope,
        least({{ entity_id('scope', 'actor') }}, {{ entity_id('scope', 'previous_actor') }}) as src,
        greatest({{ entity_id('scope', 'actor') }}, {{ entity_id('scope', 'previous_actor') }}) as dst,
        entry_id,
        valid_at,
        visibility
    from turns
    where previous_actor is not null
      and lower(trim(previous_actor)) <> lower(trim(actor))
)

select
    src,
    dst,
    scope,
    count(*)::bigint as weight,
    min(valid_at) as first_at,
    max(valid_at) as last_at,
    list_sort(list(entry_id)) as evidence,
    {{ visibility_meet('visibility') }} as visibility
from pairs
group by src, dst, scope
