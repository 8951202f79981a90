{{ config(materialized='mart_export', location=mart_export_path('entities'), format='parquet') }}
-- People and things memc knows of, per scope: speakers of messages and subjects of claims.
-- When entity resolution has run, a name it merged ("Tom" -> "Tomasz") counts for the canonical
-- entity, and the entity lists every alias resolution found for it, with the rule behind each.
--
-- A file name or an e-mail address is not an entity name. A claim about a source with no author
-- (a Markdown note "mentions Priya") has the source itself as subject, by its ref
-- ("team-notes.md") or entry id: such a subject is no entity. An e-mail address counts only
-- when entity resolution made it an alias of a person (rule email-local-part:
-- "priya@helio.example" -> Priya); otherwise it is left out too. Before this, both were
-- entities of their own, graph nodes, and ranked by dreaming.
with mentions as (
    select scope, actor as name, 'person' as entity_type, entry_id, visibility, false as names_its_source
    from {{ ref('stg_memc__ledger_entries') }}
    where kind = 'message' and actor is not null
    union all
    select
        scope, subject as name, 'person' as entity_type, source_entry_id as entry_id, visibility,
        coalesce(subject = source_ref, false) or subject = source_entry_id as names_its_source
    from {{ ref('int_claims_joined_to_entries') }}
    where predicate <> 'mentions_identifier'
    union all
    -- What such a source mentions is still mentioned by its entry (graph_mentions: the note ->
    -- Priya), though the source itself is no entity to relate from.
    select scope, object as name, 'person' as entity_type, source_entry_id as entry_id, visibility, false as names_its_source
    from {{ ref('int_claims_joined_to_entries') }}
    where predicate = 'mentions' and polarity = 'assert'
      and (coalesce(subject = source_ref, false) or subject = source_entry_id)
),

aliases as (
    select * from {{ ref('stg_memc__entity_aliases') }}
),

resolved as (
    select
        coalesce(a.entity_id, {{ entity_id('m.scope', 'm.name') }}) as entity_id,
        a.canonical_name,
        m.*
    from mentions as m
    left join aliases as a
        on a.scope = m.scope and a.normalized = {{ normalize_name('m.name') }}
    where a.entity_id is not null
       or not (m.names_its_source or {{ is_email_address('m.name') }})
),

alias_lists as (
    select
        entity_id,
        scope,
        {{ list_sorted(list_agg('alias', distinct=true)) }} as resolved_aliases,
        {{ list_sorted(list_agg('rule', distinct=true)) }} as alias_rules
    from aliases
    group by entity_id, scope
)

select
    r.entity_id,
    r.scope,
    coalesce(min(r.canonical_name), min(r.name)) as name,
    min(r.entity_type) as entity_type,
    {{ list_sorted(list_unique(list_concat(list_agg('r.name', distinct=true), 'coalesce(any_value(l.resolved_aliases), ' ~ empty_text_list() ~ ')'))) }} as aliases,
    coalesce(any_value(l.alias_rules), {{ empty_text_list() }}) as alias_rules,
    {{ list_sorted(list_agg('r.entry_id', distinct=true)) }} as evidence,
    {{ visibility_meet('r.visibility') }} as visibility,
    count(*) as mention_count
from resolved as r
left join alias_lists as l on l.entity_id = r.entity_id and l.scope = r.scope
group by r.entity_id, r.scope
