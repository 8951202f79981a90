{% macro state_as_of(valid_at, known_at, principal=none) -%}
    {#- What held at valid time `valid_at`, as known at transaction time `known_at`, for
        `principal` (none = the administrator, who sees every claim). Arguments are SQL
        expressions: timestamptz '2024-06-01', now(), a column, '''elena'''.

        A claim held for the asker when the asker may see it, it was recorded by known_at, its
        valid time had begun by valid_at, and no claim closing it that the asker may see had been
        recorded by known_at with a close_at at or before valid_at. valid_to is the end of its
        valid time as the asker knew it then. query/state.py runs the same query
        over the Parquet exports; keep the two in step (tests/platform/test_state.py compares them). -#}
    select
        h.scope,
        h.subject_id,
        h.subject,
        h.predicate,
        h.object,
        h.cardinality,
        h.valid_from,
        k.valid_to,
        h.recorded_from as recorded_at,
        h.claim_id,
        h.source_entry_id,
        h.source_seq,
        h.source_ref,
        h.source_kind,
        h.quote,
        h.visibility,
        h.confidence
    from {{ ref('state_history') }} as h
    left join (
        select claim_id, min(close_at) as valid_to
        from {{ ref('state_closings') }}
        where closer_recorded_at <= {{ known_at }}
          and {{ may_see('closer_visibility', principal) }}
        group by claim_id
    ) as k using (claim_id)
    where h.version = 1
      and h.recorded_from <= {{ known_at }}
      and h.valid_from <= {{ valid_at }}
      and (k.valid_to is null or {{ valid_at }} < k.valid_to)
      and {{ may_see('h.visibility', principal) }}
{%- endmacro %}
