-- Rename and cast only; claims whose source entry is above the build's watermark wait.
select
    claim_id,
    extractor,
    extractor_version,
    scope,
    subject,
    subject_id,
    predicate,
    object,
    cardinality,
    valid_at::timestamptz as valid_at,
    recorded_at::timestamptz as recorded_at,
    source_entry_id,
    source_seq::bigint as source_seq,
    source_ref,
    quote,
    visibility,
    confidence::double as confidence
from {{ source('memc', 'claims') }}
where {{ within_watermark('source_seq') }}
