{{ config(materialized='mart_export', location=mart_export_path('state_history'), format='parquet') }}
-- Every version of every asserted claim on both time axes (the administrator's fold: every
-- claim counts, whoever may see it). A fact held at valid time V as known at transaction time T
-- when valid_from <= V < valid_to and recorded_from <= T < recorded_to (a NULL end is open).
-- Per asker, use the state_as_of macro instead: what an asker believed depends on which closers
-- the asker may see. A restatement of a value that holds closes nothing: the value's first claim
-- keeps one open version from the move on, and the restatement has its own beside it. Dreaming's
-- derived analytics are not here (entity_analytics).
select
    c.scope,
    c.subject_id,
    c.subject,
    c.predicate,
    c.object,
    c.object_id,
    c.cardinality,
    v.version,
    c.valid_at as valid_from,
    v.valid_to,
    v.recorded_from,
    lead(v.recorded_from) over (partition by v.claim_id order by v.version) as recorded_to,
    v.closed_by_claim_id,
    v.close_reason,
    c.claim_id,
    c.source_entry_id,
    c.source_seq,
    c.source_ref,
    c.source_kind,
    c.quote,
    c.time_phrase,
    c.asserted_by,
    c.visibility,
    c.confidence
from {{ ref('int_claim_versions_folded') }} as v
inner join {{ ref('int_claims_joined_to_entries') }} as c using (claim_id)
where c.source_kind is distinct from 'derived_claim'
