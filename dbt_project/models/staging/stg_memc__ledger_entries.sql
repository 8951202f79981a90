-- Rename and cast only; rows above the build's watermark are left for the next build.
select
    cast(seq as bigint) as seq,
    entry_id,
    cast(recorded_at as {{ sql_type('timestamptz') }}) as recorded_at,
    cast(valid_at as {{ sql_type('timestamptz') }}) as valid_at,
    kind,
    scope,
    session_id,
    actor,
    content,
    content_hash,
    source_uri,
    source_ref,
    visibility,
    cast(confidence as double) as confidence,
    idempotency_key,
    attributes,
    derived_from,
    producer,
    producer_version,
    cast(watermark as bigint) as derived_at_watermark
from {{ source('memc', 'ledger') }}
where {{ within_watermark('seq') }}
