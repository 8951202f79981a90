{{ config(materialized='mart_export', location=mart_export_path('conflicts'), format='parquet') }}
-- Contradictions: two claims of a functional predicate about the same subject, stated for the
-- same valid time, with different values (different normalised objects). Both sides and their
-- sources are kept. `resolution` says what the fold did:
--   unresolved  - equally recent (same valid AND transaction time): neither closes the other,
--                 both stay current until something newer closes them;
--   corrected   - the later-recorded side is a user's correction, which closed the other;
--   later_record - the later-recorded side closed the other (newer by transaction time).
-- Side a is the earlier recorded (then the smaller claim id).
with claims as (
    select * from {{ ref('int_claims_joined_to_entries') }}
    where polarity = 'assert' and cardinality = 'functional'
)

select
    a.scope,
    a.subject_id,
    a.subject,
    a.predicate,
    a.valid_at,
    case
        when a.recorded_at = b.recorded_at then 'unresolved'
        when b.source_kind = 'correction' then 'corrected'
        else 'later_record'
    end as resolution,
    a.claim_id as claim_id_a,
    a.object as object_a,
    a.recorded_at as recorded_at_a,
    a.source_entry_id as source_entry_id_a,
    a.source_ref as source_ref_a,
    a.source_kind as source_kind_a,
    a.quote as quote_a,
    a.confidence as confidence_a,
    a.visibility as visibility_a,
    b.claim_id as claim_id_b,
    b.object as object_b,
    b.recorded_at as recorded_at_b,
    b.source_entry_id as source_entry_id_b,
    b.source_ref as source_ref_b,
    b.source_kind as source_kind_b,
    b.quote as quote_b,
    b.confidence as confidence_b,
    b.visibility as visibility_b,
    -- Who may see the conflict as a whole: only those who may see both sides.
    {{ list_sorted(visibility_meet_pair('a.visibility', 'b.visibility')) }} as visibility
from claims as a
inner join claims as b
    on b.scope = a.scope
    and b.subject_id = a.subject_id
    and b.predicate = a.predicate
    and b.valid_at = a.valid_at
    and b.object_key <> a.object_key
    and (b.recorded_at > a.recorded_at or (b.recorded_at = a.recorded_at and b.claim_id > a.claim_id))
