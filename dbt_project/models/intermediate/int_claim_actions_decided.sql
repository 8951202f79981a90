-- The write policy as a record: what the fold did with every claim it considered, as the
-- action a memory system takes on a write (ADD, UPDATE, DELETE, NONE), the rule that decided,
-- the candidates it was compared with, and the versions of the extractor and the fold. It is
-- derived only from the ledger and the claims (both rebuilt from the ledger), so a rebuild of
-- every view reproduces it row for row.
--
--   ADD     first_value  no value of this subject and predicate was open when it arrived
--           accumulate   a multi-valued predicate gains another value
--           history      it arrived already closed by a claim known before it (an older
--                        value learned late): it enters the history, not what holds now
--           conflict     a functional predicate with another open value of the same valid and
--                        transaction time: the fold keeps both (the conflicts mart)
--   UPDATE  newer_value / correction / own_word_outranks_report
--                        it ended a value of another object sooner than the fold knew before
--                        (int_claim_closings_paired): a move, or a correction of the past
--   DELETE  retraction   a retraction that closed a matching value
--           erasure      an erasure tombstone in the ledger (`closes` lists the erased entry ids)
--   NONE    duplicate    the same value of the same subject and predicate was already open
--                        (a restatement: it closes nothing, the value holds from its first claim
--                        on, and the restatement stands beside it as corroborating evidence)
--           nothing_to_retract  a retraction that matched no open value
--           rejected     a validator refused the proposal (`detail`: the validator and reason)
--
-- "Open when it arrived" is what the fold knew at the claim's transaction time: a prior claim
-- (in the order of arrival below) that no closer arriving before it had closed.
--
-- Incremental, by subject: a claim's action depends only on the claims of its own scope,
-- subject and predicate (every comparison below, and every pair of int_claim_closings_paired,
-- stays within one), and that set only grows while the ledger does. So a build decides again
-- the actions of the (scope, subject, predicate) groups that received a claim above the highest
-- source_seq here, every claim of those groups, and replaces their rows by action_id: a new
-- claim recorded with an earlier transaction time than claims already decided arrives before
-- them and changes what they were compared with. Every other group's rows are what a full
-- refresh would write. Rejections and erasures are one row per entry and only get appended.
-- A new extractor, an erasure or new fold rules make assets/state.py run a full refresh, as
-- for the other incremental models.
-- On Spark (dbt-spark's Parquet tables have no delete+insert) it is a table, decided whole.
{{ config(materialized=('table' if target.type == 'spark' else 'incremental'), incremental_strategy='delete+insert', unique_key='action_id', on_schema_change='append_new_columns') }}
{% if is_incremental() %}
{% set mark = "(select coalesce(max(source_seq), -1) from " ~ this ~ ")" %}
{% endif %}
with all_claims as (
    select * from {{ ref('int_claims_joined_to_entries') }}
),

group_claims as (
    {% if is_incremental() %}
    {{ claims_of_touched_groups('all_claims', mark) }}
    {% else %}
    select * from all_claims
    {% endif %}
),

-- The order the fold considered claims in: by transaction time, then by seq (the claims of one
-- ingested batch share a transaction time; the ledger's order tells them apart), then by id.
-- Numbered within a group: no comparison crosses groups.
claims as (
    select
        *,
        row_number() over (partition by scope, subject_id, predicate order by recorded_at, source_seq, claim_id) as arrival
    from group_claims
),

pairs as (
    select
        p.*,
        x.arrival as closed_arrival,
        y.arrival as closer_arrival,
        {{ normalize_name('p.closed_object') }} as closed_key,
        {{ normalize_name('p.closer_object') }} as closer_key
    from {{ ref('int_claim_closings_paired') }} as p
    inner join claims as x on x.claim_id = p.claim_id
    inner join claims as y on y.claim_id = p.closer_claim_id
),

-- When each closed claim was first closed, in its group's order of arrival, and where it stood:
-- "x was open when y arrived" is then one comparison, not a search of x's closers.
closed_claims as (
    select p.scope, p.subject_id, p.predicate, p.claim_id, min(p.closed_arrival) as arrival, min(p.closer_arrival) as first_closer_arrival
    from pairs as p
    group by p.scope, p.subject_id, p.predicate, p.claim_id
),

-- The entries of rejections and erasures (both only appended: above the mark when incremental).
entries as (
    select entry_id, seq, kind, scope, recorded_at, valid_at, source_ref, visibility, attributes
    from {{ ref('stg_memc__ledger_entries') }}
    {% if is_incremental() %}
    where seq > {{ mark }}
    {% endif %}
),

-- The claims the fold compared each claim with: for a functional assertion every open value
-- of its subject and predicate; otherwise (a multi-valued assertion, a retraction) the open
-- claims of the same value.
considered as (
    select
        y.claim_id,
        x.claim_id as candidate_id,
        x.object_key = y.object_key as same_value
    from claims as y
    inner join claims as x
        on x.scope = y.scope
        and x.subject_id = y.subject_id
        and x.predicate = y.predicate
        and x.polarity = 'assert'
        and x.arrival < y.arrival
        -- Not every prior value of a multi-valued predicate: a subject's thousands of mentions
        -- would make this join quadratic. How many are open is counted in open_values.
        and ((y.polarity = 'assert' and y.cardinality = 'functional') or x.object_key = y.object_key)
    -- still open when y arrived: no closer of x had arrived before y
    left join closed_claims as c on c.claim_id = x.claim_id
    where c.first_closer_arrival is null or c.first_closer_arrival >= y.arrival
),

considered_by_claim as (
    select
        claim_id,
        {{ list_sorted(list_agg('candidate_id')) }} as considered,
        {{ list_sorted(list_agg_where('candidate_id', 'same_value')) }} as same_value_ids
    from considered
    group by claim_id
),

-- What each claim changed as it arrived: a claim recorded no later than it, of another value
-- (or the value a retraction names), whose valid-time end it moved earlier than the fold knew
-- just before (a value with no end yet, or a correction of the past: "Madrid from March"
-- ends Paris in March, not June). A restatement of the same value, and a closing of a value
-- that an earlier closer had already ended sooner, change nothing. With the strongest reason.
-- How many values of a claim's subject and predicate were open when it arrived: the prior
-- assertions (by arrival order) less those a closer recorded before it had closed. Counted, not
-- joined pairwise, for the same reason as above; the closings joined are few per subject.
arrival as (
    select
        claim_id, scope, subject_id, predicate, arrival,
        count(case when polarity = 'assert' then 1 end) over (
            partition by scope, subject_id, predicate
            order by arrival
            rows between unbounded preceding and 1 preceding
        ) as prior_assertions
    from claims
),

open_on_arrival as (
    select
        y.claim_id,
        y.prior_assertions - count(c.claim_id) as open_values
    from arrival as y
    left join closed_claims as c
        on c.scope = y.scope
        and c.subject_id = y.subject_id
        and c.predicate = y.predicate
        and c.first_closer_arrival < y.arrival
        and c.arrival < y.arrival
    group by y.claim_id, y.prior_assertions
),

closed_on_arrival as (
    select
        p.closer_claim_id as claim_id,
        {{ list_sorted(list_agg('p.claim_id')) }} as changed_ids,
        min(case p.reason when 'retracted' then 1 when 'corrected' then 2 when 'outranked' then 3 else 4 end) as reason_rank
    from (
        -- the soonest end that x's closers arriving before this one had given it
        select
            *,
            min(close_at) over (partition by claim_id order by closer_arrival rows between unbounded preceding and 1 preceding) as earlier_close_at
        from pairs
    ) as p
    where p.closed_arrival < p.closer_arrival
      and (p.closed_key <> p.closer_key or p.closer_polarity = 'retract')
      and p.close_at < coalesce(p.earlier_close_at, {{ timestamp_infinity() }})
    group by p.closer_claim_id
),

-- Claims that arrived closed: a closer recorded before them (a newer value already known).
closed_before_arrival as (
    select claim_id, {{ list_sorted(list_agg('closer_claim_id', distinct=true)) }} as closed_by
    from pairs
    where closer_arrival < closed_arrival
    group by claim_id
),

-- Claims that met a candidate of another value stated for the same valid and transaction time.
ties as (
    select y.claim_id, true as ties_other_value
    from considered as k
    inner join claims as y on y.claim_id = k.claim_id
    inner join claims as o on o.claim_id = k.candidate_id
    where o.valid_at = y.valid_at and o.recorded_at = y.recorded_at and o.object_key <> y.object_key
    group by y.claim_id
),

claim_actions as (
    select
        c.*,
        coalesce(k.considered, {{ empty_text_list() }}) as considered,
        coalesce(a.changed_ids, {{ empty_text_list() }}) as changed_ids,
        coalesce(k.same_value_ids, {{ empty_text_list() }}) as same_value_ids,
        coalesce(b.closed_by, {{ empty_text_list() }}) as closed_by,
        o.open_values,
        a.reason_rank,
        coalesce(t.ties_other_value, false) as ties_other_value
    from claims as c
    left join considered_by_claim as k using (claim_id)
    left join ties as t using (claim_id)
    left join open_on_arrival as o using (claim_id)
    left join closed_on_arrival as a using (claim_id)
    left join closed_before_arrival as b using (claim_id)
),

decided as (
    select
        *,
        case
            when polarity = 'retract' and {{ list_size('changed_ids') }} > 0 then 'DELETE'
            when polarity = 'retract' then 'NONE'
            when {{ list_size('changed_ids') }} > 0 then 'UPDATE'
            when {{ list_size('same_value_ids') }} > 0 then 'NONE'
            else 'ADD'
        end as action,
        case
            when polarity = 'retract' and {{ list_size('changed_ids') }} > 0 then 'retraction'
            when polarity = 'retract' then 'nothing_to_retract'
            when {{ list_size('changed_ids') }} > 0 then
                case reason_rank when 2 then 'correction' when 3 then 'own_word_outranks_report' else 'newer_value' end
            when {{ list_size('same_value_ids') }} > 0 then 'duplicate'
            when {{ list_size('closed_by') }} > 0 then 'history'
            when open_values = 0 then 'first_value'
            when cardinality = 'multi' then 'accumulate'
            when ties_other_value then 'conflict'
            else 'first_value'
        end as rule
    from claim_actions
)

select
    claim_id as action_id,
    'claim' as considered_kind,
    action,
    rule,
    scope,
    subject,
    subject_id,
    predicate,
    object,
    polarity,
    cardinality,
    case when action in ('UPDATE', 'DELETE') then changed_ids else {{ empty_text_list() }} end as closes,
    case when action = 'NONE' then same_value_ids else {{ empty_text_list() }} end as duplicate_of,
    closed_by,
    considered,
    cast(null as string) as detail,
    valid_at,
    recorded_at,
    source_entry_id,
    source_seq,
    source_ref,
    source_kind,
    quote,
    visibility,
    extractor,
    extractor_version,
    '{{ var("fold_version") }}' as fold_version
from decided

union all

-- A proposal a validator refused changes nothing: NONE, with the validator and its reason.
select
    r.proposal_id as action_id,
    'rejection' as considered_kind,
    'NONE' as action,
    'rejected' as rule,
    r.scope,
    r.subject,
    cast(null as string) as subject_id,
    r.predicate,
    r.object,
    r.polarity,
    cast(null as string) as cardinality,
    {{ empty_text_list() }} as closes,
    {{ empty_text_list() }} as duplicate_of,
    {{ empty_text_list() }} as closed_by,
    {{ empty_text_list() }} as considered,
    r.validator || ': ' || r.reason as detail,
    coalesce(r.valid_at, e.valid_at) as valid_at,
    e.recorded_at,
    r.source_entry_id,
    r.source_seq,
    r.source_ref,
    e.kind as source_kind,
    cast(null as string) as quote,
    e.visibility,
    r.extractor,
    r.extractor_version,
    '{{ var("fold_version") }}' as fold_version
from {{ ref('stg_memc__claim_rejections') }} as r
inner join entries as e on e.entry_id = r.source_entry_id

union all

-- An erasure deletes evidence and everything compiled from it: the tombstone names the entry
-- ids (never their content); only administrators see it, as they see the tombstone.
select
    t.entry_id as action_id,
    'erasure' as considered_kind,
    'DELETE' as action,
    'erasure' as rule,
    t.scope,
    cast(null as string) as subject,
    cast(null as string) as subject_id,
    cast(null as string) as predicate,
    cast(null as string) as object,
    'retract' as polarity,
    cast(null as string) as cardinality,
    {{ list_sorted("coalesce(" ~ json_text_list('t.attributes', '$.entry_ids') ~ ", " ~ empty_text_list() ~ ")") }} as closes,
    {{ empty_text_list() }} as duplicate_of,
    {{ empty_text_list() }} as closed_by,
    {{ empty_text_list() }} as considered,
    {{ json_text('t.attributes', '$.reason') }} as detail,
    t.valid_at,
    t.recorded_at,
    t.entry_id as source_entry_id,
    t.seq as source_seq,
    t.source_ref,
    t.kind as source_kind,
    cast(null as string) as quote,
    t.visibility,
    cast(null as string) as extractor,
    cast(null as string) as extractor_version,
    '{{ var("fold_version") }}' as fold_version
from entries as t
-- A tombstone proper lists entry_ids; the stub an erasure leaves of an erased row does not.
where t.kind = 'erasure' and {{ json_has('t.attributes', '$.entry_ids') }}
