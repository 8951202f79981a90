{{ config(materialized='mart_export', location=mart_export_path('timeline'), format='parquet') }}
-- Events per entity in valid-time order: claims stated or retracted about it and entries it
-- authored, with their sources. Names are mapped through entity resolution's aliases here (not
-- in the incremental intermediate), because the aliases may change when the ledger does not.
-- As in the entities mart, a source named as its own subject (a note's file name) or an e-mail
-- address no alias resolves is no entity: it has no timeline.
with events as (
    select * from {{ ref('int_entity_events_collected') }}
),

aliases as (
    select scope, normalized, entity_id, canonical_name from {{ ref('stg_memc__entity_aliases') }}
)

select
    coalesce(a.entity_id, e.name_entity_id) as entity_id,
    e.scope,
    coalesce(a.canonical_name, e.entity_name) as entity_name,
    e.valid_at,
    e.recorded_at,
    e.event_type,
    e.predicate,
    e.object,
    e.detail,
    e.event_id,
    e.claim_id,
    e.entry_id,
    e.seq,
    e.source_ref,
    e.source_kind,
    e.visibility,
    row_number() over (
        partition by coalesce(a.entity_id, e.name_entity_id), e.scope
        order by e.valid_at, e.seq, e.event_id
    ) as event_no
from events as e
left join aliases as a
    on a.scope = e.scope and a.normalized = {{ normalize_name('e.entity_name') }}
where a.entity_id is not null
   or not (coalesce(e.entity_name = e.source_ref, false) or e.entity_name = e.entry_id or {{ is_email_address('e.entity_name') }})
