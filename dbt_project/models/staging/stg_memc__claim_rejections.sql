-- Rename and cast only: the active extractor's rejected proposals (var extractor_key), with
-- the subject, predicate and object the proposal named (read from its JSON; a proposal the
-- schema validator refused may lack any of them). Proposals whose source entry is above the
-- build's watermark wait, as claims do.
-- The claims asset writes rejections.parquet beside each day's claims.parquet: the files are
-- part of the claims source, read by path here (one asset, one source), and the hint below
-- keeps this model downstream of it. No file yet (claims never extracted): an empty relation.
-- depends_on: {{ source('memc', 'claims') }}
{% set files = env_var('MEMC_HOME') ~ '/claims/extractor=' ~ var('extractor_key') ~ '/**/rejections.parquet' %}
{% if file_exists(files) %}
select
    proposal_id,
    extractor,
    extractor_version,
    scope,
    source_entry_id,
    cast(source_seq as bigint) as source_seq,
    source_ref,
    validator,
    reason,
    {{ json_text('proposal', '$.subject') }} as subject,
    {{ json_text('proposal', '$.predicate') }} as predicate,
    {{ json_text('proposal', '$.object') }} as object,
    coalesce({{ json_text('proposal', '$.polarity') }}, 'assert') as polarity,
    {{ try_cast_to(json_text('proposal', '$.valid_at'), 'timestamptz') }} as valid_at
from {{ claims_files('rejections.parquet', files) }}
where {{ within_watermark('source_seq') }}
{% else %}
select
    cast(null as string) as proposal_id, cast(null as string) as extractor, cast(null as string) as extractor_version,
    cast(null as string) as scope, cast(null as string) as source_entry_id, cast(null as bigint) as source_seq,
    cast(null as string) as source_ref, cast(null as string) as validator, cast(null as string) as reason,
    cast(null as string) as subject, cast(null as string) as predicate, cast(null as string) as object,
    cast(null as string) as polarity, cast(null as {{ sql_type('timestamptz') }}) as valid_at
where false
{% endif %}
