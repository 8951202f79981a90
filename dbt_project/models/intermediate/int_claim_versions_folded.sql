-- The administrator's bi-temporal fold: for every asserted claim, how its valid-time end
-- changed as the system learned more. A claim's valid_to as known at transaction time T is the
-- earliest close_at among its closers known by T; it can only move earlier, and each move
-- starts a new version:
--   version 1: recorded_from = when the claim was recorded, valid_to = its earliest closer
--              already known then (or open);
--   version n: recorded_from = when an earlier-closing closer was recorded.
-- recorded_to (the next version's recorded_from) is added in the state_history mart.
-- A table rebuilt each run: it is a window over the appended pairs, seconds at 100k entries
-- (benchmarks/bench_state.py), and a version's recorded_to changes when a later one arrives.
with claims as (
    select claim_id, recorded_at
    from {{ ref('int_claims_joined_to_entries') }}
    where polarity = 'assert'
),

closer_events as (
    -- Closers learned at the same moment count once, by the earliest they close; ties on
    -- close_at go to the smallest closer id so that every rebuild names the same closer.
    select
        claim_id,
        known_from,
        min({{ struct_of({'close_at': 'close_at', 'closer_claim_id': 'closer_claim_id', 'reason': 'reason'}) }}) as closing
    from {{ ref('int_claim_closings_paired') }}
    group by claim_id, known_from
),

moments as (
    select claim_id, recorded_at as known_from from claims
    union
    select claim_id, known_from from closer_events
),

running as (
    select
        m.claim_id,
        m.known_from,
        -- min() skips NULL (no closer at that moment): the running minimum is the valid_to
        -- known at each moment; NULL while nothing closes the claim.
        min(e.closing) over (
            partition by m.claim_id order by m.known_from
            rows between unbounded preceding and current row
        ) as closing
    from moments as m
    left join closer_events as e using (claim_id, known_from)
),

changes as (
    select
        *,
        row_number() over (partition by claim_id order by known_from) as moment_no,
        lag(closing) over (partition by claim_id order by known_from) as previous_closing
    from running
)

select
    claim_id,
    cast(row_number() over (partition by claim_id order by known_from) as integer) as version,
    known_from as recorded_from,
    closing.close_at as valid_to,
    closing.closer_claim_id as closed_by_claim_id,
    closing.reason as close_reason
from changes
-- A moment that only names another closer for the same valid_to is not a new version.
where moment_no = 1 or closing.close_at is distinct from previous_closing.close_at
