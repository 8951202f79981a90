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
    source_seq::bigint as source_seq,
    source_ref,
    validator,
    reason,
    json_extract_string(proposal, '$.subject') as subject,
    json_extract_string(proposal, '$.predicate') as predicate,
    json_extract_string(proposal, '$.object') as object,
    coalesce(json_extract_string(proposal, '$.polarity'), 'assert') as polarity,
    try_cast(json_extract_string(proposal, '$.valid_at') as timestamptz) as valid_at
from read_parquet('{{ files }}', union_by_name = true, hive_partitioning = false)
where {{ within_watermark('source_seq') }}
{% else %}
select
    null::varchar as proposal_id, null::varchar as extractor, null::varchar as extractor_version,
    null::varchar as scope, null::varchar as source_entry_id, null::bigint as source_seq,
    null::varchar as source_ref, null::varchar as validator, null::varchar as reason,
    null::varchar as subject, null::varchar as predicate, null::varchar as object,
    null::varchar as polarity, null::timestamptz as valid_at
where false
{% endif %}
