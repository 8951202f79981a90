{{ config(materialized='mart_export', location=mart_export_path('interactions'), format='parquet') }}
-- Who talked with whom: a turn answering another speaker's turn in the same session counts
-- one interaction for the (unordered) pair. Speakers are mapped through entity resolution's
-- aliases when it has run, so that "Tom" and "Tomasz" are one end of an edge.
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

aliases as (
    select scope, normalized, entity_id from {{ ref('stg_memc__entity_aliases') }}
),

speakers as (
    select
        t.*,
        coalesce(a.entity_id, {{ entity_id('t.scope', 't.actor') }}) as actor_id,
        coalesce(p.entity_id, {{ entity_id('t.scope', 't.previous_actor') }}) as previous_id
    from turns as t
    left join aliases as a on a.scope = t.scope and a.normalized = {{ normalize_name('t.actor') }}
    left join aliases as p on p.scope = t.scope and p.normalized = {{ normalize_name('t.previous_actor') }}
    where t.previous_actor is not null
      -- an e-mail address no alias names is not an entity (the entities mart): no edge to it
      and (a.entity_id is not null or not {{ is_email_address('t.actor') }})
      and (p.entity_id is not null or not {{ is_email_address('t.previous_actor') }})
),

pairs as (
    select
        scope,
        least(actor_id, previous_id) as src,
        greatest(actor_id, previous_id) as dst,
        entry_id,
        valid_at,
        visibility
    from speakers
    where actor_id <> previous_id
)

select
    src,
    dst,
    scope,
    cast(count(*) as bigint) as weight,
    min(valid_at) as first_at,
    max(valid_at) as last_at,
    {{ list_sorted(list_agg('entry_id')) }} as evidence,
    {{ visibility_meet('visibility') }} as visibility
from pairs
group by src, dst, scope
