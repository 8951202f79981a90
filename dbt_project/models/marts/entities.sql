{{ config(materialized='external', location=mart_export_path('entities'), format='parquet') }}
-- People and things memc knows of, per scope: speakers of messages and subjects of claims.
with mentions as (
    select scope, actor as name, 'person' as entity_type, entry_id, visibility
    from {{ ref('stg_memc__ledger_entries') }}
    where kind = 'message' and actor is not null
    union all
    select scope, subject as name, 'person' as entity_type, source_entry_id as entry_id, visibility
    from {{ ref('stg_memc__claims') }}
    where predicate <> 'mentions_identifier'
)

select
    {{ entity_id('scope', 'name') }} as entity_id,
    scope,
    min(name) as name,
    min(entity_type) as entity_type,
    list_sort(list(distinct name)) as aliases,
    list_sort(list(distinct entry_id)) as evidence,
    {{ visibility_meet('visibility') }} as visibility,
    count(*) as mention_count
from mentions
group by 1, 2
