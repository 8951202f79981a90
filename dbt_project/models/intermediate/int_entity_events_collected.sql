{{ config(materialized='incremental', incremental_strategy='append') }}
-- What happened to or was said by each entity, in valid time: every claim about it (asserted or
-- retracted) and every entry it authored (a message, a correction, an event). Entity ids here
-- are the name's own id (memc.ids.entity_id); the timeline mart maps them through entity
-- resolution's aliases, which may change without the ledger growing.
--
-- Incremental: each row depends on one ledger entry alone, so each build appends the rows of
-- entries above the highest seq already here.
{% if is_incremental() %}
{% set mark = "(select coalesce(max(seq), -1) from " ~ this ~ ")" %}
{% endif %}
with claim_events as (
    select
        scope,
        subject as entity_name,
        subject_id as name_entity_id,
        valid_at,
        recorded_at,
        case when polarity = 'retract' then 'claim retracted' else 'claim stated' end as event_type,
        predicate,
        object,
        quote as detail,
        claim_id,
        source_entry_id as entry_id,
        source_seq as seq,
        source_ref,
        source_kind,
        visibility
    from {{ ref('int_claims_joined_to_entries') }}
    where predicate <> 'mentions_identifier'
    {% if is_incremental() %}
      and source_seq > {{ mark }}
    {% endif %}
),

authored as (
    select
        scope,
        actor as entity_name,
        {{ entity_id('scope', 'actor') }} as name_entity_id,
        valid_at,
        recorded_at,
        kind as event_type,
        cast(null as string) as predicate,
        cast(null as string) as object,
        -- A glimpse, not the evidence: the full text stays in the ledger.
        left(content, 200) as detail,
        cast(null as string) as claim_id,
        entry_id,
        seq,
        source_ref,
        kind as source_kind,
        visibility
    from {{ ref('stg_memc__ledger_entries') }}
    where actor is not null
      and kind not in ('erasure', 'derived_claim')
    {% if is_incremental() %}
      and seq > {{ mark }}
    {% endif %}
)

select
    coalesce(claim_id, entry_id) as event_id,
    *
from (
    select * from claim_events
    union all
    select * from authored
)
