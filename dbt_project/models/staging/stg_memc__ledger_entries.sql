-- Rename and cast only; rows above the build's watermark are left for the next build.
select
    seq::bigint as seq,
    entry_id,
    recorded_at::timestamptz as recorded_at,
    valid_at::timestamptz as valid_at,
    kind,
    scope,
    session_id,
    actor,
    content,
    content_hash,
    source_uri,
    source_ref,
    visibility,
    confidence::double as confidence,
    idempotency_key,
    attributes,
    derived_from,
    producer,
    producer_version,
    watermark::bigint as derived_at_watermark
from {{ source('memc', 'ledger') }}
where {{ within_watermark('seq') }}
