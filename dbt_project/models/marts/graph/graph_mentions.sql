{{ config(materialized='mart_export', location=mart_export_path('graph_mentions'), format='parquet') }}
-- Which ledger entry mentions which entity: the entities mart's evidence lists, one row per pair,
-- kept only where the entry is a graph node (so every edge has both ends).
with mentions as (
    select entity_id, scope, {{ unnest_list('evidence') }} as entry_id
    from {{ ref('entities') }}
)

select distinct
    m.entry_id,
    m.entity_id,
    m.scope
from mentions as m
inner join {{ ref('graph_entries') }} as g on g.entry_id = m.entry_id
