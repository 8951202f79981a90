{{ config(materialized='mart_export', location=mart_export_path('state_closings'), format='parquet') }}
-- Why a claim stopped holding: each pair of a closed claim and a claim that closes it (a newer
-- value of a functional predicate, a correction, a retraction), with the closer's source. What
-- holds for an asker at (V, T) is what the asker may see minus the claims one of their visible
-- closers closed by V and recorded by T; the state_as_of macro does exactly that.
select
    scope,
    subject_id,
    predicate,
    claim_id,
    closed_object,
    closed_recorded_at,
    closed_visibility,
    closed_source_entry_id,
    closed_source_ref,
    closed_valid_at,
    closer_claim_id,
    closer_object,
    closer_polarity,
    reason,
    close_at,
    closer_recorded_at,
    known_from,
    closer_source_kind,
    closer_source_entry_id,
    closer_source_seq,
    closer_source_ref,
    closer_quote,
    closer_visibility
from {{ ref('int_claim_closings_paired') }}
