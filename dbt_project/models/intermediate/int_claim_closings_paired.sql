{{ config(materialized='incremental', incremental_strategy='append', on_schema_change='append_new_columns') }}
-- Which claim closes which. The fold is pairwise, so it can be stored once and appended to:
--   * functional predicates: a claim of another value (normalised object), newer by valid
--     time, then by transaction time, closes an older one from its own valid time (a move; a
--     user's correction recorded later about an earlier time). A restatement of the same value
--     closes nothing: the value holds from when it first became true (the move), and the
--     restatement is one more claim of it, open beside it (memory_actions: NONE, duplicate).
--     Two claims with the same valid AND transaction time close neither: that is a conflict
--     (see the conflicts mart), and the fold keeps both rather than pick a winner;
--   * any predicate: a retraction (polarity 'retract') closes the matching claim (same subject,
--     predicate and normalised object) from the retraction's valid time, if it is not older
--     (valid time, transaction time, then seq: a retraction in the same entry closes);
--   * multi-valued assertions accumulate and close nothing;
--   * who said it: a subject's own word outranks another's report. A report ("Jonas says Mira
--     works at X", hearsay below) closes nothing the subject said themself, and the subject's
--     own word closes a report of another value even when the report is newer: from the
--     report's own valid time (reason 'outranked'), so the report holds for no time.
-- Because the relation is pairwise and independent of who asks, "what holds for asker P" is
-- "what P may see, closed by nothing P may see" — exact per asker (state_current, state_as_of).
--
-- Incremental: a pair is fixed once both claims exist, and new claims only add pairs in which
-- one of them takes part. A claim above the highest pair_seq here produced no pair with any
-- older claim, so taking claims above that mark again adds nothing twice.
{% if is_incremental() %}
{% set mark = "(select coalesce(max(pair_seq), -1) from " ~ this ~ ")" %}
{% endif %}
with claims as (
    select * from {{ ref('int_claims_joined_to_entries') }}
),

-- Only subjects and predicates that received a claim need to be paired again.
candidates as (
    {% if is_incremental() %}
    {{ claims_of_touched_groups('claims', mark) }}
    {% else %}
    select * from claims
    {% endif %}
),

ranked as (
    -- NULL-safe: claims written before asserted_by existed are neither own words nor hearsay.
    select
        *,
        coalesce(own_statement, false) as own_word,
        coalesce(reported, false) and not coalesce(own_statement, false) as hearsay
    from candidates
),

pairs as (
    select
        x.claim_id,
        y.claim_id as closer_claim_id,
        x.scope,
        x.subject_id,
        x.predicate,
        x.object as closed_object,
        x.recorded_at as closed_recorded_at,
        x.visibility as closed_visibility,
        -- The closed claim's source: the compiler ranks the evidence of a superseded value below
        -- the current one's and labels it (query/current.py).
        x.source_entry_id as closed_source_entry_id,
        x.source_ref as closed_source_ref,
        x.valid_at as closed_valid_at,
        -- The closer's valid time; for an own word closing a newer report, the report's own
        -- (every other closer is not older than what it closes, so greatest() is its own time).
        greatest(y.valid_at, x.valid_at) as close_at,
        y.recorded_at as closer_recorded_at,
        -- A closer recorded before the claim it closes (it spoke of a later time) is known from
        -- the moment the closed claim is: the claim's first version is already closed.
        greatest(y.recorded_at, x.recorded_at) as known_from,
        case
            when y.polarity = 'retract' then 'retracted'
            when y.source_kind = 'correction' then 'corrected'
            when y.valid_at < x.valid_at or (y.valid_at = x.valid_at and y.recorded_at < x.recorded_at) then 'outranked'
            else 'superseded'
        end as reason,
        y.object as closer_object,
        y.polarity as closer_polarity,
        y.source_kind as closer_source_kind,
        y.source_entry_id as closer_source_entry_id,
        y.source_seq as closer_source_seq,
        y.source_ref as closer_source_ref,
        y.quote as closer_quote,
        y.visibility as closer_visibility,
        greatest(x.source_seq, y.source_seq) as pair_seq
    from ranked as x
    inner join ranked as y
        on y.scope = x.scope
        and y.subject_id = x.subject_id
        and y.predicate = x.predicate
        and y.claim_id <> x.claim_id
    where x.polarity = 'assert'
      and not (x.own_word and y.hearsay)
      and (
        (
            x.cardinality = 'functional'
            and y.polarity = 'assert'
            and y.object_key is distinct from x.object_key
            and (y.valid_at > x.valid_at or (y.valid_at = x.valid_at and y.recorded_at > x.recorded_at))
        )
        or (
            x.cardinality = 'functional'
            and x.hearsay
            and y.own_word
            and y.polarity = 'assert'
            and y.object_key <> x.object_key
        )
        or (
            y.polarity = 'retract'
            and y.object_key = x.object_key
            and (
                y.valid_at > x.valid_at
                or (y.valid_at = x.valid_at and y.recorded_at > x.recorded_at)
                or (y.valid_at = x.valid_at and y.recorded_at = x.recorded_at and y.source_seq >= x.source_seq)
            )
        )
      )
)

select * from pairs
{% if is_incremental() %}
where pair_seq > {{ mark }}
{% endif %}
