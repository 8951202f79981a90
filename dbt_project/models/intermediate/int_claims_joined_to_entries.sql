{{ config(materialized='incremental', incremental_strategy='append', on_schema_change='append_new_columns') }}
-- Every claim with what the fold needs from its source entry: the entry's kind (a user's
-- correction outranks nothing by itself, but is named as the reason it closed a claim), a
-- normalised object, so that "Berlin" and "berlin " are one value when a retraction names it
-- or two claims are compared, and who asserted it: a subject's own word (own_statement) and
-- another's word reported by the author (reported: "Jonas says Mira teaches ...").
--
-- Incremental: the ledger only grows and a claim's row never changes for a given extractor, so
-- each build appends the claims of entries above the highest seq already here. A new
-- extractor, an erasure or a ledger that shrank makes assets/state.py run a full refresh.
with claims as (
    select * from {{ ref('stg_memc__claims') }}
    {% if is_incremental() %}
    where source_seq > (select coalesce(max(source_seq), -1) from {{ this }})
    {% endif %}
),

entries as (
    select entry_id, kind
    from {{ ref('stg_memc__ledger_entries') }}
    {% if is_incremental() %}
    where seq > (select coalesce(max(source_seq), -1) from {{ this }})
    {% endif %}
)

select
    c.claim_id,
    c.scope,
    c.subject,
    c.subject_id,
    c.predicate,
    c.object,
    {{ normalize_name('c.object') }} as object_key,
    c.object_id,
    c.cardinality,
    c.polarity,
    c.time_phrase,
    c.asserted_by,
    c.asserted_by_id,
    coalesce(c.asserted_by_id = c.subject_id, false) as own_statement,
    c.asserted_by is not null as reported,
    c.valid_at,
    c.recorded_at,
    c.source_entry_id,
    c.source_seq,
    c.source_ref,
    e.kind as source_kind,
    c.quote,
    c.visibility,
    c.confidence,
    c.extractor,
    c.extractor_version
from claims as c
left join entries as e on e.entry_id = c.source_entry_id
