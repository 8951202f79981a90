{{ config(materialized='mart_export', location=mart_export_path('graph_relations'), format='parquet') }}
-- Relations between entities from current claims: a state_current row whose object is an entity
-- of the same scope (its resolved object_id, else the entity its name hashes to) becomes a
-- subject -> object edge with its valid time. Claims whose object is a value (a place name, a
-- text, an identifier) stay in state_current only.
select
    s.subject_id as src,
    o.entity_id as dst,
    s.scope,
    s.predicate,
    s.object,
    s.valid_from,
    s.recorded_at,
    s.claim_id,
    cast(1 as bigint) as weight,
    {{ list_of('s.source_entry_id') }} as evidence,
    s.visibility
from {{ ref('state_current') }} as s
inner join {{ ref('entities') }} as o
    on o.entity_id = coalesce(s.object_id, {{ entity_id('s.scope', 's.object') }})
    and o.scope = s.scope
inner join {{ ref('entities') }} as subj
    on subj.entity_id = s.subject_id
where s.predicate <> 'mentions_identifier'
  and o.entity_id <> s.subject_id
