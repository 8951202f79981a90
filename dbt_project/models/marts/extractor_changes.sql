{{ config(materialized='mart_export', location=mart_export_path('extractor_changes'), format='parquet') }}
-- What each newer extractor version on disk says differently from each older one, fact by fact,
-- on the ledger days both have compiled: what moving from_extractor -> to_extractor would add,
-- drop and change (kept facts are counted in extractor_changes_by_day).
select
    from_extractor,
    to_extractor,
    ledger_day,
    change,
    scope,
    source_entry_id,
    source_seq,
    subject,
    subject_id,
    predicate,
    from_object,
    to_object,
    from_polarity,
    to_polarity,
    from_quote,
    to_quote,
    visibility
from {{ ref('int_extractor_facts_compared') }}
where change <> 'kept'
