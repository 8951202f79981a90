-- Rename and cast only, over every extractor version on disk, with the version key and the
-- ledger day its folder names (a flat folder of the older layout names no day: its claims take
-- their source's UTC recorded date). Claims whose source entry is above the build's watermark
-- wait. polarity, time_phrase, object_id, asserted_by, asserted_by_id, subject_entry_id,
-- question_entry_id and question_quote are
-- newer claim columns: files written before them read as NULL, and a claim with no polarity is an
-- assertion (what every claim was before).
select
    {{ claims_path_extractor('filename') }} as extractor_key,
    coalesce({{ claims_path_day('filename') }}, {{ utc_date('recorded_at') }}) as ledger_day,
    claim_id,
    extractor,
    extractor_version,
    scope,
    subject,
    subject_id,
    predicate,
    object,
    object_id,
    cardinality,
    coalesce(polarity, 'assert') as polarity,
    time_phrase,
    asserted_by,
    asserted_by_id,
    subject_entry_id,
    question_entry_id,
    question_quote,
    cast(valid_at as {{ sql_type('timestamptz') }}) as valid_at,
    cast(recorded_at as {{ sql_type('timestamptz') }}) as recorded_at,
    source_entry_id,
    cast(source_seq as bigint) as source_seq,
    source_ref,
    quote,
    visibility,
    cast(confidence as double) as confidence
from {{ with_optional_columns(source('memc', 'claims'), {'polarity': 'varchar', 'time_phrase': 'varchar', 'object_id': 'varchar', 'asserted_by': 'varchar', 'asserted_by_id': 'varchar', 'subject_entry_id': 'varchar', 'question_entry_id': 'varchar', 'question_quote': 'varchar'}) }}
where {{ within_watermark('source_seq') }}
