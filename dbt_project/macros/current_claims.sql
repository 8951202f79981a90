{% macro current_claims(analytics=false) -%}
    {#- What holds now for every asker at once, one row per asserted claim (state_current's
        comment says how to read closed_for). `analytics` picks which claims: false the facts
        people stated, true the analytics a producer derived (entries of kind derived_claim:
        dreaming's centrality and community), so each lands in its own mart (state_current,
        entity_analytics) through the same per-asker fold. -#}
    with claims as (
        select * from {{ ref('int_claims_joined_to_entries') }}
        where polarity = 'assert'
          and {{ 'coalesce(source_kind = \'derived_claim\', false)' if analytics else 'source_kind is distinct from \'derived_claim\'' }}
    ),

    closers as (
        select
            claim_id,
            bool_or({{ list_has('closer_visibility', "'public'") }}) as closed_publicly,
            {{ list_sorted(list_unique(list_flatten(list_agg('closer_visibility')))) }} as closer_principals,
            {{ list_sorted(list_unique(list_agg('closer_claim_id'))) }} as closed_by
        from {{ ref('int_claim_closings_paired') }}
        group by claim_id
    ),

    unresolved as (
        select distinct {{ unnest_pair('claim_id_a', 'claim_id_b') }} as claim_id
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
        coalesce(k.closer_principals, {{ empty_text_list() }}) as closed_for,
        coalesce(k.closed_by, {{ empty_text_list() }}) as closed_by,
        u.claim_id is not null as in_conflict
    from claims as c
    left join closers as k using (claim_id)
    left join unresolved as u using (claim_id)
    where not coalesce(
        k.closed_publicly
        or (not {{ list_has('c.visibility', "'public'") }} and {{ list_has_every('k.closer_principals', 'c.visibility') }}),
        false
    )
{%- endmacro %}
